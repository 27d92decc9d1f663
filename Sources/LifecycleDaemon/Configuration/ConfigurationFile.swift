//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A configuration that cannot be used: the message names the file, the line and what would be valid.
@_spi(Internal) public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file (or `--signal`, or another flag) the bad value came from.
    @_spi(Internal) public var source: String
    /// The line in the file, if the value came from a file.
    @_spi(Internal) public var line: Int?
    /// What is wrong and what would be valid.
    @_spi(Internal) public var message: String

    /// Creates an error.
    @_spi(Internal) public init(source: String, line: Int?, message: String) {
        self.source = source
        self.line = line
        self.message = message
    }

    /// The error as printed: control characters of the file's text (a NUL, an escape sequence, a line break) are
    /// written out visibly (`\x00`, `\x1b`, `\r`), so the quoted text neither rewrites the terminal nor forges a line.
    @_spi(Internal) public var description: String {
        let text = if let line { "\(source):\(line): \(message)" } else { "\(source): \(message)" }
        return VisibleText.escaped(text)
    }
}

/// A configuration file in systemd's INI style (`[Section]` headers, `Key=Value` lines, `#` or `;` comments), split
/// into its entries. Only the syntax is checked here; what the keys mean is up to the sections that read them.
///
/// Lines end in LF or CR LF (a file written on Windows), and a UTF-8 byte order mark before the first line is skipped,
/// as systemd's own parser does.
@_spi(Internal) public struct ConfigurationFile: Sendable, Hashable {
    /// One `Key=Value` line.
    @_spi(Internal) public struct Entry: Sendable, Hashable {
        /// The section it is in, without brackets.
        @_spi(Internal) public var section: String
        /// The key, trimmed.
        @_spi(Internal) public var key: String
        /// The value, trimmed.
        @_spi(Internal) public var value: String
        /// The line number, from 1.
        @_spi(Internal) public var line: Int
    }

    /// The file (or other source) the text came from, for errors.
    @_spi(Internal) public let source: String
    /// The entries, in file order.
    @_spi(Internal) public let entries: [Entry]
    /// Every section header, in file order, with its line.
    @_spi(Internal) public let sections: [(name: String, line: Int)]

    /// Splits configuration text; `source` names it in errors.
    @_spi(Internal) public init(text: String, source: String) throws(ConfigurationError) {
        self.source = source
        var text = Substring(text)
        if text.unicodeScalars.first == "\u{FEFF}" { text = Substring(text.unicodeScalars.dropFirst()) }
        var entries: [Entry] = []
        var sections: [(name: String, line: Int)] = []
        var section: String?
        // Swift reads CR LF as one Character, so splitting on "\n" alone would leave a CR LF file one line.
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (index, rawLine) in lines.enumerated() {
            let number = index + 1
            let line = String(rawLine).trimmed
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else {
                    throw ConfigurationError(source: source, line: number, message: "\"\(line)\" is not a [Section] header")
                }
                let name = String(line.dropFirst().dropLast())
                sections.append((name, number))
                section = name
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigurationError(source: source, line: number, message: "\"\(line)\" is not Key=Value")
            }
            let key = String(line[..<equals]).trimmed
            let value = String(line[line.index(after: equals)...]).trimmed
            guard let section else {
                throw ConfigurationError(source: source, line: number, message: "\(key)= comes before any [Section]")
            }
            entries.append(Entry(section: section, key: key, value: value, line: number))
        }
        self.entries = entries
        self.sections = sections
    }

    /// Reads and splits a file; errors name the file and the system's reason. Only a regular file of at most 1 MiB is
    /// read, and opening it never blocks (a FIFO or a device at the path is refused, not waited on); the null device
    /// (`--config /dev/null`) reads as an empty file.
    @_spi(Internal) public init(contentsOf path: String) throws(ConfigurationError) {
        let text: String
        do {
            text = try RegularFile.readText(path, limit: RegularFile.configurationLimit, nullDeviceIsEmpty: true)
        } catch {
            let reason =
                switch error {
                case .system(let errno): String(cString: strerror(errno.rawValue))
                default: error.description
                }
            throw ConfigurationError(source: path, line: nil, message: "cannot be read: \(reason)")
        }
        try self.init(text: text, source: path)
    }

    @_spi(Internal) public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.source == rhs.source && lhs.entries == rhs.entries
    }

    @_spi(Internal) public func hash(into hasher: inout Hasher) {
        hasher.combine(source)
        hasher.combine(entries)
    }

    /// Applies the entries of one section to `root` through its key table: unknown keys and keys set twice are
    /// errors naming the line and the valid keys; then `validate` checks the section as a whole.
    func apply<Root>(
        section name: String,
        keys: [ConfigurationKey<Root>],
        to root: inout Root,
        validate: (Root) throws(ConfigurationValueError) -> Void = { _ in }
    ) throws(ConfigurationError) {
        var seen: [String: Int] = [:]
        var lastLine: Int?
        for entry in entries where entry.section == name {
            guard let key = keys.first(where: { $0.name == entry.key }) else {
                throw ConfigurationError(
                    source: source,
                    line: entry.line,
                    message: "unknown key \(entry.key)= in [\(name)]; valid: " + keys.map { "\($0.name)=" }.joined(separator: ", ")
                )
            }
            if let first = seen[entry.key] {
                throw ConfigurationError(
                    source: source,
                    line: entry.line,
                    message: "\(entry.key)= is set twice in [\(name)] (first on line \(first))"
                )
            }
            seen[entry.key] = entry.line
            lastLine = entry.line
            do {
                try key.apply(entry.value, to: &root)
            } catch {
                throw ConfigurationError(source: source, line: entry.line, message: error.message)
            }
        }
        do {
            try validate(root)
        } catch {
            throw ConfigurationError(source: source, line: lastLine, message: error.message)
        }
    }
}

extension String {
    var trimmed: String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice = slice.dropFirst() }
        while let last = slice.last, last.isWhitespace { slice = slice.dropLast() }
        return String(slice)
    }
}
