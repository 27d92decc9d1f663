//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecyclePrimitives

// A trace event as the control socket's replies carry it (docs/control.md, `Event`).
extension TraceRecord {
    /// The record in a control reply (`{"seq": 1, "event": ..., "target": ..., "state": ..., "cause": ...}`, with
    /// `detail` and `scene` when they are set).
    public init?(json: JSONObject) {
        guard let sequence = json["seq"]?.integerValue, let event = json["event"]?.stringValue,
            let target = json["target"]?.stringValue
        else { return nil }
        self.init(
            sequence: Int(sequence),
            event: event,
            target: target,
            state: json["state"]?.stringValue ?? "",
            cause: json["cause"]?.stringValue ?? "",
            detail: json["detail"]?.stringValue,
            scene: json["scene"]?.stringValue
        )
    }

    /// The record as a control reply carries it.
    public var json: JSONObject {
        var object: JSONObject = [
            "seq": .int(sequence), "event": .string(event), "target": .string(target), "state": .string(state),
            "cause": .string(cause),
        ]
        if let detail { object["detail"] = .string(detail) }
        if let scene { object["scene"] = .string(scene) }
        return object
    }
}
