//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecycleKit

extension UpgradeToSuccessor {
    /// The running process's side of an upgrade as a value: one `mutating func` per event, each returning what to do.
    /// ``UpgradeToSuccessor`` performs the actions (with ``UpgradeEffects``) and feeds back what came of them.
    ///
    /// ```
    /// idle ─spawned─▶ launching ─ready─▶ handingOver ─told main─▶ handedOver
    ///                    │                    │
    ///                    ├─exited────────────────────────────────▶ failed
    ///                    └─deadline, cancel, garbled ─▶ stopping ─exited─▶ failed
    /// ```
    struct StateMachine: Sendable {
        enum State: Sendable, Hashable {
            /// Nothing started yet.
            case idle
            /// The successor runs (under its keeper) and launches; the deadline runs.
            case launching(pid: Int32, startedAt: ContinuousClock.Instant)
            /// It said it serves: released to systemd, and being named the main process.
            case handingOver(pid: Int32, readyAfter: Duration)
            /// It is the main process.
            case handedOver(HandOver)
            /// Called off while the successor runs: it is being stopped (`SIGTERM`, `SIGKILL` later); over once it has
            /// exited and was reaped.
            case stopping(pid: Int32, UpgradeError)
            /// Over without a hand-over, nothing left to wait for.
            case failed(UpgradeError)
        }

        /// What to do after an event.
        enum Action: Sendable, Hashable {
            /// Nothing.
            case none
            /// Watch the channel and the successor's exit, and arm the deadline.
            case watch(pid: Int32)
            /// Release the successor to the service manager (its keeper exits), cancel the deadline, and name it the
            /// main process (`MAINPID=`); report with ``StateMachine/mainPIDNamed(error:)``.
            case nameMainPID(Int32)
            /// Wait, bounded, until systemd has read `MAINPID=` (`BARRIER=1`); report with
            /// ``StateMachine/confirmed(error:)``.
            case confirmMainPID(Int32)
            /// Tell the successor it is the main process, with the application state this process is in now; report
            /// with ``StateMachine/toldMain(delivered:)``. `unconfirmed`: systemd did not confirm in time (why), worth a
            /// warning: it reads its socket in order, so the hand-over goes on.
            case tellMain(Int32, unconfirmed: String?)
            /// Close the channel and report the hand-over.
            case complete(HandOver)
            /// Stop the successor: tell it `abort`, close the channel, cancel the deadline and the watches, send
            /// `SIGTERM`, arm the `SIGKILL` timer unless `reaped` (released to systemd: its exit is not this process's
            /// to see, so the upgrade ends at once), and report the failure.
            case stop(pid: Int32, UpgradeError, awaitExit: Bool)
            /// Report the failure; nothing runs any more (close the channel and the watches).
            case fail(UpgradeError)
            /// The successor stopped in time: its `SIGKILL` timer goes; the upgrade is over.
            case ended
            /// The successor ignored `SIGTERM`: kill it.
            case kill(Int32)
        }

        private(set) var state: State = .idle

        /// Whether the upgrade is over (handed over, or failed with nothing left to reap).
        var isFinished: Bool {
            switch state {
            case .handedOver, .failed: true
            case .idle, .launching, .handingOver, .stopping: false
            }
        }

        /// The pid of a successor that failed and is being stopped, until it exits.
        var pidBeingStopped: Int32? {
            if case .stopping(let pid, _) = state { return pid }
            return nil
        }

        /// The successor, while it runs under this upgrade.
        var successor: Int32? {
            switch state {
            case .launching(let pid, _), .handingOver(let pid, _), .stopping(let pid, _): pid
            case .handedOver(let handOver): handOver.pid
            case .idle, .failed: nil
            }
        }

        /// It could not start (a check before anything was saved, or the fork and exec).
        mutating func couldNotStart(_ error: UpgradeError) -> Action {
            guard case .idle = state else { preconditionFailure("upgrade: start failed in state \(state)") }
            state = .failed(error)
            return .fail(error)
        }

        /// The successor runs.
        mutating func spawned(pid: Int32, at instant: ContinuousClock.Instant) -> Action {
            guard case .idle = state else { preconditionFailure("upgrade: spawned in state \(state)") }
            state = .launching(pid: pid, startedAt: instant)
            return .watch(pid: pid)
        }

