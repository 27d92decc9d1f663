//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecyclePrimitives
public import Logging

/// One log record as one line of JSON: the `json` log format (docs/operations.md, "Log formats").
///
/// ```
/// {"timestamp":"2026-11-23T12:50:51.476871Z","level":"info","program":"lifecycled","message":"worker paused"}
/// {"timestamp":"2026-11-23T12:50:51.476902Z","level":"info","program":"lifecycled","message":"…","LIFECYCLE_CAUSE":…}
/// ```
///
/// The line is an object whose first members are the record's own, in this order and lowercase: `timestamp` (RFC 3339,
/// UTC, microseconds), `level` (swift-log's), `program` (the journal's `SYSLOG_IDENTIFIER`), `label` (the logger's,
/// only where it differs from `program`) and `message`. Every metadata key follows as the journal names its field
/// (``JournalLogHandler/fieldName(forMetadataKey:)``: `lifecycle.seq` is `LIFECYCLE_SEQ`, an attached error
/// `ERROR`), sorted: those names are uppercase, so none is ever one of the record's own. Where several keys make one
/// name (`a.b` and `a_b` are both `A_B`), its value is the array of their values, as `journalctl -o json` shows a field
/// an entry has more than once. `LIFECYCLE_SEQ` is a number; every other value is a string, a metadata array an array
/// and a metadata dictionary an object (its keys whole, sorted).
///
/// Whatever the values hold, the line is one line of valid UTF-8 JSON with no duplicate key: every control character,
/// U+2028 and U+2029 are escaped (`JSONValue.writeString`), and a string longer than ``maximumValueBytes`` of UTF-8 is
/// cut at a character boundary and ends with ``cutMarker(_:)``. Bytes that are not UTF-8 never reach it: a Swift string
/// holds valid Unicode, and text read from outside became one with U+FFFD in place of each invalid sequence. A line
/// longer than ``maximumLineBytes`` (escapes make a cut value up to six times longer, and a record may have several
/// long values) is written again with every value cut to half as much, down to ``minimumValueBytes``.
public enum JSONLogLine {
    /// The most bytes of UTF-8 of one string value that a line holds; the rest is cut.
    ///
    /// Container runtimes split a log line longer than 16 KiB into partial lines (containerd's and Docker's default),
    /// which their collectors join again: a line with one value of ordinary text cut here stays within that.
    public static let maximumValueBytes = 8192

    /// The longest line, newline included: what containerd and Docker pass on as one line. Only a record with so many
    /// metadata fields, or keys so long (keys are not cut below ``maximumValueBytes``), that values cut to
    /// ``minimumValueBytes`` do not fit makes a longer one.
    public static let maximumLineBytes = 16 * 1024

    /// How far the values of a line that would be too long are cut, at most.
    public static let minimumValueBytes = 64

    /// What follows the kept part of a cut string: how many bytes of UTF-8 were left out.
    public static func cutMarker(_ omitted: Int) -> String { "…[\(omitted) bytes cut]" }

    /// The journal field name of the trace's sequence number, the one value written as a number.
    public static let sequenceField = fieldName(forMetadataKey: LogKey.sequence)

    /// The key a metadata key has in the line: the journal's field name for it
    /// (``JournalLogHandler/fieldName(forMetadataKey:)``).
    public static func fieldName(forMetadataKey key: String) -> String {
        JournalLogHandler.fieldName(forMetadataKey: key)
    }

    /// The record's line, newline included, and the bytes of UTF-8 each of its string values was cut to:
    /// ``maximumValueBytes``, or less for a line that would otherwise be longer than ``maximumLineBytes``.
    public static func line(
        timestamp: String,
        level: Logger.Level,
        program: String,
        label: String,
        message: String,
        metadata: Logger.Metadata
    ) -> (bytes: [UInt8], valueLimit: Int) {
        let fields = Self.fields(of: metadata)
        var limit = maximumValueBytes
        while true {
            let line = encode(timestamp, level, program, label, message, fields, valueLimit: limit)
            if line.count <= maximumLineBytes || limit <= minimumValueBytes { return (line, limit) }
            limit /= 2
        }
    }

