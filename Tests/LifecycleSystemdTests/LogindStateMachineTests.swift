//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import SystemPackage
import Testing

@testable import LifecycleSystemd

// The logind client's state machine as a plain value: no bus, no loop, no clock (each event that can begin an outage
// is given its instant). LogindTests run the client around it against a real dbus-daemon and logind mock.

private typealias Machine = Logind.StateMachine
private typealias Action = Machine.Action

private let t0 = ContinuousClock.now
private let driver = "org.freedesktop.DBus"
private let logind = ":1.5"

private func denied(fromBusDriver: Bool = false) -> SdBus.ErrorReply {
    SdBus.ErrorReply(
        name: "org.freedesktop.DBus.Error.AccessDenied",
        text: "org.freedesktop.DBus.Error.AccessDenied: Permission denied",
        fromBusDriver: fromBusDriver
    )
}

private let noReply = SdBus.ErrorReply(
    name: "org.freedesktop.DBus.Error.NoReply",
    text: "org.freedesktop.DBus.Error.NoReply: Connection terminated",
    fromBusDriver: true
)

extension Machine {
    /// The actions of an event with its continuations resumed where they stand, as the client performs them.
    fileprivate mutating func run(_ actions: [Action]) -> [Action] {
        actions.flatMap { action -> [Action] in
            if case .then(let continuation) = action { return run(resume(continuation)) }
            return [action]
        }
    }

    /// A first connection that came up, knows logind as `owner` and holds both inhibitors (descriptors 7 and 8).
    fileprivate static func holding(owner: String = logind) -> Machine {
        var machine = Machine()
        machine.connect()
        _ = machine.takeInhibitors()
        for member in Logind.subscriptions {
            _ = machine.subscriptionAnswered(member, failure: nil, busOpen: true, now: t0)
        }
        _ = machine.run(machine.ownerAnswered(.owner(owner), busOpen: true, now: t0))
        _ = machine.inhibitorAnswered(.sleep, .granted(descriptor: 7), busOpen: true, now: t0)
        _ = machine.inhibitorAnswered(.shutdown, .granted(descriptor: 8), busOpen: true, now: t0)
        return machine
    }

    fileprivate mutating func ownerChanged(to owner: String?, at now: ContinuousClock.Instant = t0) -> [Action] {
        nameOwnerChanged(
            member: "org.freedesktop.DBus.NameOwnerChanged",
            from: driver,
            isBroadcast: true,
            change: OwnerChange(name: Logind.busName, newOwner: owner),
            now: now
        )
    }
}

@Suite struct LogindStateMachineTests {
    // MARK: Legal sequences

