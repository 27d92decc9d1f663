/// Delivers one application event to every controller of the tree (the lifecycle's §2): the controllers reachable
/// from the window's root, taken when the event starts, in pre-order (entering events) or its reverse (leaving
/// events).
///
/// This is the hot path of every transition: the list reuses one buffer (no allocation per event once it has
/// grown), and whether the trace is observed is decided once per event, so an unobserved event costs a counter
/// per controller.
@MainActor
final class FanOut {
    /// The controller list of the event being delivered; kept between events for its capacity only.
    private var buffer: [ViewController] = []

    /// Calls `callback` on every controller under `root`, tracing each call as `event` first.
    func deliver(
        _ event: String,
        under root: ViewController?,
        reversed: Bool,
        application: Application,
        _ callback: (ViewController) -> Void
    ) {
        var list: [ViewController] = []
        swap(&list, &buffer)
        defer {
            // Let go of the controllers (a released one must deinit on time) but keep the capacity.
            list.removeAll(keepingCapacity: true)
            swap(&list, &buffer)
        }
        root?.appendPreOrder(to: &list)
        let trace = application.trace
        let observed = trace.isObserved(delegateEvent: false)
        if reversed {
            for controller in list.reversed() {
                if observed { application.traceEvent(event, target: controller.path, detail: nil) } else {
                    trace.skipUnobservedEvent(event, target: controller.path)
                }
                callback(controller)
            }
        } else {
            for controller in list {
                if observed { application.traceEvent(event, target: controller.path, detail: nil) } else {
                    trace.skipUnobservedEvent(event, target: controller.path)
                }
                callback(controller)
            }
        }
    }
}
