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

/// An upgrade, seen from the new process: started by the running one (its predecessor) with its listening sockets,
/// its control socket and its saved state, it launches and restores, reports that it serves, and tells systemd
/// nothing until the predecessor has made it the main process (systemd takes notifications from the main process only,
/// and logs a warning for each other one). Once it is, it watches the predecessor drain: a stop waits for it. The other
/// side is ``UpgradeToSuccessor``.
@MainActor
final class UpgradeFromPredecessor {
    /// The process that started this one.
    let previousPID: Int32
    /// What each passed listener was in the predecessor, by name: where it came from, whether it was shut down.
    let listeners: [String: UpgradeEnvironment.ListenerState]
    /// The control socket file's path, which this process removes when it stops.
    let controlPath: String?
    /// Into the background when the predecessor was there, active when it was active or inactive (the service was
    /// running: `[Launch] Into=` is for a start); nil when the predecessor did not say.
    let launchTarget: LaunchTarget?

    private(set) var machine = StateMachine()
    private let channel: Int32
    private var channelWatch: (any ScheduledWork)?
    private var predecessorWatch: (any ScheduledWork)?
    private var predecessorHasExited = false
    private var onMain: (@MainActor (ApplicationState?) -> Void)?
    private var onAbandon: (@MainActor (Abandonment) -> Void)?
    private var onPredecessorExit: (@MainActor () -> Void)?

    /// The upgrade this process was started by, if `environment` says so and its channel is among the sockets systemd
    /// (the predecessor) passed; the channel is taken out of `passed`.
    init?(environment: [String: String], passed: inout [SocketActivation.Socket]) {
        guard let text = environment[UpgradeEnvironment.previousPID], let pid = Int32(text),
            let index = passed.firstIndex(where: { $0.name == UpgradeEnvironment.channelName })
        else { return nil }
        let channel = passed.remove(at: index).descriptor
        let flags = fcntl(channel, F_GETFD)
        if flags >= 0 { _ = fcntl(channel, F_SETFD, flags | FD_CLOEXEC) }
        let statusFlags = fcntl(channel, F_GETFL)
        if statusFlags >= 0 { _ = fcntl(channel, F_SETFL, statusFlags | O_NONBLOCK) }
        self.previousPID = pid
        self.channel = channel
        machine = StateMachine(previousPID: pid)
        listeners = environment[UpgradeEnvironment.listeners].map(UpgradeEnvironment.decodeListeners) ?? [:]
        controlPath = environment[UpgradeEnvironment.controlPath]
        launchTarget = Self.launchTarget(forRunningState: environment[UpgradeEnvironment.applicationState])
    }

    /// The launch target for the state the predecessor was in when the upgrade began.
    nonisolated static func launchTarget(forRunningState text: String?) -> LaunchTarget? {
        switch text.flatMap(ApplicationState.init(rawValue:)) {
        case .background: .background
        case .active, .inactive: .active
        case .notRunning, .terminated, nil: nil
        }
    }

    /// Listens to the predecessor: `onMain` once this process is the main process (with the state the predecessor was
    /// in then, if it said), `onAbandon` (with why) when the upgrade is called off or the predecessor went away first,
    /// `onPredecessorExit` when the predecessor has exited after the hand-over (it drained). The predecessor is watched
    /// from now on, while it certainly runs (it waits for this process), so its pid cannot be reused under the watch.
    func start(
        effects: UpgradeEffects,
        onMain: @escaping @MainActor (ApplicationState?) -> Void,
        onAbandon: @escaping @MainActor (Abandonment) -> Void,
        onPredecessorExit: @escaping @MainActor () -> Void
    ) throws(SystemCallError) {
        self.onMain = onMain
        self.onAbandon = onAbandon
        self.onPredecessorExit = onPredecessorExit
        predecessorWatch = effects.watchProcess(previousPID) { [weak self] in self?.predecessorExited() }
        channelWatch = try effects.watchReadable(channel) { [weak self] in self?.read() }
    }

    /// Whether the predecessor's exit can be seen (a pidfd was opened): a stop waits for it only then.
    var watchesPredecessor: Bool { predecessorWatch != nil }

    /// Launched, restored, and every listener has a server accepting on it (or the application is in the background):
    /// tell the predecessor.
    func serving() {
        perform(machine.serving())
    }

    private func read() {
        perform(machine.received(UpgradeMessage.read(from: channel)))
    }

