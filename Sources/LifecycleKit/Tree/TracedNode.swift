//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// What a node of the tree (a controller or a view) keeps for the trace: its path, built once per position, and whether
/// its `init` waits to be recorded.
///
/// A value the node holds inline: no allocation of its own, and its fields sit where the node declares it (a
/// controller declares it first, on the cache line an event's fan-out reads). The node's ``TracedNode/detachedEvents``
/// are not part of it: an append to them may call out (to grow the array), and one access that may call out makes the
/// compiler check every access to the property it is part of at run time, the path cache's too, which a traced
/// event reads.
struct NodeTraceState {
    /// The path last computed (kept after the node leaves the tree, so its last events name where it was).
    var lastKnownPath: String?
    /// Whether ``lastKnownPath`` is the path now. Only while the path it was built from is current too, so a move
    /// clears the flag of the nodes below that have it and stops at the first that has not: every path is built once
    /// per position, and a trace event reads it in constant time.
    var pathIsCurrent = false
    /// The node's `init` happened before it joined an application: recorded first when it joins. A flag, not an entry
    /// of the detached events, so a tree built apart costs no buffer per node.
    var initIsPending = false
}

/// An event of a node that happened before the node joined an application's tree.
typealias DetachedEvent = (event: String, detail: String?)

/// A node of the tree, a controller or a view: the trace's bookkeeping both kinds share (the path cache, the events
/// of a node not in an application's tree yet, joining one), written once.
///
/// Only ``ViewController`` and ``View`` conform; calls from either are to their own type, so nothing here is
/// dispatched dynamically (the module is optimized whole: each is specialized for both).
@MainActor
protocol TracedNode: AnyObject {
    /// The application whose tree this node joined; kept after it leaves, so its last events still reach that
    /// application's trace.
    var application: Application? { get set }
    /// The node's path cache.
    var traceState: NodeTraceState { get set }
    /// Events that happened before the node joined an application's tree, in order (kept apart from ``traceState``:
    /// see ``NodeTraceState``).
    var detachedEvents: [DetachedEvent] { get set }
    /// What the trace records this node's callbacks on: the node itself, its path read only when the event is logged
    /// or observed.
    var callbackTarget: TraceTarget { get }
    /// This node moved: its path, and those of the nodes below it that have one, are built again when next read
    /// (``clearPathIsCurrent()``, then the same for each node below).
    func invalidatePath()
}

extension TracedNode {
    /// The path last computed (kept after the node leaves the tree, so its last events name where it was). Setting it
    /// (naming a node by where it is going, or where it was) renames what hangs below it too.
    var lastKnownPath: String? {
        get { traceState.lastKnownPath }
        set {
            traceState.lastKnownPath = newValue
            invalidatePath()
        }
    }

    /// Whether ``lastKnownPath`` is the path now (``NodeTraceState/pathIsCurrent``).
    var pathIsCurrent: Bool { traceState.pathIsCurrent }

    /// The node's path: the one kept while it is current, else the one `build` makes from the node's parent (with
    /// whether that parent's path is current), kept for the next read.
    @inline(__always)
    func cachedPath(_ build: () -> (path: String, isCurrent: Bool)) -> String {
        if traceState.pathIsCurrent, let path = traceState.lastKnownPath { return path }
        TreeWork.count(1)
        let (computed, current) = build()
        lastKnownPath = computed
        traceState.pathIsCurrent = current
        return computed
    }

    /// The first step of ``invalidatePath()``: clears this node's flag; false when it was clear already, so the nodes
    /// below need no visit.
    @inline(__always)
    func clearPathIsCurrent() -> Bool {
        guard traceState.pathIsCurrent else { return false }
        TreeWork.count(1)
        traceState.pathIsCurrent = false
        return true
    }

    /// Records a callback of this node in its application's trace, or keeps it until the node joins one.
    func trace(_ event: String, detail: String? = nil) {
        if let application {
            application.traceEvent(event, target: self.callbackTarget, detail: detail)
        } else {
            detachedEvents.append((event, detail))
        }
    }

    /// Makes this node belong to `application` and records the events it had before, in the order they happened;
    /// false when it belonged to it already (and so does everything below it). The caller then adopts the nodes
    /// below.
    func join(_ application: Application) -> Bool {
        TreeWork.count(1)
        guard self.application !== application else { return false }
        self.application = application
        if traceState.initIsPending {
            traceState.initIsPending = false
            application.traceEvent(TraceEventName.initialize, target: self.callbackTarget, detail: nil)
        }
        if !detachedEvents.isEmpty {
            let events = detachedEvents
            detachedEvents = []
            for (event, detail) in events { application.traceEvent(event, target: self.callbackTarget, detail: detail) }
        }
        return true
    }
}
