//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import NIOCore
import Synchronization

/// Every connection of one run of a server, from accept to close: hands each to the run once its pipeline is set up,
/// stops accepting without dropping one, and tells the run when the last has closed.
///
/// This does what NIOExtras' `ServerQuiescingHelper` does for a server channel, for the server's ``Acceptor``: a
/// graceful shutdown stops accepting and closes the listening descriptor at once (what was accepted is already
/// SwiftNIO's, as a connected socket), lets every connection finish, and the run ends once the last has closed;
/// nothing that was set up is ever released without being handed to the run (an unfinished `NIOAsyncChannel` may not
/// be released).
///
/// `Connection` is what the pipeline's set-up made for the run to handle: Hummingbird's `HTTP1Channel.Value` (an
/// `NIOAsyncChannel` the run serves), or nothing at all when the pipeline's handlers serve the connection themselves.
package final class ConnectionTracker<Connection: Sendable>: Sendable {
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
        /// Whether the acceptor's listening descriptor is still open.
        var listening = true
        /// Accepted connections whose channel SwiftNIO has not made yet: the run does not end while there are any.
        var pending = 0
        /// Channels made and not closed: the run ends when this is empty, nothing is pending and the acceptor closed.
        var accepted: Set<ObjectIdentifier> = []
        /// Set up and not closed: what a shutdown quiesces and a cancellation closes.
        var ready: [ObjectIdentifier: any Channel] = [:]
        /// Set up, waiting for the run to take them.
        var handOver: [Connection] = []
        /// The run, waiting for a connection or the end.
        var waiter: CheckedContinuation<Connection?, Never>?
        /// Whether `next()` returned the end: nobody takes a connection any more.
        var ended = false

        var finished: Bool { !listening && pending == 0 && accepted.isEmpty }

        // The waiting run, to be resumed with the end, if the run has ended.
        mutating func endedWaiter() -> CheckedContinuation<Connection?, Never>? {
            guard finished, handOver.isEmpty, let waiter else { return nil }
            self.waiter = nil
            ended = true
            return waiter
        }
    }

    private let state = Mutex(State())
    /// What accepts the connections; set once, before it starts.
    private let acceptor = Mutex<Acceptor?>(nil)

    /// What to do with a connection set up after the run ended, which nobody will serve.
    private let abandon: @Sendable (Connection, any Channel) -> Void

    /// A tracker with no connection yet; ``start(_:)`` begins accepting. `abandon` finishes a connection that nobody
    /// will serve (by default its channel is closed).
    package init(
        abandon: @escaping @Sendable (Connection, any Channel) -> Void = { _, channel in channel.close(promise: nil) }
    ) {
        self.abandon = abandon
    }

    /// Accepts with `acceptor` from now on: it must call ``connectionAccepted()`` for each connection before SwiftNIO
    /// makes its channel, ``connectionSettled()`` once SwiftNIO has registered the channel or failed to, and
    /// ``listeningClosed()`` once it closed the listening descriptor.
    package func start(_ acceptor: Acceptor) {
        self.acceptor.withLock { $0 = acceptor }
        acceptor.start()
    }

    /// A connection was accepted; its channel is being made.
    package func connectionAccepted() {
        state.withLock { $0.pending += 1 }
    }

    /// The accepted connection's channel was made (in the channel initializer, on its event loop, before anything
    /// else): from now on its close counts.
    package func channelMade(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        state.withLock { _ = $0.accepted.insert(key) }
        channel.closeFuture.whenComplete { _ in self.closed(key) }
    }

    /// SwiftNIO registered the accepted connection's channel, or failed to and closed the connection.
    package func connectionSettled() {
        let waiter = state.withLock { state in
            state.pending -= 1
            return state.endedWaiter()
        }
        waiter?.resume(returning: nil)
    }

    /// The acceptor closed the listening descriptor.
    package func listeningClosed() {
        let waiter = state.withLock { state in
            state.listening = false
            return state.endedWaiter()
        }
        waiter?.resume(returning: nil)
    }

    /// Puts `connection`, made by the set-up of `channel`'s pipeline, in the run's hands; call on the channel's event
    /// loop, in its initializer.
    package func setUp(_ connection: Connection, of channel: any Channel) {
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
            // Should it happen, the connection must still be finished (an unfinished NIOAsyncChannel may not be
            // released).
            abandon(connection, channel)
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

    /// The next connection to serve, or nil once the listening descriptor closed and every connection has closed.
    package func next() async -> Connection? {
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

    /// `channel` is no longer an HTTP connection of this run (it was upgraded to a WebSocket): a graceful shutdown does
    /// not quiesce it, and the run no longer waits for it to close. Whoever took it over closes it. Call on the channel's
    /// event loop.
    package func becameLongLived(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        let waiter = state.withLock { state in
            state.accepted.remove(key)
            state.ready.removeValue(forKey: key)
            return state.endedWaiter()
        }
        waiter?.resume(returning: nil)
    }

    /// Whether a graceful shutdown or a cancellation has begun: a handler added to a connection's pipeline after the
    /// quiesce event went by (a connection whose first request decides its protocol) acts on it then.
    package var isStopping: Bool {
        state.withLock { $0.phase != .serving }
    }

    /// Graceful shutdown: stop accepting, close the listening descriptor, and ask every connection to finish.
    package func stopAccepting() {
        let ready = state.withLock { state -> [any Channel] in
            guard state.phase == .serving else { return [] }
            state.phase = .stopping
            return Array(state.ready.values)
        }
        // What the kernel queues from now on waits for the next server.
        acceptor.withLock { $0 }?.stop()
        for channel in ready { Self.quiesce(channel) }
    }

    /// Cancellation: stop accepting and close every connection now.
    package func cancel() {
        let ready = state.withLock { state -> [any Channel] in
            state.phase = .cancelled
            return Array(state.ready.values)
        }
        acceptor.withLock { $0 }?.stop()
        for channel in ready { channel.close(promise: nil) }
    }

    // Asks `channel` to finish: the gate, and after it the framework's handler that closes the connection, act on the
    // event.
    private static func quiesce(_ channel: any Channel) {
        channel.eventLoop.execute { channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
    }

    private func closed(_ key: ObjectIdentifier) {
        let waiter = state.withLock { state in
            state.accepted.remove(key)
            state.ready.removeValue(forKey: key)
            return state.endedWaiter()
        }
        waiter?.resume(returning: nil)
    }
}
