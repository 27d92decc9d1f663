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
@MainActor
final class FanOut {
    /// The tree's controllers in pre-order, as of the last event, while the tree has not changed since.
    @exclusivity(unchecked) private var cache: [ViewController]?
    /// The root the cache was taken under.
    @exclusivity(unchecked) private var cachedRoot: ObjectIdentifier?

    /// The tree changed: the next event takes the list again.
    func invalidate() {
        cache = nil
    }

    /// Calls `callback` on every controller under `root`, tracing each call as `event` first.
    // Inlined into each event's caller, so the callback's body is inlined into the loop (not a closure call per
    // controller).
    @inline(__always)
    func deliver(
        _ event: String,
        under root: ViewController?,
        reversed: Bool,
        application: Application,
        _ callback: (ViewController) -> Void
    ) {
        let list: [ViewController]
        if let cache, cachedRoot == root.map(ObjectIdentifier.init) {
            list = cache
        } else {
            var built: [ViewController] = []
            root?.appendPreOrder(to: &built)
            cache = built
            cachedRoot = root.map(ObjectIdentifier.init)
            list = built
        }
        let trace = application.trace
        let observed = trace.isObserved(delegateEvent: false)
        // Taken once per event, not read (and retained) again per controller: a monitor set or removed by a callback
        // takes effect from the next event.
        let monitor = trace.monitor
        if reversed {
            for controller in list.reversed() {
                if observed { application.traceEvent(event, target: controller.callbackTarget, detail: nil) } else {
                    trace.skipUnobservedEvent(event, controller: controller, monitor: monitor)
                }
                callback(controller)
            }
        } else {
            for controller in list {
                if observed { application.traceEvent(event, target: controller.callbackTarget, detail: nil) } else {
                    trace.skipUnobservedEvent(event, controller: controller, monitor: monitor)
                }
                callback(controller)
            }
        }
    }
}
