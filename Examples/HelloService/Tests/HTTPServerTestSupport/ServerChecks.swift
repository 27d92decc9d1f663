//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//


/// What every adapter that serves an inherited listening socket must do, whatever framework answers the requests
/// (`LifecycleHummingbird.HTTPServer`, `LifecycleVapor.VaporServer`): the same checks on real loopback sockets, each
/// starting the adapter under test through `start`. Each adapter's suite calls them from tests of its own, so a
/// failure names the adapter. A check that does not hold throws ``ServerCheckFailure`` (with what was found and the
/// check's line) rather than using swift-testing's macros: this library is an ordinary target, which a release build
/// of the package (`scripts/bench`) compiles too, and the Testing module is there for test targets only.
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
        try expect(response.status, 200, "response.status")
        try expect(response.body, "hello", "response.body")
        try expect(response.values("connection"), keepAliveHeader, "the response's Connection header")
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
            try expect(try await connection.response().status, 200, "the status")
        }
        await serving.shutDownGracefully()
        try await serving.finished()
        try expect(!listener.isOpen(first), "the first server's descriptor closed")
        try expect(listener.isListening, "the socket still listening")

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
        try expect(response.status, 200, "response.status")
        try expect(response.body, "hello", "response.body")
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
            try expect(statuses, Array(repeating: 200, count: 32), "the statuses in round \(round)")
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
            try expect(statuses, Array(repeating: 200, count: 32), "the statuses in round \(round)")
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
        try expect(response.status, 200, "response.status")
        try expect(response.body, "hello", "response.body")
        try expect(response.values("connection"), ["close"], "the response's Connection header")
        try expect(end, .closed, "how the connection ended")
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
        try expect(first.status, 200, "first.status")
        try expect(first.values("connection"), keepAliveHeader, "the first response's Connection header")
        try expect(second.status, 200, "second.status")
        try expect(second.body, "hello", "second.body")
        try expect(second.values("connection"), ["close"], "the second response's Connection header")
        try expect(end, .closed, "how the connection ended")
        try await serving.finished()
    }

    /// An idle keep-alive connection that sends nothing is closed once the grace runs out, and not sooner.
    public func anIdleKeepAliveConnectionThatSendsNothingIsClosedOnceTheGraceRunsOut() async throws {
        let listener = LoopbackListener()
        let serving = serve(on: listener.dup(), idleGrace: .milliseconds(250))
        let clock = ContinuousClock()
        let (end, waited) = try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            try expect(try await connection.response().status, 200, "the status")
            let shutdown = clock.now
            await serving.shutDownGracefully()
            return (await connection.end(), clock.now - shutdown)
        }
        try expect(end, .closed, "how the connection ended")
        // The grace timer starts after the shutdown was asked for, so the close cannot come sooner.
        try expect(waited >= .milliseconds(250), "the close no sooner than the grace, 250 ms (it came after \(waited))")
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
        try expect(response.status, 200, "response.status")
        try expect(response.body, "done", "response.body")
        try expect(response.values("connection"), ["close"], "the response's Connection header")
        try expect(end, .closed, "how the connection ended")
        try expect(!returnedEarly, "the run still going 100 ms into the shutdown")
        try await serving.finished()
    }

    /// Serving and shutting down leave the socket's backlog as the adapter was given it.
    public func theSocketKeepsTheBacklogItWasGiven() async throws {
        let listener = LoopbackListener(backlog: 511)
        let before = listener.backlog
        let serving = serve(on: listener.dup())
        try await RawHTTPConnection.connect(to: listener.port) { connection in
            try await connection.get("/")
            try expect(try await connection.response().status, 200, "the status")
        }
        try expect(listener.backlog, before, "listener.backlog")
        await serving.shutDownGracefully()
        try await serving.finished()
        try expect(listener.backlog, before, "listener.backlog")
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

/// A check of ``ServerChecks`` that did not hold: what was found against what was expected, and the line of the check.
/// The test that called the check fails with it.
public struct ServerCheckFailure: Error, CustomStringConvertible {
    public let description: String
}

/// Fails the check unless `found` is `expected`.
private func expect<T: Equatable>(
    _ found: T,
    _ expected: T,
    _ what: @autoclosure () -> String,
    line: Int = #line
) throws(ServerCheckFailure) {
    guard found != expected else { return }
    throw ServerCheckFailure(description: "ServerChecks.swift:\(line): \(what()) is \(found), expected \(expected)")
}

/// Fails the check unless `holds`.
private func expect(_ holds: Bool, _ what: @autoclosure () -> String, line: Int = #line) throws(ServerCheckFailure) {
    guard !holds else { return }
    throw ServerCheckFailure(description: "ServerChecks.swift:\(line): expected \(what())")
}
