/// A node that a controller owns: a live resource while it is in the window (LIFECYCLE.md §4).
///
/// Resources start in ``didMoveToWindow()`` when ``window`` is non-nil and stop when it becomes nil. Override the
/// callbacks; you need not call `super`, the framework traces each call itself.
@MainActor
open class View {
    /// The name of this view in trace paths, unique among its siblings by convention.
    public var name: String
    /// The view this one is a subview of.
    ///
    /// Back-references in the tree are `unowned`, not `weak`: a weakly referenced object gets a side table, which
    /// makes every retain and release of it take the slow path (measured: two thirds of an event's fan-out). The
    /// tree clears each back-reference before its target goes (a view's deinit detaches its subviews first).
    public private(set) unowned var superview: View?
    /// The subviews, back to front, in the order added.
    public private(set) var subviews: [View] = []
    /// The window this view is in, or nil while it is not in the window.
    public private(set) weak var window: Window?
    /// The controller whose root view this is.
    public internal(set) unowned var viewController: ViewController?
    /// The application whose tree this view joined; kept after it leaves, so its last events still reach that
    /// application's trace.
    public private(set) weak var application: Application?
    /// Events that happened before the view joined an application's tree.
    private var detachedEvents: [(event: String, detail: String?)] = []

    /// The view's frame. A change marks the view for layout; a change of size marks its superview too (its
    /// subviews' arrangement may depend on it).
    public var frame: Rect {
        didSet {
            guard frame != oldValue else { return }
            setNeedsLayout()
            if frame.width != oldValue.width || frame.height != oldValue.height { superview?.setNeedsLayout() }
        }
    }

    /// This view's part of the application's status, as its last ``draw(in:)`` wrote it.
    public private(set) var statusText = ""

    // Layout and display bookkeeping: a view is marked, and its ancestors know a descendant is marked, so a pass
    // walks only the dirty paths.
    var needsLayout = true
    var descendantNeedsLayout = false
    var needsDisplay = true
    var descendantNeedsDisplay = false

    /// Creates a view; its name defaults to its type's, `ProgressView` → `progressView`.
    public init(name: String? = nil, frame: Rect = .zero) {
        self.name = name ?? String.defaultNodeName(for: Self.self, strippingSuffixes: [], fallback: "view")
        self.frame = frame
    }

    isolated deinit {
        trace("deinit")
        // A released view lets go of its subviews one at a time, each told it has no superview before it goes.
        let ownPath = lastKnownPath ?? name
        // Clear every back-reference first: this view is being deinitialized and must not be reached through them.
        for subview in subviews { subview.superview = nil }
        while !subviews.isEmpty {
            let subview = subviews.removeFirst()
            subview.lastKnownPath = ownPath + "/" + subview.name
            subview.notifyWillMove(toSuperview: nil)
            subview.notifyDidMoveToSuperview()
        }
    }

    // MARK: Callbacks to override

    /// Called before the view gets a new superview (nil: it is being removed).
    open func willMove(toSuperview newSuperview: View?) {}
    /// Called after the view got a new superview (or lost it).
    open func didMoveToSuperview() {}
    /// Called before the view enters (non-nil) or leaves (nil) the window.
    open func willMove(toWindow newWindow: Window?) {}
    /// Called after the view entered or left the window: start or stop the resource here.
    open func didMoveToWindow() {}
    /// Called after a subview was added.
    open func didAddSubview(_ subview: View) {}
    /// Called before a subview is removed.
    open func willRemoveSubview(_ subview: View) {}
    /// Lays out the subviews; runs once per layout pass for a marked view.
    open func layoutSubviews() {}
    /// Writes this view's part of the application's status; runs once per display pass for a marked view.
    open func draw(in context: inout StatusContext) {}

    // MARK: Hierarchy

    /// Adds a view on top of the subviews, first removing it from its current superview.
    public func addSubview(_ view: View) {
        insertSubview(view, at: subviews.count)
    }

