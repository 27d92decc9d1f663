//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecyclePrimitives
import SystemPackage

/// Why an upgrade did not happen, and what became of the running process: it serves on, unchanged, unless it is
/// terminating (a termination request came first, or during the upgrade).
///
/// A value with a named ``Kind`` (the wire's `kind`, and `lifecyclectl upgrade`'s exit status) and the facts its
/// sentence names; the sentence is derived from them, so tests compare kinds and facts, not prose.
struct UpgradeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The cause, as the control protocol names it.
    typealias Kind = UpgradeFailureKind

    /// The cause.
    var kind: Kind
    /// The binary the upgrade started, or tried to.
    var path: String?
    /// The new process, once it exists.
    var pid: Int32?
    /// The system's reason, for a system call that failed.
    var errno: Errno?
    /// How the new process ended: its exit code, or 128 + the signal that killed it; nil when unknown.
    var exitStatus: Int32?
    /// The deadline that passed.
    var timeout: Duration?
    /// What the new process sent instead of `ready`, or another error's own words.
    var detail: String?
    /// False when the running process is terminating: it does not serve on.
    var servesOn = true

    /// An error of `kind` with the facts its sentence names.
    init(
        _ kind: Kind,
        path: String? = nil,
        pid: Int32? = nil,
        errno: Errno? = nil,
        exitStatus: Int32? = nil,
        timeout: Duration? = nil,
        detail: String? = nil
    ) {
        self.kind = kind
        self.path = path
        self.pid = pid
        self.errno = errno
        self.exitStatus = exitStatus
        self.timeout = timeout
        self.detail = detail
    }

    /// What went wrong, and what became of the new process, as a sentence.
    var reason: String {
        let process = "the new process\(pid.map { " (pid \($0))" } ?? "")"
        switch kind {
        case .inProgress:
            return "an upgrade is already in progress"
        case .previousStillStopping:
            return "the new process of the last upgrade\(pid.map { " (pid \($0))" } ?? "") is still being stopped; "
                + "ask again once it has exited"
        case .notLaunched:
            return "the application has not launched yet"
        case .notMainProcess:
            return "this process is not the main process yet: an upgrade is handing over to it"
        case .handedOver:
            return "this process has handed over to another one already"
        case .terminating:
            return "the application is terminating"
        case .lameDuck:
            return "a termination was requested: the daemon is in its lame-duck delay"
        case .noServiceManager:
            return "an upgrade needs systemd (a Type=notify unit): no NOTIFY_SOCKET"
        case .containerInit:
            return "this process is PID 1 (a container's init): the new process would end with it; restart the container to upgrade"
        case .noMainLoop:
            return "this daemon has no main loop"
        case .executableUnknown:
            return "the path of this program is unknown (/proc/self/exe could not be read at start)"
        case .cannotExecute:
            return "cannot start \(path ?? "the program"): \(errno.map { "\($0)" } ?? detail ?? "exec failed")"
        case .channelFailed:
            return "cannot make the channel to the new process: \(errno.map { "\($0)" } ?? detail ?? "")"
        case .cannotWatch:
            return "cannot watch the new process (\(detail ?? "")); pid \(pid ?? 0) was stopped"
        case .exitedBeforeReady:
            let how =
                switch exitStatus {
                case let code? where code > 128: "was killed by signal \(code - 128)"
                case let code?: "exited with status \(code)"
                case nil: "exited"
                }
            return "\(process) \(how) before it was ready"
        case .notReadyInTime:
            return "\(process) was not ready within \((timeout ?? .zero).formattedForLog); it was stopped"
        case .protocolViolation:
            return "the new process sent \(detail ?? "nothing") where \"ready\" was expected; it was stopped"
        case .mainPIDRefused:
            return "cannot tell systemd that pid \(pid ?? 0) is the main process (\(detail ?? "")); it was stopped"
        case .successorVanished:
            return "pid \(pid ?? 0) went away while it was made the main process"
        case .terminationRequested:
            return "this process began to terminate before the new one was ready; \(process) was stopped"
        case .lameDuckBegan:
            return "a termination was requested before the new process was ready; \(process) was stopped"
        }
    }

    /// The reason, and what the running process does now: what the log and `lifecyclectl upgrade` say.
    var description: String {
        reason + (servesOn ? "; the daemon serves on as it was" : "; the daemon is terminating")
    }
}
