//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// A node that a controller owns: a live resource while it is in the window (docs/lifecycle.md §4).
///
/// Resources start in ``didMoveToWindow()`` when ``window`` is non-nil and stop when it becomes nil. Override the
/// callbacks; you need not call `super`, the framework traces each call itself.
@MainActor
open class View: TracedNode {
    /// The name of this view in trace paths, unique among its siblings by convention. Control characters in it
    /// become U+FFFD, so a trace line, a journal field or a terminal shows them harmlessly.
    public var name: String {
        didSet {
            NodeName.sanitize(&name)
            invalidatePath()
        }
    }
    /// The view this one is a subview of.
    ///
    /// Back-references in the tree are `unowned`, not `weak`: a weakly referenced object gets a side table, which
    /// makes every retain and release of it take the slow path (measured: two thirds of an event's fan-out). The
    /// tree clears each back-reference before its target goes (a view's deinit detaches its subviews first).
    public private(set) unowned var superview: View? {
        didSet { invalidatePath() }
    }
    /// The subviews, back to front, in the order added.
    public private(set) var subviews: [View] = []
    /// The window this view is in, or nil while it is not in the window.
    public private(set) weak var window: Window?
    /// The controller whose root view this is.
    public internal(set) unowned var viewController: ViewController? {
        didSet { invalidatePath() }
    }
    /// The application whose tree this view joined; kept after it leaves, so its last events still reach that
    /// application's trace.
    public internal(set) weak var application: Application?

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
        self.name = name.map(NodeName.sanitized) ?? String.defaultNodeName(for: Self.self, strippingSuffixes: [], fallback: "view")
        self.frame = frame
    }

    isolated deinit {
        trace(TraceEventName.deinitialize)
        // A released view lets go of its subviews one at a time, each told it has no superview before it goes.
        let ownPath = lastKnownPath ?? name
        // Clear every back-reference first: this view is being deinitialized and must not be reached through them.
        for subview in subviews { subview.superview = nil }
        // One at a time, first added first (linear: no removal from the front).
        var released = subviews.map(Optional.some)
        subviews.removeAll()
        for index in released.indices {
            let subview = released[index]!
            subview.lastKnownPath = ownPath + "/" + subview.name
            subview.notifyWillMove(toSuperview: nil)
            subview.notifyDidMoveToSuperview()
            released[index] = nil
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
    ///
    /// Made while a move is in progress in the application's tree (from a callback of one), the insertion waits until
    /// that move is over (docs/lifecycle.md, "Re-entrancy").
    public func insertSubview(_ view: View, at index: Int) {
        TreeEdits.edit(
            in: (application ?? view.application)?.edits,
            touchingWindow: window != nil || view.window != nil,
            again: { [self] in insertSubview(view, at: index) },
            now: { insertSubviewNow(view, at: index) }
        )
    }

    /// Inserts a view now: the framework's own moves, and an edit whose turn has come.
    func insertSubviewNow(_ view: View, at index: Int) {
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
        if view.superview != nil { view.removeFromSuperviewNow() }
        if let application {
            // A detached view is named by where it is going, so its whole arrival reads under one path (built only
            // when somebody reads the trace).
            if view.viewController == nil, application.trace.isObserved(delegateEvent: false) {
                view.lastKnownPath = path + "/" + view.name
            }
            view.adopt(application)
            application.treeGeneration &+= 1
        }
        let newWindow = window
        let movesWindow = newWindow != nil && view.window !== newWindow
        let appearing = movesWindow ? Self.beginAppearing(view, in: newWindow?.application) : []
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
        if movesWindow {
            newWindow?.application?.scheduleAppearanceCompletion(
                for: appearing,
                appearing: true,
                inside: appearing.isEmpty ? nil : nearestController
            )
        }
    }

    /// Removes the view from its superview; if it was in the window, it and its subtree leave it.
    ///
    /// Made while a move is in progress in the application's tree (from a callback of one), the removal waits until
    /// that move is over (docs/lifecycle.md, "Re-entrancy").
    public func removeFromSuperview() {
        TreeEdits.edit(
            in: application?.edits,
            touchingWindow: window != nil,
            again: { [self] in removeFromSuperview() },
            now: { removeFromSuperviewNow() }
        )
    }

    /// Removes the view now: the framework's own moves, and an edit whose turn has come.
    func removeFromSuperviewNow() {
        guard let superview else { return }
        let oldWindow = window
        let leavesWindow = oldWindow != nil
        let disappearing = leavesWindow ? Self.beginDisappearing(self) : []
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
            oldWindow?.application?.scheduleAppearanceCompletion(for: disappearing, appearing: false)
        }
    }

    /// The controller whose view this is, or whose view this one lies in.
    var nearestController: ViewController? {
        var node: View? = self
        while let current = node {
            if let controller = current.viewController { return controller }
            node = current.superview
        }
        return nil
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

    /// Lays out this view's subtree now if anything in it is marked; does nothing if it is clean. Edits made by its
    /// layout callbacks wait until it is over.
    public func layoutIfNeeded() {
        guard needsLayout || descendantNeedsLayout else { return }
        let edits = application?.edits
        edits?.begin()
        defer { edits?.end() }
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
        TreeWork.count(1)
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
        TreeWork.count(1)
        var changed = false
        if needsDisplay {
            needsDisplay = false
            trace(TraceEventName.draw)
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
        TreeWork.count(1)
        if !statusText.isEmpty { parts.append(statusText) }
        for subview in subviews { subview.collectStatus(into: &parts) }
    }

    // MARK: Window moves

    /// Starts the appearance of every controller whose root view lies in a subtree about to enter the window, in one
    /// pre-order walk of the tree as the will-callbacks leave it: a view's subviews are read after its controller's
    /// `viewWillAppear`, so a child a parent embeds there appears right after it, inside its bracket. Returns the
    /// controllers in post-order, for the did-callbacks (children before their parent).
    ///
    /// A will-callback that changes the tree elsewhere in the subtree (the application's tree generation moved) is
    /// caught by one more walk that starts whoever was missed; each walk is linear in the subtree.
    static func beginAppearing(_ subtree: View, in application: Application?) -> [ViewController] {
        let generation = application?.treeGeneration
        var postOrder: [ViewController] = []
        subtree.walk(
            preOrder: { $0.viewController?.beginAppearanceTransition(true) },
            postOrder: { if let controller = $0.viewController { postOrder.append(controller) } }
        )
        // Bounded: each round only starts controllers that a will-callback added.
        var rounds = 0
        while let application, application.treeGeneration != generation, rounds < 8 {
            rounds += 1
            let seen = application.treeGeneration
            var late = false
            postOrder.removeAll(keepingCapacity: true)
            subtree.walk(
                preOrder: { view in
                    guard let controller = view.viewController, !controller.isAppearingOrAppeared else { return }
                    late = true
                    controller.beginAppearanceTransition(true)
                },
                postOrder: { if let controller = $0.viewController { postOrder.append(controller) } }
            )
            if !late || application.treeGeneration == seen { break }
        }
        return postOrder
    }

    /// Starts the disappearance of every controller whose root view lies in a subtree about to leave the window, in
    /// pre-order; returns them in post-order, for the did-callbacks.
    static func beginDisappearing(_ subtree: View) -> [ViewController] {
        var postOrder: [ViewController] = []
        subtree.walk(
            preOrder: { $0.viewController?.beginAppearanceTransition(false) },
            postOrder: { if let controller = $0.viewController { postOrder.append(controller) } }
        )
        return postOrder
    }

    /// Visits this subtree: `preOrder` on a view before its subviews (which are read after it returns),
    /// `postOrder` after them.
    func walk(preOrder: (View) -> Void, postOrder: (View) -> Void) {
        TreeWork.count(1)
        preOrder(self)
        for subview in subviews { subview.walk(preOrder: preOrder, postOrder: postOrder) }
        postOrder(self)
    }

    /// Moves a detached subtree (a window's content view) into or out of the window. Called inside a move of the
    /// window's (a new root, a presentation, a dismissal), so nothing a callback edits changes the window meanwhile.
    func moveTopLevel(toWindow newWindow: Window?) {
        guard window !== newWindow else { return }
        let application = (newWindow ?? window)?.application
        let moved: [ViewController]
        if newWindow != nil {
            moved = Self.beginAppearing(self, in: application)
        } else {
            moved = Self.beginDisappearing(self)
        }
        notifyWillMoveSubtree(toWindow: newWindow)
        setWindowInSubtree(newWindow)
        notifyDidMoveSubtreeToWindow()
        propagateDirtyMarksUp()
        application?.scheduleAppearanceCompletion(for: moved, appearing: newWindow != nil)
    }

    private func notifyWillMoveSubtree(toWindow newWindow: Window?) {
        TreeWork.count(1)
        trace(TraceEventName.willMoveToWindow, detail: newWindow == nil ? "nil" : "window")
        willMove(toWindow: newWindow)
        for subview in subviews { subview.notifyWillMoveSubtree(toWindow: newWindow) }
    }

    private func setWindowInSubtree(_ newWindow: Window?) {
        TreeWork.count(1)
        window = newWindow
        for subview in subviews { subview.setWindowInSubtree(newWindow) }
    }

    private func notifyDidMoveSubtreeToWindow() {
        TreeWork.count(1)
        trace(TraceEventName.didMoveToWindow, detail: window == nil ? "nil" : "window")
        didMoveToWindow()
        for subview in subviews { subview.notifyDidMoveSubtreeToWindow() }
    }

    // MARK: Tracing

    /// The path of this view in the trace: `<controller path>.view` for a root view, then `/name` per level.
    ///
    /// A detached view (removed, or being released with its superview) keeps the path it last had, so teardown
    /// events name where the view was.
    public var path: String {
        cachedPath {
            if let viewController { return (viewController.path + ".view", viewController.pathIsCurrent) }
            if let superview { return (superview.path + "/" + name, superview.pathIsCurrent) }
            // Detached: the path it last had, or its name; it stays so until the view moves.
            return (lastKnownPath ?? name, true)
        }
    }

    /// The path cache (``TracedNode``).
    var traceState = NodeTraceState()
    /// Events that happened before the view joined an application's tree.
    var detachedEvents: [DetachedEvent] = []

    /// What the trace records this view's callbacks on: the view itself, its path read only when the event is logged
    /// or observed.
    var callbackTarget: TraceTarget { .view(self) }

    /// This view moved: its path, and those below it, are built again when next read.
    func invalidatePath() {
        guard clearPathIsCurrent() else { return }
        for subview in subviews { subview.invalidatePath() }
    }

    /// Makes this view and its subtree belong to `application`, recording the events each had before, pre-order.
    func adopt(_ application: Application) {
        guard join(application) else { return }
        for subview in subviews { subview.adopt(application) }
    }

    private func notifyWillMove(toSuperview newSuperview: View?) {
        trace(TraceEventName.willMoveToSuperview, detail: newSuperview.map { $0.path } ?? "nil")
        willMove(toSuperview: newSuperview)
    }

    private func notifyDidMoveToSuperview() {
        trace(TraceEventName.didMoveToSuperview, detail: superview == nil ? "nil" : nil)
        didMoveToSuperview()
    }

    private func notifyDidAddSubview(_ subview: View) {
        trace(TraceEventName.didAddSubview, detail: subview.name)
        didAddSubview(subview)
    }

    private func notifyWillRemoveSubview(_ subview: View) {
        trace(TraceEventName.willRemoveSubview, detail: subview.name)
        willRemoveSubview(subview)
    }

    private func notifyLayoutSubviews() {
        trace(TraceEventName.layoutSubviews)
        layoutSubviews()
    }
}
