//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HummingbirdCore
import NIOCore
import Synchronization

/// Every connection of one run of an ``HTTPServer``, from accept to close: hands each to the run once its pipeline is
/// set up, stops accepting without dropping one, and tells the run when the last has closed.
///
/// This does what NIOExtras' `ServerQuiescingHelper` does with SwiftNIO's async bootstrap (as Hummingbird's `Server`
/// uses them), without their race: closing the server channel drops a connection that was accepted but not yet
/// handed over — its `NIOAsyncChannel` is released unfinished, which is a precondition failure, and the bootstrap
/// closes a connection whose set-up ends after the server channel closed. Here the server channel stops reading
/// first, and closes once every connection it accepted is registered; and nothing that was set up is ever released
/// without being handed to the run.
final class ConnectionTracker: Sendable {
    /// A connection's pipeline, set up by Hummingbird's `HTTP1Channel`.
    typealias Connection = HTTP1Channel.Value

    private enum Phase {
        /// Accepting and serving.
        case serving
        /// Graceful shutdown: no more accepting; the open connections finish.
        case stopping
        /// Cancelled: everything closes now.
        case cancelled
    }

    private struct State {
        var phase = Phase.serving
        /// The server channel; nil once it closed.
        var server: (any Channel)?
        /// Accepted and not closed: the run ends when this is empty and the server channel closed.
        var accepted: Set<ObjectIdentifier> = []
        /// Accepted, neither registered nor closed: closing the server channel now would close these unserved.
        var unregistered: Set<ObjectIdentifier> = []
        /// Set up and not closed: what a shutdown quiesces and a cancellation closes.
        var ready: [ObjectIdentifier: any Channel] = [:]
        /// Set up, waiting for the run to take them.
        var handOver: [Connection] = []
        /// The run, waiting for a connection or the end.
        var waiter: CheckedContinuation<Connection?, Never>?
        /// Whether the server channel's close was asked for.
        var closingServer = false
        /// Whether `next()` returned the end: nobody takes a connection any more.
        var ended = false

        var finished: Bool { server == nil && accepted.isEmpty }

        // Whether the server channel should close now: stopping, and nothing is left that its close would drop.
        mutating func shouldCloseServer() -> (any Channel)? {
            guard phase == .stopping, unregistered.isEmpty, !closingServer, let server else { return nil }
            closingServer = true
            return server
        }

        // The waiting run, to be resumed with the end, if the run has ended.
        mutating func endedWaiter() -> CheckedContinuation<Connection?, Never>? {
            guard finished, handOver.isEmpty, let waiter else { return nil }
            self.waiter = nil
            ended = true
            return waiter
        }
    }

    private let state = Mutex(State())

    /// The handlers to put on the server channel: they see each accepted connection before SwiftNIO sets it up.
    func serverHandlers(for server: any Channel) -> [any ChannelHandler] {
        state.withLock { $0.server = server }
        server.closeFuture.whenComplete { _ in self.serverClosed() }
        return [AcceptedHandler(tracker: self), AcceptBackoffHandler(shouldForwardIOErrorCaught: false)]
    }

    /// Prepares an accepted connection's pipeline before Hummingbird sets it up; call on its event loop, in the child
    /// channel initializer.
    func prepare(_ channel: any Channel) throws {
        // Before anything else: should this fail, no NIOAsyncChannel exists yet that would have to be finished.
        let key = ObjectIdentifier(channel)
        try channel.pipeline.syncOperations.addHandler(RegisteredHandler { self.registered(key) }, position: .first)
    }

    /// Puts `connection` in the run's hands once Hummingbird set up its pipeline; call on its event loop, in the child
    /// channel initializer.
    func setUp(_ connection: Connection) {
        let channel = connection.channel
        let key = ObjectIdentifier(channel)
        let (phase, waiter, ended) = state.withLock { state in
            if state.accepted.contains(key) { state.ready[key] = channel }
            if state.ended { return (state.phase, nil as CheckedContinuation<Connection?, Never>?, true) }
            guard let waiter = state.waiter else {
                state.handOver.append(connection)
                return (state.phase, nil, false)
            }
            state.waiter = nil
            return (state.phase, waiter, false)
        }
        guard !ended else {
            // Cannot happen: a connection is set up before it closes, and the run ends only once all have closed.
            // Should it happen, the connection must still be finished: an unfinished NIOAsyncChannel may not be
            // released.
            Task { try? await connection.executeThenClose { _, _ in } }
            return
        }
        waiter?.resume(returning: connection)
        switch phase {
        case .serving:
            break
        case .stopping:
            Self.quiesce(channel)
        case .cancelled:
            channel.eventLoop.execute { channel.close(promise: nil) }
        }
    }

