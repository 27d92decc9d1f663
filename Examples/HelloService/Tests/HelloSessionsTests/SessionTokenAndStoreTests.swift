//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import FoundationEssentials
import HelloSessions
import PostgresNIO
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Tokens, the wire's parsing, the directory store and the database URL.
@Suite("Sessions: tokens, the wire and the stores")
struct SessionTokenAndStoreTests {
    @Test func aTokenResumesOnlyWithItsOwnSecretAndTheIdentifierAloneParsesToNothing() throws {
        let token = SessionToken.make()
        let other = SessionToken.make()
        #expect(token.identifier != other.identifier && token.secret != other.secret)
        let parsed = try #require(SessionToken(parsing: Substring(token.text)))
        #expect(parsed.matches(secretHash: token.secretHash))
        #expect(!parsed.matches(secretHash: other.secretHash))
        #expect(SessionToken(parsing: Substring(token.identifier)) == nil)
        #expect(SessionToken(parsing: Substring(token.identifier + ".")) == nil)
        #expect(SessionToken(parsing: Substring(token.identifier + "." + String(repeating: "A", count: 42))) == nil)
    }

    @Test func theClientsMessagesParseAndAnythingElseIsNothing() {
        #expect(ClientMessage.parse(#"{"op":"hello","every_ms":100}"#) == .hello(everyMilliseconds: 100))
        #expect(ClientMessage.parse(#"{"op":"resume","token":"t","last":3}"#) == .resume(token: "t", last: 3))
        #expect(ClientMessage.parse(#"{"op":"ack","seq":9}"#) == .acknowledge(9))
        #expect(ClientMessage.parse(#"{"op":"set","key":"k","value":"v"}"#) == .set(key: "k", value: "v"))
        #expect(ClientMessage.parse(#"{"op":"bye"}"#) == .bye)
        #expect(ClientMessage.parse(#"{"op":"ack"}"#) == nil)
        #expect(ClientMessage.parse("not json") == nil)
        #expect(ClientMessage.parse(#"{"op":"launch"}"#) == nil)
    }

    @Test func theDirectoryStoreKeepsARecordAcrossStoresAndExpiresWhatWasNotWritten() async throws {
        let directory = "/tmp/hello-sessions-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let store = DirectorySessionStore(directory: directory)
        try await store.prepare()
        var record = SessionRecord(id: "abc", secretHash: "h", everyMilliseconds: 100, now: 1)
        record.state = ["view": "chart-3"]
        record.produced = 7
        record.acknowledged = 5
        record.pending = [PendingMessage(seq: 6, text: "six"), PendingMessage(seq: 7, text: "seven")]
        try await store.save([record], durably: true)
        // Another process, another store on the same directory.
        let again = DirectorySessionStore(directory: directory)
        #expect(try await again.load("abc") == record)
        #expect(try await again.load("missing") == nil)
        #expect(try await again.expire(notWrittenSince: Date().timeIntervalSince1970 - 60).isEmpty)
        #expect(try await again.expire(notWrittenSince: Date().timeIntervalSince1970 + 60) == ["abc"])
        #expect(try await again.load("abc") == nil)
    }

    @Test func aDatabaseURLNamesAHostOrASocketDirectoryAndAnythingElseSaysWhatIsMissing() throws {
        let tcp = try PostgresClient.Configuration.parse(url: "postgresql://hello:pw@127.0.0.1:5433/sessions").get()
        #expect(tcp.host == "127.0.0.1" && tcp.port == 5433 && tcp.username == "hello" && tcp.database == "sessions")
        let socket = try PostgresClient.Configuration.parse(url: "postgresql://hello@/sessions?host=/tmp/pg").get()
        #expect(socket.unixSocketPath == "/tmp/pg/.s.PGSQL.5432")
        for bad in ["mysql://a@b/c", "postgresql://a@b/", "postgresql://b/c"] {
            guard case .failure = PostgresClient.Configuration.parse(url: bad) else {
                Issue.record("\(bad) was taken")
                continue
            }
        }
    }
}
