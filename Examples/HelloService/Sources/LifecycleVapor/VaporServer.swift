//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleHTTPCore
public import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
public import ServiceLifecycle
public import Vapor

/// A service that runs a Vapor 4 application on a listening socket it is given, and owns: one Vapor `Application` per
/// run, made, configured and booted when the run starts and shut down when it ends.
///
/// Vapor's `HTTPServer` binds its own address (`BindAddress` has no case for a descriptor); this serves the
/// application's responder — its routes, middleware and errors — on a descriptor that somebody else bound and keeps: one
/// of systemd's `LISTEN_FDS`, or a `dup(2)` of a socket the daemon keeps in systemd's fd store. It shares
/// LifecycleHummingbird's server core (LifecycleHTTPCore): it accepts itself and hands each connection to SwiftNIO as a
/// connected socket, so others may accept on the socket at the same time (an upgrade's two processes) and its backlog
/// is kept; a graceful shutdown closes only its own descriptor and answers a late request on a connection with
/// `Connection: close` within a grace.
///
/// ```swift
/// let server = VaporServer(descriptor: dup(listening), logger: logger) { app in
///     app.get("hello") { _ in "hello" }
/// }
/// try await ServiceGroup(services: [server], logger: logger).run()
/// ```
///
/// **One application per run.** A Vapor `Application` cannot boot again once it has shut down, and a server under
/// LifecycleKit stops and starts again whenever the application goes to the background and comes back. So each run is
/// one whole Vapor lifetime, as `vapor serve` started and stopped: `Application.make`, `configure` (routes, middleware,
/// `app.lifecycle` handlers, `app.http.server.configuration`), `asyncBoot()` (the handlers' `willBoot` and `didBoot`)
/// before the first connection is accepted, and `asyncShutdown()` (their `shutdown`, then Vapor's storage) once the
/// last connection has closed — after the requests in flight, which still have the database pools and clients the
/// handlers close. In the background nothing of Vapor runs. What must outlive a run belongs to the code that makes the
/// server (LifecycleKit's restorable state), not to the `Application`.
///
/// **From `app.http.server.configuration`** it takes `serverName` (the `Server` header), `idleTimeout` and
/// `tcpNoDelay`; Vapor's own address, backlog and `reuseAddress` do not apply (the socket is given), and TLS is not
/// served (a `tlsConfiguration` makes the run fail with ``VaporServerError``: terminate TLS in front of it). Requests
/// are decompressed as with Vapor's default (`requestDecompression` `.enabled`: gzip and deflate, up to 25 times
/// their size); responses are not compressed (Vapor's default). HTTP/1.1 with pipelining, as Vapor's default.
///
/// **What Vapor's public API does not reach** changes three things from Vapor's own server: a request body is
/// collected before the responder sees it, up to `maxBodySize` (by default `app.routes.defaultMaxBodySize`; a body as
/// long or longer is answered `413 Payload Too Large` through the application's middleware, as a route collecting a
/// streamed body answers); a streamed response body is collected, then written; and a protocol upgrade (a WebSocket
/// route) is answered `501 Not Implemented`.
///
/// The server owns `descriptor`: `run()` closes it when it returns, whatever the reason, and a server that never runs
/// closes it when it is released. **Cancellation** closes the descriptor and every connection at once, then shuts the
/// application down.
public final class VaporServer: Service, Sendable {
    /// Sets up a new application: routes, middleware, lifecycle handlers, server configuration, as a Vapor project's
    /// `configure(_:)` does.
    public typealias Configure = @Sendable (Vapor.Application) async throws -> Void

    private let descriptor: OwnedDescriptor
    private let environment: Vapor.Environment
    private let maxBodySize: ByteCount?
    private let idleGrace: Duration
    private let firstRequestGrace: Duration
    private let logger: Logger
    private let configure: Configure

    /// A server for the application `configure` sets up, on the listening socket `descriptor`, which it owns from now
    /// on.
    ///
    /// - Parameters:
    ///   - descriptor: A listening stream socket (TCP or Unix), typically a `dup(2)` of one that stays open elsewhere.
    ///   - environment: Each run's application's environment (`.production` hides the reasons of unexpected errors).
    ///   - maxBodySize: The longest request body collected; by default the application's
    ///     `routes.defaultMaxBodySize`. Raise it to the largest a route collects.
    ///   - idleGrace: How long a graceful shutdown waits for the next request on a kept-alive connection.
    ///   - firstRequestGrace: How long it waits for the request of a connection that has not had one yet.
    ///   - logger: Each run's application's logger (`app.logger`), and where the server logs.
    ///   - configure: Sets up each run's application before it boots.
    public init(
        descriptor: Int32,
        environment: Vapor.Environment = .production,
        maxBodySize: ByteCount? = nil,
        idleGrace: Duration = .milliseconds(250),
        firstRequestGrace: Duration = .seconds(2),
        logger: Logger,
        configure: @escaping Configure
    ) {
        self.descriptor = OwnedDescriptor(descriptor)
        self.environment = environment
        self.maxBodySize = maxBodySize
        self.idleGrace = idleGrace
        self.firstRequestGrace = firstRequestGrace
        self.logger = logger
        self.configure = configure
    }

