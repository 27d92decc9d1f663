//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecycleSystemd
import Logging

/// One record for `JSONLogLine`, read from a fuzzer's bytes: fields split at 0xFF (a byte UTF-8 never has, so every
/// other invalid sequence stays in the fields), the message, the label, then key and value by turns. A value's first
/// byte may make it more than a string: 0x01 an array and 0x02 a dictionary (the rest split at 0xFE into elements,
/// or keys and values by turns), 0x03 a `CustomStringConvertible`. A message or string value that starts with 0x04 and
/// n is the rest repeated to at least (n + 1) KiB, at most 64 KiB: past the line's bound on a value, which a fuzzer's
/// input alone would not reach.
package struct FuzzLogRecord {
    package var message: String
    package var label: String
    package var metadata: Logger.Metadata

    package init(_ bytes: [UInt8]) {
        let fields = bytes.split(separator: 0xFF, omittingEmptySubsequences: false).map(Array.init)
        message = fields.first.map(Self.string) ?? ""
        label = fields.count > 1 ? text(fields[1]) : "fuzz"
        metadata = [:]
        var index = 2
        while index < fields.count {
            let value = index + 1 < fields.count ? Self.value(fields[index + 1]) : .string("")
            metadata[text(fields[index])] = value
            index += 2
        }
    }

    private struct Convertible: CustomStringConvertible, Sendable {
        var description: String
    }

    private static func value(_ bytes: [UInt8]) -> Logger.MetadataValue {
        guard let kind = bytes.first else { return .string("") }
        let rest = Array(bytes.dropFirst())
        let parts = rest.split(separator: 0xFE, omittingEmptySubsequences: false).map { text(Array($0)) }
        switch kind {
        case 0x01:
            return .array(parts.map { .string($0) })
        case 0x02:
            var dictionary: Logger.Metadata = [:]
            for pair in stride(from: 0, to: parts.count, by: 2) {
                dictionary[parts[pair]] = .string(pair + 1 < parts.count ? parts[pair + 1] : "")
            }
            return .dictionary(dictionary)
        case 0x03:
            return .stringConvertible(Convertible(description: text(rest)))
        default:
            return .string(string(bytes))
        }
    }

    /// The text of the bytes, or with 0x04 and n first, the rest repeated to (n + 1) KiB or more, at most 64 KiB.
    private static func string(_ bytes: [UInt8]) -> String {
        guard bytes.count > 2, bytes[0] == 0x04 else { return text(bytes) }
        let unit = bytes.dropFirst(2)
        let target = min((Int(bytes[1]) + 1) << 10, 64 << 10)
        var long: [UInt8] = []
        long.reserveCapacity(target + unit.count)
        while long.count < target { long += unit }
        return text(long)
    }
}

/// What must hold of the line `JSONLogLine` writes for any record: one line (one newline, at the end) of valid UTF-8
/// with no raw control character, DEL, C1 control, U+2028 or U+2029; JSON (``ReferenceJSON``) with no member twice, that
/// `JSONValue.parse` reads as an object whose keys are the record's own then the metadata's journal field names,
/// sorted, and whose values are the record's, each string cut as documented (a model written apart here: whole Unicode
/// scalars up to the bound, then the marker).
package func checkJSONLogLine(_ record: FuzzLogRecord) {
    let (line, valueLimit) = JSONLogLine.line(
        timestamp: "2026-11-23T12:50:51.476839Z",
        level: .notice,
        program: "fuzz",
        label: record.label,
        message: record.message,
        metadata: record.metadata
    )
    check(line.last == 0x0A, "the line does not end with a newline")
    check(
        line.count <= JSONLogLine.maximumLineBytes || valueLimit == JSONLogLine.minimumValueBytes,
        "a line of \(line.count) bytes, its values cut to \(valueLimit)"
    )
    let body = Array(line.dropLast())
    check(!body.contains { $0 < 0x20 || $0 == 0x7F }, "a raw control character in \(String(decoding: body, as: UTF8.self))")
    check(String(validating: body, as: UTF8.self) != nil, "the line is not UTF-8")
    let scalars = String(decoding: body, as: UTF8.self).unicodeScalars
    check(!scalars.contains { (0x80...0x9F).contains($0.value) || $0.value == 0x2028 || $0.value == 0x2029 },
          "a raw C1 control or line separator in the line")
    let verdict = ReferenceJSON.read(body)
    check(verdict.isGrammatical, "the line is not JSON: \(String(decoding: body, as: UTF8.self))")
    check(!verdict.hasDuplicateMember, "the line has a member twice")
    let object: JSONObject
    do {
        guard let parsed = try JSONValue.parse(body, maximumDepth: .max).objectValue else {
            check(false, "the line is not an object")
            return
        }
        object = parsed
    } catch {
        check(false, "the line is refused: \(error)")
        return
    }
    let expected = expectedLogObject(record, valueLimit: valueLimit)
    check(object.keys == expected.keys, "keys \(object.keys), expected \(expected.keys)")
    for member in expected {
        check(object[member.key] == member.value, "\(member.key): \(object[member.key]?.text ?? "none"), expected \(member.value.text)")
    }
}

/// The object a record's line must read as, built apart from the encoder.
private func expectedLogObject(_ record: FuzzLogRecord, valueLimit: Int) -> JSONObject {
    var object = JSONObject()
    object["timestamp"] = .string("2026-11-23T12:50:51.476839Z")
    object["level"] = "notice"
    object["program"] = "fuzz"
    if record.label != "fuzz" { object["label"] = .string(cutModel(record.label, limit: valueLimit)) }
    object["message"] = .string(cutModel(record.message, limit: valueLimit))
    var fields: [String: [(key: String, value: Logger.MetadataValue)]] = [:]
    for (key, value) in record.metadata {
        fields[JSONLogLine.fieldName(forMetadataKey: key), default: []].append((key, value))
    }
    for name in fields.keys.sorted() {
        let numeric = name == JSONLogLine.sequenceField
        let values = fields[name]!.sorted { $0.key < $1.key }.map { expectedValue($0.value, numeric: numeric, limit: valueLimit) }
        object[name] = values.count == 1 ? values[0] : .array(values)
    }
    return object
}

private func expectedValue(_ value: Logger.MetadataValue, numeric: Bool, limit: Int) -> JSONValue {
    func scalar(_ text: String) -> JSONValue {
        if numeric, let number = Int64(text), "\(number)" == text { return .integer(number) }
        return .string(cutModel(text, limit: limit))
    }
    switch value {
    case .string(let text): return scalar(text)
    case .stringConvertible(let convertible): return scalar(convertible.description)
    case .array(let values): return .array(values.map { expectedValue($0, numeric: false, limit: limit) })
    case .dictionary(let dictionary):
        return .object(JSONObject(dictionary.map { ($0.key, expectedValue($0.value, numeric: false, limit: limit)) }))
    }
}

/// The documented cut: whole scalars while their UTF-8 fits the line's bound, then the marker with the bytes left out.
private func cutModel(_ text: String, limit: Int) -> String {
    let total = text.utf8.count
    guard total > limit else { return text }
    var kept = String.UnicodeScalarView()
    var bytes = 0
    for scalar in text.unicodeScalars {
        let size = UTF8.width(scalar)
        guard bytes + size <= limit else { break }
        kept.append(scalar)
        bytes += size
    }
    return String(kept) + JSONLogLine.cutMarker(total - bytes)
}
