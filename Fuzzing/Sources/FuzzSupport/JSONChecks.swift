//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC

/// A second reading of RFC 8259, written apart from `JSONParser` and shaped differently (one loop over an explicit
/// stack, no recursion): the oracle the JSON parser is compared with. It says whether a text is grammatical JSON
/// (UTF-8, escapes and surrogate pairs as the RFC has them) and, separately, the things `JSONParser` refuses on
/// purpose in grammatical text: nesting deeper than its bound, a member name given twice in one object, a number
/// no Double holds.
///
/// Member names are compared as Swift strings, as `JSONObject` does (canonically equivalent names are one name).
package enum ReferenceJSON {
    package struct Verdict: Hashable, Sendable {
        /// RFC 8259 text, nothing after it but whitespace.
        package var isGrammatical = false
        /// The deepest nesting of arrays and objects met (0 for a scalar), as far as the text was read.
        package var depth = 0
        /// Some object has a member name twice.
        package var hasDuplicateMember = false
        /// Some number is not an Int64 (written as an integer) and not a finite Double.
        package var hasNumberOutOfRange = false

        /// Whether `JSONValue.parse(_:maximumDepth:)` must accept the text.
        package func isAccepted(maximumDepth: Int = JSONParser.maximumDepth) -> Bool {
            isGrammatical && depth <= maximumDepth && !hasDuplicateMember && !hasNumberOutOfRange
        }
    }

    /// `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`: the byte each stands for.
    private static let simpleEscapes: [UInt8: UInt8] = [
        0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x62: 0x08, 0x66: 0x0C, 0x6E: 0x0A, 0x72: 0x0D, 0x74: 0x09,
    ]

    private enum Frame {
        case array
        case object(names: Set<String>)
    }

    private enum Expecting {
        case value
        case name
        case separatorOrEnd
    }

    package static func read(_ bytes: [UInt8]) -> Verdict {
        var verdict = Verdict()
        var index = 0
        var frames: [Frame] = []
        var expecting = Expecting.value

        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
        func hexValue(_ byte: UInt8) -> UInt32? {
            switch byte {
            case 0x30...0x39: UInt32(byte - 0x30)
            case 0x41...0x46: UInt32(byte - 0x41 + 10)
            case 0x61...0x66: UInt32(byte - 0x61 + 10)
            default: nil
            }
        }
        func hex4(at position: Int) -> UInt32? {
            guard position + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for offset in 0..<4 {
                guard let digit = hexValue(bytes[position + offset]) else { return nil }
                value = value << 4 | digit
            }
            return value
        }
        /// The string starting at `index` (a quote), decoded; nil when it is not a JSON string.
        func string() -> String? {
            index += 1
            var decoded: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 0x22 {
                    index += 1
                    return String(validating: decoded, as: UTF8.self)
                }
                if byte < 0x20 { return nil }
                if byte != 0x5C {
                    decoded.append(byte)
                    index += 1
                    continue
                }
                guard index + 1 < bytes.count else { return nil }
                let escape = bytes[index + 1]
                index += 2
                if let byte = simpleEscapes[escape] {
                    decoded.append(byte)
                    continue
                }
                guard escape == 0x75, let unit = hex4(at: index) else { return nil }
                index += 4
                var scalarValue = unit
                if (0xDC00...0xDFFF).contains(unit) { return nil }
                if (0xD800...0xDBFF).contains(unit) {
                    guard index + 6 <= bytes.count, bytes[index] == 0x5C, bytes[index + 1] == 0x75,
                        let low = hex4(at: index + 2), (0xDC00...0xDFFF).contains(low)
                    else { return nil }
                    index += 6
                    scalarValue = 0x10000 + (unit - 0xD800) * 0x400 + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(scalarValue) else { return nil }
                decoded.append(contentsOf: UTF8.encode(scalar)!)
            }
            return nil
        }
        func number() -> Bool {
            let start = index
            if bytes[index] == 0x2D { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { return false }
            if bytes[index] == 0x30 {
                index += 1
            } else {
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            var integral = true
            if index < bytes.count, bytes[index] == 0x2E {
                integral = false
                index += 1
                guard index < bytes.count, isDigit(bytes[index]) else { return false }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == 0x65 || bytes[index] == 0x45 {
                integral = false
                index += 1
                if index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D { index += 1 }
                guard index < bytes.count, isDigit(bytes[index]) else { return false }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if !(integral && Int64(text) != nil) && Double(text)?.isFinite != true {
                verdict.hasNumberOutOfRange = true
            }
            return true
        }
        func literal(_ word: String) -> Bool {
            let expected = Array(word.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else {
                return false
            }
            index += expected.count
            return true
        }
        func open(_ frame: Frame) {
            frames.append(frame)
            verdict.depth = max(verdict.depth, frames.count)
            index += 1
        }

        while true {
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            switch expecting {
            case .value:
                guard index < bytes.count else { return verdict }
                switch bytes[index] {
                case 0x7B:  // {
                    open(.object(names: []))
                    while index < bytes.count, isSpace(bytes[index]) { index += 1 }
                    if index < bytes.count, bytes[index] == 0x7D {
                        index += 1
                        frames.removeLast()
                        expecting = .separatorOrEnd
                    } else {
                        expecting = .name
                    }
                case 0x5B:  // [
                    open(.array)
                    while index < bytes.count, isSpace(bytes[index]) { index += 1 }
                    if index < bytes.count, bytes[index] == 0x5D {
                        index += 1
                        frames.removeLast()
                        expecting = .separatorOrEnd
                    } else {
                        expecting = .value
                    }
                case 0x22:
                    guard string() != nil else { return verdict }
                    expecting = .separatorOrEnd
                case 0x74, 0x66, 0x6E:
                    guard literal("true") || literal("false") || literal("null") else { return verdict }
                    expecting = .separatorOrEnd
                case 0x2D, 0x30...0x39:
                    guard number() else { return verdict }
                    expecting = .separatorOrEnd
                default:
                    return verdict
                }
            case .name:
                guard index < bytes.count, bytes[index] == 0x22, let name = string() else { return verdict }
                // Taken off the stack while it changes, so the set is not copied for every name.
                guard case .object(var names) = frames.removeLast() else { return verdict }
                if !names.insert(name).inserted { verdict.hasDuplicateMember = true }
                frames.append(.object(names: names))
                while index < bytes.count, isSpace(bytes[index]) { index += 1 }
                guard index < bytes.count, bytes[index] == 0x3A else { return verdict }
                index += 1
                expecting = .value
            case .separatorOrEnd:
                guard let frame = frames.last else {
                    verdict.isGrammatical = index == bytes.count
                    return verdict
                }
                guard index < bytes.count else { return verdict }
                let isObject = if case .object = frame { true } else { false }
                switch bytes[index] {
                case 0x2C:
                    index += 1
                    expecting = isObject ? .name : .value
                case 0x7D where isObject, 0x5D where !isObject:
                    index += 1
                    frames.removeLast()
                    expecting = .separatorOrEnd
                default:
                    return verdict
                }
            }
        }
    }
}

/// How deep a value nests, as `JSONParser` counts it: 0 for a scalar, 1 for an array or object of scalars.
package func nestingDepth(_ value: JSONValue) -> Int {
    switch value {
    case .array(let values): 1 + (values.map(nestingDepth).max() ?? 0)
    case .object(let object): 1 + (object.members.map { nestingDepth($0.value) }.max() ?? 0)
    default: 0
    }
}

/// Parses `bytes` and checks the parser against ``ReferenceJSON``: it accepts exactly what RFC 8259 and its own
/// documented refusals allow, refuses nesting past the bound with the documented error, and whatever it accepts
/// survives ``checkJSONRoundTrip(_:)``. Returns the value, if the text was one.
@discardableResult
package func checkJSON(_ bytes: [UInt8], maximumDepth: Int = JSONParser.maximumDepth) -> JSONValue? {
    let verdict = ReferenceJSON.read(bytes)
    let value: JSONValue
    do {
        value = try JSONValue.parse(bytes, maximumDepth: maximumDepth)
    } catch {
        check((0...bytes.count).contains(error.offset), "an error past the text: \(error) (\(bytes.count) bytes)")
        check(!verdict.isAccepted(maximumDepth: maximumDepth), "valid JSON (\(verdict)) was refused: \(error)")
        let nesting = "nested deeper than \(maximumDepth) levels"
        if verdict.isGrammatical, !verdict.hasDuplicateMember, !verdict.hasNumberOutOfRange {
            check(error.reason == nesting, "JSON nested \(verdict.depth) deep was refused otherwise: \(error)")
        }
        if error.reason == nesting {
            check(verdict.depth > maximumDepth, "refused as too deep at depth \(verdict.depth): \(error)")
        } else if error.reason.hasPrefix("duplicate member") {
            check(verdict.hasDuplicateMember, "refused for a duplicate member it does not have: \(error)")
        } else if error.reason == "number out of range" {
            check(verdict.hasNumberOutOfRange, "refused for a number out of range it does not have: \(error)")
        }
        return nil
    }
    check(verdict.isAccepted(maximumDepth: maximumDepth), "accepted what is not JSON (\(verdict))")
    let depth = nestingDepth(value)
    check(depth == verdict.depth, "parsed \(depth) deep, the text nests \(verdict.depth) deep")
    checkJSONRoundTrip(value)

    // The bound is exact: the value's own depth is accepted, one less is refused with the documented error.
    check((try? JSONValue.parse(bytes, maximumDepth: depth)) != nil, "refused at its own depth \(depth)")
    if depth > 0 {
        do {
            _ = try JSONValue.parse(bytes, maximumDepth: depth - 1)
            check(false, "a value \(depth) deep was accepted with the bound at \(depth - 1)")
        } catch {
            check(error.reason == "nested deeper than \(depth - 1) levels", "over the bound: \(error)")
        }
    }
    return value
}

/// What must hold of any value: its compact text is valid JSON that reads back as an equal value (with the same
/// hash) and writes the same text again; the text has no raw control characters, so no NUL can end a varlink
/// message early.
package func checkJSONRoundTrip(_ value: JSONValue) {
    check(value == value, "a value is not equal to itself")
    var text: [UInt8] = []
    value.write(to: &text)
    check(!text.contains { $0 < 0x20 }, "the compact text has a raw control character")
    check(ReferenceJSON.read(text).isGrammatical, "the compact text is not JSON: \(value.text)")
    let again: JSONValue
    do {
        again = try JSONValue.parse(text, maximumDepth: .max)
    } catch {
        check(false, "the compact text of a value is refused: \(error)")
        return
    }
    check(again == value, "written and read again, the value changed: \(value.text) → \(again.text)")
    check(again.hashValue == value.hashValue, "equal values with different hashes: \(value.text)")
    var textAgain: [UInt8] = []
    again.write(to: &textAgain)
    check(textAgain == text, "writing the value read back gave other text")
}