    /// Makes, configures and boots an application, serves it until a graceful shutdown has let every connection
    /// finish (or until cancelled), then shuts the application down; closes the descriptor.
    ///
    /// Throws ``HTTPServerError`` (and closes the descriptor) if the descriptor is not a listening socket, or if the
    /// server ran before; ``VaporServerError`` if the application asks for what this server does not serve; and what
    /// `configure` or a lifecycle handler's boot throws (the application is shut down first).
    public func run() async throws {
        let listening = try descriptor.claim()
        let application: Vapor.Application
        do {
            application = try await bootedApplication()
        } catch {
            listening.close()
            throw error
        }
        await connectionServer(for: application).run(listening)
        try await application.asyncShutdown()
    }

    // Application.make, configure, asyncBoot: as Vapor's entry point and `serve` do, up to binding.
    private func bootedApplication() async throws -> Vapor.Application {
        let application = try await Vapor.Application.make(
            environment,
            .shared(MultiThreadedEventLoopGroup.singleton),
            logger: logger
        )
        do {
            try await configure(application)
            if application.http.server.configuration.tlsConfiguration != nil {
                throw VaporServerError(code: .tlsConfigured)
            }
            try await application.asyncBoot()
            return application
        } catch {
            try? await application.asyncShutdown()
            throw error
        }
    }

    // The connections' pipelines, made after the boot: the responder Vapor's server would make at `serve`.
    private func connectionServer(for application: Vapor.Application) -> ConnectionServer<Void> {
        let responder = application.responder.current
        // What a route answers for a body past its limit: the middleware around Abort(.payloadTooLarge).
        let payloadTooLarge = application.middleware.resolve().makeResponder(chainingTo: PayloadTooLargeResponder())
        let maxBodySize = (maxBodySize ?? application.routes.defaultMaxBodySize).value
        let configuration = application.http.server.configuration
        let grace = TimeAmount(idleGrace)
        let firstRequestGrace = TimeAmount(firstRequestGrace)
        return ConnectionServer<Void>(logger: logger) { channel in
            channel.eventLoop.makeCompletedFuture {
                // The options and handlers of Vapor's HTTP/1 pipeline (HTTPServer.swift, addVaporHTTP1Handlers), with
                // the gate after the codec and before SwiftNIO's pipeline handler, which closes on quiesce.
                let options = channel.syncOptions
                try options?.setOption(.tcpOption(.tcp_nodelay), value: configuration.tcpNoDelay ? 1 : 0)
                try options?.setOption(.maxMessagesPerRead, value: 1)
                let pipeline = channel.pipeline.syncOperations
                if let idleTimeout = configuration.idleTimeout {
                    try pipeline.addHandlers([IdleStateHandler(allTimeout: idleTimeout), CloseOnIdleHandler()])
                }
                try pipeline.addHandlers([
                    HTTPResponseEncoder(),
                    ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes)),
                    QuiesceGate<HTTP1Framing>(grace: grace, firstRequestGrace: firstRequestGrace),
                    HTTPServerPipelineHandler(),
                    NIOHTTPRequestDecompressor(limit: .ratio(25)),
                    VaporResponderHandler(
                        application: application,
                        responder: responder,
                        payloadTooLarge: payloadTooLarge,
                        maxBodySize: maxBodySize,
                        serverName: configuration.serverName
                    ),
                    NIOCloseOnErrorHandler(),
                ])
            }
        } handle: { _ in
            // The pipeline serves the connection; the run only waits for it to close.
        }
    }
}

/// Why a ``VaporServer`` could not serve its application.
public struct VaporServerError: Error, CustomStringConvertible, Equatable {
    /// What went wrong.
    public enum Code: Sendable, Equatable {
        /// The application's `http.server.configuration` has a `tlsConfiguration`, which this server does not serve.
        case tlsConfigured
    }

    /// What went wrong.
    public let code: Code

    /// The error as a sentence: what the application asked for, and what to do instead.
    public var description: String {
        switch code {
        case .tlsConfigured:
            "the application's http.server.configuration has a tlsConfiguration, but a VaporServer serves plain "
                + "HTTP/1.1 on its socket; terminate TLS in front of it (a proxy) and remove the tlsConfiguration"
        }
    }
}

// Abort(.payloadTooLarge), as a route's body collection throws it, for the middleware to turn into a response.
private struct PayloadTooLargeResponder: Vapor.Responder {
    func respond(to request: Vapor.Request) -> EventLoopFuture<Vapor.Response> {
        request.eventLoop.makeFailedFuture(Abort(.payloadTooLarge))
    }
}
