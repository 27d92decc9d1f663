//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleHTTPCore
import Testing

/// The gate's decisions as a plain value: when the quiesce event goes on, which response heads say close.
struct QuiesceGateStateMachineTests {
    typealias Machine = QuiesceGateStateMachine

    static let ok = Machine.ResponsePart.head(informational: false)
    static let continueHead = Machine.ResponsePart.head(informational: true)

    @Test func responsesBeforeAnyQuiesceAreLeftAlone() {
        var machine = Machine()
        #expect(machine.requestHeadRead() == .forward)
        #expect(machine.write(Self.ok) == .forward)
        #expect(machine.write(.end) == .forward)
        #expect(machine.requestsInProgress == 0)
        #expect(machine.state == .serving)
    }

    @Test func aQuiesceDuringARequestGoesOnAtOnceAndItsResponseSaysClose() {
        var machine = Machine()
        _ = machine.requestHeadRead()
        #expect(machine.quiesce() == .release)
        #expect(machine.write(Self.ok) == .announceClose)
        #expect(machine.write(.body) == .forward)
        #expect(machine.write(.end) == .forward)
    }

    @Test func aQuiesceWithNothingInProgressWaitsForTheNextRequestHead() {
        var machine = Machine()
        _ = machine.requestHeadRead()
        _ = machine.write(Self.ok)
        _ = machine.write(.end)
        // Between requests of a kept-alive connection: the short grace.
        #expect(machine.quiesce() == .hold(firstRequest: false))
        #expect(machine.requestHeadRead() == .forwardThenRelease)
        #expect(machine.state == .released)
        #expect(machine.graceExpired() == false)
        #expect(machine.write(Self.ok) == .announceClose)
    }

    @Test func aHeldQuiesceGoesOnWhenTheGraceRunsOut() {
        var machine = Machine()
        // A connection that has not had a request yet: the longer grace.
        #expect(machine.quiesce() == .hold(firstRequest: true))
        #expect(machine.graceExpired() == true)
        #expect(machine.state == .released)
        #expect(machine.graceExpired() == false)
    }

    @Test func aSecondQuiesceChangesNothing() {
        var machine = Machine()
        #expect(machine.quiesce() == .hold(firstRequest: true))
        #expect(machine.quiesce() == .ignore)
        #expect(machine.requestHeadRead() == .forwardThenRelease)
        #expect(machine.quiesce() == .ignore)
    }

    @Test func anInterimResponseDoesNotSayCloseButTheFinalOneDoes() {
        var machine = Machine()
        _ = machine.requestHeadRead()
        _ = machine.quiesce()
        #expect(machine.write(Self.continueHead) == .forward)
        #expect(machine.write(Self.ok) == .announceClose)
    }

    @Test func ofPipelinedRequestsOnlyTheLastResponseSaysClose() {
        var machine = Machine()
        _ = machine.requestHeadRead()
        _ = machine.requestHeadRead()
        #expect(machine.quiesce() == .release)
        #expect(machine.write(Self.ok) == .forward)
        _ = machine.write(.end)
        #expect(machine.write(Self.ok) == .announceClose)
    }

    @Test func aResponseWithoutARequestHeadDoesNotCountBelowZero() {
        var machine = Machine()
        // A framework's 400 for bytes that never parsed into a head.
        _ = machine.write(Self.ok)
        _ = machine.write(.end)
        #expect(machine.requestsInProgress == 0)
        #expect(machine.quiesce() == .hold(firstRequest: true))
    }
}
