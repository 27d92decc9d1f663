import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A swift-log handler that writes one line per record to stderr, for use outside journald.
///
/// Lines read `2026-05-20T10:11:12.345678Z info lifecycled: message key=value key=value`, with the metadata
/// keys sorted. Each line is one write(2), so it is flushed at once and lines from threads do not interleave.
public struct StderrLogHandler: LogHandler {
    /// The swift-log label of the logger this handler serves.
    public let label: String
    /// The program name written before each message.
    public let identifier: String
    /// The minimum level this handler is asked to write.
    public var logLevel: Logger.Level
    /// Metadata attached to every record of this handler.
    public var metadata: Logger.Metadata = [:]
    /// Supplies contextual metadata at the time of each record.
    public var metadataProvider: Logger.MetadataProvider?
    private let fileDescriptor: Int32

    /// Makes a handler for one logger.
    public init(
        label: String,
        identifier: String,
        logLevel: Logger.Level = .info,
        metadataProvider: Logger.MetadataProvider? = nil
    ) {
        self.init(label: label, identifier: identifier, logLevel: logLevel, metadataProvider: metadataProvider,
                  fileDescriptor: STDERR_FILENO)
    }

    /// Makes a handler writing to another descriptor (tests read a pipe).
    init(
        label: String,
        identifier: String,
        logLevel: Logger.Level,
        metadataProvider: Logger.MetadataProvider?,
        fileDescriptor: Int32
    ) {
        self.label = label
        self.identifier = identifier
        self.logLevel = logLevel
        self.metadataProvider = metadataProvider
        self.fileDescriptor = fileDescriptor
    }

    /// Reads or writes one metadata value of this handler.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes the record as one line.
    public func log(event: LogEvent) {
        var metadata = mergedMetadata(handler: self.metadata, provider: metadataProvider, event: event.metadata)
        if let error = event.error {
            metadata["error"] = "\(String(describing: error))"
        }
        let line = Self.line(
            timestamp: Self.timestamp(),
            level: event.level,
            identifier: identifier,
            message: "\(event.message)",
            metadata: metadata
        )
        writeFully(line)
    }

    /// One record's line, newline included; newlines inside the message or values are escaped as `\n`.
    static func line(
        timestamp: String,
        level: Logger.Level,
        identifier: String,
        message: String,
        metadata: Logger.Metadata
    ) -> String {
        var line = "\(timestamp) \(level) \(identifier): \(escapeNewlines(message))"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line += " \(key)=\(quotedIfNeeded("\(value)"))"
        }
        line += "\n"
        return line
    }

    /// The current UTC time as ISO 8601 with microseconds, e.g. `2026-05-20T10:11:12.345678Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return timestamp(seconds: now.tv_sec, nanoseconds: Int(now.tv_nsec))
    }

    /// A UTC time as ISO 8601 with microseconds.
    static func timestamp(seconds: time_t, nanoseconds: Int) -> String {
        var seconds = seconds
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return padded(Int(parts.tm_year) + 1900, 4) + "-" + padded(Int(parts.tm_mon) + 1, 2) + "-"
            + padded(Int(parts.tm_mday), 2) + "T" + padded(Int(parts.tm_hour), 2) + ":"
            + padded(Int(parts.tm_min), 2) + ":" + padded(Int(parts.tm_sec), 2) + "."
            + padded(nanoseconds / 1_000, 6) + "Z"
    }

    private static func escapeNewlines(_ text: String) -> String {
        // One record must stay one line, or a reader splitting on newlines sees a forged record.
        guard text.contains(where: \.isNewline) else { return text }
        var escaped = ""
        for character in text {
            escaped += character.isNewline ? "\\n" : String(character)
        }
        return escaped
    }

    private static func quotedIfNeeded(_ value: String) -> String {
        // A value with a space or `=` would read as several pairs; quote it like Swift would.
        let needsQuotes = value.isEmpty || value.contains { $0.isWhitespace || $0 == "=" || $0 == "\"" }
        return needsQuotes ? value.debugDescription : value
    }

    private func writeFully(_ line: String) {
        var line = line
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    // Nowhere left to report a broken stderr; dropping the line is all that remains.
                    return
                }
                offset += written
            }
        }
    }
}
