//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import NIOCore

/// The HTTP message types of one framework's pipeline, as far as a ``QuiesceGate`` needs them: which request part is a
/// head, what a response part is, and how a head says `Connection: close`.
package protocol QuiesceGateFraming {
    /// A request part as the codec before the gate reads it.
    associatedtype RequestPart
    /// A response part as the handlers after the gate write it.
    associatedtype ResponsePart

    /// Whether `part` is a request head.
    static func isHead(_ part: RequestPart) -> Bool
    /// What kind of response part `part` is.
    static func kind(of part: ResponsePart) -> QuiesceGateStateMachine.ResponsePart
    /// `head` (a response head) with `Connection: close`.
    static func announcingClose(_ head: ResponsePart) -> ResponsePart
}

/// Holds a connection's quiesce event until the connection has a request, so a graceful shutdown loses none.
///
/// Sits in each connection's pipeline after the HTTP codec and before the framework's handler that closes a connection
/// with no request in progress as soon as the quiesce event arrives (Hummingbird's `HTTPConnectionStateHandler`,
/// SwiftNIO's `HTTPServerPipelineHandler` in the Vapor adapter). That includes a connection accepted a moment before the
/// shutdown whose request bytes have not been read yet, and a keep-alive connection whose client is sending its next
/// request: both clients would see the connection closed under their request. So, when the event comes:
///
/// - with a request in progress, it goes on at once (the framework closes after the response), and the response head
///   gets `Connection: close`;
/// - with none, it is held until the next request head arrives — the head goes on, then the event, and that
///   response gets `Connection: close` — or until the grace runs out, and then it goes on and the framework closes the
///   idle connection. A connection that never had a request (accepted a moment before, its client's request on the
///   way) gets a longer grace than a keep-alive one between requests: its client has committed to a request, and on a
///   loaded machine it may be a while before its bytes come.
package final class QuiesceGate<Framing: QuiesceGateFraming>: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = Framing.RequestPart
    package typealias InboundOut = Framing.RequestPart
    package typealias OutboundIn = Framing.ResponsePart
    package typealias OutboundOut = Framing.ResponsePart

    private let grace: TimeAmount
    private let firstRequestGrace: TimeAmount
    private let serverIsStopping: (@Sendable () -> Bool)?
    private var machine = QuiesceGateStateMachine()
    private var graceTimer: Scheduled<Void>?

    /// A gate that holds the quiesce event of an idle keep-alive connection for `grace` at most, and of a connection
    /// that never had a request for `firstRequestGrace`.
    ///
    /// `serverIsStopping`, for a gate added to a pipeline only once the connection's first request has come (a server
    /// that may upgrade the connection to a WebSocket decides its protocol then): when the server's graceful shutdown
    /// began before, the quiesce event went by before the gate was there, and the gate acts as if it had just come.
    package init(
        grace: TimeAmount,
        firstRequestGrace: TimeAmount,
        serverIsStopping: (@Sendable () -> Bool)? = nil
    ) {
        self.grace = grace
        self.firstRequestGrace = firstRequestGrace
        self.serverIsStopping = serverIsStopping
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        if serverIsStopping?() == true { quiesceArrived(context: context) }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard Framing.isHead(unwrapInboundIn(data)) else {
            context.fireChannelRead(data)
            return
        }
        let action = machine.requestHeadRead()
        context.fireChannelRead(data)
        if action == .forwardThenRelease {
            cancelGraceTimer()
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        if machine.write(Framing.kind(of: part)) == .announceClose {
            context.write(wrapOutboundOut(Framing.announcingClose(part)), promise: promise)
        } else {
            context.write(data, promise: promise)
        }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        quiesceArrived(context: context)
    }

    // The quiesce event came (or had come before the gate was added): pass it on, or hold it for a grace.
    private func quiesceArrived(context: ChannelHandlerContext) {
        switch machine.quiesce() {
        case .release:
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        case .hold(let firstRequest):
            graceTimer = context.eventLoop.assumeIsolated().scheduleTask(in: firstRequest ? firstRequestGrace : grace) {
                self.graceTimer = nil
                if self.machine.graceExpired() {
                    context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
                }
            }
        case .ignore:
            break
        }
    }

    package func channelInactive(context: ChannelHandlerContext) {
        cancelGraceTimer()
        context.fireChannelInactive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        cancelGraceTimer()
    }

    private func cancelGraceTimer() {
        graceTimer?.cancel()
        graceTimer = nil
    }
}

// A channel handler lives on its channel's event loop.
@available(*, unavailable)
extension QuiesceGate: Sendable {}
