//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import LifecycleSystemd
import SystemPackage

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
        /// The outcome once known, and whether whoever handed the save over stopped waiting for it.
        private let state = ConditionLock<State>((nil, false))
        private typealias State = (outcome: Outcome?, abandoned: Bool)
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
            state.notifyAll()
            if abandoned { late(outcome) }
        }

        /// Waits up to `budget` for the outcome; nil when it is not known by then (it goes to `late` instead).
        func wait(upTo budget: Duration) -> Outcome? {
            let deadline = MonotonicClock.deadline(after: budget)
            return state.withLock(waiting: { state -> ConditionLock<State>.Step<Outcome?> in
                if let outcome = state.outcome { return .done(outcome) }
                guard MonotonicClock.now() >= deadline else { return .wait(until: deadline) }
                state.abandoned = true
                return .done(nil)
            })
        }
    }

    /// What the thread and its callers share: the thread waits on it for work, ``finish(within:)`` for the writing to
    /// end.
    private let pending = ConditionLock<Pending>(Pending())

    private struct Pending: Sendable {
        /// The save that waits its turn.
        var next: Save?
        /// Whether the thread runs.
        var running = false
        /// Whether a save is being written now.
        var writing = false

        /// Whether a save is being written or waits to be.
        var isBusy: Bool { writing || next != nil }
    }

    /// How long the thread waits for more before it ends.
    static let idleLifetime = Duration.seconds(5)

    /// Whether a save is being written or waits to be.
    var isBusy: Bool { pending.withLock { $0.isBusy } }

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
        pending.notifyAll()
        guard start else { return }
        // The thread detaches itself when it ends (run()).
        if case .failure(let error) = SystemThread.start(blockingSignals: true, { self.run() }) {
            let stranded = pending.withLock { state -> Save? in
                state.running = false
                defer { state.next = nil }
                return state.next
            }
            pending.notifyAll()
            stranded?.finish(.failed(error))
        }
    }

    /// Waits up to `budget` for every save handed over to be written; returns whether they were.
    func finish(within budget: Duration) -> Bool {
        let deadline = MonotonicClock.deadline(after: budget)
        return pending.withLock(waiting: { state -> ConditionLock<Pending>.Step<Bool> in
            guard state.isBusy else { return .done(true) }
            return MonotonicClock.now() >= deadline ? .done(false) : .wait(until: deadline)
        })
    }

    private func run() {
        while true {
            let idleUntil = MonotonicClock.deadline(after: Self.idleLifetime)
            let taken = pending.withLock(waiting: { state -> ConditionLock<Pending>.Step<Save?> in
                if let next = state.next {
                    state.next = nil
                    state.writing = true
                    return .done(next)
                }
                guard MonotonicClock.now() >= idleUntil else { return .wait(until: idleUntil) }
                // Idle: the thread ends; the next save handed over starts another.
                state.running = false
                return .done(nil)
            })
            guard let save = taken else { break }
            let outcome: Outcome
            do {
                try DurableFile.write(save.bytes, to: save.path, chunks: save.chunks) {
                    SystemThread.sleep(for: save.pause)
                }
                outcome = .written
            } catch {
                outcome = .failed(error)
            }
            // Not busy any more before anyone hears of it: the next save may wait for the disk again.
            pending.withLock { $0.writing = false }
            pending.notifyAll()
            save.finish(outcome)
        }
        // The thread ends here; nobody joins it.
        pthread_detach(pthread_self())
    }
}
