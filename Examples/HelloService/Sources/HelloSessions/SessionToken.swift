//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Crypto

/// A session's resume token: `<identifier>.<secret>`, where the secret is 32 random bytes (256 bits, base64url).
///
/// The identifier names the session everywhere (the trace, `lifecyclectl`, the store's key) and resumes nothing by
/// itself: a resume needs the secret, of which the store keeps only the SHA-256, compared in constant time.
public struct SessionToken: Sendable, Hashable {
    /// The session's identifier: 16 random bytes, base64url (22 characters), a valid scene identifier.
    public let identifier: String
    /// The secret part, given to the client once, in its welcome.
    public let secret: String

    /// A new session's identifier and secret, from the system's random generator (getrandom(2)).
    public static func make() -> SessionToken {
        var generator = SystemRandomNumberGenerator()
        return SessionToken(
            identifier: Base64URL.encode(randomBytes(16, using: &generator)),
            secret: Base64URL.encode(randomBytes(32, using: &generator))
        )
    }

    /// The token as the client keeps it.
    public var text: String { identifier + "." + secret }

    /// The SHA-256 of the secret, in hex: what the store keeps.
    public var secretHash: String { Self.hash(secret) }

    /// A token as the client sent it, or nil when it is not of the form `<identifier>.<secret>`.
    public init?(parsing text: Substring) {
        guard text.utf8.count <= 128, let dot = text.firstIndex(of: ".") else { return nil }
        let identifier = text[..<dot]
        let secret = text[text.index(after: dot)...]
        guard identifier.utf8.count == 22, secret.utf8.count == 43, Base64URL.isValid(identifier), Base64URL.isValid(secret)
        else { return nil }
        self.identifier = String(identifier)
        self.secret = String(secret)
    }

    init(identifier: String, secret: String) {
        self.identifier = identifier
        self.secret = secret
    }

    /// Whether this token's secret is the one whose hash the store keeps; constant time in the hash's length.
    public func matches(secretHash stored: String) -> Bool {
        let computed = Array(secretHash.utf8)
        let expected = Array(stored.utf8)
        guard computed.count == expected.count else { return false }
        var difference: UInt8 = 0
        for index in computed.indices { difference |= computed[index] ^ expected[index] }
        return difference == 0
    }

    static func hash(_ secret: String) -> String {
        SHA256.hash(data: Array(secret.utf8)).map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
        }.joined()
    }

    private static func randomBytes(_ count: Int, using generator: inout SystemRandomNumberGenerator) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}

/// Base64url without padding (RFC 4648 §5).
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value: UInt32 = 0
            for byte in chunk { value = value << 8 | UInt32(byte) }
            value <<= UInt32(8 * (3 - chunk.count))
            for position in 0...chunk.count {
                out.append(alphabet[Int(value >> UInt32(18 - 6 * position) & 0x3F)])
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func isValid(_ text: Substring) -> Bool {
        text.utf8.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_")
        }
    }
}
