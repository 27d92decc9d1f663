//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HTTPServerTestSupport
import LifecycleVapor
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing
import Vapor

extension Serving {
    /// Starts a `VaporServer` for the application `configure` sets up, on `descriptor`.
    convenience init(
        vapor configure: @escaping VaporServer.Configure,
        on descriptor: Int32,
        idleGrace: Duration = .milliseconds(250),
        firstRequestGrace: Duration = .seconds(2)
    ) {
        self.init([
            VaporServer(
                descriptor: descriptor,
                idleGrace: idleGrace,
                firstRequestGrace: firstRequestGrace,
                logger: quietLogger,
                configure: configure
            )
        ])
    }
}

/// What happened, in order: lifecycle handlers' calls and the routes' own steps, from every run's application.
final class Events: Sendable {
    private let events = Mutex<[String]>([])
    // Every application that booted, kept so that no later one can take its address (its ObjectIdentifier).
    private let applications = Mutex<[Vapor.Application]>([])

    /// Everything so far.
    var all: [String] { events.withLock { $0 } }

    /// How many different applications booted.
    var distinctApplications: Int {
        applications.withLock { Set($0.map(ObjectIdentifier.init)).count }
    }

    /// Adds `event`.
    func record(_ event: String) {
        events.withLock { $0.append(event) }
    }

    /// Adds `event` for `application`, which is kept.
    func record(_ event: String, of application: Vapor.Application) {
        applications.withLock { $0.append(application) }
        record(event)
    }
}

/// Records its application's boot and shutdown.
struct RecordingHandler: LifecycleHandler {
    let events: Events

    func willBootAsync(_ application: Vapor.Application) async throws {
        events.record("willBoot", of: application)
    }

    func didBootAsync(_ application: Vapor.Application) async throws {
        events.record("didBoot", of: application)
    }

    func shutdownAsync(_ application: Vapor.Application) async {
        events.record("shutdown", of: application)
    }
}

/// The routes the tests call, with the middleware Vapor's `Application.make` installs (`ErrorMiddleware` among them).
/// `/slow?ms=N` says when it started and records when it answers; `events`, if given, also gets the lifecycle handlers'
/// calls.
func testRoutes(
    slowStarted: AsyncStream<Void>.Continuation? = nil,
    events: Events? = nil
) -> VaporServer.Configure {
    { app in
        struct Unrecognised: Error {}
        app.get { _ in "hello" }
        app.get("slow") { request async throws -> String in
            slowStarted?.yield()
            try await Task.sleep(for: .milliseconds(request.query[Int.self, at: "ms"] ?? 300))
            events?.record("slow answered")
            return "done"
        }
        app.get("fails") { _ -> String in throw Unrecognised() }
        app.get("forbidden") { _ -> String in throw Abort(.forbidden, reason: "not for you") }
        app.post("echo") { request in request.body.string ?? "" }
        app.get("nocontent") { _ in HTTPStatus.noContent }
        app.get("stream") { _ in
            Vapor.Response(
                body: .init(managedAsyncStream: { writer in
                    try await writer.write(.buffer(ByteBuffer(string: "streamed ")))
                    try await writer.write(.buffer(ByteBuffer(string: "body")))
                })
            )
        }
        app.webSocket("socket") { _, socket in try? await socket.close() }
        if let events { app.lifecycle.use(RecordingHandler(events: events)) }
    }
}

/// Vapor's own HTTPServer serving the application `configure` sets up, bound to 127.0.0.1 at a port the kernel picks:
/// what the adapter's answers are compared with.
struct VaporsOwnServer {
    let application: Vapor.Application
    let port: Int

    static func start(_ configure: VaporServer.Configure) async throws -> VaporsOwnServer {
        let app = try await Vapor.Application.make(
            .production,
            .shared(MultiThreadedEventLoopGroup.singleton),
            logger: quietLogger
        )
        try await configure(app)
        app.http.server.configuration.hostname = "127.0.0.1"
        app.http.server.configuration.port = 0
        try await app.asyncBoot()
        try await app.server.start(address: nil)
        let port = try #require(app.http.server.shared.localAddress?.port)
        return VaporsOwnServer(application: app, port: port)
    }

    func stop() async throws {
        await application.server.shutdown()
        try await application.asyncShutdown()
    }
}
