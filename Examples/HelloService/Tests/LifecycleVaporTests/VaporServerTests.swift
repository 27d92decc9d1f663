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
    @Test func itServesAGetOnTheDescriptorItIsGiven() async throws {
        let listener = LoopbackListener()
        let serving = Serving(vapor: testRoutes(), on: listener.dup())
        let response = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            return try await connection.response()
        }
        #expect(response.status == 200)
        #expect(response.body == "hello")
        #expect(response.values("connection") == ["keep-alive"])
        await serving.shutDownGracefully()
        try await serving.finished()
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
        let listener = LoopbackListener()
        let first = listener.dup()
        let serving = Serving(vapor: testRoutes(), on: first)
        try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            #expect(try await connection.response().status == 200)
        }
        await serving.shutDownGracefully()
        try await serving.finished()
        #expect(!listener.isOpen(first))
        #expect(listener.isListening)

        // The background pause and the restart in miniature: nobody accepts, the kernel queues the connection.
        let response = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            while listener.queued == 0 { try await Task.sleep(for: .milliseconds(1)) }
            let next = Serving(vapor: testRoutes(), on: listener.dup())
            let response = try await connection.response()
            await next.shutDownGracefully()
            try await next.finished()
            return response
        }
        #expect(response.status == 200)
        #expect(response.body == "hello")
    }

    @Test func connectionsArrivingDuringTheShutdownAreAnsweredByThisServerOrTheNext() async throws {
        let listener = LoopbackListener(backlog: 256)
        let port = listener.port
        for round in 0..<5 {
            let first = Serving(vapor: testRoutes(), on: listener.dup())
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                Self.getRoot(32, port: port, in: &group)
                // Some connections are being accepted, some set up, some queued by the kernel when this begins.
                try await Task.sleep(for: .milliseconds(round * 3))
                await first.shutDownGracefully()
                try await first.finished()
                let next = Serving(vapor: testRoutes(), on: listener.dup())
                let statuses = try await group.reduce(into: [Int]()) { $0.append($1) }
                await next.shutDownGracefully()
                try await next.finished()
                return statuses
            }
            #expect(statuses == Array(repeating: 200, count: 32), "round \(round)")
        }
    }

    // An upgrade's two processes both accept on the socket until the old one has stopped: each server is woken for
    // every connection, and one of them finds nothing to accept.
    @Test func twoServersOnTheSameSocketAnswerEveryConnectionBetweenThem() async throws {
        let listener = LoopbackListener(backlog: 256)
        let port = listener.port
        let first = Serving(vapor: testRoutes(), on: listener.dup())
        let second = Serving(vapor: testRoutes(), on: listener.dup())
        for round in 0..<50 {
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                Self.getRoot(32, port: port, in: &group)
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 32), "round \(round)")
        }
        await first.shutDownGracefully()
        await second.shutDownGracefully()
        try await first.finished()
        try await second.finished()
    }

    @Test func aConnectionAcceptedBeforeTheShutdownWhoseRequestComesAfterIsAnswered() async throws {
        let listener = LoopbackListener()
        let descriptor = listener.dup()
        // The keep-alive grace is shorter than the wait below: what holds the connection is the first request's grace.
        let serving = Serving(
            vapor: testRoutes(),
            on: descriptor,
            idleGrace: .milliseconds(20),
            firstRequestGrace: .seconds(2)
        )
        let (response, end) = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await listener.waitUntilAccepted()
            await serving.shutDownGracefully()
            try await listener.waitUntilClosed(descriptor)
            // Longer than the keep-alive grace, as a client starved of CPU between its connect and its request.
            try await Task.sleep(for: .milliseconds(300))
            try await connection.get("/")
            return (try await connection.response(), await connection.end())
        }
        #expect(response.status == 200)
        #expect(response.body == "hello")
        #expect(response.values("connection") == ["close"])
        #expect(end == .closed)
        try await serving.finished()
    }

    @Test func anIdleKeepAliveConnectionsNextRequestWithinTheGraceIsAnsweredWithConnectionClose() async throws {
        let listener = LoopbackListener()
        let descriptor = listener.dup()
        let serving = Serving(vapor: testRoutes(), on: descriptor, idleGrace: .seconds(2))
        let (first, second, end) = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            let first = try await connection.response()
            await serving.shutDownGracefully()
            try await listener.waitUntilClosed(descriptor)
            try await Task.sleep(for: .milliseconds(50))
            try await connection.get("/")
            return (first, try await connection.response(), await connection.end())
        }
        #expect(first.status == 200)
        #expect(!first.closesConnection)
        #expect(second.status == 200)
        #expect(second.body == "hello")
        #expect(second.values("connection") == ["close"])
        #expect(end == .closed)
        try await serving.finished()
    }

    @Test func anIdleKeepAliveConnectionThatSendsNothingIsClosedOnceTheGraceRunsOut() async throws {
        let listener = LoopbackListener()
        let serving = Serving(vapor: testRoutes(), on: listener.dup(), idleGrace: .milliseconds(250))
        let clock = ContinuousClock()
        let (end, waited) = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            #expect(try await connection.response().status == 200)
            let shutdown = clock.now
            await serving.shutDownGracefully()
            return (await connection.end(), clock.now - shutdown)
        }
        #expect(end == .closed)
        // The grace timer starts after the shutdown was asked for, so the close cannot come sooner.
        #expect(waited >= .milliseconds(250))
        try await serving.finished()
    }

    @Test func aSlowRequestInProgressAtTheShutdownCompletesWithConnectionClose() async throws {
        let listener = LoopbackListener()
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let serving = Serving(vapor: testRoutes(slowStarted: start), on: listener.dup())
        let (response, end, returnedEarly) = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/slow?ms=500")
            await started.first { _ in true }
            await serving.shutDownGracefully()
            try await Task.sleep(for: .milliseconds(100))
            let returnedEarly = serving.hasReturned
            return (try await connection.response(), await connection.end(), returnedEarly)
        }
        #expect(response.status == 200)
        #expect(response.body == "done")
        #expect(response.values("connection") == ["close"])
        #expect(end == .closed)
        #expect(!returnedEarly)
        try await serving.finished()
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
        let listener = LoopbackListener(backlog: 511)
        let before = listener.backlog
        let serving = Serving(vapor: testRoutes(), on: listener.dup())
        try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            #expect(try await connection.response().status == 200)
        }
        #expect(listener.backlog == before)
        await serving.shutDownGracefully()
        try await serving.finished()
        #expect(listener.backlog == before)
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

    /// Starts `count` connections to `port` in `group`, each asking for `/`; each task returns its response's status.
    static func getRoot(_ count: Int, port: Int, in group: inout ThrowingTaskGroup<Int, any Error>) {
        for _ in 0..<count {
            group.addTask {
                try await RawHTTPConnection.connect(to: port) { connection in
                    try await connection.get("/")
                    return try await connection.response().status
                }
            }
        }
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
