//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HelloSessions
import Testing

/// A generator whose numbers the test decides.
private struct Counter: RandomNumberGenerator {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state
    }
}

/// The close window as a value: closes spread evenly, then the deadline.
@Suite("Sessions: the close window")
struct CloseWindowStateMachineTests {
    @Test func aThousandClosesAreSpreadEvenlyOverTheWindowOneAMillisecond() {
        var machine = CloseWindowMachine<Int>(window: .seconds(1))
        var generator = Counter()
        let schedule = machine.begin(Array(0..<1000), using: &generator)
        #expect(schedule.count == 1000)
        #expect(Set(schedule.map(\.id)) == Set(0..<1000))
        let times = schedule.map(\.after).sorted()
        #expect(times.first == .zero)
        #expect(times.last! < .seconds(1))
        // No two in the same millisecond.
        #expect(Set(times.map { Int(($0 / .milliseconds(1)).rounded(.down)) }).count == 1000)
        #expect(machine.state == .closing(remaining: 1000))
    }

    @Test func theOrderOwesNothingToTheOrderOfConnection() {
        var machine = CloseWindowMachine<Int>(window: .seconds(1))
        var generator = Counter()
        let schedule = machine.begin(Array(0..<100), using: &generator)
        #expect(schedule.map(\.id) != Array(0..<100))
    }

    @Test func theLastCloseFinishesAndAnUnknownOrRepeatedOneChangesNothing() {
        var machine = CloseWindowMachine<Int>(window: .seconds(1))
        var generator = Counter()
        _ = machine.begin([1, 2], using: &generator)
        #expect(machine.closed(1) == .none)
        #expect(machine.closed(1) == .none)
        #expect(machine.closed(7) == .none)
        #expect(machine.closed(2) == .finished)
        #expect(machine.state == .closed)
        #expect(machine.deadlinePassed() == .none)
    }

    @Test func theDeadlineCutsWhatDidNotAnswer() {
        var machine = CloseWindowMachine<Int>(window: .seconds(1))
        var generator = Counter()
        _ = machine.begin([1, 2, 3], using: &generator)
        _ = machine.closed(2)
        guard case .cut(let left) = machine.deadlinePassed() else {
            Issue.record("the deadline cut nothing")
            return
        }
        #expect(Set(left) == [1, 3])
        #expect(machine.state == .closed)
    }

    @Test func withNoConnectionTheWindowIsClosedAtOnceAndASecondBeginSchedulesNothing() {
        var machine = CloseWindowMachine<Int>(window: .seconds(1))
        var generator = Counter()
        #expect(machine.begin([], using: &generator).isEmpty)
        #expect(machine.state == .closed)
        #expect(machine.begin([1], using: &generator).isEmpty)
    }
}
