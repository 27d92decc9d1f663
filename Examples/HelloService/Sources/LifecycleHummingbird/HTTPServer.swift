//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import Hummingbird
public import HummingbirdCore
import HummingbirdWebSocket
import LifecycleHTTPCore
public import Logging
import NIOCore
import NIOHTTP1
public import ServiceLifecycle

/// A service that serves a Hummingbird responder over HTTP/1.1 on a listening socket it is given, and owns.
///
/// Hummingbird's `Application` binds its own socket; this serves the same router on a descriptor that somebody else
/// bound and keeps: one of systemd's `LISTEN_FDS`, or a `dup(2)` of a socket the daemon keeps in systemd's fd store.
/// Its responses are `Application`'s for the same router: the status and body, a `Date` header, a 500 for an error
/// the router does not turn into a response, a 400 (and the connection closed) for a request that does not parse.
///
/// ```swift
/// let router = Router()
/// router.get("/") { _, _ in "hello" }
/// let server = HTTPServer(router: router, descriptor: dup(listening), logger: logger)
/// try await ServiceGroup(services: [server], logger: logger).run()
/// ```
///
/// The server owns `descriptor`: `run()` closes it when it returns, whatever the reason, and a server that never runs
/// closes it when it is released. Closing it is all the server does to the socket, so the socket keeps listening
/// through its other descriptors, and connections that arrive while no server runs wait in the kernel's backlog
/// until the next server (on a new `dup`) accepts them. Others may accept on the socket at the same time (during an
/// upgrade the running process and the next one both do): each connection goes to one of them. The server accepts
/// itself and hands each connection to SwiftNIO as a connected socket, since SwiftNIO's server channel assumes it is
/// the socket's only accepter (its debug build traps on a wake-up that finds nothing to accept); nothing calls
/// listen(2) again, so the socket keeps its backlog.
///
/// **Graceful shutdown** (swift-service-lifecycle's, such as `ServiceGroup.triggerGracefulShutdown()`) stops
/// accepting by closing the server's descriptor, lets every open connection finish, and `run()` returns once all have
/// closed (a connection accepted before is SwiftNIO's already, so closing the descriptor drops none). No request is
/// lost to the shutdown: a request in progress finishes, and its response says `Connection: close`; a connection
/// with no request in progress is kept for a grace — `firstRequestGrace` when it never had a request (accepted a
/// moment ago, its request still on the way), `idleGrace` when it is kept alive
/// between requests: a request that arrives within it is answered, with `Connection: close`, and the connection then
/// closes; one that stays idle is closed when the grace runs out.
/// (Hummingbird alone closes both at once, under the request its client may be sending.) What is left is a client
/// that sends on an idle keep-alive connection just as the grace runs out; RFC 9112 §9.3.1 lets it retry the request.
///
/// **Cancellation** closes everything at once: the descriptor and every connection. A request still running when its
/// connection closes cannot be answered, and `run()` returns once the handlers have returned.
///
/// **WebSockets**: given a ``WebSocketEndpoint``, the server upgrades a request for its path (hummingbird-websocket's
/// `HTTP1WebSocketUpgradeChannel`) on the same descriptor as the routes; an upgraded connection is the endpoint's from
/// then on, outlives the run (the background drains the HTTP connections and keeps the WebSockets), and is closed by
/// the endpoint's owner. Every connection's handler then runs in the endpoint's `run()`, so the run ends once the
/// descriptor and the HTTP connections have closed.
public final class HTTPServer<Responder: HTTPResponder>: Service, Sendable
where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
    private let responder: Responder
    private let descriptor: OwnedDescriptor
    private let configuration: HTTP1Channel.Configuration
    private let idleGrace: Duration
    private let firstRequestGrace: Duration
    private let webSocket: WebSocketEndpoint?
    private let logger: Logger

    /// A server for `responder` on the listening socket `descriptor`, which it owns from now on.
    ///
    /// - Parameters:
    ///   - responder: Answers each request, with a context made as `Application` makes it.
    ///   - descriptor: A listening stream socket (TCP or Unix), typically a `dup(2)` of one that stays open elsewhere.
    ///   - configuration: Hummingbird's HTTP/1.1 settings (idle timeout, header limits, channel handlers).
    ///   - idleGrace: How long a graceful shutdown waits for the next request on a kept-alive connection.
    ///   - firstRequestGrace: How long it waits for the request of a connection that has not had one yet.
    ///   - webSocket: The WebSocket endpoint to upgrade requests for its path to, if any.
    ///   - logger: Where the server logs, and the base of each request's logger.
    public init(
        responder: Responder,
        descriptor: Int32,
        configuration: HTTP1Channel.Configuration = .init(),
        idleGrace: Duration = .milliseconds(250),
        firstRequestGrace: Duration = .seconds(2),
        webSocket: WebSocketEndpoint? = nil,
        logger: Logger
    ) {
        self.responder = responder
        self.descriptor = OwnedDescriptor(descriptor)
        self.configuration = configuration
        self.idleGrace = idleGrace
        self.firstRequestGrace = firstRequestGrace
        self.webSocket = webSocket
        self.logger = logger
    }

    /// A server for `router` (a Hummingbird `Router`) on the listening socket `descriptor`, which it owns from now on.
    ///
    /// - Parameters:
    ///   - router: Builds the responder, as `Application(router:)` does.
    ///   - descriptor: A listening stream socket (TCP or Unix), typically a `dup(2)` of one that stays open elsewhere.
    ///   - configuration: Hummingbird's HTTP/1.1 settings (idle timeout, header limits, channel handlers).
    ///   - idleGrace: How long a graceful shutdown waits for the next request on a kept-alive connection.
    ///   - firstRequestGrace: How long it waits for the request of a connection that has not had one yet.
    ///   - webSocket: The WebSocket endpoint to upgrade requests for its path to, if any.
    ///   - logger: Where the server logs, and the base of each request's logger.
    public convenience init<Builder: HTTPResponderBuilder>(
        router: Builder,
        descriptor: Int32,
        configuration: HTTP1Channel.Configuration = .init(),
        idleGrace: Duration = .milliseconds(250),
        firstRequestGrace: Duration = .seconds(2),
        webSocket: WebSocketEndpoint? = nil,
        logger: Logger
    ) where Builder.Responder == Responder {
        self.init(
            responder: router.buildResponder(),
            descriptor: descriptor,
            configuration: configuration,
            idleGrace: idleGrace,
            firstRequestGrace: firstRequestGrace,
            webSocket: webSocket,
            logger: logger
        )
    }

    /// Serves until a graceful shutdown has let every connection finish, or until cancelled; closes the descriptor.
    ///
    /// Throws ``HTTPServerError`` (and closes the descriptor) if the descriptor is not a listening socket, or if the
    /// server ran before.
    public func run() async throws {
        let listening = try descriptor.claim()
        if let webSocket {
            await run(listening, upgradingTo: webSocket)
            return
        }
        let logger = self.logger
        let http1 = HTTP1Channel(responder: channelResponder(), configuration: gatedConfiguration())
        let server = ConnectionServer<HTTP1Channel.Value>(logger: logger) { channel in
            // Hummingbird's own server channel lets a client half-close its side and still read the response.
            channel.eventLoop.makeCompletedFuture {
                try channel.syncOptions?.setOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            }
            .flatMap { http1.setup(channel: channel, logger: logger) }
        } handle: { connection in
            await http1.handle(value: connection, logger: logger)
        } abandon: { connection, _ in
            // An unfinished NIOAsyncChannel may not be released.
            Task { try? await connection.executeThenClose { _, _ in } }
        }
        await server.run(listening)
    }

    // A run that upgrades requests for the endpoint's path: hummingbird-websocket's channel decides each connection's
    // protocol on its first request, so the gate is added then (and acts on a shutdown that came before), an undecided
    // connection is closed once the first-request grace of a shutdown has run out, and an upgraded one leaves the run.
    private func run(_ listening: ClaimedDescriptor, upgradingTo endpoint: WebSocketEndpoint) async {
        let logger = self.logger
        let firstRequestGrace = TimeAmount(self.firstRequestGrace)
        let tracker = ConnectionTracker<HTTP1WebSocketUpgradeChannel.Value>()
        let channel = HTTP1WebSocketUpgradeChannel(
            responder: channelResponder(),
            configuration: .init(
                http1: gatedConfiguration(serverIsStopping: { tracker.isStopping }),
                ws: endpoint.configuration
            )
        ) { request, channel, logger -> ShouldUpgradeResult<WebSocketEndpoint.Handler> in
            guard let handler = endpoint.handler(for: request, logger: logger) else { return .dontUpgrade }
            try channel.pipeline.syncOperations.handler(type: UndecidedConnectionGuard.self).upgraded()
            tracker.becameLongLived(channel)
            return .upgrade([:], handler)
        }
        let server = ConnectionServer(logger: logger, tracker: tracker, longLived: endpoint.connections) { connection in
            connection.eventLoop.makeCompletedFuture {
                try connection.syncOptions?.setOption(ChannelOptions.allowRemoteHalfClosure, value: true)
                try connection.pipeline.syncOperations.addHandler(
                    UndecidedConnectionGuard(firstRequestGrace: firstRequestGrace)
                )
            }
            .flatMap { channel.setup(channel: connection, logger: logger) }
        } handle: { connection in
            await channel.handle(value: connection, logger: logger)
        }
        await server.run(listening)
    }

    // Hummingbird's configuration with the gate after any handlers of the caller's, next to Hummingbird's
    // HTTPConnectionStateHandler, so it counts the requests that handler counts.
    private func gatedConfiguration(serverIsStopping: (@Sendable () -> Bool)? = nil) -> HTTP1Channel.Configuration {
        var configuration = self.configuration
        let handlers = configuration.additionalChannelHandlers
        let grace = TimeAmount(idleGrace)
        let firstRequestGrace = TimeAmount(firstRequestGrace)
        configuration.additionalChannelHandlers = {
            handlers() + [
                QuiesceGate<HTTPTypesFraming>(
                    grace: grace,
                    firstRequestGrace: firstRequestGrace,
                    serverIsStopping: serverIsStopping
                )
            ]
        }
        return configuration
    }

    // What `Application.run()` hands its HTTP channel: the context, the request's logger, 500 for an error the
    // responder did not turn into a response, the Date header.
    private func channelResponder() -> HTTPChannelHandler.Responder {
        let responder = self.responder
        let logger = self.logger
        return { (request, responseWriter: consuming ResponseWriter, channel) in
            var logger = logger
            logger[metadataKey: "hb.request.id"] = .stringConvertible(RequestID())
            let response = try await withLogger(logger) { logger in
                let context = Responder.Context(source: .init(channel: channel, logger: logger))
                var response: Response
                do {
                    response = try await responder.respond(to: request, context: context)
                } catch let error as HTTPParserError {
                    // The request body did not parse: Hummingbird answers 400 and closes.
                    throw error
                } catch {
                    logger.debug("Unrecognised Error", metadata: ["error.type": "\(error)"])
                    response = Response(status: .internalServerError, body: .init())
                }
                response.headers[.date] = HTTPDate.now
                return response
            }
            do {
                try await responseWriter.write(response: response.head, body: response.body)
            } catch is HTTPParserError {
                // A response has begun, so the parser error must not reach Hummingbird's 400: end the connection.
                throw ParseErrorWhileWritingResponse()
            }
        }
    }
}

// Thrown for a request body that fails to parse while its response is written (Hummingbird's
// HTTPChannelError.parseErrorWhileWritingResponse is package-internal): the connection closes without a 400.
private struct ParseErrorWhileWritingResponse: Error {}
