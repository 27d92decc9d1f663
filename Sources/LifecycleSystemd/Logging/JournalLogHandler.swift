//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A swift-log handler that writes each record to the systemd journal as structured fields.
///
/// Every record carries `MESSAGE`, `PRIORITY` (syslog 0–7), `CODE_FILE`, `CODE_LINE`, `CODE_FUNC`,
/// `SYSLOG_IDENTIFIER` and `SWIFT_LOG_LABEL`, plus one field per metadata key, named by
/// ``fieldName(forMetadataKey:)`` (`lifecycle.event` becomes `LIFECYCLE_EVENT`).
package struct JournalLogHandler: LogHandler {
    /// The swift-log label of the logger this handler serves.
    package let label: String
    /// The `SYSLOG_IDENTIFIER` of every record, as `journalctl -t` filters it.
    package let identifier: String
    /// The minimum level this handler is asked to write (``LoggingBackend/levelOverride`` replaces it while set, for
    /// a handler that ``followsLevelOverride``).
    package var logLevel: Logger.Level {
        get { LoggingBackend.effectiveLevel(configuredLevel, followsOverride: followsLevelOverride) }
        set { configuredLevel = newValue }
    }
    private var configuredLevel: Logger.Level
    /// Whether ``LoggingBackend/levelOverride`` applies: true for the handlers of the process's backend
    /// (``LoggingBackend/makeHandler(label:identifier:level:)``).
    package var followsLevelOverride = false
    /// Metadata attached to every record of this handler.
    package var metadata: Logger.Metadata = [:]
    /// Supplies contextual metadata at the time of each record.
    package var metadataProvider: Logger.MetadataProvider?
    /// Where the records go: the process's writer to journald's socket, unless another is given.
    package let writer: JournalWriter

    /// Makes a handler for one logger.
    package init(
        label: String,
        identifier: String,
        logLevel: Logger.Level = .info,
        metadataProvider: Logger.MetadataProvider? = nil,
        writer: JournalWriter = .shared
    ) {
        self.label = label
        self.identifier = identifier
        self.configuredLevel = logLevel
        self.metadataProvider = metadataProvider
        self.writer = writer
    }

    /// Reads or writes one metadata value of this handler.
    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Hands the record to ``writer``, which sends it to journald at once when journald takes it and never blocks:
    /// otherwise the record waits in the writer's bounded queue (see ``JournalWriter``). A record journald refuses for
    /// good is written to stderr by the writer, with the error. The trace lines that wait are written first
    /// (``LoggingBackend/recordsFollow``), so the journal has them in the order things happened.
    ///
    /// Where journald is not running at all, the records wait and are dropped, which is why ``LoggingBackend`` picks
    /// this handler only when stderr is a journal stream.
    package func log(event: LogEvent) {
        let merged = mergedMetadata(handler: metadata, provider: metadataProvider, event: event.metadata)
        let fields = journalFields(for: event, metadata: merged)
        LoggingBackend.writeInOrder(WrittenRecord(level: event.level, message: "\(event.message)", metadata: merged)) {
            writer.submit(fields, identifier: identifier)
        }
    }

    /// The journal fields of one record, each `NAME=value`, in the order they are sent.
    func journalFields(for event: LogEvent) -> [String] {
        journalFields(
            for: event,
            metadata: mergedMetadata(handler: metadata, provider: metadataProvider, event: event.metadata)
        )
    }

    private func journalFields(for event: LogEvent, metadata merged: Logger.Metadata) -> [String] {
        var fields = [
            "MESSAGE=\(event.message)",
            "PRIORITY=\(Self.syslogPriority(for: event.level))",
            "CODE_FILE=\(event.file)",
            "CODE_LINE=\(event.line)",
            "CODE_FUNC=\(event.function)",
            "SYSLOG_IDENTIFIER=\(identifier)",
            "SWIFT_LOG_LABEL=\(label)",
        ]
        if let error = event.error {
            fields.append("ERROR=\(String(describing: error))")
        }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            fields.append("\(Self.fieldName(forMetadataKey: key))=\(value)")
        }
        return fields
    }

    /// The syslog priority journald files a swift-log level under: trace and debug 7 … critical 2.
    package static func syslogPriority(for level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// The longest field name journald accepts.
    package static let maximumFieldNameLength = 64

    /// A valid journald field name for a metadata key: `lifecycle.event` → `LIFECYCLE_EVENT`.
    ///
    /// Letters are uppercased, every other character outside `[A-Z0-9_]` becomes `_`, leading underscores are
    /// dropped (journald reserves them for fields it sets itself), a name starting with a digit gets the
    /// prefix `FIELD_`, an empty one becomes `FIELD`, and the result is cut to 64 characters.
    package static func fieldName(forMetadataKey key: String) -> String {
        var scalars = key.unicodeScalars.map { scalar -> Unicode.Scalar in
            switch scalar {
            case "A"..."Z", "0"..."9", "_": scalar
            case "a"..."z": Unicode.Scalar(scalar.value - 0x20)!
            default: "_"
            }
        }
        scalars.removeFirst(scalars.prefix { $0 == "_" }.count)
        var name = String(String.UnicodeScalarView(scalars))
        if name.isEmpty {
            name = "FIELD"
        } else if let first = name.unicodeScalars.first, ("0"..."9").contains(first) {
            name = "FIELD_" + name
        }
        return String(name.prefix(maximumFieldNameLength))
    }

    /// True when stderr is connected to the journal: `$JOURNAL_STREAM` names stderr's device and inode.
    package static func isJournalStream() -> Bool {
        isJournalStream(environmentValue: ProcessEnvironment.value("JOURNAL_STREAM"), fileDescriptor: STDERR_FILENO)
    }

    /// systemd's documented test: `$JOURNAL_STREAM` is `device:inode` of the stream it connected, which a
    /// process compares with fstat(2) of its own descriptor (the variable is inherited by children whose
    /// stderr may point elsewhere).
    static func isJournalStream(environmentValue: String?, fileDescriptor: Int32) -> Bool {
        guard let environmentValue else { return false }
        let parts = environmentValue.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(fileDescriptor, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}
