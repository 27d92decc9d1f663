//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Synchronization

/// Where a server's connection handlers run when a connection may outlive the server's run: a WebSocket that stays
/// open while the application is in the background (the HTTP server drains and stops), and that its owner closes on
/// its own schedule when the process ends.
///
/// A ``ConnectionServer`` given one spawns every connection's handler here instead of in its own run: the run ends once
/// the listening descriptor and every connection that is still HTTP have closed, and a connection that became
/// long-lived (``ConnectionTracker/becameLongLived(_:)``) is no longer the run's to quiesce or wait for. The handlers
/// run in ``run()``'s task group, detached from the caller's graceful shutdown (a WebSocket handler that hears it
/// closes at once with 1000, which is not how its owner wants it closed), and ``run()`` returns once ``finish()`` was
/// called and every handler has returned.
package final class LongLivedConnections: Sendable {
    private enum Phase {
        /// Handlers are taken; `run()` may not have started (they wait for it).
        case open
        /// `finish()` was called: no new handler; `run()` ends once the last returns.
        case finished
    }

    private let handlers: AsyncStream<@Sendable () async -> Void>
    private let continuation: AsyncStream<@Sendable () async -> Void>.Continuation
    private let phase = Mutex(Phase.open)

    /// An owner with no handler yet.
    package init() {
        (handlers, continuation) = AsyncStream.makeStream(of: (@Sendable () async -> Void).self)
    }

    /// Runs `handler` beside the others; false (and nothing runs) once ``finish()`` was called.
    package func spawn(_ handler: @escaping @Sendable () async -> Void) -> Bool {
        phase.withLock { phase in
            guard phase == .open else { return false }
            if case .enqueued = continuation.yield(handler) { return true }
            return false
        }
    }

    /// Whether handlers are still taken.
    package var isOpen: Bool { phase.withLock { $0 == .open } }

    /// Takes no new handler; ``run()`` returns once those running have returned.
    package func finish() {
        phase.withLock { phase in
            phase = .finished
            continuation.finish()
        }
    }

    /// Runs the handlers until ``finish()`` and the last handler's return; cancelling it cancels them.
    package func run() async {
        let handlers = self.handlers
        // Detached: the handlers must not hear the caller's graceful shutdown (its task-local manager), only their
        // owner, who closes each connection when it chooses.
        let work = Task.detached {
            await withDiscardingTaskGroup { group in
                for await handler in handlers {
                    group.addTask { await handler() }
                }
            }
        }
        await withTaskCancellationHandler {
            await work.value
        } onCancel: {
            work.cancel()
        }
    }
}
