//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@testable import LifecycleIPC

// A varlink connection's state machine as a plain value: no socket, no loop, no clock, and a plain object standing in
// for each request. VarlinkServerTests and VarlinkServerLimitTests run the connection around it on real sockets.

/// Stands in for a ``VarlinkRequest``: the machine only compares requests by identity.
private final class Call {}

private typealias Machine = VarlinkConnection.StateMachine<Call>

private let t0 = ContinuousClock.now

/// Small bounds, so that a test reaches each of them in a few steps.
private let limits: VarlinkServer.Limits = {
    var limits = VarlinkServer.Limits()
    limits.maximumMessageSize = 64
    limits.callsPerDispatch = 3
    limits.replyBytesPerDispatch = 100
    limits.idleTimeout = .seconds(10)
    return limits
}()

extension VarlinkConnection.StateMachine {
    /// One message taken and handed over in the running dispatch.
    fileprivate mutating func receive() {
        #expect(nextCall() == .readMessage)
        messageReceived()
    }

    /// A dispatch that takes one message and starts `call`, which its handler keeps: the dispatch stops at it.
    fileprivate mutating func startKeptCall(_ call: Request) {
        #expect(startDispatch() == true)
        receive()
        callStarted(call)
        #expect(nextCall() == .stop)
    }
}

@Suite struct VarlinkConnectionStateMachineTests {
    // MARK: Legal sequences

    @Test func anAcceptedConnectionMustSendItsFirstMessageWithinTheIdleTimeout() {
        var machine = Machine(limits: limits)
        #expect("\(machine)" == "open, awaiting a call")
        #expect(machine.idleDeadline == nil)
        #expect(machine.accepted(now: t0) == t0 + .seconds(10))
        #expect(machine.idleDeadline == t0 + .seconds(10))
        #expect("\(machine)" == "open, idle")
        #expect(machine.readsInput(pendingInput: 0) && machine.readsInput(pendingInput: 64))
        // Past a message's worth unhandled, nothing more is read (one more read shows a message is over the limit).
        #expect(!machine.readsInput(pendingInput: 65))
    }

    @Test func aCallAnsweredAtOnceLeavesTheConnectionIdleWithADeadlineFromTheEndOfTheDispatch() {
        var machine = Machine(limits: limits)
        _ = machine.accepted(now: t0)
        #expect(machine.startDispatch() == true)
        #expect(machine.isDispatching)
        machine.receive()
        // A complete message: the deadline it met is over.
        #expect(machine.idleDeadline == nil)
        machine.charge(20)
        #expect(machine.nextCall() == .readMessage)
        let end = t0 + .seconds(3)
        #expect(machine.endDispatch(pendingInput: 5, now: end) == .becameIdle(end + .seconds(10)))
        #expect(machine.idleDeadline == end + .seconds(10))
        #expect(!machine.isDispatching)
    }

    @Test func aDispatchThatHandledNoMessageKeepsTheDeadlineItHad() {
        // Bytes that trickle in do not extend it.
        var machine = Machine(limits: limits)
        _ = machine.accepted(now: t0)
        #expect(machine.startDispatch() == true)
        #expect(machine.nextCall() == .readMessage)
        #expect(machine.endDispatch(pendingInput: 30, now: t0 + .seconds(9)) == .none)
        #expect(machine.idleDeadline == t0 + .seconds(10))
    }

    @Test func aCallAHandlerKeepsHoldsBackTheNextUntilItsFinalReply() {
        var machine = Machine(limits: limits)
        _ = machine.accepted(now: t0)
        let call = Call()
        machine.startKeptCall(call)
        #expect(machine.endDispatch(pendingInput: 10, now: t0) == .none)
        #expect("\(machine)" == "open, a call in progress")
        // No idle deadline while a call is in progress (a stream of `more` replies may last for ever).
        #expect(machine.idleDeadline == nil)
        // Input that comes meanwhile is read, up to a message's worth, and waits.
        #expect(machine.readsInput(pendingInput: 64))
        #expect(machine.startDispatch() == true)
        #expect(machine.nextCall() == .stop)
        #expect(machine.endDispatch(pendingInput: 64, now: t0) == .none)
        #expect(machine.callFinished(call) == .scheduleContinuation)
        #expect("\(machine)" == "open, awaiting a call, continuation scheduled")
        // Finished already: a second final reply (or one of a stand-in request) changes nothing.
        #expect(machine.callFinished(call) == .none)
        #expect(machine.callFinished(Call()) == .none)
        machine.continuationRan()
        #expect(machine.startDispatch() == true)
        machine.receive()
        #expect(machine.nextCall() == .readMessage)
        #expect(machine.endDispatch(pendingInput: 0, now: t0 + .seconds(1)) == .becameIdle(t0 + .seconds(11)))
    }

