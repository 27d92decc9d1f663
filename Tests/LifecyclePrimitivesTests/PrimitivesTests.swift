//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct DurationUnitsTests {
    @Test func microsecondsRoundUpSoThatADeadlineIsNeverEarly() {
        #expect(Duration.nanoseconds(1).microsecondsRoundedUp == 1)
        #expect(Duration.microseconds(1).microsecondsRoundedUp == 1)
        #expect(Duration.nanoseconds(1_001).microsecondsRoundedUp == 2)
        #expect(Duration.seconds(2).microsecondsRoundedUp == 2_000_000)
        #expect(Duration.zero.microsecondsRoundedUp == 0)
        #expect(Duration.milliseconds(-5).microsecondsRoundedUp == 0)
        // Past what fits in microseconds it saturates instead of wrapping.
        #expect(Duration.seconds(Int64.max).microsecondsRoundedUp == .max)
    }

    @Test func wholeUnitsTruncate() {
        #expect(Duration.nanoseconds(1_999_999).wholeMilliseconds == 1)
        #expect(Duration.milliseconds(1_500).wholeMilliseconds == 1_500)
        #expect(Duration.microseconds(3).wholeNanoseconds == 3_000)
    }

    @Test func aLogSaysADurationInItsShortestExactForm() {
        #expect(Duration.seconds(2).formattedForLog == "2 s")
        #expect(Duration.milliseconds(1_500).formattedForLog == "1.5 s")
        #expect(Duration.milliseconds(200).formattedForLog == "200 ms")
        #expect(Duration.microseconds(250).formattedForLog == "250 µs")
    }
}

@Suite struct ClockAndLockTests {
    @Test func aDeadlineIsNowForNothingAndTheEndOfTimeForTooMuch() {
        let before = MonotonicClock.now()
        let now = MonotonicClock.deadline(after: .zero)
        #expect(now >= before && now <= MonotonicClock.now())
        #expect(MonotonicClock.deadline(after: .seconds(-1)) <= MonotonicClock.now())
        #expect(MonotonicClock.deadline(after: .seconds(Int64.max)) == .max)
        let second = MonotonicClock.deadline(after: .seconds(1))
        #expect(second >= before + 1_000_000_000)
    }

    @Test func theCoarseClockIsNeverAheadOfTheFineOne() {
        for _ in 0..<1_000 {
            let coarse = MonotonicClock.coarseNow()
            #expect(coarse <= MonotonicClock.now())
        }
    }

    @Test func aWaitEndsAtItsDeadlineWhenNobodyNotifies() {
        let lock = ConditionLock(0)
        let start = MonotonicClock.now()
        let deadline = MonotonicClock.deadline(after: .milliseconds(20))
        let rounds = lock.withLock(waiting: { (rounds: inout Int) -> ConditionLock<Int>.Step<Int> in
            rounds += 1
            return MonotonicClock.now() >= deadline ? .done(rounds) : .wait(until: deadline)
        })
        #expect(rounds >= 2)
        #expect(MonotonicClock.now() - start >= 20_000_000)
    }

    @Test func aNotifiedWaiterSeesTheNewState() async {
        let lock = ConditionLock(false)
        let waiter = Task.detached {
            lock.withLock(waiting: { ready -> ConditionLock<Bool>.Step<Bool> in ready ? .done(true) : .wait(until: nil) })
        }
        lock.withLock { $0 = true }
        lock.notifyAll()
        #expect(await waiter.value)
    }
}

@Suite struct SystemCallErrorTests {
    @Test func theMessageNamesTheCallAndTheError() {
        let error = SystemCallError(operation: "sd_notify", errno: .connectionRefused)
        #expect(error.description == "sd_notify failed: \(Errno.connectionRefused.description) (errno \(ECONNREFUSED)).")
    }
}
