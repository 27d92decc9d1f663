import LifecycleKit
import LifecycleSystemd
import Logging

/// Where a request comes from; it names the transition's cause in the trace (`LIFECYCLE_CAUSE`).
public enum RequestSource: Hashable, Sendable {
    /// A Unix signal: `signal:SIGUSR1`.
    case signal(UnixSignal)
    /// A logind announcement: `logind:PrepareForSleep`.
    case logind(member: String)
    /// Memory pressure (PSI): `psi`.
    case memoryPressure
    /// A control request (lifecyclectl, varlink): `control`.
    case control

    /// The cause written to the trace.
    public var cause: Cause {
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
///   watchdog keeps being fed.
/// - `SIGHUP` reloads, except when the terminal the daemon was started from has hung up: nobody is left to see or
///   stop it, so it terminates cleanly.
@MainActor
final class RequestRouter {
    private let application: Application
    private let terminal: TerminalProbe
    private let stopProcess: @MainActor () -> Void
    private let logger: Logger

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

    /// Submits what `action` asks for, with the cause of its `source`; `completion` hears what became of it
    /// (``Application/submit(_:cause:completion:)``).
    func route(_ action: SignalAction, from source: RequestSource, completion: RequestCompletion? = nil) {
        let cause = source.cause
        switch action {
        case .background:
            application.submit(.enterBackground, cause: cause, completion: completion)
            if source == .signal(.terminalStop), stopsOnTerminalStop, application.applicationState == .background {
                // Job control: the shell's Ctrl-Z. The background callbacks have run; stop like any job, and `fg`
                // (SIGCONT) brings the application back to the foreground.
                application.runEndOfTurn()
                logger.info("stopped by SIGTSTP; `fg` or SIGCONT resumes")
                // Stopped, the process writes nothing: the lines of the transition go out first.
                application.trace.flush()
                stopProcess()
            }
        case .foreground:
            application.submit(.becomeActive, cause: cause, completion: completion)
        case .inactive:
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
        case .default:
            completion?(.noChange)
        }
    }
}
