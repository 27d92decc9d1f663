//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Accepts the connections of a listening socket that others may accept on at the same time, and owns its descriptor.
///
/// A server's socket is shared: during an upgrade the running process and the next one both accept on it, and every
/// process polling it is woken for each connection, of which only one gets it. SwiftNIO's server channel takes a
/// wake-up with nothing to accept for a bug (`assert(readResult == .some)` in `BaseSocketChannel.readable0`, which traps
/// a debug build, apple/swift-nio#3500), so the server accepts here instead, where finding nothing is ordinary, and
/// hands each connection to SwiftNIO as a connected socket.
package final class Acceptor: @unchecked Sendable {
    // @unchecked Sendable: `source`, `suspended` and `stopped` are read and written on `queue` only.

    /// How long accepting pauses when the process is out of descriptors or memory (as NIO's `AcceptBackoffHandler`).
    static let backoff = DispatchTimeInterval.seconds(1)
    /// Connections accepted per wake-up at most, before the queue's other work (a stop); the source fires again while
    /// more wait.
    static let acceptsPerWakeUp = 16

    private let descriptor: Int32
    private let queue = DispatchQueue(label: "LifecycleHTTPCore.Acceptor")
    private let onAccept: @Sendable (Int32) -> Void
    private let onClose: @Sendable () -> Void
    private var source: (any DispatchSourceRead)?
    private var suspended = false
    private var stopped = false

    /// An acceptor on `descriptor`, which it owns from now on: `onAccept` gets each accepted connection's descriptor
    /// (non-blocking, close-on-exec), `onClose` runs once the listening descriptor is closed after ``stop()``.
    package init(
        descriptor: Int32,
        onAccept: @escaping @Sendable (Int32) -> Void,
        onClose: @escaping @Sendable () -> Void
    ) {
        self.descriptor = descriptor
        self.onAccept = onAccept
        self.onClose = onClose
    }

    /// Starts accepting.
    package func start() {
        queue.async { [self] in
            guard !stopped, source == nil else { return }
            // Non-blocking, so that a connection another accepter took leaves accept(2) with EAGAIN instead of
            // waiting. (The flag belongs to the socket's open file, which every dup shares; SwiftNIO sets it too.)
            let flags = fcntl(descriptor, F_GETFL)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
            let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
            source.setEventHandler { [self] in acceptWaiting() }
            source.setCancelHandler { [self] in
                close(descriptor)
                onClose()
            }
            self.source = source
            source.resume()
        }
    }

    /// Stops accepting and closes the descriptor (a connection accepted before is not affected); then `onClose` runs.
    package func stop() {
        queue.async { [self] in
            guard !stopped else { return }
            stopped = true
            guard let source else {
                close(descriptor)
                onClose()
                return
            }
            // A suspended source runs its cancel handler only once resumed.
            if suspended {
                suspended = false
                source.resume()
            }
            source.cancel()
        }
    }

    // On `queue`: the socket was readable. Another process, or another server of this one, may have taken the
    // connection since: accept(2) then says EAGAIN, and the source fires again for the next one.
    private func acceptWaiting() {
        for _ in 0..<Self.acceptsPerWakeUp {
            guard !stopped else { return }
            let connection = accept(descriptor, nil, nil)
            if connection >= 0 {
                // SwiftNIO makes it non-blocking; nothing this process starts is to inherit it.
                _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                onAccept(connection)
                continue
            }
            switch errno {
            case EINTR, ECONNABORTED, EPROTO:
                // A connection reset before it was accepted, or a signal: the next one may be there.
                continue
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                // Out of descriptors or memory: the connections wait in the backlog until some are freed.
                pause()
                return
            default:
                // EAGAIN: nothing left (or taken by another accepter).
                return
            }
        }
    }

    private func pause() {
        guard let source, !suspended else { return }
        suspended = true
        source.suspend()
        queue.asyncAfter(deadline: .now() + Self.backoff) { [self] in
            guard suspended, !stopped else { return }
            suspended = false
            self.source?.resume()
        }
    }
}
