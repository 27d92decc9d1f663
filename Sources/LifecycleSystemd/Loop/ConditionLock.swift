//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A value behind a lock, and a condition to wait on for it: the one primitive of the threads the daemon adds (the
/// stall detector's watcher, the journal writer's sender).
///
/// The lock is Synchronization's `Mutex`. The condition is an event count: a futex word that ``notifyAll()`` changes
/// after the state changed. A waiter reads the word while it holds the lock, then sleeps only while the word still
/// has that value; so a change made after the waiter looked at the state always wakes it (or keeps it from sleeping),
/// and a waiter never sleeps holding the lock. Wake-ups may be spurious: a waiter looks at the state again.
package final class ConditionLock<State: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: the state is only reached through the mutex; the futex word (a pointer, as the kernel needs
    // an address) only through the shim's atomic operations.

    /// What a ``withLock(waiting:)`` body asks for: to return a value, or to sleep and look again.
    package enum Step<Result: Sendable>: Sendable {
        /// Return this.
        case done(Result)
        /// Sleep until ``notifyAll()`` or until this time on ``now()`` (nil: no deadline), then run the body again.
        case wait(until: UInt64?)
    }

    private let mutex: Mutex<State>
    private let word: UnsafeMutablePointer<UInt32>

    /// A lock over `state`.
    package init(_ state: State) {
        mutex = Mutex(state)
        word = .allocate(capacity: 1)
        word.initialize(to: 0)
    }

    deinit {
        word.deinitialize(count: 1)
        word.deallocate()
    }

    /// Runs `body` with the lock held.
    package func withLock<Result: Sendable, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try mutex.withLock { (state: inout State) throws(Failure) -> Result in try body(&state) }
    }

    /// Runs `body` with the lock held until it returns ``Step/done(_:)``; each time it returns ``Step/wait(until:)``,
    /// sleeps without the lock until ``notifyAll()`` is called or the deadline passes, then runs it again.
    package func withLock<Result: Sendable>(waiting body: (inout State) -> Step<Result>) -> Result {
        while true {
            // The word is read with the lock held: a change of the state after this look bumps it after.
            let (step, ticket) = mutex.withLock { (state: inout State) -> (Step<Result>, UInt32) in
                (body(&state), csystemd_futex_load(word))
            }
            switch step {
            case .done(let result):
                return result
            case .wait(let deadline):
                if let deadline, Self.now() >= deadline { continue }
                _ = csystemd_futex_wait(word, ticket, deadline.map { Int64(clamping: $0) } ?? -1)
            }
        }
    }

    /// Wakes every thread sleeping in ``withLock(waiting:)``, to look at the state again; call it after changing the
    /// state (with the lock held or after releasing it). A system call: call it when somebody may wait.
    package func notifyAll() {
        csystemd_futex_bump_and_wake(word)
    }

    /// `CLOCK_MONOTONIC` in nanoseconds: the clock of ``Step/wait(until:)`` deadlines.
    package static func now() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