    @Test func theFirstConnectionComesUpSaysWhatItAwaitsAndHoldsBothInhibitors() {
        var machine = Machine()
        #expect("\(machine)" == "idle")
        machine.connect()
        #expect("\(machine)" == "connecting")
        #expect(machine.takeInhibitors() == [.requestInhibitor(.sleep), .requestInhibitor(.shutdown)])
        #expect(machine.awaiting == [
            "the subscription to PrepareForSleep", "the subscription to PrepareForShutdown",
            "the subscription to NameOwnerChanged", "the owner of org.freedesktop.login1",
            "the sleep delay inhibitor", "the shutdown delay inhibitor",
        ])
        let subscribed = machine.subscriptionAnswered("PrepareForSleep", failure: nil, busOpen: true, now: t0)
        #expect(subscribed == [.setupProgressed])
        #expect("\(machine)" == "up")
        _ = machine.subscriptionAnswered("PrepareForShutdown", failure: nil, busOpen: true, now: t0)
        _ = machine.subscriptionAnswered("NameOwnerChanged", failure: nil, busOpen: true, now: t0)
        #expect(machine.ownerAnswered(.owner(logind), busOpen: true, now: t0) == [
            .report(.ownerNamed(logind)), .setupProgressed, .then(.ownerAnswered),
        ])
        // Both inhibitors were asked for already (the application takes them at once): nothing more to ask.
        #expect(machine.resume(.ownerAnswered) == [.setupProgressed])
        #expect(machine.owner == logind)
        #expect(machine.awaiting == ["the sleep delay inhibitor", "the shutdown delay inhibitor"])
        #expect(machine.inhibitorAnswered(.sleep, .granted(descriptor: 7), busOpen: true, now: t0) == [
            .inhibitorHeld(.sleep, descriptor: 7), .setupProgressed,
        ])
        #expect(machine.inhibitorAnswered(.shutdown, .granted(descriptor: 8), busOpen: true, now: t0) == [
            .inhibitorHeld(.shutdown, descriptor: 8), .setupProgressed,
        ])
        #expect(machine.awaiting.isEmpty)
        #expect(machine.heldLocks == [.sleep, .shutdown])
        #expect(!machine.isRecovering)
    }

    @Test func releasingClosesWhatIsHeldAndCancelsWhatIsPendingAndTakingAsksOnlyForWhatIsMissing() {
        var machine = Machine()
        machine.connect()
        _ = machine.takeInhibitors()
        _ = machine.inhibitorAnswered(.sleep, .granted(descriptor: 7), busOpen: true, now: t0)
        // Held or asked for already: nothing to ask.
        #expect(machine.takeInhibitors() == [])
        #expect(machine.releaseInhibitors() == [
            .closeInhibitor(.sleep, descriptor: 7, released: true), .cancelInhibitorRequest(.shutdown),
        ])
        #expect(machine.heldLocks.isEmpty)
        #expect(machine.awaiting.allSatisfy { !$0.contains("inhibitor") })
        #expect(machine.releaseInhibitors() == [])
        #expect(machine.takeInhibitors() == [.requestInhibitor(.sleep), .requestInhibitor(.shutdown)])
    }

    @Test func closingReleasesTheInhibitorsDropsTheConnectionAndAllowsANewOne() {
        var machine = Machine.holding()
        #expect(machine.close() == [
            .closeInhibitor(.sleep, descriptor: 7, released: true),
            .closeInhibitor(.shutdown, descriptor: 8, released: true),
            .detach,
        ])
        #expect("\(machine)" == "idle")
        #expect(machine.owner == nil && machine.heldLocks.isEmpty && machine.awaiting.isEmpty)
        // Not connected: the application's wish waits for a connection.
        #expect(machine.takeInhibitors() == [])
        machine.connect()
        #expect("\(machine)" == "connecting")
    }

    @Test func announcementsBeforeTheOwnerIsKnownWaitAndAreJudgedOnceItIs() {
        var machine = Machine()
        machine.connect()
        #expect(machine.announcementReceived(.prepareForSleep(true), from: logind, isBroadcast: true) == [])
        #expect(machine.announcementReceived(.prepareForShutdown(true), from: ":1.9", isBroadcast: true) == [])
        #expect(machine.ownerAnswered(.owner(logind), busOpen: true, now: t0) == [
            .report(.ownerNamed(logind)),
            .deliver(.prepareForSleep(true)),
            .report(.ignored("PrepareForShutdown(true)", sender: ":1.9", .notTheOwner(logind))),
            .setupProgressed,
            .then(.ownerAnswered),
        ])
    }

    @Test func atMostEightAnnouncementsWaitForTheOwner() {
        var machine = Machine()
        machine.connect()
        for _ in 0..<Logind.maximumWaitingAnnouncements {
            #expect(machine.announcementReceived(.prepareForSleep(true), from: logind, isBroadcast: true) == [])
        }
        #expect(machine.announcementReceived(.prepareForSleep(false), from: logind, isBroadcast: true) == [
            .report(.ignored("PrepareForSleep(false)", sender: logind, .ownerNotKnownYet))
        ])
        let delivered = machine.ownerAnswered(.owner(logind), busOpen: true, now: t0).filter {
            if case .deliver = $0 { return true }
            return false
        }
        #expect(delivered == Array(repeating: .deliver(.prepareForSleep(true)), count: 8))
    }

    @Test func onlyBroadcastsFromTheOwnerAreDelivered() {
        var machine = Machine.holding()
        #expect(machine.announcementReceived(.prepareForSleep(true), from: logind, isBroadcast: true) == [
            .deliver(.prepareForSleep(true))
        ])
        #expect(machine.announcementReceived(.prepareForSleep(true), from: logind, isBroadcast: false) == [
            .report(.ignored("PrepareForSleep(true)", sender: logind, .addressedAnnouncement))
        ])
        #expect(machine.announcementReceived(.prepareForShutdown(true), from: ":1.66", isBroadcast: true) == [
            .report(.ignored("PrepareForShutdown(true)", sender: ":1.66", .notTheOwner(logind)))
        ])
        #expect(machine.announcementReceived(.prepareForShutdown(true), from: nil, isBroadcast: true) == [
            .report(.ignored("PrepareForShutdown(true)", sender: nil, .notTheOwner(logind)))
        ])
    }

    @Test func aNameOwnerChangedCountsOnlyAsTheBusDriversBroadcastForLogindsName() {
        var machine = Machine.holding()
        let change = Machine.OwnerChange(name: Logind.busName, newOwner: nil)
        let member = "org.freedesktop.DBus.NameOwnerChanged"
        #expect(machine.nameOwnerChanged(member: member, from: ":1.66", isBroadcast: true, change: change, now: t0) == [
            .report(.ignored(member, sender: ":1.66", .ownerChangeFromPeer))
        ])
        #expect(machine.nameOwnerChanged(member: member, from: driver, isBroadcast: false, change: change, now: t0) == [
            .report(.ignored(member, sender: driver, .addressedOwnerChange))
        ])
        #expect(machine.nameOwnerChanged(member: member, from: driver, isBroadcast: true, change: nil, now: t0) == [])
        let other = Machine.OwnerChange(name: "org.example.Other", newOwner: nil)
        #expect(machine.nameOwnerChanged(member: member, from: driver, isBroadcast: true, change: other, now: t0) == [])
        #expect(machine.owner == logind && machine.heldLocks == [.sleep, .shutdown] && !machine.isRecovering)
    }

    @Test func logindLeavingIsOneOutageThatEndsOnceItsSuccessorGrantsBothInhibitors() {
        var machine = Machine.holding()
        let left = t0 + .seconds(1)
        #expect(machine.ownerChanged(to: nil, at: left) == [
            .setupProgressed,
            .report(.logindLeft(first: true)),
            .closeInhibitor(.sleep, descriptor: 7, released: false),
            .closeInhibitor(.shutdown, descriptor: 8, released: false),
        ])
        #expect(machine.isRecovering && machine.owner == nil && machine.heldLocks.isEmpty)
        // Nobody owns the name: nothing to wait for, and no inhibitor to ask for.
        #expect(machine.awaiting.isEmpty)
        #expect(machine.ownerChanged(to: nil) == [.setupProgressed, .report(.logindLeft(first: false))])
        #expect(machine.ownerChanged(to: ":1.7") == [.setupProgressed, .then(.logindAppeared(":1.7"))])
        #expect(machine.resume(.logindAppeared(":1.7")) == [
            .report(.logindAppeared(":1.7")), .queryInhibitDelayMax,
            .requestInhibitor(.sleep), .requestInhibitor(.shutdown),
        ])
        #expect(machine.inhibitorAnswered(.sleep, .granted(descriptor: 9), busOpen: true, now: t0) == [
            .inhibitorHeld(.sleep, descriptor: 9), .setupProgressed,
        ])
        #expect(machine.isRecovering)
        let outage = Machine.Outage(cause: .logindLeft, began: left, busClosed: false)
        #expect(machine.inhibitorAnswered(.shutdown, .granted(descriptor: 10), busOpen: true, now: t0) == [
            .inhibitorHeld(.shutdown, descriptor: 10),
            .report(.recovered(outage, owner: ":1.7", held: [.sleep, .shutdown], wanted: true)),
            .setupProgressed,
        ])
        #expect(!machine.isRecovering)
    }

    @Test func anOutageWhileTheApplicationHoldsNoInhibitorEndsWhenLogindIsBack() {
        var machine = Machine.holding()
        _ = machine.ownerChanged(to: nil)
        _ = machine.releaseInhibitors()
        let outage = Machine.Outage(cause: .logindLeft, began: t0, busClosed: false)
        #expect(machine.run(machine.ownerChanged(to: ":1.7")) == [
            .setupProgressed, .report(.logindAppeared(":1.7")), .queryInhibitDelayMax,
            .report(.recovered(outage, owner: ":1.7", held: [], wanted: false)),
        ])
    }

    @Test func whatFollowsADeliveryIsDecidedAfterTheApplicationHandledIt() {
        // An announcement waited for the owner across an outage; handling it, the application releases its inhibitors
        // (it enters the background with nothing left to do): they are not asked for again afterwards.
        var machine = Machine.holding()
        _ = machine.connectionClosed("Disconnected", now: t0)
        _ = machine.timerFired()
        _ = machine.subscriptionAnswered("PrepareForSleep", failure: nil, busOpen: true, now: t0)
        _ = machine.announcementReceived(.prepareForSleep(true), from: ":1.7", isBroadcast: true)
        let answered = machine.ownerAnswered(.owner(":1.7"), busOpen: true, now: t0)
        #expect(answered.contains(.deliver(.prepareForSleep(true))))
        #expect(answered.last == .then(.ownerAnswered))
        _ = machine.releaseInhibitors()
        let outage = Machine.Outage(cause: .busClosed, began: t0, attempts: 1, busClosed: true)
        #expect(machine.resume(.ownerAnswered) == [
            .report(.recovered(outage, owner: ":1.7", held: [], wanted: false)), .setupProgressed,
        ])
    }

    @Test func aBusThatClosesAConnectionThatWasUpIsAnOutageTheClientReconnectsFrom() {
        var machine = Machine.holding()
        let closed = t0 + .seconds(2)
        #expect(machine.connectionClosed("org.freedesktop.DBus.Local.Disconnected", now: closed) == [
            .report(.busClosed("org.freedesktop.DBus.Local.Disconnected", first: true)),
            .closeInhibitor(.sleep, descriptor: 7, released: false),
            .closeInhibitor(.shutdown, descriptor: 8, released: false),
            .armTimer(after: .zero),
            .setupProgressed,
        ])
        #expect("\(machine)" == "lost (reconnecting)")
        #expect(machine.isRecovering && machine.awaiting.isEmpty && machine.owner == nil)
        // sd-bus fails each call still pending, then says Disconnected: the loss is over already.
        #expect(machine.ownerAnswered(.failed(noReply.text), busOpen: false, now: t0) == [.setupProgressed])
        #expect(machine.connectionClosed("again", now: t0) == [])
        // The application's wish holds across the outage; the connection to ask on comes later.
        #expect(machine.takeInhibitors() == [])
        #expect(machine.timerFired() == [.detach, .reconnect(attempt: 1)])
        #expect("\(machine)" == "connecting")
        var outage = Machine.Outage(cause: .busClosed, began: closed, busClosed: true)
        outage.attempts = 1
        #expect(machine.subscriptionAnswered("PrepareForSleep", failure: nil, busOpen: true, now: t0) == [
            .report(.reconnected(outage)), .setupProgressed,
        ])
        #expect("\(machine)" == "up")
        #expect(machine.run(machine.ownerAnswered(.owner(":1.8"), busOpen: true, now: t0)) == [
            .report(.ownerNamed(":1.8")), .setupProgressed,
            .requestInhibitor(.sleep), .requestInhibitor(.shutdown), .setupProgressed,
        ])
        _ = machine.inhibitorAnswered(.sleep, .granted(descriptor: 11), busOpen: true, now: t0)
        #expect(machine.inhibitorAnswered(.shutdown, .granted(descriptor: 12), busOpen: true, now: t0) == [
            .inhibitorHeld(.shutdown, descriptor: 12),
            .report(.recovered(outage, owner: ":1.8", held: [.sleep, .shutdown], wanted: true)),
            .setupProgressed,
        ])
    }

    @Test func aTimerArmedByAnEventTheApplicationInterruptedWithCloseFindsNothingToDo() {
        var machine = Machine.holding()
        let actions = machine.connectionClosed("Disconnected", now: t0)
        // The application closes the client when it hears that the first inhibitor is gone; the client goes on with
        // the event's actions and arms the timer.
        #expect(actions.firstIndex(of: .closeInhibitor(.sleep, descriptor: 7, released: false))!
            < actions.firstIndex(of: .armTimer(after: .zero))!)
        #expect(machine.close() == [.detach])
        #expect(machine.timerFired() == [])
        #expect("\(machine)" == "idle")
    }

    @Test func attemptsThatFailWaitLongerEachTimeUpToFiveSeconds() {
        var machine = Machine.holding()
        _ = machine.connectionClosed("Disconnected", now: t0)
        var delays: [Duration] = []
        for attempt in 1...8 {
            #expect(machine.timerFired() == [.detach, .reconnect(attempt: attempt)])
            let retry = machine.reconnectFailed()
            #expect(retry.attempt == attempt)
            #expect("\(machine)" == "waiting to reconnect")
            delays.append(retry.delay)
        }
        #expect(delays == [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
            .milliseconds(3200), .seconds(5), .seconds(5),
        ])
    }

    @Test func aReconnectionTheBusClosesBeforeItComesUpIsTriedAgainAfterItsDelayWithoutAnotherWarning() {
        var machine = Machine.holding()
        _ = machine.connectionClosed("Disconnected", now: t0)
        _ = machine.timerFired()
        #expect(machine.connectionClosed("Disconnected", now: t0) == [
            .report(.busClosed("Disconnected", first: false)), .armTimer(after: .milliseconds(100)), .setupProgressed,
        ])
        #expect(machine.timerFired() == [.detach, .reconnect(attempt: 2)])
    }

    @Test func theBusClosingLogindsConnectionAfterLogindLeftMakesTheOutageOneOfTheBus() {
        var machine = Machine.holding()
        _ = machine.ownerChanged(to: nil, at: t0)
        #expect(machine.connectionClosed("Disconnected", now: t0 + .seconds(1)) == [
            .report(.busClosed("Disconnected", first: false)), .armTimer(after: .zero), .setupProgressed,
        ])
        _ = machine.timerFired()
        _ = machine.subscriptionAnswered("PrepareForSleep", failure: nil, busOpen: true, now: t0)
        let answered = machine.run(machine.ownerAnswered(.owner(":1.8"), busOpen: true, now: t0))
        #expect(answered.contains(.requestInhibitor(.sleep)))
        _ = machine.inhibitorAnswered(.sleep, .granted(descriptor: 11), busOpen: true, now: t0)
        let recovered = machine.inhibitorAnswered(.shutdown, .granted(descriptor: 12), busOpen: true, now: t0)
        // The outage began when logind left, and the notice says the connection was made again.
        var outage = Machine.Outage(cause: .logindLeft, began: t0, busClosed: true)
        outage.attempts = 1
        #expect(recovered.contains(.report(.recovered(outage, owner: ":1.8", held: [.sleep, .shutdown], wanted: true))))
    }

    @Test func theBusClosingTheFirstConnectionBeforeItCameUpIsARefusalReportedOnceWithoutReconnection() {
        var machine = Machine()
        machine.connect()
        _ = machine.takeInhibitors()
        #expect(machine.ownerAnswered(.failed(noReply.text), busOpen: false, now: t0) == [
            .report(.busRefusedClient(noReply.text)), .armTimer(after: .zero), .setupProgressed, .setupProgressed,
        ])
        #expect("\(machine)" == "lost (refused)")
        #expect(!machine.isRecovering && machine.awaiting.isEmpty)
        // The calls still pending fail the same way; nothing more is said.
        #expect(machine.inhibitorAnswered(.sleep, .failed(noReply), busOpen: false, now: t0) == [.setupProgressed])
        #expect(machine.timerFired() == [.detach])
        #expect("\(machine)" == "refused")
        #expect(machine.takeInhibitors() == [])
        #expect(machine.heldLocks.isEmpty && !machine.isRecovering)
    }

    @Test func withoutAnOwnerNoInhibitorIsAskedForAndTheAbsenceIsOneWarningUntilLogindAppears() {
        var machine = Machine()
        machine.connect()
        let noOwner = "org.freedesktop.DBus.Error.NameHasNoOwner: Could not get owner of name"
        #expect(machine.ownerAnswered(.failed(noOwner), busOpen: true, now: t0) == [
            .report(.ownerAbsent(noOwner)), .setupProgressed, .setupProgressed,
        ])
        let absent = "org.freedesktop.login1 has no owner on the system bus"
        #expect(machine.takeInhibitors() == [.report(.unavailable(absent, first: true))])
        #expect(machine.takeInhibitors() == [.report(.unavailable(absent, first: false))])
        #expect(machine.awaiting == [
            "the subscription to PrepareForSleep", "the subscription to PrepareForShutdown",
            "the subscription to NameOwnerChanged",
        ])
        // logind appears: asked for at once, and its next absence is a warning again.
        #expect(machine.run(machine.ownerChanged(to: logind)) == [
            .setupProgressed, .report(.logindAppeared(logind)), .queryInhibitDelayMax,
            .requestInhibitor(.sleep), .requestInhibitor(.shutdown),
        ])
        let unknown = SdBus.ErrorReply(
            name: "org.freedesktop.DBus.Error.ServiceUnknown",
            text: "org.freedesktop.DBus.Error.ServiceUnknown: gone",
            fromBusDriver: true
        )
        #expect(machine.inhibitorAnswered(.sleep, .failed(unknown), busOpen: true, now: t0) == [
            .report(.unavailable(unknown.text, first: true)), .setupProgressed,
        ])
    }

    @Test func refusalsOfBothLockTypesAreOneReportOnceBothAreAnsweredAndRepeatsAreDebugLines() {
        var machine = Machine()
        machine.connect()
        _ = machine.takeInhibitors()
        let refusal = denied()
        // The shutdown lock's answer is still pending: the report waits for it.
        #expect(machine.inhibitorAnswered(.sleep, .failed(refusal), busOpen: true, now: t0) == [.setupProgressed])
        #expect(machine.inhibitorAnswered(.shutdown, .failed(refusal), busOpen: true, now: t0) == [
            .report(.refused([.init(type: .sleep, failure: refusal), .init(type: .shutdown, failure: refusal)])),
            .setupProgressed,
        ])
        #expect(machine.awaiting.allSatisfy { !$0.contains("inhibitor") })
        _ = machine.takeInhibitors()
        #expect(machine.inhibitorAnswered(.sleep, .failed(refusal), busOpen: true, now: t0) == [
            .report(.refusedAgain(.init(type: .sleep, failure: refusal))), .setupProgressed,
        ])
        // Granted, it is reported again the next time it is refused.
        #expect(machine.inhibitorAnswered(.shutdown, .granted(descriptor: 9), busOpen: true, now: t0) == [
            .inhibitorHeld(.shutdown, descriptor: 9), .setupProgressed,
        ])
        _ = machine.releaseInhibitors()
        _ = machine.takeInhibitors()
        _ = machine.inhibitorAnswered(.sleep, .failed(refusal), busOpen: true, now: t0)
        #expect(machine.inhibitorAnswered(.shutdown, .failed(refusal), busOpen: true, now: t0) == [
            .report(.refused([.init(type: .shutdown, failure: refusal)])), .setupProgressed,
        ])
    }

    @Test func aRefusalOfOneLockTypeIsReportedWhenTheOtherIsGranted() {
        var machine = Machine()
        machine.connect()
        _ = machine.takeInhibitors()
        let refusal = denied(fromBusDriver: true)
        #expect(machine.inhibitorAnswered(.shutdown, .failed(refusal), busOpen: true, now: t0) == [.setupProgressed])
        #expect(machine.inhibitorAnswered(.sleep, .granted(descriptor: 7), busOpen: true, now: t0) == [
            .inhibitorHeld(.sleep, descriptor: 7),
            .report(.refused([.init(type: .shutdown, failure: refusal)])),
            .setupProgressed,
        ])
        #expect(machine.heldLocks == [.sleep])
    }

    @Test func aReplyWithoutADescriptorOrOneThatCannotBeKeptHoldsNothing() {
        var machine = Machine()
        machine.connect()
        _ = machine.takeInhibitors()
        #expect(machine.inhibitorAnswered(.sleep, .noDescriptor, busOpen: true, now: t0) == [
            .report(.noDescriptor(.sleep)), .setupProgressed,
        ])
        #expect(machine.inhibitorAnswered(.shutdown, .descriptorNotKept(.tooManyOpenFiles), busOpen: true, now: t0) == [
            .report(.descriptorNotKept(.shutdown, .tooManyOpenFiles)), .setupProgressed,
        ])
        #expect(machine.heldLocks.isEmpty)
        // Answered, though not granted: asked for again on the next call.
        #expect(machine.takeInhibitors() == [.requestInhibitor(.sleep), .requestInhibitor(.shutdown)])
    }

    @Test func anInhibitCallThatCannotBeSentIsLogindUnavailableAndAskedForAgainLater() {
        var machine = Machine()
        machine.connect()
        _ = machine.takeInhibitors()
        #expect(machine.inhibitRequestFailed(.sleep, reason: "ENOTCONN") == [
            .report(.unavailable("ENOTCONN", first: true))
        ])
        #expect(machine.awaiting.last == "the shutdown delay inhibitor")
        #expect(machine.takeInhibitors() == [.requestInhibitor(.sleep)])
    }

    @Test func aSubscriptionTheBusRefusesIsAWarningAndCountsAsAnswered() {
        var machine = Machine()
        machine.connect()
        #expect(machine.subscriptionAnswered("PrepareForSleep", failure: "AccessDenied", busOpen: true, now: t0) == [
            .report(.subscriptionRefused("AccessDenied")), .setupProgressed,
        ])
        #expect("\(machine)" == "connecting")
        #expect(!machine.awaiting.contains("the subscription to PrepareForSleep"))
    }

    // MARK: Every event in every state

    /// A state reached by a legal sequence.
    enum Reached: String, CaseIterable, CustomTestStringConvertible, Codable {
        case idle, connecting, up, upRecovering, lostReconnecting, reconnecting, waitingToReconnect
        case lostRefused, refused

        var testDescription: String { rawValue }

        var machine: Logind.StateMachine {
            var machine = Machine()
            switch self {
            case .idle: break
            case .connecting: machine.connect()
            case .up: machine = .holding()
            case .upRecovering:
                machine = .holding()
                _ = machine.ownerChanged(to: nil)
            case .lostReconnecting:
                machine = .holding()
                _ = machine.connectionClosed("Disconnected", now: t0)
            case .reconnecting:
                machine = Reached.lostReconnecting.machine
                _ = machine.timerFired()
            case .waitingToReconnect:
                machine = Reached.reconnecting.machine
                _ = machine.reconnectFailed()
            case .lostRefused:
                machine.connect()
                _ = machine.takeInhibitors()
                _ = machine.connectionClosed("Disconnected", now: t0)
            case .refused:
                machine = Reached.lostRefused.machine
                _ = machine.timerFired()
            }
            return machine
        }
    }

    /// An event, as the client hands it over.
    enum Stimulus: String, CaseIterable, CustomTestStringConvertible, Codable {
        case connect, close, takeInhibitors, releaseInhibitors, connectionClosed, subscriptionAccepted, ownerNamed
        case announcement, logindLeft, logindAppeared, sleepInhibitorGranted, timerFired, reconnectFailed

        var testDescription: String { rawValue }

        func apply(to machine: inout Logind.StateMachine) {
            switch self {
            case .connect: machine.connect()
            case .close: _ = machine.close()
            case .takeInhibitors: _ = machine.takeInhibitors()
            case .releaseInhibitors: _ = machine.releaseInhibitors()
            case .connectionClosed: _ = machine.connectionClosed("Disconnected", now: t0)
            case .subscriptionAccepted:
                _ = machine.subscriptionAnswered("PrepareForSleep", failure: nil, busOpen: true, now: t0)
            case .ownerNamed: _ = machine.run(machine.ownerAnswered(.owner(logind), busOpen: true, now: t0))
            case .announcement:
                _ = machine.announcementReceived(.prepareForSleep(true), from: logind, isBroadcast: true)
            case .logindLeft: _ = machine.ownerChanged(to: nil)
            case .logindAppeared: _ = machine.run(machine.ownerChanged(to: ":1.7"))
            case .sleepInhibitorGranted:
                _ = machine.inhibitorAnswered(.sleep, .granted(descriptor: 9), busOpen: true, now: t0)
            case .timerFired: _ = machine.timerFired()
            case .reconnectFailed: _ = machine.reconnectFailed()
            }
        }
    }

    /// Where each event leads from each state: the state's name afterwards, or nil for a precondition failure (an
    /// event the client cannot send in that state).
    static let outcomes: [Reached: [Stimulus: String?]] = {
        // What every state does alike: a second connect is a programming error; close always ends idle.
        func row(_ specific: [Stimulus: String?], otherwise: String? = nil) -> [Stimulus: String?] {
            var row: [Stimulus: String?] = [.connect: nil, .close: "idle", .sleepInhibitorGranted: nil]
            for stimulus in Stimulus.allCases where row[stimulus] == nil && specific[stimulus] == nil {
                row[stimulus] = .some(otherwise)
            }
            return row.merging(specific) { $1 }
        }
        let signals: [Stimulus] = [.subscriptionAccepted, .ownerNamed, .announcement, .logindLeft, .logindAppeared]
        func crashes(_ stimuli: [Stimulus]) -> [Stimulus: String?] {
            Dictionary(uniqueKeysWithValues: stimuli.map { ($0, String?.none) })
        }
        return [
            .idle: row(
                crashes(signals + [.reconnectFailed]).merging([.connect: "connecting"]) { $1 },
                otherwise: "idle"
            ),
            .connecting: row(
                crashes([.timerFired, .reconnectFailed]).merging([
                    .connectionClosed: "lost (refused)", .subscriptionAccepted: "up", .ownerNamed: "up",
                ]) { $1 },
                otherwise: "connecting"
            ),
            .up: row(
                crashes([.timerFired, .reconnectFailed]).merging([.connectionClosed: "lost (reconnecting)"]) { $1 },
                otherwise: "up"
            ),
            .upRecovering: row(
                crashes([.timerFired, .reconnectFailed]).merging([.connectionClosed: "lost (reconnecting)"]) { $1 },
                otherwise: "up"
            ),
            .lostReconnecting: row(
                crashes([.reconnectFailed]).merging([.timerFired: "connecting"]) { $1 },
                otherwise: "lost (reconnecting)"
            ),
            .reconnecting: row(
                crashes([.timerFired]).merging([
                    .connectionClosed: "lost (reconnecting)", .subscriptionAccepted: "up", .ownerNamed: "up",
                    .reconnectFailed: "waiting to reconnect",
                ]) { $1 },
                otherwise: "connecting"
            ),
            .waitingToReconnect: row(
                crashes(signals + [.reconnectFailed]).merging([.timerFired: "connecting"]) { $1 },
                otherwise: "waiting to reconnect"
            ),
            .lostRefused: row(
                crashes([.reconnectFailed]).merging([
                    .timerFired: "refused", .sleepInhibitorGranted: "lost (refused)",
                ]) { $1 },
                otherwise: "lost (refused)"
            ),
            .refused: row(crashes(signals + [.timerFired, .reconnectFailed]), otherwise: "refused"),
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

    @Test func everyStateOfTheTableIsReachedAsNamed() {
        let names: [Reached: String] = [
            .idle: "idle", .connecting: "connecting", .up: "up", .upRecovering: "up",
            .lostReconnecting: "lost (reconnecting)", .reconnecting: "connecting",
            .waitingToReconnect: "waiting to reconnect", .lostRefused: "lost (refused)", .refused: "refused",
        ]
        for state in Reached.allCases {
            #expect("\(state.machine)" == names[state], "\(state)")
        }
        #expect(Reached.upRecovering.machine.isRecovering && Reached.reconnecting.machine.isRecovering)
        #expect(Self.allowed.count + Self.refused.count == Reached.allCases.count * Stimulus.allCases.count)
    }

    @Test(arguments: allowed)
    func anEventAllowedInAStateLeadsWhereTheTableSays(_ test: Case) {
        var machine = test.state.machine
        test.event.apply(to: &machine)
        #expect("\(machine)" == Self.outcomes[test.state]![test.event]!)
    }

    @Test(arguments: refused)
    func anEventTheClientCannotSendInAStateStopsTheProcessNamingIt(_ test: Case) async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) { [test] in
            var machine = test.state.machine
            test.event.apply(to: &machine)
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("\(test.state.machine)"), "\(message)")
    }
}
