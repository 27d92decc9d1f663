//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HTTPServerTestSupport
import LifecycleVapor
import NIOCore
import Testing
import Vapor

#if canImport(Glibc)
import Glibc
#endif

/// The Vapor adapter on real loopback sockets: each test binds 127.0.0.1 port 0 and gives servers dups of the socket.
@Suite(.timeLimit(.minutes(2)))
struct VaporServerTests {
    /// The checks every adapter passes (`ServerChecks`), on this one.
    static let checks = ServerChecks(keepAliveHeader: ["keep-alive"]) { descriptor, options in
        Serving(
            vapor: testRoutes(slowStarted: options.slowStarted),
            on: descriptor,
            idleGrace: options.idleGrace,
            firstRequestGrace: options.firstRequestGrace
        )
    }

    @Test func itServesAGetOnTheDescriptorItIsGiven() async throws {
        try await Self.checks.servesAGetOnTheDescriptorItIsGiven()
    }

    @Test func itAnswersAsVaporsOwnServerDoesForTheSameApplication() async throws {
        let listener = LoopbackListener()
        let theirs = try await VaporsOwnServer.start(testRoutes())
        let serving = Serving(vapor: testRoutes(), on: listener.dup())

        let tooLarge = String(repeating: "x", count: 20_000)
        let requests: [(String, bodyless: Bool)] = [
            ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", false),
            ("GET /missing HTTP/1.1\r\nHost: a\r\n\r\n", false),
            ("GET /fails HTTP/1.1\r\nHost: a\r\n\r\n", false),
            ("GET /forbidden HTTP/1.1\r\nHost: a\r\n\r\n", false),
            ("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabcde", false),
            ("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: \(tooLarge.utf8.count)\r\n\r\n\(tooLarge)", false),
            ("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", false),
            ("GET / HTTP/1.0\r\nHost: a\r\n\r\n", false),
            ("HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", true),
            ("GET /nocontent HTTP/1.1\r\nHost: a\r\n\r\n", false),
            ("GET /stream HTTP/1.1\r\nHost: a\r\n\r\n", false),
            ("NOT HTTP AT ALL\r\n\r\n", false),
        ]
        for (request, bodyless) in requests {
            let vapors = await Self.exchange(request, bodyless: bodyless, port: theirs.port)
            let ours = await Self.exchange(request, bodyless: bodyless, port: listener.port)
            let sent = String(request.prefix(60)).debugDescription
            // The Date header differs by when it was written; both have it, in the same format.
            #expect(ours.dates.map(Self.shape) == vapors.dates.map(Self.shape), "for \(sent)")
            #expect(ours.withoutDates == vapors.withoutDates, "for \(sent)")
        }
        #expect(await Self.exchange(requests[2].0, port: listener.port).status == 500)
        #expect(await Self.exchange(requests[5].0, port: listener.port).status == 413)
        #expect(await Self.exchange(requests[10].0, port: listener.port).body == "streamed body")
        await serving.shutDownGracefully()
        try await serving.finished()
        try await theirs.stop()
    }

    @Test func eachRunIsOneWholeVaporApplicationBootedBeforeItServesAndShutDownAfterItsLastResponse() async throws {
        let listener = LoopbackListener()
        let events = Events()
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        for _ in 0..<2 {
            let serving = Serving(vapor: testRoutes(slowStarted: start, events: events), on: listener.dup())
            let response = try await RawHTTPConnection.connect(to: listener.port) { connection in
                try await connection.get("/slow?ms=300")
                var iterator = started.makeAsyncIterator()
                await iterator.next()
                // The request is in flight: the shutdown handlers must wait for its answer.
                await serving.shutDownGracefully()
                return try await connection.response()
            }
            #expect(response.status == 200)
            #expect(response.closesConnection)
            try await serving.finished()
        }
        // A new application for each run, and in each: boot, the request answered, then the shutdown handler.
        let run = ["willBoot", "didBoot", "slow answered", "shutdown"]
        #expect(events.all == run + run)
        #expect(events.distinctApplications == 2)
    }

    @Test func afterAGracefulShutdownTheSocketStillListensAndTheNextServerAnswersWhatQueued() async throws {
        try await Self.checks.afterAGracefulShutdownTheSocketStillListensAndTheNextServerAnswersWhatQueued()
    }

    @Test func connectionsArrivingDuringTheShutdownAreAnsweredByThisServerOrTheNext() async throws {
        try await Self.checks.connectionsArrivingDuringTheShutdownAreAnsweredByThisServerOrTheNext(
            stagger: .milliseconds(3)
        )
    }

    @Test func twoServersOnTheSameSocketAnswerEveryConnectionBetweenThem() async throws {
        try await Self.checks.twoServersOnTheSameSocketAnswerEveryConnectionBetweenThem(rounds: 50)
    }

    @Test func aConnectionAcceptedBeforeTheShutdownWhoseRequestComesAfterIsAnswered() async throws {
        try await Self.checks.aConnectionAcceptedBeforeTheShutdownWhoseRequestComesAfterIsAnswered()
    }

    @Test func anIdleKeepAliveConnectionsNextRequestWithinTheGraceIsAnsweredWithConnectionClose() async throws {
        try await Self.checks.anIdleKeepAliveConnectionsNextRequestWithinTheGraceIsAnsweredWithConnectionClose()
    }

    @Test func anIdleKeepAliveConnectionThatSendsNothingIsClosedOnceTheGraceRunsOut() async throws {
        try await Self.checks.anIdleKeepAliveConnectionThatSendsNothingIsClosedOnceTheGraceRunsOut()
    }

    @Test func aSlowRequestInProgressAtTheShutdownCompletesWithConnectionClose() async throws {
        try await Self.checks.aSlowRequestInProgressAtTheShutdownCompletesWithConnectionClose()
    }

