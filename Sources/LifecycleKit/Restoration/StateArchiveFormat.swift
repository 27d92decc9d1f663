//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import FoundationEssentials

/// Why bytes are not a usable saved state. Every case is refused, never half-read.
@_spi(Internal) public enum StateArchiveProblem: Sendable, Hashable {
    /// No bytes at all.
    case empty
    /// Not a LifecycleKit state archive (another file, or garbage).
    case notAnArchive
    /// Fewer bytes than the header announces: a write that never finished.
    case truncated(expected: Int, found: Int)
    /// More bytes than the header announces.
    case trailingBytes(expected: Int, found: Int)
    /// The bytes do not match the checksum: torn or damaged.
    case checksumMismatch
    /// Written in a format newer than this build reads: refused rather than misread.
    case newerFormat(Int)
    /// A format number LifecycleKit never wrote with a header.
    case unsupportedFormat(String)
    /// The header is right but the body is not a valid archive.
    case malformed(String)
}

/// Bytes that are not a usable saved state: the file, and why.
@_spi(Internal) public struct StateArchiveError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file (or other source) the bytes came from.
    @_spi(Internal) public var source: String
    /// What is wrong.
    @_spi(Internal) public var problem: StateArchiveProblem

    /// Creates an error.
    @_spi(Internal) public init(source: String, problem: StateArchiveProblem) {
        self.source = source
        self.problem = problem
    }

    /// Why, as a sentence fragment: "is truncated: …".
    @_spi(Internal) public var reason: String {
        switch problem {
        case .empty:
            return "is empty"
        case .notAnArchive:
            return "is not a LifecycleKit state archive (no \"\(StateArchiveFormat.magic)\" header)"
        case .truncated(let expected, let found):
            return "is truncated: the header announces \(expected) bytes of archive, the file has \(found)"
        case .trailingBytes(let expected, let found):
            return "is corrupt: the header announces \(expected) bytes of archive, the file has \(found)"
        case .checksumMismatch:
            return "is corrupt: its bytes do not match its checksum (torn or damaged)"
        case .newerFormat(let version):
            return
                "was written in format \(version), newer than this build reads (formats 1 to \(Archive.currentFormatVersion)); "
                + "refused rather than misread"
        case .unsupportedFormat(let text):
            return "has format \"\(text)\", which LifecycleKit never wrote; this build reads formats 1 to \(Archive.currentFormatVersion)"
        case .malformed(let detail):
            return "is corrupt: \(detail)"
        }
    }

    @_spi(Internal) public var description: String { "\(source) \(reason)" }
}

/// The saved-state file format (version 2): one header line, then the JSON body.
///
/// ```
/// LifecycleKit-State 2 <body length> <CRC-32 of the body, 8 hex digits>\n
/// {"application":{…},"generation":12,"root":{"class":"DemoRootController","restorationIdentifier":"root",…}}
/// ```
///
/// A file that starts with `{` is format 1, a bare JSON tree (the tree archives of earlier versions): it is migrated
/// (its shape and properties kept, generation 0, no saved values).
enum StateArchiveFormat {
    static let magic = "LifecycleKit-State"
    /// The longest header this format writes, with room to spare; a longer first line is not a header.
    static let maximumHeaderLength = 96

