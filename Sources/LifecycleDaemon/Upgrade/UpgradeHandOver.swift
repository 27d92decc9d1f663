//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// An upgrade, seen from the new process: started by the running one with its listening sockets, its control socket
/// and its saved state, it launches and restores, reports that it serves, and tells systemd nothing until the running
/// one has made it the main process (systemd takes notifications from the main process only, and logs a warning for
/// each other one).
@MainActor
final class UpgradeHandOver {
    /// The process that started this one.
    let previousPID: Int32
    /// Where each passed listener came from, by name.
    let listenerOrigins: [String: ListenerOrigin]
    /// The control socket file's path, which this process removes when it stops.
    let controlPath: String?
    /// Into the background when the running process was there, active when it was active or inactive (the service was
    /// running: `[Launch] Into=` is for a start); nil when the running process did not say.
    let launchTarget: LaunchTarget?

    enum Phase: Equatable {
        /// Launching, or waiting for its servers to accept.
        case launching
        /// Said it serves; waits to be made the main process.
        case reportedReady
        /// The main process.
        case main
        /// Called off: terminating.
        case abandoned
    }

    private(set) var phase = Phase.launching
    private let channel: Int32
    private var source: MainLoop.Source?
    private var onMain: (@MainActor (ApplicationState?) -> Void)?
    private var onAbandon: (@MainActor (String) -> Void)?

    private init(previousPID: Int32, channel: Int32, environment: [String: String]) {
        self.previousPID = previousPID
        self.channel = channel
        listenerOrigins = environment[UpgradeEnvironment.listenerOrigins].map(UpgradeEnvironment.decodeOrigins) ?? [:]
        controlPath = environment[UpgradeEnvironment.controlPath]
        launchTarget = Self.launchTarget(forRunningState: environment[UpgradeEnvironment.applicationState])
    }

    /// The upgrade this process was started by, if `environment` says so and its channel was passed.
    static func take(environment: [String: String]) -> UpgradeHandOver? {
        guard let text = environment[UpgradeEnvironment.previousPID], let pid = Int32(text),
            let channel = SocketActivation.passed().first(where: { $0.name == UpgradeEnvironment.channelName })
        else { return nil }
        let flags = fcntl(channel.descriptor, F_GETFD)
        if flags >= 0 { _ = fcntl(channel.descriptor, F_SETFD, flags | FD_CLOEXEC) }
        let statusFlags = fcntl(channel.descriptor, F_GETFL)
        if statusFlags >= 0 { _ = fcntl(channel.descriptor, F_SETFL, statusFlags | O_NONBLOCK) }
        return UpgradeHandOver(previousPID: pid, channel: channel.descriptor, environment: environment)
    }

    /// The launch target for the state the running process was in when the upgrade began.
    nonisolated static func launchTarget(forRunningState text: String?) -> LaunchTarget? {
        switch text.flatMap(ApplicationState.init(rawValue:)) {
        case .background: .background
        case .active, .inactive: .active
        case .notRunning, .terminated, nil: nil
        }
    }

    /// Listens to the running process: `onMain` once this process is the main process (with the state the running
    /// process was in then, if it said), `onAbandon` (with why) when the upgrade is called off or the running process
    /// went away first.
    func watch(
        loop: MainLoop,
        onMain: @escaping @MainActor (ApplicationState?) -> Void,
        onAbandon: @escaping @MainActor (String) -> Void
    ) throws(SystemCallError) {
        self.onMain = onMain
        self.onAbandon = onAbandon
        source = try loop.addIO(fd: channel, events: .readable) { [unowned self] _ in
            MainActor.assumeIsolated { read() }
        }
    }

    /// Launched, restored, and every listener has a server accepting on it: tell the running process.
    func reportReady() {
        guard phase == .launching else { return }
        phase = .reportedReady
        if !UpgradeMessage.ready.send(on: channel) {
            abandon("the process that started the upgrade (pid \(previousPID)) is gone")
        }
    }

    private func read() {
        switch UpgradeMessage.read(from: channel) {
        case .nothing:
            return
        case .message(.main(let state)):
            guard phase == .reportedReady else { return abandon("made the main process before it was ready") }
            phase = .main
            finish()
            onMain?(state)
        case .message(.abort):
            abandon("the process that started the upgrade (pid \(previousPID)) called it off")
        case .message(.ready):
            abandon("the process that started the upgrade (pid \(previousPID)) sent \"ready\"")
        case .garbled(let text):
            abandon("the process that started the upgrade (pid \(previousPID)) sent \(text.debugDescription)")
        case .closed:
            abandon("the process that started the upgrade (pid \(previousPID)) went away before it handed over")
        }
    }

    private func abandon(_ reason: String) {
        guard phase == .launching || phase == .reportedReady else { return }
        phase = .abandoned
        finish()
        onAbandon?(reason)
    }

    private func finish() {
        source?.cancel()
        source = nil
        close(channel)
    }
}
