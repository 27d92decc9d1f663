//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

extension Daemon {
    /// The longest an upgrade waits for the new process to serve, unless the request says otherwise.
    static let defaultUpgradeTimeout = Duration.seconds(30)

    /// The path an upgrade starts: the program's own name when it is absolute — what `ExecStart=` names, so a
    /// `current` symlink switched to a new release leads to the new release — and otherwise the file that was
    /// executed, as `/proc/self/exe` names it at start (a relative name depends on a directory the daemon may have
    /// left).
    static func upgradePath(arguments: [String] = CommandLine.arguments) -> String? {
        if let first = arguments.first, first.hasPrefix("/") { return first }
        return readExecutablePath()
    }

    /// The program's path, as `/proc/self/exe` names it now (at start: the file that was executed).
    static func readExecutablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        var path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // Replaced on disk since: the kernel appends this to the old file's name; the path names the new one.
        if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
        return path
    }

    /// The control socket's listening descriptor, for an upgrade to hand over.
    var controlSocketToHandOver: Int32? { control?.listeningSocket }
    /// The control socket file this process is to remove when it stops, if it bound one.
    var controlSocketPath: String? { control?.boundPath }

    /// Whether this process is on its way out: terminating, or in the lame-duck delay before it.
    var isStopping: Bool { application.isTerminating || lameDuck.isDelaying }

    /// Upgrades to the service's binary as it is on disk now (``UpgradeCoordinator``); `completion` runs once, after
    /// the hand-over or with why there was none (the process then serves on, unchanged, unless it is terminating).
    func startUpgrade(
        timeout: Duration?,
        completion: @escaping (Result<UpgradeCoordinator.HandOver, UpgradeFailure>) -> Void
    ) {
        if let reason = reasonAnUpgradeCannotStart() {
            let failure = UpgradeFailure(reason: reason, servesOn: !isStopping)
            logger.error("upgrade refused: \(failure)", metadata: [LogKey.upgrade: "failed"])
            return completion(.failure(failure))
        }
        guard let loop else { return }
        upgrade = UpgradeCoordinator.start(
            daemon: self,
            loop: loop,
            timeout: timeout ?? Self.defaultUpgradeTimeout,
            completion: completion
        )
    }

    /// Why this process cannot start an upgrade now, or nil.
    private func reasonAnUpgradeCannotStart() -> String? {
        if let upgrade, !upgrade.isFinished {
            if let pid = upgrade.pidBeingStopped {
                return "the new process of the last upgrade (pid \(pid)) is still being stopped; ask again once it has exited"
            }
            return "an upgrade is already in progress"
        }
        if handedOverTo != nil { return "this process has handed over to another one already" }
        if !isMainProcess { return "this process is not the main process yet: an upgrade is handing over to it" }
        if application.isTerminating { return "the application is terminating" }
        if lameDuck.isDelaying {
            // The new process would never hear of the termination asked for: systemd sends SIGTERM once.
            return "a termination was requested: the daemon is in its lame-duck delay"
        }
        if application.applicationState == .notRunning { return "the application has not launched yet" }
        if !effects.underSystemd || effects.environment["NOTIFY_SOCKET"] == nil {
            // Without a service manager nobody would supervise the new process, nor could it take over as the main one.
            return "an upgrade needs systemd (a Type=notify unit): no NOTIFY_SOCKET"
        }
        if getpid() == 1 {
            // A container's init: the kernel ends every process of the namespace with it, the new one included.
            return "this process is PID 1 (a container's init): the new process would end with it; restart the container to upgrade"
        }
        if loop == nil { return "this daemon has no main loop" }
        return nil
    }

    /// The new process is the main process now: this one tells systemd nothing more, stops accepting control
    /// connections (the new one accepts on its copy), leaves the saved state to it, and terminates: its servers stop
    /// accepting and drain, as in any termination.
    func upgradeDidHandOver(to handOver: UpgradeCoordinator.HandOver) {
        handedOverTo = handOver
        isMainProcess = false
        notifications.isMainProcess = false
        loop?.disableWatchdog()
        stateStore?.isOwner = false
        control?.handOver()
        logger.info(
            "upgrade: pid \(handOver.pid) is the service's main process; this process (pid \(handOver.previousPID)) stops accepting, drains and exits",
            metadata: [LogKey.upgrade: "handed-over"]
        )
        application.requestTermination(cause: UpgradeCoordinator.cause)
    }

    /// An upgrade is over and its new process reaped, or it never started one.
    func upgradeDidEnd(_ ended: UpgradeCoordinator) {
        if upgrade === ended, handedOverTo == nil { upgrade = nil }
    }

    /// Launched as an upgrade's new process: reports that it serves once every listener it opened has a server
    /// accepting on it (none need to in the background).
    func reportReadyWhenServing(_ handOver: UpgradeHandOver) {
        let table = application.listeners
        let check: @MainActor () -> Void = { [unowned self, unowned handOver] in
            guard handOver.phase == .launching else { return }
            let serving =
                application.applicationState == .background
                || table.listeners.allSatisfy { $0.servers > 0 || $0.isShutDown }
            guard serving else { return }
            table.didChange = nil
            logger.info(
                "upgrade: launched and serving; waiting for pid \(handOver.previousPID) to hand over",
                metadata: [LogKey.upgrade: "ready"]
            )
            deliverTraceLines()
            handOver.reportReady()
        }
        table.didChange = check
        check()
    }

    /// The running process made this one the main process: from now on systemd hears from it (`READY=1`, the status,
    /// the watchdog), what it bound is kept in the file descriptor store, the state is saved by it and the control
    /// socket's file is its to remove. `runningState`, the state the running process was in at the hand-over, is
    /// taken: what was asked of it while this one launched is not lost.
    func becomeMainProcess(runningState: ApplicationState?) {
        guard let handOver else { return }
        isMainProcess = true
        notifications.isMainProcess = true
        stateStore?.isOwner = true
        if control?.takeOver() == false { control = nil }
        self.handOver = nil
        if effects.watchdogInterval != nil {
            do {
                _ = try loop?.enableWatchdog()
            } catch {
                logger.warning("upgrade: cannot start the watchdog's pings: \(error)")
            }
        }
        let store = FileDescriptorStore(notifier: .fromEnvironment())
        // What this process retired first: a listener moved to another address is stored again under the same name.
        for name in pendingListenerRemovals { removeStoredListener(named: name, from: store) }
        for listener in pendingListenerStores { storeListener(listener, in: store) }
        pendingListenerRemovals = []
        pendingListenerStores = []
        logger.info(
            "upgrade: this process (pid \(getpid())) is the service's main process, after pid \(handOver.previousPID)",
            metadata: [LogKey.upgrade: "main"]
        )
        var assignments: [NotifyAssignment] = [.ready, .status(application.statusText)]
        if effects.watchdogInterval != nil { assignments.append(.watchdog) }
        deliverTraceLines()
        notifications.send(assignments)
        takeState(runningState, from: handOver.previousPID)
    }

    /// Moves the application to the state the running process was in at the hand-over, through the same requests a
    /// signal or `lifecyclectl` makes, with the upgrade's cause.
    private func takeState(_ state: ApplicationState?, from previousPID: Int32) {
        guard let state, state != application.applicationState else { return }
        let request: LifecycleRequest? =
            switch state {
            case .background: .enterBackground
            case .inactive: .resignActive
            case .active: .becomeActive
            case .notRunning, .terminated: nil
            }
        guard let request else { return }
        logger.info(
            "upgrade: pid \(previousPID) was \(state) at the hand-over; this process follows",
            metadata: [LogKey.upgrade: "state"]
        )
        application.submit(request, cause: UpgradeCoordinator.cause)
    }
}