    static func encode(_ archive: Archive) -> [UInt8] {
        struct Body: Encodable {
            var generation: Int
            var application: [String: StateValue]
            // Absent when nil: an archive without sessions is written exactly as before scenes.
            var root: Archive.Node?
            var sessions: [Archive.Session]?
            // Absent when nothing is known of the writer: what a test or an older host writes stays as it was.
            var writer: Writer?
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body: [UInt8]
        do {
            let content = Body(
                generation: archive.generation,
                application: archive.applicationState,
                root: archive.rootNode,
                sessions: archive.sessions.isEmpty ? nil : archive.sessions,
                writer: Writer(archive)
            )
            body = Array(try encoder.encode(content))
        } catch {
            // Every value is a string, a whole number, a boolean or a double kept as text: nothing can fail to encode.
            preconditionFailure("a state archive failed to encode: \(error)")
        }
        let header = "\(magic) \(Archive.currentFormatVersion) \(body.count) \(hex(CRC32.checksum(body)))\n"
        return Array(header.utf8) + body
    }

    static func decode(_ bytes: [UInt8], source: String) throws(StateArchiveError) -> Archive {
        func fail(_ problem: StateArchiveProblem) -> StateArchiveError { StateArchiveError(source: source, problem: problem) }
        guard let first = bytes.first else { throw fail(.empty) }
        if first == UInt8(ascii: "{") {
            // Format 1: a bare JSON tree, migrated.
            do {
                return try Archive(json: bytes, source: source).migratedFromFormat1()
            } catch {
                throw fail(.malformed("a format 1 tree that does not parse (\(error.reason))"))
            }
        }
        let magicBytes = Array(magic.utf8)
        guard bytes.count > magicBytes.count, Array(bytes[..<magicBytes.count]) == magicBytes,
            bytes[magicBytes.count] == UInt8(ascii: " ")
        else {
            // Shorter than the magic but a prefix of it: a header cut short.
            if bytes.count <= magicBytes.count, Array(magicBytes[..<bytes.count]) == bytes {
                throw fail(.truncated(expected: magicBytes.count, found: bytes.count))
            }
            throw fail(.notAnArchive)
        }
        guard let newline = bytes.prefix(maximumHeaderLength).firstIndex(of: UInt8(ascii: "\n")) else {
            if bytes.count < maximumHeaderLength { throw fail(.truncated(expected: maximumHeaderLength, found: bytes.count)) }
            throw fail(.malformed("its header line is longer than \(maximumHeaderLength) bytes"))
        }
        let header = String(decoding: bytes[..<newline], as: UTF8.self)
        let fields = header.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count >= 2 else { throw fail(.malformed("its header has no format version")) }
        guard let version = Int(fields[1]), version > 0 else { throw fail(.unsupportedFormat(String(fields[1]))) }
        if version > Archive.currentFormatVersion { throw fail(.newerFormat(version)) }
        guard version == 2 else { throw fail(.unsupportedFormat(String(fields[1]))) }
        guard fields.count == 4, let length = Int(fields[2]), length >= 0, fields[3].count == 8,
            let checksum = UInt32(fields[3], radix: 16)
        else {
            throw fail(.malformed("its header \"\(header)\" is not \"\(magic) 2 LENGTH CRC32\""))
        }
        let body = Array(bytes[(newline + 1)...])
        if body.count < length { throw fail(.truncated(expected: length, found: body.count)) }
        if body.count > length { throw fail(.trailingBytes(expected: length, found: body.count)) }
        guard CRC32.checksum(body) == checksum else { throw fail(.checksumMismatch) }
        struct Body: Decodable {
            var generation: Int
            var application: [String: StateValue]?
            var root: Archive.Node?
            var sessions: [Archive.Session]?
            var writer: Writer?
        }
        let decoded: Body
        do {
            decoded = try JSONDecoder().decode(Body.self, from: Data(body))
        } catch {
            throw fail(.malformed("its body is not a valid state archive (\(error))"))
        }
        guard decoded.generation >= 0 else { throw fail(.malformed("its generation is negative")) }
        let sessions = decoded.sessions ?? []
        // A saved state without a tree of its own holds scene sessions (an application that uses scenes).
        guard decoded.root != nil || !sessions.isEmpty else { throw fail(.malformed("its body has neither a root nor sessions")) }
        var archive = Archive(sessions: sessions, sourceName: source)
        archive.rootNode = decoded.root
        archive.formatVersion = version
        archive.generation = decoded.generation
        archive.applicationState = decoded.application ?? [:]
        archive.writerVersion = decoded.writer?.version
        archive.writerBuildID = decoded.writer?.build
        archive.savedAt = decoded.writer?.time
        return archive
    }

    /// The body's `writer` member: who wrote the archive, and when (µs since the epoch). The format stays 2: a reader
    /// that does not know the member ignores it.
    struct Writer: Codable {
        var version: String?
        var build: String?
        var time: Int64?

        init?(_ archive: Archive) {
            guard archive.writerVersion != nil || archive.writerBuildID != nil || archive.savedAt != nil else { return nil }
            version = archive.writerVersion
            build = archive.writerBuildID
            time = archive.savedAt
        }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}

extension Archive {
    /// A format 1 tree as a saved state: every node is restored by its identifier (format 1 had no restoration
    /// identifiers, and restored the whole tree), its properties kept for `init(coder:)`; generation 0.
    @_spi(Internal) public func migratedFromFormat1() -> Archive {
        guard formatVersion == 1 else { return self }
        func migrate(_ node: Node) -> Node {
            var node = node
            if node.restorationIdentifier == nil { node.restorationIdentifier = node.identifier ?? node.className }
            node.children = node.children.map(migrate)
            node.presented = node.presented.map(migrate)
            return node
        }
        var migrated = self
        migrated.root = migrate(root)
        migrated.formatVersion = 1
        migrated.generation = 0
        return migrated
    }

    /// The saved-state file's bytes, in format ``currentFormatVersion`` (a header with the length and CRC-32 of the
    /// JSON body that follows it).
    @_spi(Internal) public func encodedState() -> [UInt8] {
        StateArchiveFormat.encode(self)
    }

    /// Reads a saved state: a pure function from bytes to an archive or the reason they are refused (empty,
    /// truncated, torn, of a newer format, malformed). A format 1 tree is migrated.
    @_spi(Internal) public static func decodeState(_ bytes: [UInt8], source: String) throws(StateArchiveError) -> Archive {
        try StateArchiveFormat.decode(bytes, source: source)
    }
}

/// CRC-32 (IEEE 802.3, as zlib and gzip compute it).
@_spi(Internal) public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// The checksum of `bytes`.
    @_spi(Internal) public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
