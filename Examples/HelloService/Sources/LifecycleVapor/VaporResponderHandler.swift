//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleHTTPCore
import Logging
import NIOCore
import NIOHTTP1
import Vapor

/// Turns the HTTP/1 parts of one connection into Vapor `Request`s, has the application's responder answer each, and
/// writes its `Response` as Vapor's own `HTTPServer` writes it.
///
/// Vapor's handlers that do this (`HTTPServerRequestDecoder`, `HTTPServerHandler`, `HTTPServerResponseEncoder`) are
/// internal to it, so this does their job with Vapor's public API, in the same place of the pipeline: after SwiftNIO's
/// codec, its `HTTPServerPipelineHandler` (which hands over one request at a time and closes the connection when it is
/// quiesced) and the request decompressor. Routing, middleware and errors are the responder's (`DefaultResponder`: the
/// router inside `app.middleware`, `ErrorMiddleware` among them), so they answer as under Vapor's server. What the
/// public API cannot reach makes two differences (see the LifecycleVapor README): a request's body is collected before
/// the responder sees it (Vapor's `Request.BodyStream` is internal), up to a limit past which the request is answered
/// `413 Payload Too Large` through the middleware, as a route collecting a streamed body past its limit is; and a
/// streamed response body is collected, then written as one chunk (Vapor hands its stream only to its own writer).
final class VaporResponderHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// What is known of the request being read.
    private enum State {
        /// Between requests.
        case idle
        /// The head, and the body so far.
        case collecting(HTTPRequestHead, ByteBuffer?)
        /// The body went past the limit: the rest is read and dropped, and the request is answered 413.
        case discarding(HTTPRequestHead)
    }

    private let application: Vapor.Application
    private let responder: any Vapor.Responder
    private let payloadTooLarge: any Vapor.Responder
    private let maxBodySize: Int
    private let serverName: String?
    private var state = State.idle

    /// A handler answering with `responder`, whose requests carry `application`; a body of `maxBodySize` bytes or more
    /// gets `payloadTooLarge`'s answer instead; `serverName`, if any, is the `Server` header.
    init(
        application: Vapor.Application,
        responder: any Vapor.Responder,
        payloadTooLarge: any Vapor.Responder,
        maxBodySize: Int,
        serverName: String?
    ) {
        self.application = application
        self.responder = responder
        self.payloadTooLarge = payloadTooLarge
        self.maxBodySize = maxBodySize
        self.serverName = serverName
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            state = .collecting(head, nil)
        case .body(var chunk):
            guard case .collecting(let head, var body) = state else { return }
            // Out of the state while it grows, so the buffer is not copied on write.
            state = .idle
            // As Vapor's Request.BodyStream.consume(max:) counts: a body of `maxBodySize` bytes is too large.
            guard (body?.readableBytes ?? 0) + chunk.readableBytes < maxBodySize else {
                state = .discarding(head)
                return
            }
            if body == nil { body = chunk } else { body?.writeBuffer(&chunk) }
            state = .collecting(head, body)
        case .end:
            let current = state
            state = .idle
            switch current {
            case .collecting(let head, let body):
                respond(to: head, body: body, with: responder, context: context)
            case .discarding(let head):
                respond(to: head, body: nil, with: payloadTooLarge, context: context)
            case .idle:
                // Cannot happen: SwiftNIO's decoder reads a head before an end.
                preconditionFailure("a request's end without its head")
            }
        }
    }

    // Makes the Request as Vapor's HTTPServerRequestDecoder does, and writes what `responder` answers.
    private func respond(
        to head: HTTPRequestHead,
        body: ByteBuffer?,
        with responder: any Vapor.Responder,
        context: ChannelHandlerContext
    ) {
        // URI(path:), not URI(string:): a request target has no host (see HTTPServerRequestDecoder).
        let request = Vapor.Request(
            application: application,
            method: head.method,
            url: URI(path: head.uri),
            version: head.version,
            headersNoUpdate: head.headers,
            collectedBody: body,
            remoteAddress: context.channel.remoteAddress,
            peerCertificateChain: nil,
            logger: application.logger,
            byteBufferAllocator: context.channel.allocator,
            on: context.eventLoop
        )
        let keepAlive = head.isKeepAlive
        let bodyless = head.method == .HEAD
        let bound = NIOLoopBound((context, self), eventLoop: context.eventLoop)
        responder.respond(to: request).hop(to: context.eventLoop).whenComplete { result in
            let (context, handler) = bound.value
            switch result {
            case .success(let response):
                handler.write(response, keepAlive: keepAlive, bodyless: bodyless, context: context)
            case .failure(let error):
                // As Vapor's HTTPServerHandler: an error no middleware turned into a response closes the connection
                // (NIOCloseOnErrorHandler, at the pipeline's end).
                context.fireErrorCaught(error)
            }
        }
    }

    // Writes `response` as Vapor's HTTPServerHandler and HTTPServerResponseEncoder do: `Connection` by the request's
    // keep-alive, then `Date`, then `Server`; no body for HEAD or 204; then, for a request that did not keep the
    // connection alive, the output closed.
    private func write(_ response: Vapor.Response, keepAlive: Bool, bodyless: Bool, context: ChannelHandlerContext) {
        guard response.upgrader == nil else {
            writeUpgradeRefusal(context: context)
            return
        }
        var headers = response.headers
        headers.add(name: .connection, value: keepAlive ? "keep-alive" : "close")
        headers.add(name: .date, value: HTTPDate.now)
        if let serverName { headers.add(name: .server, value: serverName) }
        let head = HTTPResponseHead(version: response.version, status: response.status, headers: headers)
        if bodyless || response.status == .noContent {
            writeResponse(head, body: nil, keepAlive: keepAlive, context: context)
        } else if let buffer = response.body.buffer {
            writeResponse(head, body: buffer, keepAlive: keepAlive, context: context)
        } else {
            // A streamed body (or none): the only public way to its bytes is to collect them.
            let bound = NIOLoopBound((context, self), eventLoop: context.eventLoop)
            response.body.collect(on: context.eventLoop).hop(to: context.eventLoop).whenComplete { result in
                let (context, handler) = bound.value
                switch result {
                case .success(let buffer):
                    handler.writeResponse(head, body: buffer, keepAlive: keepAlive, context: context)
                case .failure(let error):
                    // Vapor would have sent the head already and ended the connection; nothing is sent here.
                    context.fireErrorCaught(error)
                }
            }
        }
    }

    private func writeResponse(
        _ head: HTTPResponseHead,
        body: ByteBuffer?,
        keepAlive: Bool,
        context: ChannelHandlerContext
    ) {
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body, body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { result in
            switch result {
            case .success where !keepAlive:
                bound.value.close(mode: .output, promise: nil)
            case .success:
                break
            case .failure:
                bound.value.close(promise: nil)
            }
        }
    }

    // A protocol upgrade (a WebSocket route's 101) needs Vapor's internal upgrade handler: answered 501, and the
    // connection closed, rather than a 101 after which nothing would speak the new protocol.
    private func writeUpgradeRefusal(context: ChannelHandlerContext) {
        application.logger.warning(
            "a protocol upgrade (WebSocket) was asked for: it is not served on a passed listening socket; answered 501"
        )
        var headers = HTTPHeaders([("content-length", "0"), ("connection", "close")])
        headers.add(name: .date, value: HTTPDate.now)
        if let serverName { headers.add(name: .server, value: serverName) }
        writeResponse(
            HTTPResponseHead(version: .http1_1, status: .notImplemented, headers: headers),
            body: nil,
            keepAlive: false,
            context: context
        )
    }
}

/// Closes a connection that has been idle for Vapor's `idleTimeout`, as Vapor's own (internal) `CloseOnIdleHandler`.
final class CloseOnIdleHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is IdleStateHandler.IdleStateEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        context.close(mode: .all, promise: nil)
    }
}

// Channel handlers live on their channel's event loop.
@available(*, unavailable)
extension VaporResponderHandler: Sendable {}

@available(*, unavailable)
extension CloseOnIdleHandler: Sendable {}
