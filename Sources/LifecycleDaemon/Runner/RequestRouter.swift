//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Testing) package import LifecycleKit
@_spi(Testing) package import LifecycleSystemd
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

/// The one way from an action — a mapped signal, a logind announcement, memory pressure, a control request — to an
/// application request, with the policy that depends on where the daemon runs:
///
/// - `SIGTSTP` (Ctrl-Z) backgrounds; run by hand in a terminal, outside systemd, it then stops the process as job
///   control does, and `fg` (SIGCONT) brings the application back. Under systemd it only backgrounds, so the
///   watchdog keeps being fed. As iOS suspends an application only once its background tasks have ended, the stop
///   waits for the tasks running after the transition (the application's background time bounds them): a server
///   that drains on background has finished its requests and closed its listener by then, so a stopped server
///   refuses connections instead of queueing them.
/// - `SIGHUP` reloads, except when the terminal the daemon was started from has hung up: nobody is left to see or
///   stop it, so it terminates cleanly.
@MainActor
final class RequestRouter {
    private let application: Application
    private let terminal: TerminalProbe
    private let stopProcess: @MainActor () -> Void
    private let logger: Logger
    /// A Ctrl-Z waiting for the background tasks to end before the process stops.
    private var stopPending = false

    init(application: Application, effects: DaemonEffects, logger: Logger) {
        self.application = application
        self.terminal = effects.terminal
        self.stopProcess = effects.stopProcess
        self.logger = logger
    }

    /// Whether SIGTSTP stops the process after backgrounding: in a terminal, outside systemd.
    var stopsOnTerminalStop: Bool {
        terminal.startedOnTerminal && terminal.stdinIsTerminal()
    }

    /// Whether a SIGHUP means the terminal went away rather than "reload".
    var terminalHungUp: Bool {
        terminal.startedOnTerminal && terminal.hasHungUp()
    }

    /// Submits `request` with the cause of its `source`; `completion` hears what became of it
    /// (``Application/submit(_:cause:completion:)``).
    func route(_ request: LifecycleRequest, from source: RequestSource, completion: RequestCompletion? = nil) {
        let cause = source.cause
        switch request {
        case .enterBackground:
            application.submit(.enterBackground, cause: cause, completion: completion)
            if source == .signal(.terminalStop), stopsOnTerminalStop, application.applicationState == .background {
                application.runEndOfTurn()
                stopForJobControl()
            }
        case .becomeActive:
            stopPending = false
            application.submit(.becomeActive, cause: cause, completion: completion)
        case .resignActive:
            application.submit(.resignActive, cause: cause, completion: completion)
        case .reload:
            if source == .signal(.hangup), terminalHungUp {
                // The shell's terminal closed: nobody is left to see the daemon or stop it, so end it cleanly
                // instead of reloading forever without a terminal. `kill -HUP` on a live terminal still reloads.
                logger.notice("the terminal hung up: terminating")
                application.submit(.terminate, cause: cause, completion: completion)
            } else {
                application.submit(.reload, cause: cause, completion: completion)
            }
        case .terminate:
            application.submit(.terminate, cause: cause, completion: completion)
        case .memoryWarning:
            application.submit(.memoryWarning, cause: cause, completion: completion)
        }
    }

    /// The set of background tasks changed: a Ctrl-Z waiting for them stops the process once none runs, at the end of
    /// the turn (a task can end inside a callback).
    func tasksDidChange() {
        guard stopPending, application.backgroundTasks.isEmpty else { return }
        application.scheduleTurnEndWork { [weak self] in
            guard let self, stopPending else { return }
            stopForJobControl()
        }
    }

    /// Termination began: a Ctrl-Z still waiting for background tasks no longer stops the process.
    func terminationDidBegin() {
        stopPending = false
    }

    /// Job control: the shell's Ctrl-Z, once the background callbacks have run. Stops like any job, once no
    /// background task runs, and `fg` (SIGCONT) brings the application back to the foreground.
    private func stopForJobControl() {
        guard application.applicationState == .background else {
            stopPending = false
            return
        }
        let tasks = application.backgroundTasks
        guard tasks.isEmpty else {
            if !stopPending {
                stopPending = true
                logger.info(
                    """
                    stopping once \(tasks.count) background task(s) end, within the background time of \
                    \(application.backgroundTime.formattedForLog)
                    """,
                    metadata: ["lifecycle.tasks": .string(tasks.map(\.name).joined(separator: ","))]
                )
            }
            return
        }
        stopPending = false
        logger.info("stopped by SIGTSTP; `fg` or SIGCONT resumes")
        // Stopped, the process writes nothing: the lines of the transition go out first.
        application.trace.flush()
        stopProcess()
    }
}