    /// The next connection to serve, or nil once the server channel closed and every connection has closed.
    func next() async -> Connection? {
        await withCheckedContinuation { continuation in
            let next: Connection?? = state.withLock { state in
                if !state.handOver.isEmpty { return state.handOver.removeFirst() }
                if state.finished {
                    state.ended = true
                    return .some(nil)
                }
                state.waiter = continuation
                return nil
            }
            if let next { continuation.resume(returning: next) }
        }
    }

    /// Graceful shutdown: stop accepting, close the server channel once nothing it accepted is left unregistered, and
    /// ask every connection to finish.
    func stopAccepting() {
        guard let server = state.withLock({ $0.server }) else { return }
        server.eventLoop.execute {
            // No accept after this one; what the kernel queues meanwhile waits for the next server.
            _ = server.setOption(ChannelOptions.autoRead, value: false)
            let (ready, close) = self.state.withLock { state -> ([any Channel], (any Channel)?) in
                guard state.phase == .serving else { return ([], nil) }
                state.phase = .stopping
                return (Array(state.ready.values), state.shouldCloseServer())
            }
            close?.close(promise: nil)
            for channel in ready { Self.quiesce(channel) }
        }
    }

    /// Cancellation: close the server channel and every connection now.
    func cancel() {
        let (server, ready) = state.withLock { state -> ((any Channel)?, [any Channel]) in
            state.phase = .cancelled
            state.closingServer = true
            return (state.server, Array(state.ready.values))
        }
        server?.close(promise: nil)
        for channel in ready { channel.close(promise: nil) }
    }

    // Asks `channel` to finish: the gate and Hummingbird's HTTPConnectionStateHandler act on the event.
    private static func quiesce(_ channel: any Channel) {
        channel.eventLoop.execute { channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
    }

    // The server channel accepted `channel` (on the server's event loop, before SwiftNIO sets it up).
    fileprivate func accepted(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        state.withLock { state in
            state.accepted.insert(key)
            state.unregistered.insert(key)
        }
        channel.closeFuture.whenComplete { _ in self.closed(key) }
    }

    // The connection was registered with its event loop: the server channel's close no longer affects it.
    private func registered(_ key: ObjectIdentifier) {
        let close = state.withLock { state in
            state.unregistered.remove(key)
            return state.shouldCloseServer()
        }
        close?.close(promise: nil)
    }

    private func closed(_ key: ObjectIdentifier) {
        let (close, waiter) = state.withLock { state in
            state.accepted.remove(key)
            state.unregistered.remove(key)
            state.ready.removeValue(forKey: key)
            return (state.shouldCloseServer(), state.endedWaiter())
        }
        close?.close(promise: nil)
        waiter?.resume(returning: nil)
    }

    private func serverClosed() {
        let waiter = state.withLock { state in
            state.server = nil
            return state.endedWaiter()
        }
        waiter?.resume(returning: nil)
    }
}

/// On the server channel: reports each accepted connection to the tracker and passes it on.
private final class AcceptedHandler: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let tracker: ConnectionTracker

    init(tracker: ConnectionTracker) {
        self.tracker = tracker
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        tracker.accepted(unwrapInboundIn(data))
        context.fireChannelRead(data)
    }
}

/// On a connection: says when it is registered with its event loop.
private final class RegisteredHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let onRegistered: () -> Void

    init(_ onRegistered: @escaping () -> Void) {
        self.onRegistered = onRegistered
    }

    func channelRegistered(context: ChannelHandlerContext) {
        onRegistered()
        context.fireChannelRegistered()
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

@available(*, unavailable)
extension AcceptedHandler: Sendable {}

@available(*, unavailable)
extension RegisteredHandler: Sendable {}