    /// Inserts a view at an index of the subviews, first removing it from its current superview.
    public func insertSubview(_ view: View, at index: Int) {
        precondition(view !== self, "a view cannot be its own subview")
        precondition(!isDescendant(of: view), "adding \(view.name) under \(name) would make a cycle")
        if view.superview === self {
            // Reordering among siblings moves nothing in or out of the window.
            let current = subviews.firstIndex { $0 === view }!
            subviews.remove(at: current)
            subviews.insert(view, at: min(index, subviews.count))
            setNeedsLayout()
            return
        }
        if view.superview != nil { view.removeFromSuperview() }
        if let application {
            // A detached view is named by where it is going, so its whole arrival reads under one path (built only
            // when somebody reads the trace).
            if view.viewController == nil, application.trace.isObserved(delegateEvent: false) {
                view.lastKnownPath = path + "/" + view.name
            }
            view.adopt(application)
        }
        let newWindow = window
        let movesWindow = newWindow != nil && view.window !== newWindow
        var controllers = movesWindow ? view.controllersInSubtree() : (preOrder: [], postOrder: [])
        if movesWindow { controllers = Self.beginAppearing(view, controllers) }
        if movesWindow { view.notifyWillMoveSubtree(toWindow: newWindow) }
        view.notifyWillMove(toSuperview: self)
        subviews.insert(view, at: min(max(index, 0), subviews.count))
        view.superview = self
        if movesWindow { view.setWindowInSubtree(newWindow) }
        if movesWindow { view.notifyDidMoveSubtreeToWindow() }
        view.notifyDidMoveToSuperview()
        notifyDidAddSubview(view)
        // The new subtree keeps its own marks (a fresh subtree is fully marked); this view lays its children out anew.
        setNeedsLayout()
        view.propagateDirtyMarksUp()
        if movesWindow { newWindow?.application?.scheduleAppearanceCompletion(for: controllers.postOrder, appearing: true) }
    }

    /// Removes the view from its superview; if it was in the window, it and its subtree leave it.
    public func removeFromSuperview() {
        guard let superview else { return }
        let oldWindow = window
        let leavesWindow = oldWindow != nil
        let controllers = leavesWindow ? controllersInSubtree() : (preOrder: [], postOrder: [])
        if leavesWindow { Self.beginAppearance(of: controllers.preOrder, appearing: false) }
        superview.notifyWillRemoveSubview(self)
        notifyWillMove(toSuperview: nil)
        if leavesWindow { notifyWillMoveSubtree(toWindow: nil) }
        superview.subviews.removeAll { $0 === self }
        self.superview = nil
        if leavesWindow { setWindowInSubtree(nil) }
        if leavesWindow { notifyDidMoveSubtreeToWindow() }
        notifyDidMoveToSuperview()
        superview.setNeedsLayout()
        if leavesWindow {
            oldWindow?.application?.scheduleAppearanceCompletion(for: controllers.postOrder, appearing: false)
        }
    }

    /// Whether this view is `view` or lies below it.
    public func isDescendant(of view: View) -> Bool {
        var node: View? = self
        while let current = node {
            if current === view { return true }
            node = current.superview
        }
        return false
    }

    // MARK: Layout and display

    /// Marks the view for layout; one pass runs at the end of the current main-loop turn, however many marks.
    public func setNeedsLayout() {
        needsLayout = true
        superview?.markDescendantNeedsLayout()
        window?.application?.setNeedsTurnEnd()
    }

    /// Lays out this view's subtree now if anything in it is marked; does nothing if it is clean.
    public func layoutIfNeeded() {
        guard needsLayout || descendantNeedsLayout else { return }
        layoutPass()
    }

    /// Marks the view for display; one display pass runs at the end of the turn, after layout.
    public func setNeedsDisplay() {
        needsDisplay = true
        superview?.markDescendantNeedsDisplay()
        window?.application?.setNeedsTurnEnd()
    }

    private func markDescendantNeedsLayout() {
        var node: View? = self
        while let current = node, !current.descendantNeedsLayout {
            current.descendantNeedsLayout = true
            node = current.superview
        }
    }