    @Test func aFinalReplyThatComesWhileADispatchRunsLeavesTheNextCallToThatDispatch() {
        var machine = Machine(limits: limits)
        let call = Call()
        #expect(machine.startDispatch() == true)
        machine.receive()
        machine.callStarted(call)
        #expect(machine.callFinished(call) == .none)
        #expect(machine.nextCall() == .readMessage)
    }

    @Test func repliesAndChargedWorkDuringADispatchCountAgainstItsBudget() {
        var machine = Machine(limits: limits)
        #expect(machine.startDispatch() == true)
        machine.receive()
        machine.charge(60)
        machine.receive()
        machine.charge(40)
        #expect(machine.nextCall() == .yield(scheduleContinuation: true))
        // A negative cost counts as none.
        var other = Machine(limits: limits)
        #expect(other.startDispatch() == true)
        other.receive()
        other.charge(99)
        other.charge(-50)
        #expect(other.nextCall() == .readMessage)
    }

    @Test func aStreamsLaterRepliesCountAgainstNoDispatch() {
        var machine = Machine(limits: limits)
        let stream = Call()
        machine.startKeptCall(stream)
        _ = machine.endDispatch(pendingInput: 0, now: t0)
        // Replies of the stream from other work, between dispatches.
        machine.charge(1000)
        #expect(machine.callFinished(stream) == .scheduleContinuation)
        machine.continuationRan()
        #expect(machine.startDispatch() == true)
        #expect(machine.nextCall() == .readMessage)
    }

    @Test func theCallBudgetEndsTheDispatchAndReadingWaitsForTheContinuation() {
        var machine = Machine(limits: limits)
        _ = machine.accepted(now: t0)
        #expect(machine.startDispatch() == true)
        machine.receive()
        machine.receive()
        machine.receive()
        #expect(machine.nextCall() == .yield(scheduleContinuation: true))
        #expect("\(machine)" == "open, awaiting a call, over budget")
        #expect(!machine.isDispatching)
        #expect(!machine.readsInput(pendingInput: 0))
        // The readable socket brings the connection back before the end of the turn: no dispatch until the
        // continuation, and a hang-up stops the watch rather than spinning.
        #expect(machine.startDispatch() == false)
        #expect(machine.peerEvents(error: false, hangup: true, pendingInput: 0) == .stopWatchingAndDispatch)
        machine.continuationRan()
        #expect(machine.readsInput(pendingInput: 0))
        #expect(machine.peerEvents(error: false, hangup: true, pendingInput: 0) == .dispatch)
        #expect(machine.startDispatch() == true)
        machine.receive()
        #expect(machine.nextCall() == .readMessage)
    }

    @Test func aBudgetUsedUpWhileAContinuationIsScheduledSchedulesNoSecondOne() {
        var machine = Machine(limits: limits)
        let call = Call()
        machine.startKeptCall(call)
        _ = machine.endDispatch(pendingInput: 0, now: t0)
        #expect(machine.callFinished(call) == .scheduleContinuation)
        // New input runs a dispatch before the continuation does.
        #expect(machine.startDispatch() == true)
        machine.receive()
        machine.receive()
        machine.receive()
        #expect(machine.nextCall() == .yield(scheduleContinuation: false))
        #expect("\(machine)" == "open, awaiting a call, over budget")
        machine.continuationRan()
        #expect("\(machine)" == "open, awaiting a call")
    }

