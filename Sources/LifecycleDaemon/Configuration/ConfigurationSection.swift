//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//


/// A value a configuration key does not accept; the reader adds the file and line.
public struct ConfigurationValueError: Error, Sendable, Hashable {
    /// What is wrong and what would be valid, e.g. `Port=70000 is not a whole number from 1 to 65535`.
    public var message: String

    /// Wraps a message.
    public init(_ message: String) {
        self.message = message
    }
}

/// One key of a configuration section: its name and how its text becomes a value of `Root`.
///
/// A section's keys are listed once, in one table, and that table drives parsing, validation and the list of valid
/// keys that an unknown key's error prints.
public struct ConfigurationKey<Root>: Sendable {
    /// The key as written in the file, e.g. `BudgetSec`.
    public let name: String
    private let assign: @Sendable (inout Root, String) throws(ConfigurationValueError) -> Void

    /// A key with its own parser: `assign` stores the value or throws what is wrong with it.
    public init(_ name: String, assign: @escaping @Sendable (inout Root, String) throws(ConfigurationValueError) -> Void) {
        self.name = name
        self.assign = assign
    }

    /// Parses `value` into `root`.
    func apply(_ value: String, to root: inout Root) throws(ConfigurationValueError) {
        try assign(&root, value)
    }

    /// `yes`/`no` (also `true`/`false`, `on`/`off`, `1`/`0`).
    public static func boolean(_ name: String, _ keyPath: any WritableKeyPath<Root, Bool> & Sendable) -> Self {
        Self(name) { root, value throws(ConfigurationValueError) in
            guard let flag = ConfigurationParsing.boolean(value) else {
                throw ConfigurationValueError("\(name)=\(value) is not a boolean; use yes or no")
            }
            root[keyPath: keyPath] = flag
        }
    }

    /// A non-negative number of `unit`s (seconds by default), at most 292 years:
    /// `BudgetSec=2.5`.
    public static func duration(
        _ name: String,
        _ keyPath: any WritableKeyPath<Root, Duration> & Sendable,
        unit: Duration = .seconds(1)
    ) -> Self {
        durationKey(name, unit: unit, positive: false) { root, duration in root[keyPath: keyPath] = duration }
    }

    /// A positive number of seconds, at most 292 years, for a setting that is unset until a file sets it:
    /// `StopTimeoutSec=90`.
    package static func positiveSeconds(
        _ name: String,
        _ keyPath: any WritableKeyPath<Root, Duration?> & Sendable
    ) -> Self {
        durationKey(name, unit: .seconds(1), positive: true) { root, duration in root[keyPath: keyPath] = duration }
    }

    private static func durationKey(
        _ name: String,
        unit: Duration,
        positive: Bool,
        store: @escaping @Sendable (inout Root, Duration) -> Void
    ) -> Self {
        Self(name) { root, value throws(ConfigurationValueError) in
            guard let duration = ConfigurationParsing.duration(value, unit: unit), !positive || duration > .zero else {
                throw ConfigurationValueError(
                    positive
                        ? "\(name)=\(value) is not a positive number of seconds (at most 292 years)"
                        : "\(name)=\(value) is not a non-negative number (at most 292 years)"
                )
            }
            store(&root, duration)
        }
    }

    /// A whole number in `range`.
    public static func integer(
        _ name: String,
        _ keyPath: any WritableKeyPath<Root, Int> & Sendable,
        in range: ClosedRange<Int> = 0...Int.max
    ) -> Self {
        Self(name) { root, value throws(ConfigurationValueError) in
            guard let number = Int(value), range.contains(number) else {
                let bounds =
                    range.upperBound == .max ? "at least \(range.lowerBound)" : "from \(range.lowerBound) to \(range.upperBound)"
                throw ConfigurationValueError("\(name)=\(value) is not a whole number \(bounds)")
            }
            root[keyPath: keyPath] = number
        }
    }

    /// One of the raw values of `Value`'s cases.
    public static func choice<Value: RawRepresentable & CaseIterable & Sendable>(
        _ name: String,
        _ keyPath: any WritableKeyPath<Root, Value> & Sendable,
        what: String
    ) -> Self where Value.RawValue == String {
        Self(name) { root, value throws(ConfigurationValueError) in
            guard let choice = Value(rawValue: value) else {
                throw ConfigurationValueError(
                    "\(name)=\(value) is not \(what); valid: " + Value.allCases.map(\.rawValue).joined(separator: ", ")
                )
            }
            root[keyPath: keyPath] = choice
        }
    }

    /// Text; an empty value unsets an optional key.
    public static func text(_ name: String, _ keyPath: any WritableKeyPath<Root, String?> & Sendable) -> Self {
        Self(name) { root, value in root[keyPath: keyPath] = value.isEmpty ? nil : value }
    }
}

/// A section of the configuration file that an application adds to the daemon's own (`[Server]`, say): its name,
/// its keys and their defaults. The daemon reads it from the same file, reports its errors the same way
/// (file:line, what would be valid, exit 78), and reads it again on every reload.
///
/// ```swift
/// struct ServerSettings: ConfigurationSection {
///     static let name = "Server"
///     static let keys: [ConfigurationKey<Self>] = [.integer("Port", \.port, in: 1...65535)]
///     var port = 8080
/// }
/// ```
public protocol ConfigurationSection: Sendable, Equatable {
    /// The section's name in the file, without brackets.
    static var name: String { get }
    /// Every key of the section, each once.
    static var keys: [ConfigurationKey<Self>] { get }
    /// The defaults.
    init()
    /// Checks the section as a whole once the file is read; throws what is wrong (e.g. two keys that contradict).
    func validate() throws(ConfigurationValueError)
}

extension ConfigurationSection {
    public func validate() throws(ConfigurationValueError) {}
}

/// No section of the application's own.
public struct NoSettings: ConfigurationSection {
    public static var name: String { "" }
    public static var keys: [ConfigurationKey<Self>] { [] }
    public init() {}
}

/// The value parsers every key shares.
enum ConfigurationParsing {
    static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "yes", "true", "on", "1": true
        case "no", "false", "off", "0": false
        default: nil
        }
    }

    static func duration(_ text: String, unit: Duration) -> Duration? {
        Double(text).flatMap { Duration(setting: $0, unit: unit) }
    }
}

extension Duration {
    /// The longest duration a configuration key or a standard flag takes: what a signed 64-bit count of nanoseconds
    /// holds, about 292 years. Every duration read converts to nanoseconds, microseconds and timers without overflow.
    package static var longestSetting: Duration { .nanoseconds(Int64.max) }

    /// `number` of `unit`s, as a duration key or flag reads it; nil unless `number` is finite, non-negative and the
    /// duration at most ``longestSetting``.
    package init?(setting number: Double, unit: Duration = .seconds(1)) {
        // Compared before multiplying: `unit * number` traps past Duration's range (BudgetSec=1e300, a fuzzing
        // finding), and a value past 292 years would trap later, converted to nanoseconds.
        guard number >= 0, number.isFinite, unit > .zero, number <= Duration.longestSetting / unit else { return nil }
        let duration = unit * number
        guard duration <= Duration.longestSetting else { return nil }
        self = duration
    }
}
