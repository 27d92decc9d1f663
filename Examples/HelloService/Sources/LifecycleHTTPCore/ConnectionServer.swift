//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import Logging
package import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// A listening descriptor a server was given: its own until one run takes it, closed if none does.
///
/// An adapter's server owns the descriptor it is given from the moment it is made: `run()` takes it (once) and
/// closes it when it returns, and a server released without running closes it here.
package final class OwnedDescriptor: Sendable {
    /// The descriptor.
    package let descriptor: Int32
    // Whether the descriptor is still to be taken by a run; whoever takes it closes it.
    private let unclaimed = Mutex(true)

    /// Owns `descriptor` from now on.
    package init(_ descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        if unclaimed.withLock({ $0 }) { ListeningDescriptor.close(descriptor) }
    }

    /// Takes the descriptor for a run, which closes it when it ends (``ConnectionServer/run(_:)`` does; a run that ends
    /// before calls ``ClaimedDescriptor/close()``).
    ///
    /// Throws ``HTTPServerError`` if a run took it before, or if it is not a listening socket (closing it then).
    package func claim() throws(HTTPServerError) -> ClaimedDescriptor {
        let claimed = unclaimed.withLock { unclaimed in
            defer { unclaimed = false }
            return unclaimed
        }
        guard claimed else { throw HTTPServerError(code: .alreadyRun, descriptor: descriptor, reason: "") }
        do {
            return ClaimedDescriptor(descriptor: descriptor, address: try ListeningDescriptor.checkListening(descriptor))
        } catch {
            ListeningDescriptor.close(descriptor)
            throw error
        }
    }
}

/// A listening descriptor a run has taken: the run closes it.
package struct ClaimedDescriptor: Sendable {
    /// The descriptor.
    package let descriptor: Int32
    /// Where it listens (`127.0.0.1:8080`).
    package let address: String

    /// Closes the descriptor, for a run that ends before it serves.
    package func close() {
        ListeningDescriptor.close(descriptor)
    }
}

/// One run of a server on a listening descriptor: accepts, sets each connection up on SwiftNIO, serves it, and ends
/// once a graceful shutdown has let every connection finish, or at once when cancelled.
///
/// The framework-neutral part of the adapters' servers. The listening socket never becomes a SwiftNIO channel: an
/// ``Acceptor`` accepts (others may accept on the same socket: the trap of apple/swift-nio#3500 cannot happen, and
/// SwiftNIO never calls listen(2), which would shrink the socket's backlog), and each connection becomes a SwiftNIO
/// channel of its own through `ClientBootstrap.withConnectedSocket`. A ``ConnectionTracker`` follows every connection
/// from accept to close; on graceful shutdown the descriptor is closed (the socket keeps listening through its other
/// descriptors, and what the kernel queues waits for the next server) and every connection is asked to finish with
/// `ChannelShouldQuiesceEvent`, which each pipeline's ``QuiesceGate`` holds until the connection has a request.
package struct ConnectionServer<Connection: Sendable>: Sendable {
    /// Adds a connection's handlers to its channel's pipeline (on its event loop) and makes what the run serves.
    package typealias SetUp = @Sendable (any Channel) -> EventLoopFuture<Connection>
    /// Serves one connection, returning once it has closed.
    package typealias Handle = @Sendable (Connection) async -> Void

    private let setUp: SetUp
    private let handle: Handle
    private let abandon: @Sendable (Connection, any Channel) -> Void
    private let longLived: LongLivedConnections?
    private let tracker: ConnectionTracker<Connection>?
    private let logger: Logger

    /// A run that sets each connection up with `setUp` and serves it with `handle`; `abandon` finishes a connection
    /// set up after the run ended (see ``ConnectionTracker``).
    package init(
        logger: Logger,
        setUp: @escaping SetUp,
        handle: @escaping Handle,
        abandon: @escaping @Sendable (Connection, any Channel) -> Void = { _, channel in channel.close(promise: nil) }
    ) {
        self.setUp = setUp
        self.handle = handle
        self.abandon = abandon
        self.longLived = nil
        self.tracker = nil
        self.logger = logger
    }

    /// A run whose connections may outlive it, tracked by `tracker` (made for this run alone): each connection's
    /// handler runs in `longLived` (which outlives the runs), and a connection marked long-lived
    /// (``ConnectionTracker/becameLongLived(_:)``, when it is upgraded) is neither quiesced by the run's graceful
    /// shutdown nor waited for: the run ends once every connection that is still HTTP has closed.
    package init(
        logger: Logger,
        tracker: ConnectionTracker<Connection>,
        longLived: LongLivedConnections,
        setUp: @escaping SetUp,
        handle: @escaping Handle
    ) {
        self.setUp = setUp
        self.handle = handle
        self.abandon = { _, channel in channel.close(promise: nil) }
        self.longLived = longLived
        self.tracker = tracker
        self.logger = logger
    }

    /// Serves `listening` until a graceful shutdown has let every connection finish, or until cancelled; closes the
    /// descriptor.
    package func run(_ listening: ClaimedDescriptor) async {
        let descriptor = listening.descriptor
        let localAddress = listening.address
        let logger = self.logger
        let setUp = self.setUp
        let handle = self.handle
        let longLived = self.longLived
        let connections = tracker ?? ConnectionTracker<Connection>(abandon: abandon)
        let acceptor = Acceptor(descriptor: descriptor) { connection in
            connections.connectionAccepted()
            let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { connections.channelMade(channel) }
                        .flatMap { setUp(channel) }
                        .map { connections.setUp($0, of: channel) }
                }
            bootstrap.withConnectedSocket(connection).whenComplete { result in
                if case .failure(let error) = result {
                    logger.debug("an accepted connection could not be set up", metadata: ["error": "\(error)"])
                }
                connections.connectionSettled()
            }
        } onClose: {
            connections.listeningClosed()
        }
        connections.start(acceptor)
        logger.info("serving HTTP/1.1", metadata: ["descriptor": "\(descriptor)", "address": "\(localAddress)"])

        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                // Each connection's handler returns once its connection closed; `next()` ends once all have.
                await withDiscardingTaskGroup { group in
                    while let connection = await connections.next() {
                        // A connection that may outlive the run is handled where it can: the run ends without it.
                        if let longLived, longLived.spawn({ await handle(connection) }) { continue }
                        group.addTask { await handle(connection) }
                    }
                }
            } onGracefulShutdown: {
                logger.info("graceful shutdown: closing descriptor \(descriptor), finishing the open connections")
                connections.stopAccepting()
            }
        } onCancel: {
            connections.cancel()
        }
        logger.info("stopped serving; descriptor \(descriptor) closed")
    }
}
