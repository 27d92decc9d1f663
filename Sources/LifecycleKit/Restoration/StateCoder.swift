//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// One value a controller preserves: typed, so a restored value is never read as another type.
///
/// In the archive each value is a one-key object naming its type (`{"i": 3}`, `{"s": "beta"}`); doubles are kept as
/// their shortest exact text (`{"d": "0.1"}`), or as their bits when the text would lose some (a NaN's payload:
/// `{"d": "bits:7ff8000000000001"}`), so every double comes back bit for bit.
@_spi(Internal) public enum StateValue: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Text.
    case string(String)
    /// A whole number.
    case integer(Int)
    /// A floating-point number.
    case double(Double)
    /// A flag.
    case bool(Bool)
    /// A list of texts (identifiers, names).
    case strings([String])

    private enum CodingKeys: String, CodingKey {
        case s, i, d, b, a
    }

    @_spi(Internal) public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: container.codingPath, debugDescription: "a value is one of s, i, d, b, a")
            )
        }
        switch key {
        case .s: self = .string(try container.decode(String.self, forKey: .s))
        case .i: self = .integer(try container.decode(Int.self, forKey: .i))
        case .b: self = .bool(try container.decode(Bool.self, forKey: .b))
        case .a: self = .strings(try container.decode([String].self, forKey: .a))
        case .d:
            let text = try container.decode(String.self, forKey: .d)
            if text.hasPrefix("bits:"), let bits = UInt64(text.dropFirst(5), radix: 16) {
                self = .double(Double(bitPattern: bits))
                return
            }
            guard let value = Double(text) else {
                throw DecodingError.dataCorruptedError(forKey: .d, in: container, debugDescription: "\(text) is not a number")
            }
            self = .double(value)
        }
    }

    @_spi(Internal) public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .string(let value): try container.encode(value, forKey: .s)
        case .integer(let value): try container.encode(value, forKey: .i)
        case .double(let value):
            // A NaN's payload does not survive its text: such a value is kept as its bits.
            let text = value.description
            let exact = Double(text).map { $0.bitPattern == value.bitPattern } ?? false
            try container.encode(exact ? text : "bits:" + String(value.bitPattern, radix: 16), forKey: .d)
        case .bool(let value): try container.encode(value, forKey: .b)
        case .strings(let value): try container.encode(value, forKey: .a)
        }
    }

    // Doubles compare by their bits: a restored NaN equals the NaN that was saved.
    @_spi(Internal) public static func == (lhs: StateValue, rhs: StateValue) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
        case (.bool(let a), .bool(let b)): a == b
        case (.strings(let a), .strings(let b)): a == b
        default: false
        }
    }

    @_spi(Internal) public func hash(into hasher: inout Hasher) {
        switch self {
        case .string(let value): hasher.combine(0); hasher.combine(value)
        case .integer(let value): hasher.combine(1); hasher.combine(value)
        case .double(let value): hasher.combine(2); hasher.combine(value.bitPattern)
        case .bool(let value): hasher.combine(3); hasher.combine(value)
        case .strings(let value): hasher.combine(4); hasher.combine(value)
        }
    }

    @_spi(Internal) public var description: String {
        switch self {
        case .string(let value): value.debugDescription
        case .integer(let value): "\(value)"
        case .double(let value): "\(value)"
        case .bool(let value): "\(value)"
        case .strings(let value): "\(value)"
        }
    }
}

/// What ``ViewController/encodeRestorableState(with:)`` writes and ``ViewController/decodeRestorableState(with:)``
/// reads (UIKit's `NSCoder` in state restoration): typed values by key.
///
/// A decode returns nil when the key is absent or holds another type: a value is never converted, so an archive
/// written by another version of a controller cannot be misread.
public final class StateCoder {
    /// The values, by key.
    @_spi(Internal) public private(set) var values: [String: StateValue]
    /// The restoration path of the controller being encoded or decoded (`root/modes/beta`), or `application` for the
    /// delegate's own values.
    public let restorationPath: String

    /// A coder over `values` (empty to encode).
    @_spi(Internal) public init(values: [String: StateValue] = [:], restorationPath: String = "") {
        self.values = values
        self.restorationPath = restorationPath
    }

    /// Stores a value.
    @_spi(Internal) public func encode(_ value: StateValue, forKey key: String) { values[key] = value }
    /// Stores text.
    public func encode(_ value: String, forKey key: String) { values[key] = .string(value) }
    /// Stores a whole number.
    public func encode(_ value: Int, forKey key: String) { values[key] = .integer(value) }
    /// Stores a floating-point number.
    public func encode(_ value: Double, forKey key: String) { values[key] = .double(value) }
    /// Stores a flag.
    public func encode(_ value: Bool, forKey key: String) { values[key] = .bool(value) }
    /// Stores a list of texts.
    public func encode(_ value: [String], forKey key: String) { values[key] = .strings(value) }

    /// Whether a value is stored for `key`.
    public func containsValue(forKey key: String) -> Bool { values[key] != nil }
    /// The value for `key`, of whatever type.
    @_spi(Internal) public func value(forKey key: String) -> StateValue? { values[key] }

    /// The text for `key`; nil when absent or not text.
    public func decodeString(forKey key: String) -> String? {
        if case .string(let value) = values[key] { return value }
        return nil
    }

    /// The whole number for `key`; nil when absent or not a whole number.
    public func decodeInteger(forKey key: String) -> Int? {
        if case .integer(let value) = values[key] { return value }
        return nil
    }

    /// The floating-point number for `key`; nil when absent or not a double.
    public func decodeDouble(forKey key: String) -> Double? {
        if case .double(let value) = values[key] { return value }
        return nil
    }

    /// The flag for `key`; nil when absent or not a flag.
    public func decodeBool(forKey key: String) -> Bool? {
        if case .bool(let value) = values[key] { return value }
        return nil
    }

    /// The list of texts for `key`; nil when absent or not a list.
    public func decodeStrings(forKey key: String) -> [String]? {
        if case .strings(let value) = values[key] { return value }
        return nil
    }
}
