import Logging
import Synchronization

/// Where the process's log records go: the journal under systemd, else stderr lines.
public enum LoggingBackend: Hashable, Sendable {
    /// Structured records through ``JournalLogHandler``.
    case journal
    /// One line per record through ``StderrLogHandler``.
    case stderr

    /// The journal when stderr is a journald stream (``JournalLogHandler/isJournalStream()``), else stderr.
    public static func detect() -> LoggingBackend {
        JournalLogHandler.isJournalStream() ? .journal : .stderr
    }

    /// A handler of this backend for one logger.
    public func makeHandler(label: String, identifier: String, level: Logger.Level) -> any LogHandler {
        switch self {
        case .journal: JournalLogHandler(label: label, identifier: identifier, logLevel: level)
        case .stderr: StderrLogHandler(label: label, identifier: identifier, logLevel: level)
        }
    }

    // LoggingSystem.bootstrap traps when called twice in a process; this remembers the first choice instead.
    private static let bootstrapped = Mutex<LoggingBackend?>(nil)

    /// Bootstraps swift-log with the detected backend once per process and returns it; later calls only return it.
    @discardableResult
    public static func bootstrap(identifier: String, level: Logger.Level) -> LoggingBackend {
        bootstrapped.withLock { chosen in
            if let chosen { return chosen }
            let backend = detect()
            LoggingSystem.bootstrap { label in backend.makeHandler(label: label, identifier: identifier, level: level) }
            chosen = backend
            return backend
        }
    }
}
