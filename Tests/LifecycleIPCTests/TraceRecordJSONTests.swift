//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecyclePrimitives
import Testing

@Suite struct TraceRecordJSONTests {
    @Test func aRecordRoundTripsThroughAControlReply() {
        let record = TraceRecord(
            sequence: 12,
            event: "draw",
            target: "root.view",
            state: "active",
            cause: "api",
            detail: "nil"
        )
        #expect(record.json["seq"] == .int(12))
        #expect(record.json["detail"] == .string("nil"))
        #expect(TraceRecord(json: record.json) == record)
        var withoutDetail = record
        withoutDetail.detail = nil
        #expect(withoutDetail.json["detail"] == nil)
        #expect(TraceRecord(json: withoutDetail.json) == withoutDetail)
    }

    @Test func aScenesRecordCarriesItsSceneAndOneOutsideEveryScenesHasNone() {
        let record = TraceRecord(
            sequence: 40, event: "applicationDidBecomeActive", target: "scene:client-7/root", state: "active",
            cause: "control", scene: "client-7"
        )
        #expect(record.json["scene"] == .string("client-7"))
        #expect(TraceRecord(json: record.json) == record)
        #expect(TraceRecord(sequence: 1, event: "draw", target: "root.view", state: "active", cause: "api").json["scene"] == nil)
    }

    @Test func aReplyWithoutASequenceEventOrTargetIsNoRecord() {
        let complete = TraceRecord(sequence: 1, event: "draw", target: "root.view", state: "active", cause: "api").json
        for field in ["seq", "event", "target"] {
            var partial = complete
            partial[field] = nil
            #expect(TraceRecord(json: partial) == nil, "a reply without \(field) made a record")
        }
    }
}