    @Test func theEndOfInputClosesTheConnectionOnceEveryCallIsAnsweredAndItsRepliesAreOut() {
        var machine = Machine(limits: limits)
        _ = machine.accepted(now: t0)
        let call = Call()
        machine.inputDidEnd()
        #expect(machine.inputEnded && !machine.readsInput(pendingInput: 0))
        machine.startKeptCall(call)
        // The call in progress is still answered.
        #expect(machine.endDispatch(pendingInput: 0, now: t0) == .none)
        #expect(machine.peerEvents(error: false, hangup: true, pendingInput: 0) == .close)
        #expect(machine.callFinished(call) == .scheduleContinuation)
        machine.continuationRan()
        #expect(machine.startDispatch() == true)
        #expect(machine.nextCall() == .readMessage)
        #expect(machine.endDispatch(pendingInput: 3, now: t0) == .closeWhenFlushed)
        #expect("\(machine)" == "draining")
        #expect(machine.closesWhenFlushed && machine.isOpen)
        #expect(machine.startDispatch() == false)
        #expect(machine.idleDeadline == nil)
        if case .close(let disconnecting) = machine.close() {
            #expect(disconnecting == nil)
        } else {
            Issue.record("a draining connection did not close")
        }
        #expect(!machine.isOpen && !machine.closesWhenFlushed)
    }

    @Test func aConnectionDrainingWithoutAMessageSinceItsDeadlineKeepsIt() {
        // A peer that sent nothing and stopped reading is still closed at the idle deadline.
        var machine = Machine(limits: limits)
        _ = machine.accepted(now: t0)
        machine.inputDidEnd()
        #expect(machine.startDispatch() == true)
        #expect(machine.nextCall() == .readMessage)
        #expect(machine.endDispatch(pendingInput: 0, now: t0 + .seconds(1)) == .closeWhenFlushed)
        #expect(machine.idleDeadline == t0 + .seconds(10))
    }

    @Test func moreThanAMessagesWorthBehindACallInProgressClosesTheConnection() {
        var machine = Machine(limits: limits)
        let call = Call()
        machine.startKeptCall(call)
        #expect(machine.endDispatch(pendingInput: 65, now: t0) == .closeOversized)
        var atTheLimit = Machine(limits: limits)
        atTheLimit.startKeptCall(call)
        #expect(atTheLimit.endDispatch(pendingInput: 64, now: t0) == .none)
    }

    @Test func closingHandsTheCallInProgressItsDisconnectionOnceAndThenNothingHappens() {
        var machine = Machine(limits: limits)
        let call = Call()
        machine.startKeptCall(call)
        _ = machine.endDispatch(pendingInput: 0, now: t0)
        guard case .close(let disconnecting) = machine.close() else {
            Issue.record("an open connection did not close")
            return
        }
        #expect(disconnecting === call)
        #expect("\(machine)" == "closed")
        if case .close = machine.close() { Issue.record("a closed connection closed again") }
        #expect(machine.callFinished(call) == .none)
        #expect(!machine.isOpen && machine.inputEnded && machine.idleDeadline == nil)
        #expect(!machine.readsInput(pendingInput: 0))
        #expect(machine.startDispatch() == false)
        #expect(machine.nextCall() == .stop)
    }

    @Test func aHandlerWhoseRepliesClosedTheConnectionKeepsItsCallToItself() {
        // Its replies went past the backlog: the connection closed inside the handler, before the call was its.
        var machine = Machine(limits: limits)
        #expect(machine.startDispatch() == true)
        machine.receive()
        _ = machine.close()
        machine.callStarted(Call())
        #expect(machine.nextCall() == .stop)
        #expect(machine.endDispatch(pendingInput: 0, now: t0) == .none)
        #expect("\(machine)" == "closed")
    }

    @Test func anErrorOnTheDescriptorClosesTheConnectionInEveryStateAndNoEventLeavesItToItsDispatch() {
        for state in Reached.allCases {
            #expect(state.machine.peerEvents(error: true, hangup: false, pendingInput: 0) == .close, "\(state)")
            #expect(state.machine.peerEvents(error: false, hangup: false, pendingInput: 0) == .dispatch, "\(state)")
        }
    }

    // MARK: Every event in every state

    /// A state reached by a legal sequence.
    enum Reached: String, CaseIterable, CustomTestStringConvertible, Codable {
        case fresh, idle, dispatching, handling, inCall, continuationScheduled, overBudget, inputEnded, draining
        case closed

        var testDescription: String { rawValue }

