//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import LifecyclePrimitives
package import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where the process's log records go, and in what form: the journal under systemd, else lines on stderr.
package enum LoggingBackend: Hashable, Sendable {
    /// Structured records through ``JournalLogHandler``.
    case journal
    /// One `key=value` line per record through ``StderrLogHandler`` (on a terminal, the trace in its human format).
    case text
    /// One JSON object per line per record through ``StderrLogHandler`` (``JSONLogLine``).
    case json

    /// The backend of the `auto` log format for where stderr goes now
    /// (``automatic(stderrIsJournal:stderrIsTerminal:)``).
    package static func detect() -> LoggingBackend {
        automatic(stderrIsJournal: JournalLogHandler.isJournalStream(), stderrIsTerminal: isatty(STDERR_FILENO) == 1)
    }

    /// The `auto` rule: the journal when stderr is a journald stream (`$JOURNAL_STREAM` names its device and inode,
    /// ``JournalLogHandler/isJournalStream()``), the text format (human-readable trace) on a terminal, JSON lines
    /// anywhere else: a pipe, a file, a container's log.
    package static func automatic(stderrIsJournal: Bool, stderrIsTerminal: Bool) -> LoggingBackend {
        if stderrIsJournal { return .journal }
        return stderrIsTerminal ? .text : .json
    }

    /// A handler of this backend for one logger.
    /// Its level follows ``levelOverride``.
    package func makeHandler(label: String, identifier: String, level: Logger.Level) -> any LogHandler {
        switch self {
        case .journal:
            var handler = JournalLogHandler(label: label, identifier: identifier, logLevel: level)
            handler.followsLevelOverride = true
            return handler
        case .text, .json:
            var handler = StderrLogHandler(
                label: label,
                identifier: identifier,
                logLevel: level,
                format: self == .json ? .json : .text
            )
            handler.followsLevelOverride = true
            return handler
        }
    }

    // LoggingSystem.bootstrap traps when called twice in a process; this remembers the first choice instead.
    private static let bootstrapped = ConditionLock<LoggingBackend?>(nil)

    /// Bootstraps swift-log with `backend` (nil: the one ``detect()`` picks) once per process and returns it; later
    /// calls only return it.
    @discardableResult
    package static func bootstrap(
        identifier: String,
        level: Logger.Level,
        backend: LoggingBackend? = nil
    ) -> LoggingBackend {
        bootstrapped.withLock { chosen in
            if let chosen { return chosen }
            let backend = backend ?? detect()
            LoggingSystem.bootstrap { label in backend.makeHandler(label: label, identifier: identifier, level: level) }
            chosen = backend
            return backend
        }
    }
}

extension LoggingBackend {
    private static let levelOverrideStorage = Atomic<Int>(-1)

    /// The level every handler of the process's backend writes at, whatever its logger asked for, while set: what
    /// `io.systemd.service.SetLogLevel` sets at run time. nil (the default): each logger's own level.
    package static var levelOverride: Logger.Level? {
        get {
            let raw = levelOverrideStorage.load(ordering: .relaxed)
            return raw < 0 ? nil : Logger.Level.allCases[raw]
        }
        set {
            levelOverrideStorage.store(newValue.flatMap { Logger.Level.allCases.firstIndex(of: $0) } ?? -1, ordering: .relaxed)
        }
    }

    /// The level a handler configured with `configured` writes at now.
    static func effectiveLevel(
        _ configured: Logger.Level,
        followsOverride: Bool,
        override: Logger.Level? = LoggingBackend.levelOverride
    ) -> Logger.Level {
        followsOverride ? override ?? configured : configured
    }

    /// The swift-log level of a syslog priority (0 emerg … 7 debug), as `SetLogLevel` passes it.
    package static func level(syslogPriority priority: Int) -> Logger.Level? {
        switch priority {
        case 0, 1, 2: .critical
        case 3: .error
        case 4: .warning
        case 5: .notice
        case 6: .info
        case 7: .debug
        default: nil
        }
    }
}

/// One record the process's handlers wrote, as the control socket's followers see it beside the trace.
package struct WrittenRecord: Sendable {
    /// Its level.
    package var level: Logger.Level
    /// Its message.
    package var message: String
    /// Its metadata, merged as the handler wrote it.
    package var metadata: Logger.Metadata
}

extension LoggingBackend {
    private struct Ordering: Sendable {
        var lines: (any OrderedLog)?
        var tap: (@Sendable (WrittenRecord) -> Void)?
    }

    private static let ordering = ConditionLock(Ordering())

    /// The trace lines that every record of this backend's handlers is written after (the daemon's application's, while
    /// it defers them): a record waits until the lines recorded before it are written, so the log reads in the order
    /// things happened (docs/lifecycle.md §7). nil: records are written at once.
    package static var recordsFollow: (any OrderedLog)? {
        get { ordering.withLock { $0.lines } }
        set { ordering.withLock { $0.lines = newValue } }
    }

    /// Called with every record the handlers write (not the trace lines), in the order written, on the thread that
    /// logged it, under the lock that orders them: it must be quick and must not log.
    package static var recordTap: (@Sendable (WrittenRecord) -> Void)? {
        get { ordering.withLock { $0.tap } }
        set { ordering.withLock { $0.tap = newValue } }
    }

    /// How a handler writes one record: after the trace lines that wait (``recordsFollow``), under their lock; a trace
    /// line those lines write (``OrderedLogContext/isWritingLines``) is written at once.
    static func writeInOrder(_ record: @autoclosure () -> WrittenRecord, _ write: () -> Void) {
        if OrderedLogContext.isWritingLines {
            write()
            return
        }
        let (lines, tap) = ordering.withLock { ($0.lines, $0.tap) }
        // A trace line written at once (not deferred) is no record for the tap: followers get the trace from the trace.
        func tapped() {
            guard let tap else { return }
            let written = record()
            if written.metadata[LogKey.sequence] == nil { tap(written) }
        }
        guard let lines else {
            tapped()
            write()
            return
        }
        lines.writeInOrder {
            tapped()
            write()
        }
    }
}
