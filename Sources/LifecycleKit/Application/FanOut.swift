//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Delivers one application event to every controller of the tree (the lifecycle's §2): the controllers reachable
/// from the window's root, taken when the event starts, in pre-order (entering events) or its reverse (leaving
/// events).
///
/// This is the hot path of every transition. The list is kept from one event to the next until the tree changes
/// (any change of children, presentations or the window's root drops it at once, so a controller that leaves the
/// tree is released on time), so an event over an unchanged tree walks nothing; whether the trace is observed is
/// decided once per event, so an unobserved event costs a counter per controller.
///
/// The list is kept in reverse pre-order: when it is the last to hold controllers that left the tree during an event
/// (or since), letting go of it (front to back) releases children before their parents let go, so each released
/// controller's deinit releases its children in the order added, as §3 says.
@MainActor
final class FanOut {
    /// The tree's controllers in reverse pre-order, as of the last event, while the tree has not changed since.
    private var cache: [ViewController]?
    /// The root the cache was taken under.
    private var cachedRoot: ObjectIdentifier?

    /// The tree changed: the next event takes the list again.
    func invalidate() {
        // Let go of the list only once the write is over: it may hold the last references to controllers that left
        // the tree (termination's teardown releases the whole tree so), and their deinits may change the tree again.
        let dropped = cache
        cache = nil
        withExtendedLifetime(dropped) {}
    }

    /// The controllers under `root`, in reverse pre-order, as the next event reaches them: taken when the event starts
    /// (before the delegate's callback of an entering event), so a controller a callback adds gets the next event.
    @inline(__always)
    func controllers(under root: ViewController?) -> [ViewController] {
        if let cache, cachedRoot == root.map(ObjectIdentifier.init) { return cache }
        var built: [ViewController] = []
        root?.appendPreOrder(to: &built)
        built.reverse()
        cache = built
        cachedRoot = root.map(ObjectIdentifier.init)
        return built
    }

    /// Calls `callback` on every controller of `list` (``controllers(under:)``), tracing each call as `event` first.
    // Inlined into each event's caller, so the callback's body is inlined into the loop (not a closure call per
    // controller).
    @inline(__always)
    func deliver(
        _ event: String,
        to list: [ViewController],
        reversed: Bool,
        application: Application,
        _ callback: (ViewController) -> Void
    ) {
        let trace = application.trace
        let observed = trace.isObserved(delegateEvent: false)
        // Taken once per event, not read (and retained) again per controller: a monitor set or removed by a callback
        // takes effect from the next event.
        let monitor = trace.monitor
        // The list is in reverse pre-order: a leaving event walks it as it is, an entering one from the back.
        if reversed {
            for controller in list {
                if observed { application.traceEvent(event, target: controller.callbackTarget, detail: nil) } else {
                    trace.skipUnobservedEvent(event, controller: controller, monitor: monitor)
                }
                callback(controller)
            }
        } else {
            for controller in list.reversed() {
                if observed { application.traceEvent(event, target: controller.callbackTarget, detail: nil) } else {
                    trace.skipUnobservedEvent(event, controller: controller, monitor: monitor)
                }
                callback(controller)
            }
        }
    }
}
