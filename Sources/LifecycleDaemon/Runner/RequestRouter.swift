//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import LifecycleKit
package import LifecycleSystemd
import Logging

/// Where a request comes from; it names the transition's cause in the trace (`LIFECYCLE_CAUSE`).
package enum RequestSource: Hashable, Sendable {
    /// A Unix signal: `signal:SIGUSR1`.
    case signal(UnixSignal)
    /// A logind announcement: `logind:PrepareForSleep`.
    case logind(member: String)
    /// Memory pressure (PSI): `psi`.
    case memoryPressure
    /// A control request (lifecyclectl, varlink): `control`.
    case control

    /// The cause written to the trace.
    package var cause: Cause {
        switch self {
        case .signal(let signal): .signal(named: signal.name)
        case .logind(let member): .logind(member: member)
        case .memoryPressure: .psi
        case .control: Cause(rawValue: "control")
        }
    }
}

/// The one way from a source — a mapped signal, a logind announcement, memory pressure, a control request — to an
/// application request, with the policy that depends on where the daemon runs:
///
/// - `SIGTSTP` (Ctrl-Z) backgrounds; run by hand in a terminal, outside systemd, it then stops the process as job
///   control does (``JobControl``), and `fg` (SIGCONT) brings the application back. Under systemd, or as PID 1 of
///   a PID namespace (which cannot stop itself), it only backgrounds, so the watchdog keeps being fed.
/// - `SIGHUP` reloads, except when the terminal the daemon was started from has hung up: nobody is left to see or
///   stop it, so it terminates cleanly.
/// - Termination waits for the lame-duck delay first, when one is configured (``LameDuckStop``).
///
/// It only submits: it never ends a loop turn, and nothing the application does calls back into it.
@MainActor
final class RequestRouter {
    private let application: Application
    private let jobControl: JobControl
    private let lameDuck: LameDuckStop
    private let logger: Logger

    init(application: Application, jobControl: JobControl, lameDuck: LameDuckStop, logger: Logger) {
        self.application = application
        self.jobControl = jobControl
        self.lameDuck = lameDuck
        self.logger = logger
    }

    /// Submits `request` with the cause of its `source`; `completion` hears what became of it
    /// (``Application/submit(_:cause:completion:)``).
    func route(_ request: LifecycleRequest, from source: RequestSource, completion: RequestCompletion? = nil) {
        let cause = source.cause
        switch request {
        case .enterBackground:
            application.submit(.enterBackground, cause: cause, completion: completion)
            if source == .signal(.terminalStop) { jobControl.stopAfterBackground() }
        case .becomeActive:
            jobControl.cancelStop()
            application.submit(.becomeActive, cause: cause, completion: completion)
        case .resignActive:
            application.submit(.resignActive, cause: cause, completion: completion)
        case .reload:
            if source == .signal(.hangup), jobControl.terminalHungUp {
                // The shell's terminal closed: nobody is left to see the daemon or stop it, so end it cleanly
                // instead of reloading forever without a terminal. `kill -HUP` on a live terminal still reloads.
                logger.notice("the terminal hung up: terminating")
                application.submit(.terminate, cause: cause, completion: completion)
            } else {
                application.submit(.reload, cause: cause, completion: completion)
            }
        case .terminate:
            lameDuck.terminate(cause: cause, completion: completion)
        case .memoryWarning:
            application.submit(.memoryWarning, cause: cause, completion: completion)
        }
    }

    /// Submits a request about one scene session with the cause of its `source` (``Application/submitScene(_:cause:completion:)``);
    /// throws when it cannot be made (the application does not use scenes, no session has the identifier).
    func route(
        _ request: SceneRequest,
        from source: RequestSource,
        completion: RequestCompletion? = nil
    ) throws(SceneError) {
        try application.submitScene(request, cause: source.cause, completion: completion)
    }
}