    private func predecessorExited() {
        predecessorWatch = nil
        predecessorHasExited = true
        // Before the hand-over the channel's end says it went away; after it, the drain is over.
        if machine.state == .main { onPredecessorExit?() }
    }

    /// Whether the predecessor has exited since this process started.
    var predecessorIsGone: Bool { predecessorHasExited }

    private func perform(_ action: StateMachine.Action) {
        switch action {
        case .none:
            return
        case .sendReady:
            if !UpgradeMessage.ready.send(on: channel) { perform(machine.readyNotDelivered()) }
        case .becomeMain(let state):
            finish()
            onMain?(state)
        case .abandon(let why):
            finish()
            predecessorWatch?.cancel()
            predecessorWatch = nil
            onAbandon?(why)
        }
    }

    private func finish() {
        channelWatch?.cancel()
        channelWatch = nil
        close(channel)
    }
}

extension UpgradeFromPredecessor {
    /// Why this process gave up the upgrade that started it, before it became the main process.
    enum Abandonment: Sendable, Hashable, CustomStringConvertible {
        /// The predecessor closed the channel, or was gone when this process said it serves.
        case predecessorGone(Int32)
        /// The predecessor called it off (`abort`): systemd refused the hand-over, or it terminates.
        case calledOff(Int32)
        /// The predecessor said `main` before this process said it serves.
        case madeMainTooEarly(Int32)
        /// The predecessor sent something else (its words).
        case unexpected(Int32, String)

        var description: String {
            switch self {
            case .predecessorGone(let pid):
                "the process that started the upgrade (pid \(pid)) went away before it handed over"
            case .calledOff(let pid):
                "the process that started the upgrade (pid \(pid)) called it off"
            case .madeMainTooEarly(let pid):
                "the process that started the upgrade (pid \(pid)) made this one the main process before it was ready"
            case .unexpected(let pid, let words):
                "the process that started the upgrade (pid \(pid)) sent \(words.debugDescription)"
            }
        }
    }

    /// The new process's side of an upgrade as a value: one `mutating func` per event, each returning what to do.
    ///
    /// ```
    /// launching ─serving─▶ reportedReady ─main─▶ main
    ///     └─────────────────────┴─abort, closed, garbled─▶ abandoned
    /// ```
    struct StateMachine: Sendable {
        enum State: Sendable, Hashable {
            /// Launching, or waiting for its servers to accept.
            case launching
            /// Said it serves; waits to be made the main process.
            case reportedReady
            /// The main process.
            case main
            /// Called off: terminating.
            case abandoned(Abandonment)
        }

        enum Action: Sendable, Hashable {
            case none
            /// Tell the predecessor this process serves; report a failed send with ``readyNotDelivered()``.
            case sendReady
            /// This process is the main process: take over, with the state the predecessor was in at the hand-over.
            case becomeMain(ApplicationState?)
            /// Give up: terminate.
            case abandon(Abandonment)
        }

        /// The predecessor, named in the reasons.
        private(set) var previousPID: Int32 = 0
        private(set) var state: State = .launching

        init(previousPID: Int32 = 0) {
            self.previousPID = previousPID
        }

        /// Launched, restored, and serving.
        mutating func serving() -> Action {
            // Already said, or given up: a harmless repeat (every listener change checks again).
            guard state == .launching else { return .none }
            state = .reportedReady
            return .sendReady
        }

        /// `ready` could not be sent: the predecessor is gone.
        mutating func readyNotDelivered() -> Action {
            abandon(.predecessorGone(previousPID))
        }

        /// What the predecessor sent.
        mutating func received(_ reading: UpgradeMessage.Reading) -> Action {
            switch (state, reading) {
            case (.main, _), (.abandoned, _), (_, .nothing):
                return .none
            case (.reportedReady, .message(.main(let running))):
                state = .main
                return .becomeMain(running)
            case (.launching, .message(.main)):
                return abandon(.madeMainTooEarly(previousPID))
            case (_, .message(.abort)):
                return abandon(.calledOff(previousPID))
            case (_, .message(.ready)):
                return abandon(.unexpected(previousPID, "ready"))
            case (_, .garbled(let text)):
                return abandon(.unexpected(previousPID, text))
            case (_, .closed):
                return abandon(.predecessorGone(previousPID))
            }
        }

        private mutating func abandon(_ why: Abandonment) -> Action {
            guard state == .launching || state == .reportedReady else { return .none }
            state = .abandoned(why)
            return .abandon(why)
        }
    }
}