    private static func encode(
        _ timestamp: String,
        _ level: Logger.Level,
        _ program: String,
        _ label: String,
        _ message: String,
        _ fields: [(name: String, values: [Logger.MetadataValue])],
        valueLimit limit: Int
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128 + min(message.utf8.count, limit) + fields.count * 40)
        bytes.append(UInt8(ascii: "{"))
        member("timestamp", first: true, &bytes)
        appendString(timestamp, limit: limit, to: &bytes)
        member("level", &bytes)
        appendString(level.rawValue, limit: limit, to: &bytes)
        member("program", &bytes)
        appendString(program, limit: limit, to: &bytes)
        if label != program {
            member("label", &bytes)
            appendString(label, limit: limit, to: &bytes)
        }
        member("message", &bytes)
        appendString(message, limit: limit, to: &bytes)
        for field in fields {
            member(field.name, &bytes)
            if field.values.count == 1 {
                appendValue(field.values[0], numeric: field.name == sequenceField, limit: limit, to: &bytes)
            } else {
                bytes.append(UInt8(ascii: "["))
                for (index, value) in field.values.enumerated() {
                    if index > 0 { bytes.append(UInt8(ascii: ",")) }
                    appendValue(value, numeric: field.name == sequenceField, limit: limit, to: &bytes)
                }
                bytes.append(UInt8(ascii: "]"))
            }
        }
        bytes.append(UInt8(ascii: "}"))
        bytes.append(0x0A)
        return bytes
    }

    /// The metadata as journal fields, sorted by name; keys that make the same name are one field with the values in
    /// the order of their keys.
    static func fields(of metadata: Logger.Metadata) -> [(name: String, values: [Logger.MetadataValue])] {
        let named = metadata.map { key, value in
            (name: fieldName(forMetadataKey: key), key: key, value: value)
        }.sorted { ($0.name, $0.key) < ($1.name, $1.key) }
        var fields: [(name: String, values: [Logger.MetadataValue])] = []
        fields.reserveCapacity(named.count)
        for entry in named {
            if fields.last?.name == entry.name {
                fields[fields.count - 1].values.append(entry.value)
            } else {
                fields.append((entry.name, [entry.value]))
            }
        }
        return fields
    }

    /// A member's key, cut at ``maximumValueBytes`` only, whatever the line's values are cut to: two keys cut shorter
    /// could become one member twice.
    private static func member(_ key: String, first: Bool = false, _ bytes: inout [UInt8]) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        appendString(key, limit: maximumValueBytes, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    private static func appendValue(
        _ value: Logger.MetadataValue,
        numeric: Bool,
        limit: Int,
        to bytes: inout [UInt8]
    ) {
        switch value {
        case .string(let text):
            appendScalar(text, numeric: numeric, limit: limit, to: &bytes)
        case .stringConvertible(let convertible):
            appendScalar(convertible.description, numeric: numeric, limit: limit, to: &bytes)
        case .array(let values):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                appendValue(element, numeric: false, limit: limit, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .dictionary(let dictionary):
            bytes.append(UInt8(ascii: "{"))
            for (index, element) in dictionary.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                // The key whole: cut, two keys could become one member twice.
                JSONValue.writeString(element.key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                appendValue(element.value, numeric: false, limit: limit, to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// A string value, or for `LIFECYCLE_SEQ` a number when it is a whole number written as one.
    private static func appendScalar(_ text: String, numeric: Bool, limit: Int, to bytes: inout [UInt8]) {
        if numeric, let number = Int64(text), String(number) == text {
            bytes.append(contentsOf: text.utf8)
        } else {
            appendString(text, limit: limit, to: &bytes)
        }
    }

    private static func appendString(_ text: String, limit: Int, to bytes: inout [UInt8]) {
        JSONValue.writeString(cut(text, limit: limit), to: &bytes)
    }

    /// `text` within `limit` bytes of UTF-8: unchanged, or its longest prefix of whole characters (Unicode scalars)
    /// that fits, followed by ``cutMarker(_:)``.
    public static func cut(_ text: String, limit: Int = maximumValueBytes) -> String {
        let utf8 = text.utf8
        guard utf8.count > limit else { return text }
        var end = utf8.index(utf8.startIndex, offsetBy: limit)
        // Back to the first byte of a scalar: continuation bytes are 0b10xxxxxx.
        while end > utf8.startIndex, utf8[end] & 0xC0 == 0x80 { end = utf8.index(before: end) }
        let kept = utf8.distance(from: utf8.startIndex, to: end)
        return String(decoding: utf8[..<end], as: UTF8.self) + cutMarker(utf8.count - kept)
    }
}
