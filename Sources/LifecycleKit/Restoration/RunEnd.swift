//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// How the previous run of the service ended, as the next launch learns it (Android's `ApplicationExitInfo`): the
/// daemon reads it from the records the last run and systemd left in the state directory, an upgrade's hand-over and
/// the boot's id, before restoration (docs/restoration.md, "Why the last run ended"). ``LaunchOptions/lastRun`` holds
/// it, so `application(_:shouldRestoreApplicationState:)` can read it from ``Application/launchOptions``.
public struct RunEnd: Sendable, Hashable, CustomStringConvertible {
    /// Why it ended.
    public enum Cause: String, Sendable, Hashable, CaseIterable {
        /// Stopped cleanly by `SIGTERM` or `SIGINT` (`systemctl stop`, `podman stop`, Ctrl-C).
        case stop
        /// Stopped cleanly and started again within `[Restoration] RestartGapSec=` (`systemctl restart`): systemd 252
        /// does not tell a service whether a `SIGTERM` is a stop or a restart, so this is inferred from the gap.
        case restart
        /// Asked to terminate through the control socket (`lifecyclectl terminate`): the operator quit the
        /// application itself.
        case terminate
        /// Handed over to a new process by an upgrade (`lifecyclectl upgrade`).
        case upgrade
        /// The machine shut down or rebooted in between (the boot's id changed).
        case reboot
        /// Killed by a fault signal (`SIGSEGV`, `SIGABRT`, `SIGBUS`, …), with or without a core dump.
        case crash
        /// Killed by systemd's watchdog (`WatchdogSec=`).
        case watchdog
        /// Killed by the kernel's OOM killer (under `MemoryMax=`, or the machine's).
        case outOfMemory = "oom-kill"
        /// Killed because its stop took longer than `TimeoutStopSec=`.
        case stopTimeout = "stop-timeout"
        /// Killed by a signal someone sent (`SIGKILL`, `SIGTERM` without a clean exit, …).
        case kill
        /// Exited by itself with a non-zero status, or with 0 without the daemon's clean exit.
        case exit
        /// Terminated as a failure (exit status 75: a supervised task exhausted its restarts).
        case failure
        /// Gave up after too many abnormal ends in a row (exit status 69; docs/restoration.md, "Crash loops").
        case gaveUp = "gave-up"
        /// Nothing says why: the run left a record at launch and none at its end, and systemd left none (a `SIGKILL`
        /// outside systemd, a container's restart, a power cut before the next boot's id could differ).
        case unknown
    }

    /// Why it ended.
    public var cause: Cause
    /// The signal that ended it (`SIGSEGV`), when one did.
    public var signal: String?
    /// Whether the kernel wrote a core dump.
    public var coreDumped = false
    /// The exit status, when it exited.
    public var exitStatus: Int?
    /// How long before this launch it ended, when known.
    public var timeSinceEnd: Duration?
    /// How long it ran, when known.
    public var lifetime: Duration?
    /// Whether it ended before it was ready (`READY=1`): during its launch and restoration.
    public var endedDuringLaunch = false
    /// The generation of the saved state it had restored, if any.
    public var restoredGeneration: Int?
    /// The version of the program that ran (`--version`), when known.
    public var version: String?
    /// How many runs in a row, this one included, ended abnormally (``isAbnormal``).
    public var abnormalEndsInARow = 0

    /// A run end of `cause`.
    public init(cause: Cause) {
        self.cause = cause
    }

    /// Whether the run ended other than as asked: a crash, a kill, the watchdog, an OOM kill, a stop timeout, an exit
    /// with a status, a failure, a give-up, or no trace at all. A stop, a restart, a termination, an upgrade and a
    /// reboot are not.
    public var isAbnormal: Bool {
        switch cause {
        case .stop, .restart, .terminate, .upgrade, .reboot: false
        case .crash, .watchdog, .outOfMemory, .stopTimeout, .kill, .exit, .failure, .gaveUp, .unknown: true
        }
    }

    /// What ended it, in a few words: `a crash (SIGSEGV, core dumped)`, `an OOM kill`, `an exit with status 3`.
    public var description: String {
        switch cause {
        case .stop: return "a stop" + (signal.map { " (\($0))" } ?? "")
        case .restart: return "a restart"
        case .terminate: return "a termination asked through the control socket"
        case .upgrade: return "an upgrade"
        case .reboot: return "a reboot"
        case .crash:
            let detail = [signal, coreDumped ? "core dumped" : nil].compactMap { $0 }.joined(separator: ", ")
            return "a crash" + (detail.isEmpty ? "" : " (\(detail))")
        case .watchdog: return "a watchdog kill" + (signal.map { " (\($0))" } ?? "")
        case .outOfMemory: return "an OOM kill"
        case .stopTimeout: return "a stop that timed out" + (signal.map { " (\($0))" } ?? "")
        case .kill: return "a kill" + (signal.map { " (\($0))" } ?? "")
        case .exit: return "an exit with status \(exitStatus.map(String.init) ?? "?")"
        case .failure: return "a failure (exit status \(exitStatus ?? 75))"
        case .gaveUp: return "a give-up after \(abnormalEndsInARow) abnormal ends in a row"
        case .unknown: return "an end nothing recorded (no exit record, no stop record)"
        }
    }
}
