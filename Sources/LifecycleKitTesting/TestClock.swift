//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit

/// A clock for tests: time moves only when the test advances it, and the work scheduled on it (the background time,
/// the budgets termination and sleep give background tasks) runs then, in the order it falls due.
@MainActor
public final class TestClock {
    private struct Entry {
        let deadline: Duration
        let order: Int
        let work: @MainActor () -> Void
    }

    /// The time since the clock was made.
    public private(set) var now: Duration = .zero
    private var entries: [Int: Entry] = [:]
    private var nextOrder = 0

    /// A clock at zero with nothing scheduled.
    public init() {}

    /// How many pieces of work wait for their time.
    public var pendingWork: Int { entries.count }

    /// Moves the clock forward by `duration`, running each piece of work as its time comes (work scheduled meanwhile
    /// runs too if it falls due within the step).
    public func advance(by duration: Duration) {
        let end = now + duration
        while let (order, entry) = entries.filter({ $0.value.deadline <= end }).min(by: {
            ($0.value.deadline, $0.value.order) < ($1.value.deadline, $1.value.order)
        }) {
            entries[order] = nil
            now = max(now, entry.deadline)
            entry.work()
        }
        now = end
    }

    /// Runs `work` once the clock has been advanced by `delay`; cancelling the returned handle calls it off.
    func schedule(after delay: Duration, _ work: @escaping @MainActor () -> Void) -> any ScheduledWork {
        nextOrder += 1
        let order = nextOrder
        entries[order] = Entry(deadline: now + max(.zero, delay), order: order, work: work)
        return Scheduled(clock: self, order: order)
    }

    fileprivate func cancel(_ order: Int) {
        entries[order] = nil
    }

    private final class Scheduled: ScheduledWork {
        private weak var clock: TestClock?
        private let order: Int

        init(clock: TestClock, order: Int) {
            self.clock = clock
            self.order = order
        }

        func cancel() {
            clock?.cancel(order)
        }
    }
}
