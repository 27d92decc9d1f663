//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import Logging
import Synchronization

/// Where the process's log records go: the journal under systemd, else stderr lines.
package enum LoggingBackend: Hashable, Sendable {
    /// Structured records through ``JournalLogHandler``.
    case journal
    /// One line per record through ``StderrLogHandler``.
    case stderr

    /// The journal when stderr is a journald stream (``JournalLogHandler/isJournalStream()``), else stderr.
    package static func detect() -> LoggingBackend {
        JournalLogHandler.isJournalStream() ? .journal : .stderr
    }

    /// A handler of this backend for one logger.
    /// Its level follows ``levelOverride``.
    package func makeHandler(label: String, identifier: String, level: Logger.Level) -> any LogHandler {
        switch self {
        case .journal:
            var handler = JournalLogHandler(label: label, identifier: identifier, logLevel: level)
            handler.followsLevelOverride = true
            return handler
        case .stderr:
            var handler = StderrLogHandler(label: label, identifier: identifier, logLevel: level)
            handler.followsLevelOverride = true
            return handler
        }
    }

    // LoggingSystem.bootstrap traps when called twice in a process; this remembers the first choice instead.
    private static let bootstrapped = Mutex<LoggingBackend?>(nil)

    /// Bootstraps swift-log with the detected backend once per process and returns it; later calls only return it.
    @discardableResult
    package static func bootstrap(identifier: String, level: Logger.Level) -> LoggingBackend {
        bootstrapped.withLock { chosen in
            if let chosen { return chosen }
            let backend = detect()
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
