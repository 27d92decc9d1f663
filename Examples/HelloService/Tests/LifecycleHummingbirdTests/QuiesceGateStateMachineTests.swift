//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HTTPTypes
import NIOHTTPTypes
import Testing

@testable import LifecycleHummingbird

/// The gate's decisions as a plain value: when the quiesce event goes on, which response heads say close.
struct QuiesceGateStateMachineTests {
    typealias Machine = QuiesceGate.StateMachine

    static let head = HTTPRequestPart.head(HTTPRequest(method: .get, scheme: nil, authority: "a", path: "/"))
    static let ok = HTTPResponsePart.head(HTTPResponse(status: .ok))
    static let continueHead = HTTPResponsePart.head(HTTPResponse(status: .continue))

    @Test func responsesBeforeAnyQuiesceAreLeftAlone() {
        var machine = Machine()
        #expect(machine.read(Self.head) == .forward)
        #expect(machine.read(.end(nil)) == .forward)
        #expect(machine.write(Self.ok) == .forward)
        #expect(machine.write(.end(nil)) == .forward)
        #expect(machine.requestsInProgress == 0)
        #expect(machine.state == .serving)
    }

    @Test func aQuiesceDuringARequestGoesOnAtOnceAndItsResponseSaysClose() {
        var machine = Machine()
        _ = machine.read(Self.head)
        #expect(machine.quiesce() == .release)
        #expect(machine.write(Self.ok) == .announceClose)
        #expect(machine.write(.end(nil)) == .forward)
    }

    @Test func aQuiesceWithNothingInProgressWaitsForTheNextRequestHead() {
        var machine = Machine()
        _ = machine.read(Self.head)
        _ = machine.write(Self.ok)
        _ = machine.write(.end(nil))
        // Between requests of a kept-alive connection: the short grace.
        #expect(machine.quiesce() == .hold(firstRequest: false))
        #expect(machine.read(Self.head) == .forwardThenRelease)
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
        #expect(machine.read(Self.head) == .forwardThenRelease)
        #expect(machine.quiesce() == .ignore)
    }

    @Test func anInterimResponseDoesNotSayCloseButTheFinalOneDoes() {
        var machine = Machine()
        _ = machine.read(Self.head)
        _ = machine.quiesce()
        #expect(machine.write(Self.continueHead) == .forward)
        #expect(machine.write(Self.ok) == .announceClose)
    }

    @Test func ofPipelinedRequestsOnlyTheLastResponseSaysClose() {
        var machine = Machine()
        _ = machine.read(Self.head)
        _ = machine.read(.end(nil))
        _ = machine.read(Self.head)
        #expect(machine.quiesce() == .release)
        #expect(machine.write(Self.ok) == .forward)
        _ = machine.write(.end(nil))
        #expect(machine.write(Self.ok) == .announceClose)
    }

    @Test func aResponseWithoutARequestHeadDoesNotCountBelowZero() {
        var machine = Machine()
        // Hummingbird's 400 for bytes that never parsed into a head.
        _ = machine.write(HTTPResponsePart.head(HTTPResponse(status: .badRequest)))
        _ = machine.write(.end(nil))
        #expect(machine.requestsInProgress == 0)
        #expect(machine.quiesce() == .hold(firstRequest: true))
    }
}
