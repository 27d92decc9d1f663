//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// Public, in a module only _LifecycleInternals (no adopter's product) names: the inlinable lock below is inlined into
// the modules that take it on a hot path (a package declaration's inlinable body is not, in Swift 6.3), so it calls
// glibc from there.
public import CLifecyclePrimitives

/// A value behind a lock, and a condition to wait on for it: the one primitive of the threads the daemon adds (the
/// stall detector's watcher, the journal writer's sender) and of the callers that wait for them.
///
/// A POSIX mutex and condition variable on the monotonic clock, rather than Synchronization's `Mutex`: a condition
/// must give the lock up while it sleeps and take it back when woken, in one step, which `pthread_cond_timedwait`
/// does and `Mutex` (locked only for the span of a closure) cannot; and ThreadSanitizer sees every hand-over of a
/// POSIX mutex, while `Mutex`'s contended path runs in the standard library, uninstrumented, so the sanitizer took two
/// critical sections of one `Mutex` for a race (`make sanitize-thread`, issue 22).
// Public, not package: a package declaration's inlinable body is not inlined into another module of the package
// (Swift 6.3), and the stall detector takes this lock for every callback.
public final class ConditionLock<State: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `state` is only read or written with `mutex` held (withLock and withLock(waiting:)). The
    // mutex and the condition live at addresses of their own, allocated once, as POSIX requires; so does the state,
    // which is then reached without a dynamic exclusivity check per access (the mutex is what keeps them exclusive).

    /// What a ``withLock(waiting:)`` body asks for: to return a value, or to sleep and look again.
    public enum Step<Result: Sendable>: Sendable {
        /// Return this.
        case done(Result)
        /// Sleep until ``notifyAll()`` or until this time on ``MonotonicClock/now()`` (nil: no deadline), then run the body again.
        case wait(until: UInt64?)
    }

    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    @usableFromInline let state: UnsafeMutablePointer<State>

    /// A lock over `state`.
    public init(_ state: State) {
        self.state = .allocate(capacity: 1)
        self.state.initialize(to: state)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Timed waits on the monotonic clock, which a change of the wall clock cannot stretch.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Runs `body` with the lock held.
    // Inlined into the caller: the stall detector takes it for every callback, from another module.
    @inlinable @inline(__always)
    public func withLock<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state.pointee)
    }

    /// Runs `body` with the lock held until it returns ``Step/done(_:)``; each time it returns ``Step/wait(until:)``,
    /// sleeps without the lock until ``notifyAll()`` is called or the deadline passes (or spuriously), then runs it
    /// again.
    public func withLock<Result: Sendable>(waiting body: (inout State) -> Step<Result>) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            switch body(&state.pointee) {
            case .done(let result):
                return result
            case .wait(nil):
                pthread_cond_wait(condition, mutex)
            case .wait(let deadline?):
                var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                pthread_cond_timedwait(condition, mutex, &time)
            }
        }
    }

    /// Wakes every thread sleeping in ``withLock(waiting:)``, to look at the state again; call it after changing the
    /// state (with the lock held or after releasing it). Cheap when nobody waits.
    public func notifyAll() {
        pthread_cond_broadcast(condition)
    }

}
