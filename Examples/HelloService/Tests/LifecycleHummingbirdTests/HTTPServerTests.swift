//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HTTPServerTestSupport
import Hummingbird
import HummingbirdCore
import LifecycleHummingbird
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The server on real loopback sockets: each test binds 127.0.0.1 port 0 and gives servers dups of the socket.
@Suite(.timeLimit(.minutes(1)))
struct HTTPServerTests {
    @Test func itServesAGetOnTheDescriptorItIsGiven() async throws {
        let listener = LoopbackListener()
        let serving = Serving(testRouter(), on: listener.dup())
        let response = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            return try await connection.response()
        }
        #expect(response.status == 200)
        #expect(response.body == "hello")
        #expect(!response.closesConnection)
        await serving.shutDownGracefully()
        try await serving.finished()
    }

    @Test func itAnswersAsHummingbirdsApplicationDoesForTheSameRouter() async throws {
        let listener = LoopbackListener()
        let (ports, port) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: testRouter(),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { port.yield($0.localAddress?.port ?? 0) },
            logger: quietLogger
        )
        let server = HTTPServer(router: testRouter(), descriptor: listener.dup(), logger: quietLogger)
        let serving = Serving([application, server])
        let applicationPort = try #require(await ports.first { _ in true })

        let requests = [
            "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /missing HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /fails HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /forbidden HTTP/1.1\r\nHost: a\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabcde",
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            "NOT HTTP AT ALL\r\n\r\n",
        ]
        for request in requests {
            let theirs = try await Self.exchange(request, port: applicationPort)
            let ours = try await Self.exchange(request, port: listener.port)
            // The Date header differs by when it was written; both have it (the 400 for bytes that do not parse has
            // none), in the same format.
            #expect(ours.response.values("date").count == theirs.response.values("date").count)
            #expect(ours.response.values("date").map(Self.shape) == theirs.response.values("date").map(Self.shape))
            let sent = request.debugDescription
            #expect(Self.withoutDate(ours.response) == Self.withoutDate(theirs.response), "for \(sent)")
            #expect(ours.end == theirs.end, "for \(sent)")
        }
        #expect(try await Self.exchange(requests[2], port: listener.port).response.status == 500)
        #expect(try await Self.exchange(requests[6], port: listener.port).response.status == 400)
        await serving.shutDownGracefully()
        try await serving.finished()
    }

    @Test func afterAGracefulShutdownTheSocketStillListensAndTheNextServerAnswersWhatQueued() async throws {
        let listener = LoopbackListener()
        let first = listener.dup()
        let serving = Serving(testRouter(), on: first)
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
            let next = Serving(testRouter(), on: listener.dup())
            let response = try await connection.response()
            await next.shutDownGracefully()
            try await next.finished()
            return response
        }
        #expect(response.status == 200)
        #expect(response.body == "hello")
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

    @Test func connectionsArrivingDuringTheShutdownAreAnsweredByThisServerOrTheNext() async throws {
        let listener = LoopbackListener(backlog: 256)
        let port = listener.port
        for round in 0..<5 {
            let first = Serving(testRouter(), on: listener.dup())
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                Self.getRoot(32, port: port, in: &group)
                // Some connections are being accepted, some set up, some queued by the kernel when this begins.
                try await Task.sleep(for: .milliseconds(round))
                await first.shutDownGracefully()
                try await first.finished()
                let next = Serving(testRouter(), on: listener.dup())
                let statuses = try await group.reduce(into: [Int]()) { $0.append($1) }
                await next.shutDownGracefully()
                try await next.finished()
                return statuses
            }
            #expect(statuses == Array(repeating: 200, count: 32), "round \(round)")
        }
    }

    // An upgrade's two processes both accept on the socket until the old one has stopped: each server is woken for
    // every connection, and one of them finds nothing to accept. (SwiftNIO's server channel asserts, in a debug build,
    // that a wake-up always has a connection to accept: this test trapped there.)
    @Test func twoServersOnTheSameSocketAnswerEveryConnectionBetweenThem() async throws {
        let listener = LoopbackListener(backlog: 256)
        let port = listener.port
        let first = Serving(testRouter(), on: listener.dup())
        let second = Serving(testRouter(), on: listener.dup())
        // Most wake-ups find the connection still there; a few hundred rounds meet the one that does not.
        for round in 0..<200 {
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

    @Test func aConnectionStillBeingSetUpWhenTheShutdownBeginsIsServedNotDropped() async throws {
        let listener = LoopbackListener()
        // Each connection's set-up takes 50 ms on its event loop, so the shutdown begins while it is being set up. That
        // matters when the connection is on another event loop than the server channel (which SwiftNIO chooses, about
        // every other time): so, several rounds.
        let configuration = HTTP1Channel.Configuration(additionalChannelHandlers: Self.slowSetUp())
        for round in 0..<8 {
            let server = HTTPServer(
                router: testRouter(),
                descriptor: listener.dup(),
                configuration: configuration,
                logger: quietLogger
            )
            let serving = Serving([server])
            let response = try await RawHTTPConnection.connect(to: listener.port) { connection in
                try await connection.get("/")
                try await listener.waitUntilAccepted()
                await serving.shutDownGracefully()
                return try await connection.response()
            }
            // Whether the response says close depends on whether it was written before the connection heard of the
            // shutdown; either way it is answered.
            #expect(response.status == 200, "round \(round)")
            try await serving.finished()
        }
    }

    @Test func aConnectionAcceptedBeforeTheShutdownWhoseRequestComesAfterIsAnswered() async throws {
        let listener = LoopbackListener()
        let descriptor = listener.dup()
        // The keep-alive grace is shorter than the wait below: what holds the connection is the first request's grace.
        let serving = Serving(
            testRouter(),
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
        #expect(response.closesConnection)
        #expect(end == .closed)
        try await serving.finished()
    }

    @Test func anIdleKeepAliveConnectionsNextRequestWithinTheGraceIsAnsweredWithConnectionClose() async throws {
        let listener = LoopbackListener()
        let descriptor = listener.dup()
        let serving = Serving(testRouter(), on: descriptor, idleGrace: .seconds(2))
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
        #expect(second.closesConnection)
        #expect(end == .closed)
        try await serving.finished()
    }

    @Test func anIdleKeepAliveConnectionThatSendsNothingIsClosedOnceTheGraceRunsOut() async throws {
        let listener = LoopbackListener()
        let serving = Serving(testRouter(), on: listener.dup(), idleGrace: .milliseconds(250))
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
        let serving = Serving(testRouter(slowStarted: start), on: listener.dup())
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
        #expect(response.closesConnection)
        #expect(end == .closed)
        #expect(!returnedEarly)
        try await serving.finished()
    }

    @Test func cancellationClosesTheConnectionsAtOnce() async throws {
        let listener = LoopbackListener()
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let serving = Serving(testRouter(slowStarted: start), on: listener.dup())
        let (idle, busy) = try await RawHTTPConnection.connect(to: listener.port) { idle in
            try await idle.get("/")
            #expect(try await idle.response().status == 200)
            return try await RawHTTPConnection.connect(to: listener.port) { busy in
                try await busy.get("/slow?ms=30000")
                await started.first { _ in true }
                serving.cancel()
                // The slow request is not answered with its 200; at most the 500 its cancelled handler produced.
                let answer = try? await busy.response()
                return (await idle.end(), answer.map(\.status))
            }
        }
        #expect(idle == .closed)
        #expect(busy == nil || busy == 500)
        #expect(try await serving.returns(within: .seconds(10)))
        #expect(listener.isListening)
    }

    @Test func theSocketKeepsTheBacklogItWasGiven() async throws {
        let listener = LoopbackListener(backlog: 511)
        let before = listener.backlog
        let serving = Serving(testRouter(), on: listener.dup())
        try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            #expect(try await connection.response().status == 200)
        }
        #expect(listener.backlog == before)
        await serving.shutDownGracefully()
        try await serving.finished()
        #expect(listener.backlog == before)
    }

    @Test func aDescriptorThatDoesNotListenIsRefusedNamedAndClosed() async throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let inode = LoopbackListener.inode(of: descriptor)
        let server = HTTPServer(router: testRouter(), descriptor: descriptor, logger: quietLogger)
        let error = await #expect(throws: HTTPServerError.self) { try await server.run() }
        #expect(error?.code == .notListening)
        #expect(error?.description.hasPrefix("descriptor \(descriptor) is not a listening socket") == true)
        #expect(LoopbackListener.inode(of: descriptor) != inode)
        let again = await #expect(throws: HTTPServerError.self) { try await server.run() }
        #expect(again?.code == .alreadyRun)
    }

    @Test func aServerThatNeverRunsClosesItsDescriptorWhenReleased() {
        let listener = LoopbackListener()
        let descriptor = listener.dup()
        do {
            let server = HTTPServer(router: testRouter(), descriptor: descriptor, logger: quietLogger)
            #expect(listener.isOpen(descriptor))
            withExtendedLifetime(server) {}
        }
        #expect(!listener.isOpen(descriptor))
        #expect(listener.isListening)
    }

    // Sends `request` on a new connection, reads one response and how the connection ended.
    private static func exchange(
        _ request: String,
        port: Int
    ) async throws -> (response: RawResponse, end: ConnectionEnd?) {
        try await RawHTTPConnection.connect(to: port) { connection in
            try await connection.send(request)
            let response = try await connection.response()
            // Only a response that says close is followed by the server closing; a keep-alive one waits for more.
            return (response, response.closesConnection ? await connection.end() : nil)
        }
    }

    // Handlers for a connection, returned 50 ms late: a set-up that takes a while.
    private static func slowSetUp() -> [any RemovableChannelHandler] {
        usleep(50_000)
        return []
    }

    // `Sun, 06 Nov 1994 08:49:37 GMT` as `Aaa, 00 Aaa 0000 00:00:00 AAA`.
    private static func shape(_ date: String) -> String {
        String(date.map { $0.isNumber ? "0" : $0.isLetter ? "A" : $0 })
    }

    private static func withoutDate(_ response: RawResponse) -> RawResponse {
        let headers = response.headers.filter { $0.name != "date" }
        return RawResponse(status: response.status, headers: headers, body: response.body)
    }
}
