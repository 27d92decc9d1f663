//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

/// What every adapter that serves an inherited listening socket must do, whatever framework answers the requests
/// (`LifecycleHummingbird.HTTPServer`, `LifecycleVapor.VaporServer`): the same checks on real loopback sockets, each
/// starting the adapter under test through `start`. Each adapter's suite calls them from tests of its own, so a
/// failure names the adapter.
///
/// The routes `start` serves: `GET /` answers `hello`; `GET /slow?ms=N` yields to `slowStarted`, then answers `done`
/// after N milliseconds.
public struct ServerChecks: Sendable {
    /// How the adapter under test is started.
    public struct Options: Sendable {
        /// How long a keep-alive connection may stay idle once the shutdown begins.
        public var idleGrace: Duration = .milliseconds(250)
        /// How long a connection accepted before the shutdown may take to send its first request.
        public var firstRequestGrace: Duration = .seconds(2)
        /// Told each time `/slow` begins.
        public var slowStarted: AsyncStream<Void>.Continuation?
    }

    /// Starts the adapter under test on `descriptor` (a dup of the test's listening socket, the adapter's to close).
    public typealias Start = @Sendable (_ descriptor: Int32, _ options: Options) -> Serving

    private let start: Start
    /// The `Connection` header of a response that keeps the connection: none for Hummingbird, `keep-alive` for Vapor.
    private let keepAliveHeader: [String]

    public init(keepAliveHeader: [String], start: @escaping Start) {
        self.keepAliveHeader = keepAliveHeader
        self.start = start
    }

    private func serve(
        on descriptor: Int32,
        idleGrace: Duration = .milliseconds(250),
        firstRequestGrace: Duration = .seconds(2),
        slowStarted: AsyncStream<Void>.Continuation? = nil
    ) -> Serving {
        start(
            descriptor,
            Options(idleGrace: idleGrace, firstRequestGrace: firstRequestGrace, slowStarted: slowStarted)
        )
    }

