//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HelloSessions
import Testing

/// The resumption protocol as a value: sequence numbers, the unacknowledged window, resumes.
@Suite("Sessions: a session's stream")
struct SessionStreamStateMachineTests {
    private func record() -> SessionRecord {
        SessionRecord(id: "a", secretHash: "", everyMilliseconds: 100, now: 0)
    }

    private func produce(_ stream: inout SessionStreamMachine) -> SessionStreamMachine.ProduceAction {
        stream.produce { "m\($0)" }
    }

    @Test func aPushedConnectionIsSentEachMessageWithTheNextSequenceNumber() {
        var stream = SessionStreamMachine(record: record())
        stream.attachFirst()
        #expect(stream.push().isEmpty)
        #expect(produce(&stream) == .send(PendingMessage(seq: 1, text: "m1")))
        #expect(produce(&stream) == .send(PendingMessage(seq: 2, text: "m2")))
        #expect(stream.pending.map(\.seq) == [1, 2])
    }

    @Test func anAcknowledgementReleasesEverythingUpToItAndARepeatChangesNothing() {
        var stream = SessionStreamMachine(record: record())
        stream.attachFirst()
        _ = stream.push()
        for _ in 1...5 { _ = produce(&stream) }
        #expect(stream.acknowledge(3) == .released(3))
        #expect(stream.pending.map(\.seq) == [4, 5])
        #expect(stream.acknowledge(2) == .none)
        #expect(stream.acknowledge(3) == .none)
    }

    @Test func acknowledgingAMessageNeverSentIsAViolation() {
        var stream = SessionStreamMachine(record: record())
        stream.attachFirst()
        _ = stream.push()
        _ = produce(&stream)
        #expect(stream.acknowledge(2) == .violation)
    }

    @Test func aHeldConnectionKeepsMessagesAndGetsThemOnceWhenPushedAgain() {
        var stream = SessionStreamMachine(record: record())
        stream.attachFirst()
        _ = stream.push()
        _ = produce(&stream)
        stream.hold()
        #expect(!stream.mayProduce)
        #expect(produce(&stream) == .keep)
        #expect(stream.push().map(\.seq) == [2])
        #expect(stream.push().isEmpty)
    }

    @Test func aResumeGetsTheMessagesAfterTheClientsPositionOnceEach() {
        var stream = SessionStreamMachine(record: record())
        stream.attachFirst()
        _ = stream.push()
        for _ in 1...6 { _ = produce(&stream) }
        #expect(stream.acknowledge(2) == .released(2))
        stream.detach()
        // A new process: the record the store kept.
        var resumed = SessionStreamMachine(record: stream.record(from: record()))
        #expect(resumed.resume(last: 4) == .resumed)
        #expect(resumed.push().map(\.seq) == [5, 6])
        #expect(resumed.acknowledged == 4)
        #expect(produce(&resumed) == .send(PendingMessage(seq: 7, text: "m7")))
    }

    @Test func aClientAheadOfTheCheckpointMovesTheStreamOnWithoutARepeat() {
        var stream = SessionStreamMachine(record: record())
        stream.attachFirst()
        _ = stream.push()
        for _ in 1...3 { _ = produce(&stream) }
        let checkpoint = stream.record(from: record())
        // The process went on to 9, then was killed; the client received up to 9.
        var resumed = SessionStreamMachine(record: checkpoint)
        #expect(resumed.resume(last: 9) == .resumed)
        #expect(resumed.push().isEmpty)
        #expect(produce(&resumed) == .send(PendingMessage(seq: 10, text: "m10")))
    }

    @Test func aClientBehindWhatItAcknowledgedHasLostItsPosition() {
        var stream = SessionStreamMachine(record: record())
        stream.attachFirst()
        _ = stream.push()
        for _ in 1...3 { _ = produce(&stream) }
        _ = stream.acknowledge(3)
        stream.detach()
        #expect(stream.resume(last: 1) == .positionLost)
    }

    @Test func aClientThatNeverAcknowledgesHoldsTheWindowAndNoMore() {
        var stream = SessionStreamMachine(
            record: record(),
            limits: .init(unacknowledged: 4, unacknowledgedBytes: 1 << 20)
        )
        stream.attachFirst()
        _ = stream.push()
        var produced = 0
        while stream.mayProduce {
            _ = produce(&stream)
            produced += 1
        }
        #expect(produced == 4)
        #expect(stream.windowIsFull)
        _ = stream.acknowledge(1)
        #expect(stream.mayProduce)
    }

    @Test func theByteBoundClosesTheWindowBeforeTheCountDoes() {
        var stream = SessionStreamMachine(record: record(), limits: .init(unacknowledged: 100, unacknowledgedBytes: 10))
        stream.attachFirst()
        _ = stream.push()
        var produced = 0
        while stream.mayProduce {
            _ = stream.produce { _ in "12345" }
            produced += 1
        }
        #expect(produced == 2)
    }
}