    private func markDescendantNeedsDisplay() {
        var node: View? = self
        while let current = node, !current.descendantNeedsDisplay {
            current.descendantNeedsDisplay = true
            node = current.superview
        }
    }

    private func propagateDirtyMarksUp() {
        if needsLayout || descendantNeedsLayout { superview?.markDescendantNeedsLayout() }
        if needsDisplay || descendantNeedsDisplay { superview?.markDescendantNeedsDisplay() }
        if let window, needsLayout || descendantNeedsLayout || needsDisplay || descendantNeedsDisplay {
            window.application?.setNeedsTurnEnd()
        }
    }

    /// Runs the layout pass over this subtree, top-down: a controller's root view is wrapped in
    /// `viewWillLayoutSubviews` / `viewDidLayoutSubviews`, and subviews follow their parent.
    func layoutPass() {
        if needsLayout {
            needsLayout = false
            if let viewController {
                viewController.notifyWillLayoutSubviews()
                notifyLayoutSubviews()
                viewController.notifyDidLayoutSubviews()
            } else {
                notifyLayoutSubviews()
            }
        }
        guard descendantNeedsLayout else { return }
        descendantNeedsLayout = false
        for subview in subviews where subview.needsLayout || subview.descendantNeedsLayout {
            subview.layoutPass()
        }
    }

    /// Whether this view or anything below it waits for a layout pass.
    var isLayoutDirty: Bool { needsLayout || descendantNeedsLayout }
    /// Whether this view or anything below it waits for a display pass.
    var isDisplayDirty: Bool { needsDisplay || descendantNeedsDisplay }

    /// Runs the display pass over this subtree, parent before child; returns whether any text changed.
    @discardableResult
    func displayPass() -> Bool {
        var changed = false
        if needsDisplay {
            needsDisplay = false
            trace("draw")
            var context = StatusContext()
            draw(in: &context)
            if context.text != statusText {
                statusText = context.text
                changed = true
            }
        }
        guard descendantNeedsDisplay else { return changed }
        descendantNeedsDisplay = false
        for subview in subviews where subview.needsDisplay || subview.descendantNeedsDisplay {
            if subview.displayPass() { changed = true }
        }
        return changed
    }

    /// Appends the status text of this subtree, pre-order, to `parts`.
    func collectStatus(into parts: inout [String]) {
        if !statusText.isEmpty { parts.append(statusText) }
        for subview in subviews { subview.collectStatus(into: &parts) }
    }

    // MARK: Window moves

    /// The controllers whose root views lie in this subtree, in pre-order (for will-callbacks: parent first) and
    /// post-order (for did-callbacks: children first).
    func controllersInSubtree() -> (preOrder: [ViewController], postOrder: [ViewController]) {
        var pre: [ViewController] = []
        var post: [ViewController] = []
        func visit(_ view: View) {
            if let controller = view.viewController { pre.append(controller) }
            for subview in view.subviews { visit(subview) }
            if let controller = view.viewController { post.append(controller) }
        }
        visit(self)
        return (pre, post)
    }

    /// Starts the appearance of the controllers in a subtree that is about to enter the window, pre-order, and
    /// returns the controllers to complete: children embedded by a will-callback (a parent's `viewWillAppear` that
    /// adds a child) appear too, inside their parent's bracket.
    static func beginAppearing(
        _ subtree: View,
        _ controllers: (preOrder: [ViewController], postOrder: [ViewController])
    ) -> (preOrder: [ViewController], postOrder: [ViewController]) {
        beginAppearance(of: controllers.preOrder, appearing: true)
        var current = controllers
        // Bounded: each round only adds controllers that a will-callback embedded.
        for _ in 0..<8 {
            let now = subtree.controllersInSubtree()
            let late = now.preOrder.filter { candidate in !current.preOrder.contains { $0 === candidate } }
            if late.isEmpty { return now }
            beginAppearance(of: late, appearing: true)
            current = now
        }
        return subtree.controllersInSubtree()
    }