    /// A GET on the descriptor it is given is answered `hello`, and the connection kept alive.
    public func servesAGetOnTheDescriptorItIsGiven() async throws {
        let listener = LoopbackListener()
        let serving = serve(on: listener.dup())
        let response = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            return try await connection.response()
        }
        #expect(response.status == 200)
        #expect(response.body == "hello")
        #expect(response.values("connection") == keepAliveHeader)
        await serving.shutDownGracefully()
        try await serving.finished()
    }

    /// After a graceful shutdown the adapter's descriptor is closed, the socket still listens, and the next adapter
    /// answers the connection the kernel queued meanwhile (the background pause and the restart in miniature).
    public func afterAGracefulShutdownTheSocketStillListensAndTheNextServerAnswersWhatQueued() async throws {
        let listener = LoopbackListener()
        let first = listener.dup()
        let serving = serve(on: first)
        try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            #expect(try await connection.response().status == 200)
        }
        await serving.shutDownGracefully()
        try await serving.finished()
        #expect(!listener.isOpen(first))
        #expect(listener.isListening)

        // Nobody accepts: the kernel queues the connection.
        let response = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            while listener.queued == 0 { try await Task.sleep(for: .milliseconds(1)) }
            let next = serve(on: listener.dup())
            let response = try await connection.response()
            await next.shutDownGracefully()
            try await next.finished()
            return response
        }
        #expect(response.status == 200)
        #expect(response.body == "hello")
    }

    /// In each of five rounds, 32 connections arrive while the shutdown begins (`stagger` × the round later): some are
    /// being accepted, some set up, some queued by the kernel; this adapter or the next answers every one.
    public func connectionsArrivingDuringTheShutdownAreAnsweredByThisServerOrTheNext(
        stagger: Duration = .milliseconds(1)
    ) async throws {
        let listener = LoopbackListener(backlog: 256)
        let port = listener.port
        for round in 0..<5 {
            let first = serve(on: listener.dup())
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                Self.getRoot(32, port: port, in: &group)
                try await Task.sleep(for: stagger * round)
                await first.shutDownGracefully()
                try await first.finished()
                let next = serve(on: listener.dup())
                let statuses = try await group.reduce(into: [Int]()) { $0.append($1) }
                await next.shutDownGracefully()
                try await next.finished()
                return statuses
            }
            #expect(statuses == Array(repeating: 200, count: 32), "round \(round)")
        }
    }

    /// Two adapters accept on one socket, as an upgrade's two processes do until the old one has stopped: each is
    /// woken for every connection and one finds nothing to accept; `rounds` rounds of 32 connections are all answered.
    /// (SwiftNIO's server channel asserts, in a debug build, that a wake-up always has a connection to accept: this
    /// check trapped there.)
    public func twoServersOnTheSameSocketAnswerEveryConnectionBetweenThem(rounds: Int) async throws {
        let listener = LoopbackListener(backlog: 256)
        let port = listener.port
        let first = serve(on: listener.dup())
        let second = serve(on: listener.dup())
        for round in 0..<rounds {
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

    /// A connection accepted before the shutdown whose request comes 300 ms after it (longer than the keep-alive
    /// grace, as a client starved of CPU between its connect and its request) is answered, with `Connection: close`,
    /// within the first request's grace.
    public func aConnectionAcceptedBeforeTheShutdownWhoseRequestComesAfterIsAnswered() async throws {
        let listener = LoopbackListener()
        let descriptor = listener.dup()
        let serving = serve(on: descriptor, idleGrace: .milliseconds(20), firstRequestGrace: .seconds(2))
        let (response, end) = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await listener.waitUntilAccepted()
            await serving.shutDownGracefully()
            try await listener.waitUntilClosed(descriptor)
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

    /// An idle keep-alive connection's next request within the grace is answered, with `Connection: close`.
    public func anIdleKeepAliveConnectionsNextRequestWithinTheGraceIsAnsweredWithConnectionClose() async throws {
        let listener = LoopbackListener()
        let descriptor = listener.dup()
        let serving = serve(on: descriptor, idleGrace: .seconds(2))
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
        #expect(first.values("connection") == keepAliveHeader)
        #expect(second.status == 200)
        #expect(second.body == "hello")
        #expect(second.values("connection") == ["close"])
        #expect(end == .closed)
        try await serving.finished()
    }

    /// An idle keep-alive connection that sends nothing is closed once the grace runs out, and not sooner.
    public func anIdleKeepAliveConnectionThatSendsNothingIsClosedOnceTheGraceRunsOut() async throws {
        let listener = LoopbackListener()
        let serving = serve(on: listener.dup(), idleGrace: .milliseconds(250))
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

    /// A slow request in progress at the shutdown completes, with `Connection: close`, before the run returns.
    public func aSlowRequestInProgressAtTheShutdownCompletesWithConnectionClose() async throws {
        let listener = LoopbackListener()
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let serving = serve(on: listener.dup(), slowStarted: start)
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

    /// Serving and shutting down leave the socket's backlog as the adapter was given it.
    public func theSocketKeepsTheBacklogItWasGiven() async throws {
        let listener = LoopbackListener(backlog: 511)
        let before = listener.backlog
        let serving = serve(on: listener.dup())
        try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            #expect(try await connection.response().status == 200)
        }
        #expect(listener.backlog == before)
        await serving.shutDownGracefully()
        try await serving.finished()
        #expect(listener.backlog == before)
    }

    /// Starts `count` connections to `port` in `group`, each asking for `/`; each task returns its response's status.
    public static func getRoot(_ count: Int, port: Int, in group: inout ThrowingTaskGroup<Int, any Error>) {
        for _ in 0..<count {
            group.addTask {
                try await RawHTTPConnection.connect(to: port) { connection in
                    try await connection.get("/")
                    return try await connection.response().status
                }
            }
        }
    }
}
