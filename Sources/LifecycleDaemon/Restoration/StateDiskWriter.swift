//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Testing) @_spi(Threads) import LifecycleSystemd
import SystemPackage

// A release build finds timespec's members only through the toolchain's shims (MemberImportVisibility).
import SwiftOverlayShims

#if canImport(Glibc)
import Glibc
#endif

/// Writes saved states to disk on a thread of its own (``DurableFile``: a write, two `fsync`s and a rename), so that
/// a slow or stalled disk never holds the main loop. One write at a time, in order; a save handed over while another
/// waits its turn replaces it (only the newest state matters). The thread runs while there is something to write, and
/// a few seconds more.
final class StateDiskWriter: Sendable {
    /// How a save ended.
    enum Outcome: Sendable, Equatable {
        /// On disk, crash-safely.
        case written
        /// The write failed; the previous file is untouched.
        case failed(Errno)
        /// A newer save replaced it before its turn came.
        case superseded
    }

    /// One save: its bytes and where they go, and what waits for its outcome.
    final class Save: Sendable {
        let bytes: [UInt8]
        let path: String
        let chunks: Int
        let pause: Duration
        /// Signalled once the outcome is known.
        let done = Semaphore()
        private let state = ConditionLock<(outcome: Outcome?, abandoned: Bool)>((nil, false))
        /// Runs (on the writer's thread) with the outcome when whoever handed the save over stopped waiting for it.
        private let late: @Sendable (Outcome) -> Void

        init(bytes: [UInt8], path: String, chunks: Int, pause: Duration, late: @escaping @Sendable (Outcome) -> Void) {
            self.bytes = bytes
            self.path = path
            self.chunks = chunks
            self.pause = pause
            self.late = late
        }

        /// The writer's side: records the outcome, or hands it to `late` when nobody waits any more.
        fileprivate func finish(_ outcome: Outcome) {
            let abandoned = state.withLock { state in
                state.outcome = outcome
                return state.abandoned
            }
            done.signal()
            if abandoned { late(outcome) }
        }

        /// Waits up to `budget` for the outcome; nil when it is not known by then (it goes to `late` instead).
        func wait(upTo budget: Duration) -> Outcome? {
            _ = done.wait(upTo: budget)
            return state.withLock { state in
                if let outcome = state.outcome { return outcome }
                state.abandoned = true
                return nil
            }
        }
    }

    private let pending = ConditionLock<(next: Save?, running: Bool, writing: Bool)>((nil, false, false))
    /// Signalled for each save handed over.
    private let work = Semaphore()
    /// How long the thread waits for more before it ends.
    static let idleLifetime = Duration.seconds(5)

    /// Whether a save is being written or waits to be.
    var isBusy: Bool { pending.withLock { $0.writing || $0.next != nil } }

    /// Queues a save; a save still waiting its turn is superseded by it. The thread is started when none runs (it
    /// ends after ``idleLifetime`` without work, so the main loop rarely pays for starting one); the save fails only
    /// when no thread can be started.
    func submit(_ save: Save) {
        let (replaced, start) = pending.withLock { state -> (Save?, Bool) in
            let replaced = state.next
            state.next = save
            let start = !state.running
            state.running = true
            return (replaced, start)
        }
        replaced?.finish(.superseded)
        work.signal()
        guard start else { return }
        // The thread detaches itself when it ends (run()).
        if case .failure(let error) = SystemThread.start(blockingSignals: true, { self.run() }) {
            let stranded = pending.withLock { state -> Save? in
                state.running = false
                defer { state.next = nil }
                return state.next
            }
            stranded?.finish(.failed(error))
        }
    }

    /// Waits up to `budget` for every save handed over to be written; returns whether they were.
    func finish(within budget: Duration) -> Bool {
        let deadline = ContinuousClock.now + budget
        while isBusy {
            guard ContinuousClock.now < deadline else { return false }
            Self.sleep(.milliseconds(1))
        }
        return true
    }

    private func run() {
        while true {
            guard work.wait(upTo: Self.idleLifetime) else {
                // Idle: the thread ends, unless a save arrived just now (its signal is then still to be taken).
                let ends = pending.withLock { state -> Bool in
                    guard state.next == nil else { return false }
                    state.running = false
                    return true
                }
                if ends { break }
                continue
            }
            // A superseded save signalled too: there may be nothing left to take.
            guard let save = pending.withLock({ state -> Save? in
                guard let next = state.next else { return nil }
                state.next = nil
                state.writing = true
                return next
            }) else { continue }
            let outcome: Outcome
            do {
                try DurableFile.write(save.bytes, to: save.path, chunks: save.chunks) { Self.sleep(save.pause) }
                outcome = .written
            } catch {
                outcome = .failed(error)
            }
            // Not busy any more before anyone hears of it: the next save may wait for the disk again.
            pending.withLock { $0.writing = false }
            save.finish(outcome)
        }
        // The thread ends here; nobody joins it.
        pthread_detach(pthread_self())
    }

    private static func sleep(_ duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 { request = remaining }
    }
}

/// A POSIX semaphore, waited on with a time limit measured on the monotonic clock.
final class Semaphore: @unchecked Sendable {
    // sem_t is its own synchronization: post and wait are safe from any thread. The pointer never changes.
    private let pointer: UnsafeMutablePointer<sem_t>

    init() {
        pointer = .allocate(capacity: 1)
        sem_init(pointer, 0, 0)
    }

    deinit {
        sem_destroy(pointer)
        pointer.deallocate()
    }

    func signal() {
        sem_post(pointer)
    }

    /// Waits until signalled or until `budget` has passed; returns whether it was signalled. The wait is cut into
    /// slices of at most 50 ms against the realtime clock sem_timedwait uses, and the budget is counted on the
    /// monotonic clock: a jump of the wall clock stretches it by a slice at most.
    func wait(upTo budget: Duration) -> Bool {
        let deadline = ContinuousClock.now + budget
        while true {
            if sem_trywait(pointer) == 0 { return true }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            let slice = min(left, .milliseconds(50))
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let nanoseconds = Int(now.tv_nsec) + Int(slice.components.attoseconds / 1_000_000_000)
            var until = timespec(tv_sec: now.tv_sec + nanoseconds / 1_000_000_000, tv_nsec: nanoseconds % 1_000_000_000)
            if sem_timedwait(pointer, &until) == 0 { return true }
        }
    }
}
