//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd
import LifecyclePrimitives
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A swift-log handler that writes one line per record to stderr, for use outside journald, in one of two formats.
///
/// ``Format/text`` lines read `2026-05-20T10:11:12.345678Z info lifecycled: message key=value key=value`, with the
/// metadata keys sorted (on a terminal, trace events in the human format of ``TraceFormatter``); ``Format/json`` lines
/// are one JSON object each (``JSONLogLine``). Each line is one write(2), so it is flushed at once and lines from
/// threads do not interleave.
package struct StderrLogHandler: LogHandler {
    /// How records are written.
    package enum Format: Hashable, Sendable {
        /// `key=value` lines; on a terminal, trace events in the human format.
        case text
        /// One JSON object per line (``JSONLogLine``), on a terminal too.
        case json
    }

    /// The swift-log label of the logger this handler serves.
    package let label: String
    /// The program name written before each message.
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
    /// How records are written.
    package let format: Format
    private let fileDescriptor: Int32
    /// On a terminal, trace events in the human format (``TraceFormatter``), shared by every handler of the process.
    private let terminalTrace: SharedTraceFormatter?

    /// Makes a handler for one logger. In the text format on a terminal, trace events are written in the human format
    /// of ``TraceFormatter`` (in colour unless `NO_COLOR` is set); elsewhere every record is one `key=value` line. In
    /// the JSON format every record is one JSON line, wherever stderr goes.
    package init(
        label: String,
        identifier: String,
        logLevel: Logger.Level = .info,
        metadataProvider: Logger.MetadataProvider? = nil,
        format: Format = .text
    ) {
        self.init(label: label, identifier: identifier, logLevel: logLevel, metadataProvider: metadataProvider,
                  fileDescriptor: STDERR_FILENO, format: format,
                  terminalTrace: format == .text ? Self.standardErrorTrace : nil)
    }

    /// Makes a handler writing to another descriptor (tests read a pipe), with the human trace format or without.
    init(
        label: String,
        identifier: String,
        logLevel: Logger.Level,
        metadataProvider: Logger.MetadataProvider?,
        fileDescriptor: Int32,
        format: Format = .text,
        terminalTrace: SharedTraceFormatter? = nil
    ) {
        self.label = label
        self.identifier = identifier
        self.configuredLevel = logLevel
        self.metadataProvider = metadataProvider
        self.fileDescriptor = fileDescriptor
        self.format = format
        self.terminalTrace = format == .text ? terminalTrace : nil
    }

    /// The human trace format for stderr, when stderr is a terminal (decided once per process).
    static let standardErrorTrace: SharedTraceFormatter? =
        isatty(STDERR_FILENO) == 1 ? SharedTraceFormatter(style: TerminalStyle(isTerminal: true, environment: ProcessEnvironment.all())) : nil

    /// Reads or writes one metadata value of this handler.
    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes the record as one line, after the trace lines that wait (``LoggingBackend/recordsFollow``), so the
    /// terminal or the pipe has them in the order things happened.
    package func log(event: LogEvent) {
        var metadata = mergedMetadata(handler: self.metadata, provider: metadataProvider, event: event.metadata)
        if let error = event.error {
            metadata["error"] = "\(String(describing: error))"
        }
        let written = WrittenRecord(level: event.level, message: "\(event.message)", metadata: metadata)
        // Stamped in the ordered write, not before it: a trace line with the moment its callback fired
        // (OrderedLogContext.eventTime), any other record when its turn to be written comes, after the lines that wait.
        // So the lines' times never go backwards, and a collector that sorts by time keeps the order things happened.
        if format == .json {
            LoggingBackend.writeInOrder(written) {
                let line = JSONLogLine.line(
                    timestamp: Self.timestamp(),
                    level: event.level,
                    program: identifier,
                    label: label,
                    message: written.message,
                    metadata: metadata
                ).bytes
                Self.writeFully(line, to: fileDescriptor)
            }
            return
        }
        if let terminalTrace, let record = TraceRecord(metadata: metadata) {
            LoggingBackend.writeInOrder(written) { terminalTrace.write(record, to: fileDescriptor) }
            return
        }
        LoggingBackend.writeInOrder(written) {
            let line = Self.line(
                timestamp: Self.timestamp(),
                level: event.level,
                identifier: identifier,
                message: written.message,
                metadata: metadata
            )
            if let terminalTrace {
                // After the count of a run of folded trace events, so the order on the terminal stays true.
                terminalTrace.write(line: line, to: fileDescriptor)
            } else {
                Self.writeFully(line, to: fileDescriptor)
            }
        }
    }

    /// One record's line, newline included; what must not reach a terminal inside the message or values (a newline,
    /// an escape sequence, a C1 control, a line separator) is written out visibly (``VisibleText``).
    ///
    /// Built as UTF-8 bytes with byte scans, not `Character` walks: this runs for every trace event written to a
    /// terminal, before the callback it reports (measured: the `Character`-based version cost ~95k instructions a
    /// line, most of a signal's latency).
    static func line(
        timestamp: String,
        level: Logger.Level,
        identifier: String,
        message: String,
        metadata: Logger.Metadata
    ) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(96 + message.utf8.count + metadata.count * 32)
        bytes.append(contentsOf: timestamp.utf8)
        bytes.append(0x20)
        bytes.append(contentsOf: level.rawValue.utf8)
        bytes.append(0x20)
        bytes.append(contentsOf: identifier.utf8)
        bytes.append(contentsOf: ": ".utf8)
        appendVisibly(message, to: &bytes)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            bytes.append(0x20)
            bytes.append(contentsOf: key.utf8)
            bytes.append(0x3D)
            appendQuotedIfNeeded("\(value)", to: &bytes)
        }
        bytes.append(0x0A)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The time of the record being written as ISO 8601 UTC with microseconds, e.g. `2026-05-20T10:11:12.345678Z`:
    /// a trace line's moment (``OrderedLogContext/eventTime``) while one is written, otherwise now.
    static func timestamp() -> String {
        let time = OrderedLogContext.eventTime ?? WallClock.now()
        return timestamp(seconds: time.seconds, nanoseconds: time.nanoseconds)
    }

    /// A UTC time as ISO 8601 with microseconds.
    static func timestamp(seconds: time_t, nanoseconds: Int) -> String {
        var seconds = seconds
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(27)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(0x30 + UInt8((rest / divisor) % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        bytes.append(0x2D)
        digits(Int(parts.tm_mon) + 1, 2)
        bytes.append(0x2D)
        digits(Int(parts.tm_mday), 2)
        bytes.append(0x54)
        digits(Int(parts.tm_hour), 2)
        bytes.append(0x3A)
        digits(Int(parts.tm_min), 2)
        bytes.append(0x3A)
        digits(Int(parts.tm_sec), 2)
        bytes.append(0x2E)
        digits(nanoseconds / 1_000, 6)
        bytes.append(0x5A)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `text` with every scalar that must not reach a terminal as it is written out visibly
    /// (``VisibleText``: `\n`, `\r`, `\x1b`, `\u{85}`, `\u{2028}`, a bidirectional override), as the JSON and trace
    /// formats escape them: one record stays one line, and a message or value read from outside (a path, a name from a
    /// file) can neither forge a line nor drive the terminal.
    private static func appendVisibly(_ text: String, to bytes: inout [UInt8]) {
        // The bytes that can begin an unsafe scalar: C0 controls, DEL, 0xC2 (C1 controls are U+0080–U+009F) and 0xE2
        // (U+2028, U+2029 and the bidirectional controls); text without any is written as it is, at byte speed.
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 || $0 == 0xE2 }) else {
            bytes.append(contentsOf: text.utf8)
            return
        }
        bytes.append(contentsOf: VisibleText.escaped(text).utf8)
    }

    private static func appendQuotedIfNeeded(_ value: String, to bytes: inout [UInt8]) {
        // A value with a space or `=` would read as several pairs; quote it like Swift would.
        let needsQuotes = value.utf8.isEmpty || value.utf8.contains { byte in
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x3D || byte == 0x22
                || byte == 0x0B || byte == 0x0C || byte >= 0x80
        }
        if needsQuotes {
            appendVisibly(value.debugDescription, to: &bytes)
        } else {
            appendVisibly(value, to: &bytes)
        }
    }

    static func writeFully(_ line: String, to fileDescriptor: Int32) {
        var line = line
        line.withUTF8 { writeFully($0, to: fileDescriptor) }
    }

    static func writeFully(_ line: [UInt8], to fileDescriptor: Int32) {
        line.withUnsafeBufferPointer { writeFully($0, to: fileDescriptor) }
    }

    private static func writeFully(_ bytes: UnsafeBufferPointer<UInt8>, to fileDescriptor: Int32) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = write(fileDescriptor, base + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                // Nowhere left to report a broken stderr; dropping the line is all that remains.
                return
            }
            offset += written
        }
    }
}

/// One ``TraceFormatter`` for every handler writing to a terminal, with the lock that keeps its lines (and the counts
/// of folded repeats) in the order they were written.
final class SharedTraceFormatter: Sendable {
    private let formatter: ConditionLock<TraceFormatter>

    init(style: TerminalStyle) {
        formatter = ConditionLock(TraceFormatter(style: style))
    }

    /// Writes a trace event's line (nothing while it repeats the one before).
    func write(_ record: TraceRecord, to fileDescriptor: Int32) {
        formatter.withLock { formatter in
            let text = formatter.format(record)
            if !text.isEmpty { StderrLogHandler.writeFully(text, to: fileDescriptor) }
        }
    }

    /// Writes a line that is not a trace event, after the count of folded repeats that waits.
    func write(line: String, to fileDescriptor: Int32) {
        formatter.withLock { formatter in
            StderrLogHandler.writeFully(formatter.flush() + line, to: fileDescriptor)
        }
    }
}
