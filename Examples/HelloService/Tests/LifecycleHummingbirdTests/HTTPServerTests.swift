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
    /// The checks every adapter passes (`ServerChecks`), on this one.
    static let checks = ServerChecks(keepAliveHeader: []) { descriptor, options in
        Serving(
            testRouter(slowStarted: options.slowStarted),
            on: descriptor,
            idleGrace: options.idleGrace,
            firstRequestGrace: options.firstRequestGrace
        )
    }

    @Test func itServesAGetOnTheDescriptorItIsGiven() async throws {
        try await Self.checks.servesAGetOnTheDescriptorItIsGiven()
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
        try await Self.checks.afterAGracefulShutdownTheSocketStillListensAndTheNextServerAnswersWhatQueued()
    }

    @Test func connectionsArrivingDuringTheShutdownAreAnsweredByThisServerOrTheNext() async throws {
        try await Self.checks.connectionsArrivingDuringTheShutdownAreAnsweredByThisServerOrTheNext()
    }

    @Test func twoServersOnTheSameSocketAnswerEveryConnectionBetweenThem() async throws {
        try await Self.checks.twoServersOnTheSameSocketAnswerEveryConnectionBetweenThem(rounds: 200)
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
        try await Self.checks.theSocketKeepsTheBacklogItWasGiven()
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
