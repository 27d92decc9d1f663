//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives

/// A JSON value, as varlink messages carry them: parsed strictly from bytes (RFC 8259, UTF-8, bounded nesting, no
/// duplicate keys) and written compactly, object members in the order they were given.
///
/// The control socket reads messages from peers it does not control: this parser never recurses deeper than
/// ``JSONParser/maximumDepth`` (no stack exhaustion), rejects anything RFC 8259 does not allow, and reports where and
/// why it stopped.
public enum JSONValue: Hashable, Sendable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number written without a fraction or exponent that fits 64 bits.
    case integer(Int64)
    /// Any other number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, its members in their order.
    case object(JSONObject)

    /// The value as a Swift type, for diagnostics and for the kind a parameter has.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .integer: "int"
        case .double: "float"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The string, if this is one.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean, if this is one.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer, if this is one (a float with no fractional part counts, as JSON does not tell them apart).
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): value
        case .double(let value) where value.rounded() == value && abs(value) < 9.0e15: Int64(value)
        default: nil
        }
    }

    /// The number as a double, if this is a number.
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// The object, if this is one.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The member of an object, if this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// Compact JSON text (no spaces, no newlines).
    public var text: String {
        var bytes: [UInt8] = []
        write(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the compact JSON text of the value.
    public func write(to bytes: inout [UInt8]) {
        switch self {
        case .null: bytes.append(contentsOf: "null".utf8)
        case .bool(let value): bytes.append(contentsOf: (value ? "true" : "false").utf8)
        case .integer(let value): bytes.append(contentsOf: String(value).utf8)
        case .double(let value):
            // JSON has no NaN or infinity.
            guard value.isFinite else {
                bytes.append(contentsOf: "null".utf8)
                return
            }
            if value.rounded() == value, abs(value) < 1e15 {
                bytes.append(contentsOf: String(Int64(value)).utf8)
            } else {
                bytes.append(contentsOf: "\(value)".utf8)
            }
        case .string(let value): Self.writeString(value, to: &bytes)
        case .array(let values):
            bytes.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                value.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                Self.writeString(member.key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                member.value.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `string` as a JSON string on one line of printable text: `"` and `\` escaped, and every character that
    /// could end or disturb a line for some reader: the C0 controls and DEL (`\n`, `\r`, `\t`, `\b`, `\f`, else
    /// `\u00XX`), the C1 controls (U+0080–U+009F, among them U+0085, which some readers take for a newline) and
    /// U+2028/U+2029 (line and paragraph separators: line ends for JavaScript). A Swift string is valid Unicode, so the
    /// text is valid UTF-8. The one JSON string writer of the package: control replies and JSON log lines.
    public static func writeString(_ string: String, to bytes: inout [UInt8]) {
        var string = string
        string.withUTF8 { writeString(utf8: $0, to: &bytes) }
    }

    /// ``writeString(_:to:)`` for the bytes of a string (valid UTF-8).
    public static func writeString(utf8: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // Runs of bytes that need no escape are copied at once; most strings are one run.
        var start = 0
        var index = 0
        let count = utf8.count
        while index < count {
            let byte = utf8[index]
            let scalar: UInt32
            let length: Int
            switch byte {
            case 0x00..<0x20, 0x22, 0x5C, 0x7F:
                scalar = UInt32(byte)
                length = 1
            case 0xC2 where index + 1 < count && (0x80...0x9F).contains(utf8[index + 1]):
                scalar = UInt32(utf8[index + 1])
                length = 2
            case 0xE2 where index + 2 < count && utf8[index + 1] == 0x80 && (0xA8...0xA9).contains(utf8[index + 2]):
                scalar = 0x2000 | UInt32(utf8[index + 2] & 0x3F)
                length = 3
            default:
                index += 1
                continue
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
            appendEscape(scalar, to: &bytes)
            index += length
            start = index
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<count]))
        bytes.append(UInt8(ascii: "\""))
    }

    private static func appendEscape(_ scalar: UInt32, to bytes: inout [UInt8]) {
        switch scalar {
        case 0x22: bytes.append(contentsOf: "\\\"".utf8)
        case 0x5C: bytes.append(contentsOf: "\\\\".utf8)
        case 0x0A: bytes.append(contentsOf: "\\n".utf8)
        case 0x0D: bytes.append(contentsOf: "\\r".utf8)
        case 0x09: bytes.append(contentsOf: "\\t".utf8)
        case 0x08: bytes.append(contentsOf: "\\b".utf8)
        case 0x0C: bytes.append(contentsOf: "\\f".utf8)
        default:
            bytes.append(contentsOf: "\\u".utf8)
            for shift in stride(from: 12, through: 0, by: -4) {
                let digit = UInt8((scalar >> UInt32(shift)) & 0x0F)
                bytes.append(digit < 10 ? 0x30 + digit : 0x57 + digit)
            }
        }
    }

    /// Parses one JSON text; throws where and why it is not valid.
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = JSONParser.maximumDepth) throws(JSONError)
        -> JSONValue
    {
        var parser = JSONParser(bytes: Array(bytes), maximumDepth: maximumDepth)
        return try parser.parseDocument()
    }

    /// Parses one JSON text given as a string.
    public static func parse(_ text: String) throws(JSONError) -> JSONValue {
        try parse(Array(text.utf8))
    }
}

extension JSONValue {
    /// JSON has one kind of number: `1` and `1.0` are equal.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.integer, .double), (.double, .integer), (.double, .double): lhs.doubleValue == rhs.doubleValue
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .integer, .double: hasher.combine(doubleValue)
        case .string(let value): hasher.combine(value)
        case .array(let values): hasher.combine(values)
        case .object(let object): hasher.combine(object)
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue {
    /// A string, or null.
    public static func string(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    /// An integer.
    public static func int(_ value: some BinaryInteger) -> JSONValue { .integer(Int64(clamping: value)) }
    /// Seconds of a duration, as a float with millisecond precision.
    public static func seconds(_ duration: Duration) -> JSONValue {
        .double(Double(duration.wholeMilliseconds) / 1000)
    }
}

/// A JSON object: members in order, keys unique.
public struct JSONObject: Hashable, Sendable, ExpressibleByDictionaryLiteral, Sequence {
    /// The members, in the order given (and written).
    public private(set) var members: [(key: String, value: JSONValue)]

    /// An empty object.
    public init() { members = [] }

    /// An object of these members, in this order.
    public init(_ members: [(String, JSONValue)]) {
        self.members = []
        for (key, value) in members { self[key] = value }
    }

    /// An object written as a literal, its members in their order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }

    /// The member's value; assigning nil removes it, assigning a new key appends it.
    public subscript(key: String) -> JSONValue? {
        get { members.first { $0.key == key }?.value }
        set {
            let index = members.firstIndex { $0.key == key }
            switch (index, newValue) {
            case (let index?, let value?): members[index].value = value
            case (let index?, nil): members.remove(at: index)
            case (nil, let value?): members.append((key, value))
            case (nil, nil): break
            }
        }
    }

    /// Appends a member whose key the caller knows is new (the parser, which checks with a set): no search.
    mutating func appendNewMember(_ key: String, _ value: JSONValue) {
        members.append((key, value))
    }

    /// The keys, in order.
    public var keys: [String] { members.map(\.key) }

    /// Whether the object has no members.
    public var isEmpty: Bool { members.isEmpty }

    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> {
        members.makeIterator()
    }

    /// The same members with equal values, in any order. Linear: a large object is compared through a dictionary
    /// (a search of the members per member made it quadratic).
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        guard lhs.members.count > 16 else { return lhs.members.allSatisfy { rhs[$0.key] == $0.value } }
        var values: [String: JSONValue] = [:]
        values.reserveCapacity(rhs.members.count)
        for member in rhs.members { values[member.key] = member.value }
        return lhs.members.allSatisfy { values[$0.key] == $0.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(members.count)
        for member in members.sorted(by: { $0.key < $1.key }) {
            hasher.combine(member.key)
            hasher.combine(member.value)
        }
    }
}

/// Why a text is not JSON, and at which byte.
public struct JSONError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The byte offset where parsing stopped.
    public var offset: Int
    /// What was wrong there.
    public var reason: String

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// A strict JSON parser over bytes, with bounded nesting.
public struct JSONParser {
    /// The deepest nesting of arrays and objects accepted by default; varlink calls need three or four levels.
    public static let maximumDepth = 32

    private let bytes: [UInt8]
    private let maximumDepth: Int
    private var offset = 0
    private var depth = 0

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    mutating func parseDocument() throws(JSONError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard offset == bytes.count else { throw fail("unexpected data after the value") }
        return value
    }

    private func fail(_ reason: String) -> JSONError {
        JSONError(offset: offset, reason: reason)
    }

    private mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x09, 0x0A, 0x0D: offset += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONError) -> JSONValue {
        guard offset < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try parseLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try parseLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try parseLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    private mutating func parseLiteral(_ word: StaticString, _ value: JSONValue) throws(JSONError) -> JSONValue {
        let count = word.utf8CodeUnitCount
        guard offset + count <= bytes.count else { throw fail("unexpected end of input") }
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
        for index in 0..<count where bytes[offset + index] != expected[index] {
            throw fail("unexpected character")
        }
        offset += count
        return value
    }

    private mutating func enter() throws(JSONError) {
        depth += 1
        if depth > maximumDepth { throw fail("nested deeper than \(maximumDepth) levels") }
    }

    private mutating func parseObject() throws(JSONError) -> JSONValue {
        try enter()
        offset += 1
        var object = JSONObject()
        // The names so far, for the duplicate check: a search of the members instead made an object of n members
        // cost n² string comparisons (seconds for the 64 KiB a control message may have).
        var names = Set<String>()
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            depth -= 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let key = try parseString()
            guard names.insert(key).inserted else { throw fail("duplicate member \"\(key)\"") }
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            offset += 1
            skipWhitespace()
            object.appendNewMember(key, try parseValue())
            skipWhitespace()
            guard offset < bytes.count else { throw fail("unexpected end of input") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            guard bytes[offset] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
            offset += 1
            depth -= 1
            return .object(object)
        }
    }

    private mutating func parseArray() throws(JSONError) -> JSONValue {
        try enter()
        offset += 1
        var values: [JSONValue] = []
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
            offset += 1
            depth -= 1
            return .array(values)
        }
        while true {
            skipWhitespace()
            values.append(try parseValue())
            skipWhitespace()
            guard offset < bytes.count else { throw fail("unexpected end of input") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            guard bytes[offset] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
            offset += 1
            depth -= 1
            return .array(values)
        }
    }

    private mutating func parseString() throws(JSONError) -> String {
        offset += 1
        var utf8: [UInt8] = []
        while true {
            guard offset < bytes.count else { throw fail("unterminated string") }
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                guard let string = String(validating: utf8, as: UTF8.self) else {
                    throw fail("a string is not valid UTF-8")
                }
                return string
            case UInt8(ascii: "\\"):
                offset += 1
                guard offset < bytes.count else { throw fail("unterminated string") }
                let escaped = bytes[offset]
                offset += 1
                switch escaped {
                case UInt8(ascii: "\""): utf8.append(0x22)
                case UInt8(ascii: "\\"): utf8.append(0x5C)
                case UInt8(ascii: "/"): utf8.append(0x2F)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        // A high surrogate must be followed by an escaped low one.
                        guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"),
                            bytes[offset + 1] == UInt8(ascii: "u")
                        else { throw fail("unpaired surrogate") }
                        offset += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("unpaired surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                    utf8.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    throw fail("invalid escape")
                }
            case 0x00..<0x20:
                throw fail("control character in a string")
            default:
                utf8.append(byte)
                offset += 1
            }
        }
    }

    private mutating func parseHex4() throws(JSONError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw fail("unterminated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid \\u escape")
            }
            value = value * 16 + digit
            offset += 1
        }
        return value
    }

    private mutating func parseNumber() throws(JSONError) -> JSONValue {
        let start = offset
        var isInteger = true
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard offset < bytes.count, isDigit(bytes[offset]) else { throw fail("invalid number") }
        if bytes[offset] == UInt8(ascii: "0") {
            offset += 1
            if offset < bytes.count, isDigit(bytes[offset]) { throw fail("invalid number (leading zero)") }
        } else {
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            isInteger = false
            offset += 1
            guard offset < bytes.count, isDigit(bytes[offset]) else { throw fail("invalid number") }
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            isInteger = false
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") {
                offset += 1
            }
            guard offset < bytes.count, isDigit(bytes[offset]) else { throw fail("invalid number") }
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        let text = String(decoding: bytes[start..<offset], as: UTF8.self)
        if isInteger, let value = Int64(text) { return .integer(value) }
        guard let value = Double(text), value.isFinite else { throw fail("number out of range") }
        return .double(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