        /// The state's machine, and the request in progress in it.
        fileprivate var machineAndCall: (VarlinkConnection.StateMachine<Call>, Call) {
            var machine = Machine(limits: limits)
            var call = Call()
            switch self {
            case .fresh: break
            case .idle: _ = machine.accepted(now: t0)
            case .dispatching:
                _ = machine.accepted(now: t0)
                _ = machine.startDispatch()
            case .handling:
                (machine, _) = Reached.dispatching.machineAndCall
                machine.receive()
                machine.callStarted(call)
            case .inCall:
                (machine, call) = Reached.handling.machineAndCall
                _ = machine.nextCall()
                _ = machine.endDispatch(pendingInput: 0, now: t0)
            case .continuationScheduled:
                (machine, call) = Reached.inCall.machineAndCall
                _ = machine.callFinished(call)
            case .overBudget:
                (machine, _) = Reached.dispatching.machineAndCall
                for _ in 0..<limits.callsPerDispatch { machine.receive() }
                _ = machine.nextCall()
            case .inputEnded:
                (machine, _) = Reached.idle.machineAndCall
                machine.inputDidEnd()
            case .draining:
                (machine, _) = Reached.inputEnded.machineAndCall
                _ = machine.startDispatch()
                _ = machine.nextCall()
                _ = machine.endDispatch(pendingInput: 0, now: t0)
            case .closed:
                (machine, _) = Reached.idle.machineAndCall
                _ = machine.close()
            }
            return (machine, call)
        }

        fileprivate var machine: VarlinkConnection.StateMachine<Call> { machineAndCall.0 }
    }

    /// An event, as the connection hands it over.
    enum Stimulus: String, CaseIterable, CustomTestStringConvertible, Codable {
        case accepted, inputDidEnd, startDispatch, nextCall, messageReceived, callStarted, callFinished
        case continuationRan, endDispatch, charge, close

        var testDescription: String { rawValue }

        fileprivate func apply(to machine: inout VarlinkConnection.StateMachine<Call>, call: Call) {
            switch self {
            case .accepted: _ = machine.accepted(now: t0)
            case .inputDidEnd: machine.inputDidEnd()
            case .startDispatch: _ = machine.startDispatch()
            case .nextCall: _ = machine.nextCall()
            case .messageReceived: machine.messageReceived()
            case .callStarted: machine.callStarted(Call())
            case .callFinished: _ = machine.callFinished(call)
            case .continuationRan: machine.continuationRan()
            case .endDispatch: _ = machine.endDispatch(pendingInput: 0, now: t0)
            case .charge: machine.charge(10)
            case .close: _ = machine.close()
            }
        }
    }

