//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// One trace event as text: the fields of the journal's `LIFECYCLE_*` entries, from log metadata (the daemon's own
/// records) or from a control reply (`lifecyclectl`).
public struct TraceRecord: Hashable, Sendable {
    /// `LIFECYCLE_SEQ`.
    public var sequence: Int
    /// `LIFECYCLE_EVENT`: the callback, such as `applicationDidEnterBackground`.
    public var event: String
    /// `LIFECYCLE_TARGET`: `delegate`, or a path such as `root/modes/serving`.
    public var target: String
    /// `LIFECYCLE_STATE`.
    public var state: String
    /// `LIFECYCLE_CAUSE`.
    public var cause: String
    /// `LIFECYCLE_DETAIL`, when the callback's argument matters.
    public var detail: String?
    /// `LIFECYCLE_SCENE`: the persistent identifier of the scene the event belongs to, when it belongs to one.
    public var scene: String?

    /// A record of these fields.
    public init(
        sequence: Int,
        event: String,
        target: String,
        state: String,
        cause: String,
        detail: String? = nil,
        scene: String? = nil
    ) {
        self.sequence = sequence
        self.event = event
        self.target = target
        self.state = state
        self.cause = cause
        self.detail = detail
        self.scene = scene
    }
}