        /// What the successor sent, at `instant`.
        mutating func received(_ reading: UpgradeMessage.Reading, at instant: ContinuousClock.Instant) -> Action {
            guard case .launching(let pid, let startedAt) = state else {
                // Read after the upgrade moved on (a message racing a stop): nothing to do.
                return .none
            }
            switch reading {
            case .nothing, .closed:
                // Closed: it exited, or gave up; its exit says which.
                return .none
            case .message(.ready):
                state = .handingOver(pid: pid, readyAfter: instant - startedAt)
                return .nameMainPID(pid)
            case .message(let other):
                return stop(UpgradeError(.protocolViolation, pid: pid, detail: "\"\(other.text)\""))
            case .garbled(let text):
                return stop(UpgradeError(.protocolViolation, pid: pid, detail: text.debugDescription))
            }
        }

        /// `MAINPID=` was sent (`error`: nil), or systemd's socket refused it.
        mutating func mainPIDNamed(error: String?) -> Action {
            guard case .handingOver(let pid, _) = state else { preconditionFailure("upgrade: MAINPID= in state \(state)") }
            if let error { return stop(UpgradeError(.mainPIDRefused, pid: pid, detail: error)) }
            return .confirmMainPID(pid)
        }

        /// systemd confirmed the new main process (`error`: nil), or did not within the wait. Either way the hand-over
        /// goes on: systemd reads its notification socket in order, so it takes the new pid when it gets there, and
        /// what the successor sends from now on comes after; to call it off now would stop the process systemd is
        /// about to take as the main one, which this one could not claim back (`NotifyAccess=main`).
        mutating func confirmed(error: String?) -> Action {
            guard case .handingOver(let pid, _) = state else { preconditionFailure("upgrade: barrier in state \(state)") }
            return .tellMain(pid, unconfirmed: error)
        }

        /// The successor was told it is the main process (`delivered`), or it was gone by then.
        mutating func toldMain(delivered: Bool, previousPID: Int32) -> Action {
            guard case .handingOver(let pid, let readyAfter) = state else {
                preconditionFailure("upgrade: told main in state \(state)")
            }
            guard delivered else {
                // systemd's MAINPID names a process that has exited, which it treats as the service's end.
                return stop(UpgradeError(.successorVanished, pid: pid))
            }
            let handOver = HandOver(previousPID: previousPID, pid: pid, readyAfter: readyAfter)
            state = .handedOver(handOver)
            return .complete(handOver)
        }

        /// The successor exited (`status`: its exit code or 128 + signal, nil when the keeper did not say) before it
        /// was released.
        mutating func exited(status: Int32?) -> Action {
            switch state {
            case .launching(let pid, _):
                let error = UpgradeError(.exitedBeforeReady, pid: pid, exitStatus: status)
                state = .failed(error)
                return .fail(error)
            case .stopping(_, let error):
                state = .failed(error)
                return .ended
            case .handingOver, .handedOver, .failed, .idle:
                // Released to systemd: its exit is not this process's to see any more.
                return .none
            }
        }

        /// The successor did not say it serves within the deadline.
        mutating func deadlinePassed(timeout: Duration) -> Action {
            guard case .launching(let pid, _) = state else { return .none }
            return stop(UpgradeError(.notReadyInTime, pid: pid, timeout: timeout))
        }

        /// The successor did not exit within the grace after `SIGTERM`.
        mutating func killTimerFired() -> Action {
            guard case .stopping(let pid, _) = state else { return .none }
            return .kill(pid)
        }

        /// The upgrade is called off (`kind`: a termination, or its lame-duck delay, began first) before it handed
        /// over; nothing happens once it has.
        mutating func cancel(_ kind: UpgradeError.Kind) -> Action {
            switch state {
            case .launching(let pid, _), .handingOver(let pid, _):
                return stop(UpgradeError(kind, pid: pid))
            case .idle, .handedOver, .stopping, .failed:
                return .none
            }
        }

        /// The watches could not be set up: the successor is stopped.
        mutating func couldNotWatch(_ reason: String) -> Action {
            guard case .launching(let pid, _) = state else { preconditionFailure("upgrade: watch failed in \(state)") }
            return stop(UpgradeError(.cannotWatch, pid: pid, detail: reason))
        }

        private mutating func stop(_ error: UpgradeError) -> Action {
            switch state {
            case .launching(let pid, _):
                state = .stopping(pid: pid, error)
                return .stop(pid: pid, error, awaitExit: true)
            case .handingOver(let pid, _):
                // Released already: its exit is the service manager's to see.
                state = .failed(error)
                return .stop(pid: pid, error, awaitExit: false)
            case .idle, .handedOver, .stopping, .failed:
                preconditionFailure("upgrade: stop in state \(state)")
            }
        }
    }
}