    /// Where each event leads from each state: the state's name afterwards, or nil for a precondition failure (an
    /// event the connection cannot send in that state).
    static let outcomes: [Reached: [Stimulus: String?]] = {
        let fresh = "open, awaiting a call"
        let idle = "open, idle"
        let dispatching = "open, idle, dispatching"
        let handling = "open, a call in progress, dispatching"
        let inCall = "open, a call in progress"
        let scheduled = "open, awaiting a call, continuation scheduled"
        let overBudget = "open, awaiting a call, over budget"
        let inputEnded = "open, idle, input ended"
        return [
            .fresh: [
                .accepted: idle, .inputDidEnd: "open, awaiting a call, input ended",
                .startDispatch: "open, awaiting a call, dispatching", .nextCall: nil, .messageReceived: nil,
                .callStarted: nil, .callFinished: fresh, .continuationRan: fresh, .endDispatch: nil, .charge: fresh,
                .close: "closed",
            ],
            .idle: [
                .accepted: nil, .inputDidEnd: inputEnded, .startDispatch: dispatching, .nextCall: nil,
                .messageReceived: nil, .callStarted: nil, .callFinished: idle, .continuationRan: idle,
                .endDispatch: nil, .charge: idle, .close: "closed",
            ],
            .dispatching: [
                .accepted: nil, .inputDidEnd: "open, idle, input ended, dispatching", .startDispatch: dispatching,
                .nextCall: dispatching, .messageReceived: "open, awaiting a call, dispatching",
                .callStarted: handling, .callFinished: dispatching, .continuationRan: dispatching,
                .endDispatch: idle, .charge: dispatching, .close: "closed",
            ],
            .handling: [
                .accepted: nil, .inputDidEnd: "open, a call in progress, input ended, dispatching",
                .startDispatch: handling, .nextCall: handling, .messageReceived: nil, .callStarted: nil,
                .callFinished: "open, awaiting a call, dispatching", .continuationRan: handling,
                .endDispatch: inCall, .charge: handling, .close: "closed",
            ],
            .inCall: [
                .accepted: nil, .inputDidEnd: "open, a call in progress, input ended", .startDispatch: handling,
                .nextCall: inCall, .messageReceived: nil, .callStarted: nil, .callFinished: scheduled,
                .continuationRan: inCall, .endDispatch: nil, .charge: inCall, .close: "closed",
            ],
            .continuationScheduled: [
                .accepted: nil, .inputDidEnd: "open, awaiting a call, input ended, continuation scheduled",
                .startDispatch: "open, awaiting a call, dispatching, continuation scheduled", .nextCall: nil,
                .messageReceived: nil, .callStarted: nil, .callFinished: scheduled, .continuationRan: fresh,
                .endDispatch: nil, .charge: scheduled, .close: "closed",
            ],
            .overBudget: [
                .accepted: nil, .inputDidEnd: "open, awaiting a call, input ended, over budget",
                .startDispatch: overBudget, .nextCall: nil, .messageReceived: nil, .callStarted: nil,
                .callFinished: overBudget, .continuationRan: fresh, .endDispatch: nil, .charge: overBudget,
                .close: "closed",
            ],
            .inputEnded: [
                .accepted: nil, .inputDidEnd: nil, .startDispatch: "open, idle, input ended, dispatching",
                .nextCall: nil, .messageReceived: nil, .callStarted: nil, .callFinished: inputEnded,
                .continuationRan: inputEnded, .endDispatch: nil, .charge: inputEnded, .close: "closed",
            ],
            .draining: [
                .accepted: nil, .inputDidEnd: nil, .startDispatch: "draining", .nextCall: "draining",
                .messageReceived: nil, .callStarted: "draining", .callFinished: "draining",
                .continuationRan: "draining", .endDispatch: "draining", .charge: "draining", .close: "closed",
            ],
            .closed: [
                .accepted: nil, .inputDidEnd: nil, .startDispatch: "closed", .nextCall: "closed",
                .messageReceived: nil, .callStarted: "closed", .callFinished: "closed", .continuationRan: "closed",
                .endDispatch: "closed", .charge: "closed", .close: "closed",
            ],
        ]
    }()

    struct Case: CustomTestStringConvertible, Codable, Sendable {
        var state: Reached
        var event: Stimulus
        var testDescription: String { "\(event.rawValue) while \(state.rawValue)" }
    }

    static let allowed = Reached.allCases.flatMap { state in
        Stimulus.allCases.filter { outcomes[state]![$0]! != nil }.map { Case(state: state, event: $0) }
    }
    static let refused = Reached.allCases.flatMap { state in
        Stimulus.allCases.filter { outcomes[state]![$0]! == nil }.map { Case(state: state, event: $0) }
    }

    @Test func everyStateOfTheTableIsReachedAndListsEveryEvent() {
        let names: [Reached: String] = [
            .fresh: "open, awaiting a call", .idle: "open, idle", .dispatching: "open, idle, dispatching",
            .handling: "open, a call in progress, dispatching", .inCall: "open, a call in progress",
            .continuationScheduled: "open, awaiting a call, continuation scheduled",
            .overBudget: "open, awaiting a call, over budget", .inputEnded: "open, idle, input ended",
            .draining: "draining", .closed: "closed",
        ]
        for state in Reached.allCases {
            #expect("\(state.machine)" == names[state], "\(state)")
            #expect(Self.outcomes[state]?.count == Stimulus.allCases.count, "\(state)")
        }
    }

    @Test(arguments: allowed)
    func anEventAllowedInAStateLeadsWhereTheTableSays(_ test: Case) {
        var (machine, call) = test.state.machineAndCall
        test.event.apply(to: &machine, call: call)
        #expect("\(machine)" == Self.outcomes[test.state]![test.event]!)
    }

    @Test(arguments: refused)
    func anEventTheConnectionCannotSendInAStateStopsTheProcessNamingIt(_ test: Case) async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) { [test] in
            var (machine, call) = test.state.machineAndCall
            test.event.apply(to: &machine, call: call)
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("\(test.state.machine)"), "\(message)")
    }
}
