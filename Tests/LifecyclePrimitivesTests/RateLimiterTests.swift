//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import Testing

@Suite struct RateLimiterTests {
    @Test func theFirstEventPassesAndTheNextOnlyAfterTheInterval() {
        var limiter = RateLimiter(minimumInterval: .seconds(10))
        var admitted: [Bool] = []
        for time in [Duration.seconds(100), .seconds(100), .milliseconds(109_999)] {
            admitted.append(limiter.admit(at: time))
        }
        #expect(admitted == [true, false, false])
        #expect(limiter.wait(at: .seconds(105)) == .seconds(5))
        admitted = []
        // A dropped event does not push the next window back.
        for time in [Duration.seconds(110), .seconds(119), .seconds(120)] {
            admitted.append(limiter.admit(at: time))
        }
        #expect(admitted == [true, false, true])
        #expect(limiter.lastAdmitted == .seconds(120))
        #expect(limiter.wait(at: .seconds(125)) == .seconds(5))
    }

    @Test func anAdmittedEventCountsTheOnesRefusedSinceThePreviousOne() {
        var limiter = RateLimiter(minimumInterval: .seconds(1))
        let counts = [Duration.zero, .milliseconds(100), .milliseconds(900), .seconds(1), .seconds(2), .milliseconds(2_500)]
            .map { limiter.admitCountingRefused(at: $0) }
        #expect(counts == [0, nil, nil, 2, 0, nil])
        #expect(limiter.refusedSinceAdmitted == 1)
    }

    @Test func aNewIntervalAppliesToTheNextEvent() {
        var limiter = RateLimiter(minimumInterval: .seconds(10))
        var admitted = [limiter.admit(at: .zero)]
        limiter.minimumInterval = .seconds(2)
        admitted.append(limiter.admit(at: .seconds(2)))
        limiter.minimumInterval = .zero
        admitted.append(limiter.admit(at: .seconds(2)))
        #expect(admitted == [true, true, true])
    }
}
