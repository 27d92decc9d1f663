//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import HTTPTypes
public import HummingbirdWebSocket
import LifecycleHTTPCore
public import Logging
import NIOCore
import NIOWebSocket

/// A WebSocket endpoint an ``HTTPServer`` upgrades connections to, whose connections outlive the server's runs.
///
/// The server upgrades a request for ``path`` (hummingbird-websocket's `HTTP1WebSocketUpgradeChannel`, on the same
/// listening descriptor as the HTTP routes) when `accept` returns a handler, and from then on the connection is the
/// endpoint's: the server's graceful shutdown (the background, a reload that moves it, the end of the process) neither
/// asks it to finish nor waits for it, and its handler runs in the endpoint's ``run()``, not in the server's run. Whoever
/// owns the endpoint closes its connections, when and with the close code it chooses, then calls ``finish()``; ``run()``
/// returns once every handler has.
public final class WebSocketEndpoint: Sendable {
    /// What serves one upgraded connection: its inbound frames, its outbound writer, a context with its logger.
    public typealias Handler = WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>

    /// The path upgraded (`/ws`); any query is the handler's to read.
    public let path: String
    /// hummingbird-websocket's settings: the largest frame (a larger one closes the connection with 1009), automatic
    /// pings, how long a close handshake may take.
    public let configuration: WebSocketServerConfiguration
    /// Where the handlers run.
    let connections = LongLivedConnections()
    private let accept: @Sendable (HTTPRequest, Logger) -> Handler?

    /// An endpoint at `path`; `accept` decides each upgrade (nil: refused, and hummingbird-websocket answers 400).
    public init(
        path: String,
        configuration: WebSocketServerConfiguration,
        accept: @escaping @Sendable (HTTPRequest, Logger) -> Handler?
    ) {
        self.path = path
        self.configuration = configuration
        self.accept = accept
    }

    /// Runs the connections' handlers until ``finish()`` was called and each has returned.
    public func run() async {
        await connections.run()
    }

    /// Upgrades nothing more; ``run()`` returns once the open connections' handlers have.
    public func finish() {
        connections.finish()
    }

    /// The handler for `request`, if it is for this endpoint and the endpoint takes it.
    func handler(for request: HTTPRequest, logger: Logger) -> Handler? {
        guard connections.isOpen, let target = request.path else { return nil }
        let requested = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard requested == path else { return nil }
        return accept(request, logger)
    }
}

/// The first handler of a connection whose protocol its first request decides (HTTP, or an upgrade to a WebSocket):
/// a graceful shutdown that comes before then finds no ``QuiesceGate`` in the pipeline yet, so this closes the
/// connection if it is still undecided once the first-request grace has run out; decided, it is left alone (the gate
/// added with the HTTP handlers acts on the shutdown, a WebSocket is its endpoint's).
final class UndecidedConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let firstRequestGrace: TimeAmount
    private var decided = false
    private var timer: Scheduled<Void>?

    init(firstRequestGrace: TimeAmount) {
        self.firstRequestGrace = firstRequestGrace
    }

    /// The connection was upgraded: its endpoint closes it.
    func upgraded() {
        decided = true
        timer?.cancel()
        timer = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, !decided, timer == nil {
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: firstRequestGrace) {
                self.timer = nil
                let gate = try? context.pipeline.syncOperations.handler(type: QuiesceGate<HTTPTypesFraming>.self)
                if !self.decided, gate == nil { context.close(promise: nil) }
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }
}

// A channel handler lives on its channel's event loop.
@available(*, unavailable)
extension UndecidedConnectionGuard: Sendable {}