    @Test func cancellationClosesTheConnectionsAtOnceAndShutsTheApplicationDown() async throws {
        let listener = LoopbackListener()
        let events = Events()
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let serving = Serving(vapor: testRoutes(slowStarted: start, events: events), on: listener.dup())
        let idle = try await RawHTTPConnection.connect(to: listener.port) { idle in
            try await idle.get("/")
            #expect(try await idle.response().status == 200)
            return try await RawHTTPConnection.connect(to: listener.port) { busy in
                try await busy.get("/slow?ms=30000")
                await started.first { _ in true }
                serving.cancel()
                // The slow request is not answered with its 200.
                let answer = try? await busy.response()
                #expect(answer?.status != 200)
                return await idle.end()
            }
        }
        #expect(idle == .closed)
        #expect(try await serving.returns(within: .seconds(10)))
        #expect(listener.isListening)
        #expect(events.all == ["willBoot", "didBoot", "shutdown"])
    }

    @Test func aProtocolUpgradeIsAnswered501AndTheConnectionClosed() async throws {
        let listener = LoopbackListener()
        let serving = Serving(vapor: testRoutes(), on: listener.dup())
        let request =
            "GET /socket HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        let answer = await Self.exchange(request, port: listener.port)
        #expect(answer.status == 501)
        #expect(answer.withoutDates.contains("connection: close"))
        #expect(answer.withoutDates.hasSuffix("end: closed"))
        await serving.shutDownGracefully()
        try await serving.finished()
    }

    @Test func theSocketKeepsTheBacklogItWasGiven() async throws {
        try await Self.checks.theSocketKeepsTheBacklogItWasGiven()
    }

    @Test func aDescriptorThatDoesNotListenIsRefusedBeforeAnyApplicationIsMade() async throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let inode = LoopbackListener.inode(of: descriptor)
        let configured = Events()
        let server = VaporServer(descriptor: descriptor, logger: quietLogger) { _ in configured.record("configure") }
        let error = await #expect(throws: HTTPServerError.self) { try await server.run() }
        #expect(error?.code == .notListening)
        #expect(LoopbackListener.inode(of: descriptor) != inode)
        let again = await #expect(throws: HTTPServerError.self) { try await server.run() }
        #expect(again?.code == .alreadyRun)
        #expect(configured.all.isEmpty)
    }

    @Test func anApplicationThatAsksForTLSIsRefusedShutDownAndItsDescriptorClosed() async throws {
        let listener = LoopbackListener()
        let descriptor = listener.dup()
        let events = Events()
        let server = VaporServer(descriptor: descriptor, logger: quietLogger) { app in
            try await testRoutes(events: events)(app)
            app.http.server.configuration.tlsConfiguration = .makeClientConfiguration()
        }
        let error = await #expect(throws: VaporServerError.self) { try await server.run() }
        #expect(error?.code == .tlsConfigured)
        #expect(!listener.isOpen(descriptor))
        #expect(listener.isListening)
        // Never booted, but shut down: Vapor's Application must be, before it is released.
        #expect(events.all == ["shutdown"])
    }

    @Test func aServerThatNeverRunsClosesItsDescriptorWhenReleased() {
        let listener = LoopbackListener()
        let descriptor = listener.dup()
        do {
            let server = VaporServer(descriptor: descriptor, logger: quietLogger, configure: testRoutes())
            #expect(listener.isOpen(descriptor))
            withExtendedLifetime(server) {}
        }
        #expect(!listener.isOpen(descriptor))
        #expect(listener.isListening)
    }

    /// What a client saw for one request on a new connection: the response, then how the connection ended.
    struct Exchange {
        /// The status, or 0 without a response.
        let status: Int
        /// The body.
        let body: String
        /// The Date headers.
        let dates: [String]
        /// Everything else, as text: status, headers in order, body, and the end (or the failure).
        let withoutDates: String
    }

    // Sends `request` on a new connection and reads one response, and how the connection ended after it.
    static func exchange(_ request: String, bodyless: Bool = false, port: Int) async -> Exchange {
        do {
            return try await RawHTTPConnection.connect(to: port) { connection in
                try await connection.send(request)
                let response: RawResponse
                do {
                    response = try await connection.response(bodyless: bodyless)
                } catch {
                    return Exchange(status: 0, body: "", dates: [], withoutDates: "no response")
                }
                // Only a response that says close is followed by the server closing; a keep-alive one waits for more.
                let end = response.closesConnection ? "\(await connection.end())" : "open"
                let headers = response.headers.filter { $0.name != "date" }.map { "\($0.name): \($0.value)" }
                let body = Self.canonical(response.body)
                return Exchange(
                    status: response.status,
                    body: body,
                    dates: response.values("date"),
                    withoutDates: ([String(response.status)] + headers + [body, "end: \(end)"]).joined(separator: "\n")
                )
            }
        } catch {
            return Exchange(status: 0, body: "", dates: [], withoutDates: "failed: \(error)")
        }
    }

    // A JSON object's keys sorted (Foundation's JSONEncoder writes ErrorMiddleware's in a different order each time);
    // any other body as it is.
    private static func canonical(_ body: String) -> String {
        guard body.hasPrefix("{"),
            let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)),
            let sorted = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        else { return body }
        return String(decoding: sorted, as: UTF8.self)
    }

    // `Sun, 06 Nov 1994 08:49:37 GMT` as `Aaa, 00 Aaa 0000 00:00:00 AAA`.
    private static func shape(_ date: String) -> String {
        String(date.map { $0.isNumber ? "0" : $0.isLetter ? "A" : $0 })
    }
}
