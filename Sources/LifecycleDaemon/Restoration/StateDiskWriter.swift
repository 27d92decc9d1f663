//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Writes saved states to disk on a thread of its own (``DurableFile``: a write, two `fsync`s and a rename), so that
/// a slow or stalled disk never holds the main loop. One write at a time, in order; a save handed over while another
/// waits its turn replaces it (only the newest state matters).
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
        let done = DispatchSemaphore(value: 0)
        private let state = Mutex<(outcome: Outcome?, abandoned: Bool)>((nil, false))
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
            _ = done.wait(timeout: .now() + .nanoseconds(Int(clamping: budget.nanoseconds)))
            return state.withLock { state in
                if let outcome = state.outcome { return outcome }
                state.abandoned = true
                return nil
            }
        }
    }

    private let queue = DispatchQueue(label: "lifecyclekit.state-writer")
    private let pending = Mutex<(next: Save?, running: Bool)>((nil, false))

    /// Whether a save is being written or waits to be.
    var isBusy: Bool { pending.withLock { $0.running } }

    /// Queues a save; a save still waiting its turn is superseded by it.
    func submit(_ save: Save) {
        let (replaced, start) = pending.withLock { state -> (Save?, Bool) in
            let replaced = state.next
            state.next = save
            let start = !state.running
            state.running = true
            return (replaced, start)
        }
        replaced?.finish(.superseded)
        if start { queue.async { self.drain() } }
    }

    /// Waits up to `budget` for every save handed over to be written; returns whether they were.
    func finish(within budget: Duration) -> Bool {
        let idle = DispatchSemaphore(value: 0)
        queue.async {
            // The drain loop runs on this queue: once this block runs, every save submitted before is done, unless
            // one was submitted while it ran (then the queue gets another drain after this block).
            idle.signal()
        }
        return idle.wait(timeout: .now() + .nanoseconds(Int(clamping: budget.nanoseconds))) == .success && !isBusy
    }

    private func drain() {
        while let save = pending.withLock({ state -> Save? in
            guard let next = state.next else {
                state.running = false
                return nil
            }
            state.next = nil
            return next
        }) {
            let outcome: Outcome
            do {
                try DurableFile.write(save.bytes, to: save.path, chunks: save.chunks) { Self.sleep(save.pause) }
                outcome = .written
            } catch {
                outcome = .failed(error)
            }
            save.finish(outcome)
        }
    }

    private static func sleep(_ duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 { request = remaining }
    }
}

extension Duration {
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (total, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : total &+ attoseconds / 1_000_000_000
    }
}
