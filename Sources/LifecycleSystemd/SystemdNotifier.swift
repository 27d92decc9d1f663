import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// One `KEY=VALUE` assignment of the sd_notify(3) protocol.
public enum NotifyAssignment: Hashable, Sendable {
    /// `READY=1`: start-up (or a reload) finished.
    case ready
    /// `STATUS=…`: a one-line status shown by `systemctl status`.
    case status(String)
    /// `RELOADING=1` plus `MONOTONIC_USEC=` (CLOCK_MONOTONIC when rendered), which systemd 253+ orders reloads by.
    case reloading
    /// `STOPPING=1`: shutdown began.
    case stopping
    /// `WATCHDOG=1`: keep-alive ping.
    case watchdog
    /// `WATCHDOG=trigger`: asks systemd to act as if the watchdog timed out.
    case watchdogTrigger
    /// `EXTEND_TIMEOUT_USEC=`: the current start, reload or stop needs this much more time from now.
    case extendTimeout(Duration)
    /// `ERRNO=`: the errno-style reason the service failed.
    case errno(Int32)
    /// `MAINPID=`: the main process of the service, when it is not the sender.
    case mainPID(pid_t)

    /// The assignment as sent, e.g. `STATUS=active`; `.reloading` renders two lines.
    public var line: String {
        switch self {
        case .ready:
            return "READY=1"
        case .status(let text):
            // A newline would end the assignment and start another one: keep the status on its line.
            let oneLine = String(text.map { $0.isNewline ? " " : $0 })
            return "STATUS=\(oneLine)"
        case .reloading:
            return "RELOADING=1\nMONOTONIC_USEC=\(monotonicMicroseconds())"
        case .stopping:
            return "STOPPING=1"
        case .watchdog:
            return "WATCHDOG=1"
        case .watchdogTrigger:
            return "WATCHDOG=trigger"
        case .extendTimeout(let duration):
            return "EXTEND_TIMEOUT_USEC=\(duration.microsecondsRoundedUp)"
        case .errno(let code):
            return "ERRNO=\(code)"
        case .mainPID(let pid):
            return "MAINPID=\(pid)"
        }
    }
}

/// Sends sd_notify(3) messages to the service manager, or does nothing when not started by one.
public struct SystemdNotifier: Sendable {
    /// The notification socket named by `$NOTIFY_SOCKET` when the notifier was made; nil outside a notify service.
    public let socketPath: String?

    /// A notifier whose every `notify` is a silent no-op.
    public static let disabled = SystemdNotifier(socketPath: nil)

    private init(socketPath: String?) {
        self.socketPath = socketPath
    }

    /// Reads `$NOTIFY_SOCKET`; without it the notifier is disabled.
    public static func fromEnvironment() -> SystemdNotifier {
        SystemdNotifier(socketPath: ProcessEnvironment.value("NOTIFY_SOCKET"))
    }

    /// Whether messages are sent at all.
    public var isEnabled: Bool { socketPath != nil }

    /// True when a service manager started this process (`$INVOCATION_ID` or `$NOTIFY_SOCKET` is set).
    public static var isUnderSystemd: Bool {
        ProcessEnvironment.value("INVOCATION_ID") != nil || ProcessEnvironment.value("NOTIFY_SOCKET") != nil
    }

    /// Sends the assignments as one datagram, one per line; a no-op when disabled.
    public func notify(_ assignments: [NotifyAssignment]) throws(SystemdError) {
        guard isEnabled, !assignments.isEmpty else { return }
        let message = assignments.map(\.line).joined(separator: "\n")
        // sd_notify reads $NOTIFY_SOCKET again at every call; it is left in the environment so that
        // sd_event's watchdog (which calls sd_notify itself) keeps working.
        try SystemdError.check(sd_notify(0, message), "sd_notify(\(message.debugDescription))")
    }

    /// Sends the assignments as one datagram, one per line; a no-op when disabled.
    public func notify(_ assignments: NotifyAssignment...) throws(SystemdError) {
        try notify(assignments)
    }

    /// The watchdog timeout systemd expects pings within (`$WATCHDOG_USEC` for this PID), or nil when none is set.
    public func watchdogInterval() -> Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0 else { return nil }
        return .microseconds(Int64(clamping: usec))
    }
}