    /// Starts the appearance transition of controllers whose root views enter or leave the window (pre-order).
    static func beginAppearance(of controllers: [ViewController], appearing: Bool) {
        for controller in controllers {
            controller.beginAppearanceTransition(appearing)
        }
    }

    /// Moves a detached subtree (a window's content view) into or out of the window.
    func moveTopLevel(toWindow newWindow: Window?) {
        guard window !== newWindow else { return }
        let application = (newWindow ?? window)?.application
        var controllers = controllersInSubtree()
        if let newWindow {
            controllers = Self.beginAppearing(self, controllers)
            if !newWindow.visibleLayers.contains(where: { $0.controller.viewIfLoaded === self }) {
                // A will-callback covered this layer (a full-screen presentation from `viewWillAppear`): it does
                // not enter the window after all; what began to appear disappears again.
                Self.beginAppearance(of: controllers.preOrder, appearing: false)
                newWindow.application?.scheduleAppearanceCompletion(for: controllers.postOrder, appearing: false)
                return
            }
        } else {
            Self.beginAppearance(of: controllers.preOrder, appearing: false)
        }
        notifyWillMoveSubtree(toWindow: newWindow)
        setWindowInSubtree(newWindow)
        notifyDidMoveSubtreeToWindow()
        propagateDirtyMarksUp()
        application?.scheduleAppearanceCompletion(for: controllers.postOrder, appearing: newWindow != nil)
    }

    private func notifyWillMoveSubtree(toWindow newWindow: Window?) {
        trace("willMove(toWindow:)", detail: newWindow == nil ? "nil" : "window")
        willMove(toWindow: newWindow)
        for subview in subviews { subview.notifyWillMoveSubtree(toWindow: newWindow) }
    }

    private func setWindowInSubtree(_ newWindow: Window?) {
        window = newWindow
        for subview in subviews { subview.setWindowInSubtree(newWindow) }
    }

    private func notifyDidMoveSubtreeToWindow() {
        trace("didMoveToWindow", detail: window == nil ? "nil" : "window")
        didMoveToWindow()
        for subview in subviews { subview.notifyDidMoveSubtreeToWindow() }
    }

    // MARK: Tracing

    /// The path of this view in the trace: `<controller path>.view` for a root view, then `/name` per level.
    ///
    /// A detached view (removed, or being released with its superview) keeps the path it last had, so teardown
    /// events name where the view was.
    public var path: String {
        let computed: String
        if let viewController {
            computed = viewController.path + ".view"
        } else if let superview {
            computed = superview.path + "/" + name
        } else {
            return lastKnownPath ?? name
        }
        lastKnownPath = computed
        return computed
    }

    var lastKnownPath: String?

    func trace(_ event: String, detail: String? = nil) {
        if let application {
            application.traceEvent(event, target: self.path, detail: detail)
        } else {
            detachedEvents.append((event, detail))
        }
    }

    /// Makes this view and its subtree belong to `application`, recording the events each had before, pre-order.
    func adopt(_ application: Application) {
        guard self.application !== application else { return }
        self.application = application
        if !detachedEvents.isEmpty {
            let events = detachedEvents
            detachedEvents = []
            for (event, detail) in events { application.traceEvent(event, target: self.path, detail: detail) }
        }
        for subview in subviews { subview.adopt(application) }
    }

    private func notifyWillMove(toSuperview newSuperview: View?) {
        trace("willMove(toSuperview:)", detail: newSuperview.map { $0.path } ?? "nil")
        willMove(toSuperview: newSuperview)
    }

    private func notifyDidMoveToSuperview() {
        trace("didMoveToSuperview", detail: superview == nil ? "nil" : nil)
        didMoveToSuperview()
    }

    private func notifyDidAddSubview(_ subview: View) {
        trace("didAddSubview(_:)", detail: subview.name)
        didAddSubview(subview)
    }

    private func notifyWillRemoveSubview(_ subview: View) {
        trace("willRemoveSubview(_:)", detail: subview.name)
        willRemoveSubview(subview)
    }

    private func notifyLayoutSubviews() {
        trace("layoutSubviews")
        layoutSubviews()
    }
}
