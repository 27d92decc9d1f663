//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import CSystemd
package import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Starting the POSIX threads the daemon adds (the stall detector's watcher, the journal writer's sender): each runs
/// one object's loop and is joined by its owner.
package enum SystemThread {
    /// What a started thread runs.
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts a thread running `body`; returns it, or the errno `pthread_create` failed with. With `blockingSignals`,
    /// the thread starts with every signal blocked (so none is ever delivered to it, whatever the caller's mask);
    /// otherwise it inherits the caller's mask.
    package static func start(blockingSignals: Bool, _ body: @escaping @Sendable () -> Void) -> Result<pthread_t, Errno> {
        var previous = sigset_t()
        if blockingSignals {
            var all = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_SETMASK, &all, &previous)
        }
        defer { if blockingSignals { pthread_sigmask(SIG_SETMASK, &previous, nil) } }
        let unmanaged = Unmanaged.passRetained(Body(body))
        var created = pthread_t()
        let result = pthread_create(
            &created,
            nil,
            { context in
                Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            },
            unmanaged.toOpaque()
        )
        guard result == 0 else {
            unmanaged.release()
            return .failure(Errno(rawValue: result))
        }
        return .success(created)
    }

    /// Blocks the calling thread for `duration` (nothing for zero or less), going back to sleep for what is left when a
    /// signal handler interrupts it.
    package static func sleep(for duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0, errno == EINTR { request = remaining }
    }

    /// Blocks the calling thread until one of `signals` (blocked already) is pending, and takes it, or `duration` has
    /// passed; returns the signal taken, or nil.
    package static func takeSignal(_ signals: [Int32], waitingUpTo duration: Duration) -> Int32? {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        let (seconds, attoseconds) = max(duration, .zero).components
        var timeout = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        let taken = sigtimedwait(&set, nil, &timeout)
        return taken > 0 ? taken : nil
    }
}
