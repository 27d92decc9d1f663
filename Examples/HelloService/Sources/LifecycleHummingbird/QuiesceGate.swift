//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Holds a connection's quiesce event until the connection has a request, so a graceful shutdown loses none.
///
/// Sits in each connection's pipeline after the HTTP codec and before Hummingbird's `HTTPConnectionStateHandler`
/// (through `HTTP1Channel.Configuration.additionalChannelHandlers`), which closes a connection with no request in
/// progress as soon as the quiesce event arrives. That includes a connection accepted a moment before the shutdown
/// whose request bytes have not been read yet, and a keep-alive connection whose client is sending its next request:
/// both clients would see the connection closed under their request. So, when the event comes:
///
/// - with a request in progress, it goes on at once (Hummingbird closes after the response), and the response head
///   gets `Connection: close`;
/// - with none, it is held until the next request head arrives — the head goes on, then the event, and that
///   response gets `Connection: close` — or until the grace runs out, and then it goes on and Hummingbird closes the
///   idle connection. A connection that never had a request (accepted a moment before, its client's request on the
///   way) gets a longer grace than a keep-alive one between requests: its client has committed to a request, and on a
///   loaded machine it may be a while before its bytes come.
final class QuiesceGate: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let grace: TimeAmount
    private let firstRequestGrace: TimeAmount
    private var machine = StateMachine()
    private var graceTimer: Scheduled<Void>?

    /// A gate that holds the quiesce event of an idle keep-alive connection for `grace` at most, and of a connection
    /// that never had a request for `firstRequestGrace`.
    init(grace: TimeAmount, firstRequestGrace: TimeAmount) {
        self.grace = grace
        self.firstRequestGrace = firstRequestGrace
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let action = machine.read(unwrapInboundIn(data))
        context.fireChannelRead(data)
        if action == .forwardThenRelease {
            cancelGraceTimer()
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        if machine.write(part) == .announceClose, case .head(var head) = part {
            head.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        } else {
            context.write(data, promise: promise)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        switch machine.quiesce() {
        case .release:
            context.fireUserInboundEventTriggered(event)
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

    func channelInactive(context: ChannelHandlerContext) {
        cancelGraceTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
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
