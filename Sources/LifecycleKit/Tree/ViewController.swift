//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// How a presented controller covers its presenter.
public enum ModalPresentationStyle: String, Sendable, Hashable, CaseIterable {
    /// The default: a sheet over part of the screen; the presenter stays visible and gets no appearance callbacks.
    case automatic
    /// The presented controller replaces everything visible: what was visible disappears (push order).
    case fullScreen
    /// The presented controller covers its presenter's context, which stays visible: the presenter gets no
    /// appearance callbacks.
    case overCurrentContext
}

/// A controller: it owns a root view and a part of the application's work, and receives the view lifecycle
/// (docs/lifecycle.md §3) and every application event (§2).
///
/// Override the callbacks; calling `super` is not needed, the framework traces each call before making it.
@MainActor
open class ViewController {
    /// Where a controller is in its appearance, as UIKit tracks it.
    enum Appearance: Sendable {
        /// Not on screen.
        case disappeared
        /// `viewWillAppear` has run; `viewDidAppear` comes at the end of the turn.
        case appearing
        /// On screen.
        case appeared
        /// `viewWillDisappear` has run; `viewDidDisappear` comes at the end of the turn.
        case disappearing
    }

    // Declared first, so an application event's fan-out finds what it reads of a controller (and the object's header)
    // on one cache line: a memory warning over a large tree is bound by memory, not by instructions.
    /// Where the controller is in its appearance.
    var appearance: Appearance = .disappeared
    /// Whether this controller keeps its loaded view on a memory warning while the view is not in the window; by
    /// default such a view is released after `didReceiveMemoryWarning` and loaded again on the next access.
    public var keepsViewOnMemoryWarning = false
    // Also on the first line: an event the trace logs or observes reads the path (see ``lastKnownPath``).
    private var storedPath: String?
    /// Whether ``lastKnownPath`` is the path now. Only while the path it was built from is current too, so a move
    /// clears the flag of the nodes below that have it and stops at the first that has not: every path is built
    /// once per position, and a trace event reads it in constant time.
    var pathIsCurrent = false
    /// Work bound to this controller's lifecycle (``task(_:while:restartPolicy:priority:operation:)``); the daemon's
    /// control socket lists it with its supervision.
    package internal(set) var lifecycleTasks: [LifecycleTask] = []

    /// The name of this controller in trace paths (`root/modes/serving`); defaults to the type's name without
    /// `ViewController`/`Controller`, lower camel case. Control characters in it become U+FFFD, so a trace line, a
    /// journal field or a terminal shows them harmlessly.
    public var identifier: String {
        didSet {
            NodeName.sanitize(&identifier)
            invalidatePath()
        }
    }

    /// Opts the controller in to state preservation (UIKit's restoration identifier): when it and every controller
    /// above it have one, its place in the tree and what ``encodeRestorableState(with:)`` writes are saved, and
    /// restored at the next launch. Its restoration path is the identifiers from the root, joined by `/`.
    public var restorationIdentifier: String?

    /// The controller's root view, loaded on first access (``loadView()`` then ``viewDidLoad()``).
    ///
    /// Assigning a view counts as loading it: `viewDidLoad()` follows, once. A view belongs to one controller:
    /// assigning the view of another controller is a programming error, stopped with a message naming both.
    public var view: View {
        get {
            loadViewIfNeeded()
            guard let loadedView else {
                preconditionFailure(
                    "\(path): loadView() read `view` before assigning one; make the view, assign it to `view`, then use it"
                )
            }
            return loadedView
        }
        set {
            guard newValue !== loadedView else { return }
            setView(newValue)
            // Inside loadView() the load in progress finishes it; otherwise this assignment is the load.
            if !isLoadingView { building { finishLoading() } }
        }
    }

    /// The root view if it is loaded, without loading it.
    public var viewIfLoaded: View? { loadedView }

    /// Whether the root view has been loaded.
    public var isViewLoaded: Bool { loadedView != nil }

    /// The child controllers, in the order added.
    public internal(set) var children: [ViewController] = [] {
        didSet { application?.controllerTreeDidChange() }
    }
    /// The container this controller is a child of.
    public private(set) unowned var parent: ViewController? {
        didSet { invalidatePath() }
    }
    /// The controller this one presents.
    public private(set) var presentedViewController: ViewController? {
        didSet { application?.controllerTreeDidChange() }
    }
    /// The controller that presents this one.
    public private(set) unowned var presentingViewController: ViewController? {
        didSet { invalidatePath() }
    }
    /// How this controller is shown when presented; set it before ``present(_:animated:completion:)``. By default
    /// (``ModalPresentationStyle/automatic``) the presenter stays visible, as in UIKit since iOS 13.
    public var modalPresentationStyle: ModalPresentationStyle = .automatic
    /// The `animated:` argument of the last appearance transition; recorded, never animated.
    package private(set) var lastTransitionWasAnimated = false

    /// Whether this controller is on screen (between `viewDidAppear` and `viewWillDisappear`).
    public var isVisible: Bool { appearance == .appeared }

    /// The nearest navigation controller above this one.
    public var navigationController: NavigationController? {
        var node = parent
        while let current = node {
            if let navigation = current as? NavigationController { return navigation }
            node = current.parent
        }
        return nil
    }

    /// The application whose tree this controller joined; kept after it leaves, so its last events (a popped
    /// controller's `deinit`) still reach that application's trace.
    public private(set) weak var application: Application?
    /// The window whose root this controller is.
    weak var hostingWindow: Window? {
        didSet { invalidatePath() }
    }
    /// Events that happened before the controller joined an application's tree (its `init`, for one).
    private var detachedEvents: [(event: String, detail: String?)] = []
    /// Its `init` happened before it joined an application: recorded first when it joins (no buffer for it).
    private var initIsPending = false
    /// The root view, once loaded.
    private var loadedView: View?
    private var isLoadingView = false
    /// Views declared for this controller in an archive (a storyboard), added to its root view at the first load;
    /// later loads (after a memory warning released the view) make them again with the factory.
    var archivedSubviews: [View] = []
    var archivedSubviewFactory: (@MainActor () -> [View])?
    /// Children decoded from an archive are embedded in this controller's view when it loads, as a container
    /// view embeds them in a storyboard.
    var embedsChildViewsOnLoad = false
    /// The path last computed (kept after the controller leaves the tree, so its last events name where it was).
    /// Setting it (naming a controller by where it is going, or where it was) renames what hangs below it too.
    var lastKnownPath: String? {
        get { storedPath }
        set {
            storedPath = newValue
            invalidatePath()
        }
    }

    /// What the trace records this controller's callbacks on: the controller itself, its path read only when the event
    /// is logged or observed.
    var callbackTarget: TraceTarget { .controller(self) }

    /// Creates a controller in code.
    public init(identifier: String? = nil) {
        self.identifier =
            identifier.map(NodeName.sanitized)
            ?? String.defaultNodeName(
                for: Self.self,
                strippingSuffixes: ["ViewController", "Controller"],
                fallback: "controller"
            )
        // Nothing to trace it to yet, unless a subclass's own initializer found an application: held as a flag, so a
        // tree built apart costs no buffer per controller.
        initIsPending = true
    }

    /// Creates a controller decoded from an archive (a declarative tree file or a saved state).
    ///
    /// Subclasses read their own values from `coder`; ``awakeFromArchive()`` runs once the whole archive is
    /// decoded and wired.
    public required init(coder: Coder) throws {
        self.identifier =
            coder.identifier.map(NodeName.sanitized)
            ?? String.defaultNodeName(
                for: Self.self,
                strippingSuffixes: ["ViewController", "Controller"],
                fallback: "controller"
            )
        self.restorationIdentifier = coder.restorationIdentifier
        self.application = coder.application
        // Named by where it is going, as a controller on its way into the tree is.
        if let destination = coder.destinationPath { lastKnownPath = destination }
        trace("init(coder:)")
    }

    isolated deinit {
        // Clear every unowned back-reference to this controller first: it is being deinitialized.
        loadedView?.viewController = nil
        for child in children { child.parent = nil }
        presentedViewController?.presentingViewController = nil
        trace("deinit")
        let ownPath = lastKnownPath ?? identifier
        for task in lifecycleTasks { task.controllerWillDeinitialize(path: ownPath) }
        // Teardown order: this controller, then its view tree, then its children, then what it presented.
        if let view = loadedView {
            view.lastKnownPath = ownPath + ".view"
            loadedView = nil
        }
        // One at a time, first added first, each named before it goes (linear: no removal from the front).
        var released = children.map(Optional.some)
        children.removeAll()
        for index in released.indices {
            released[index]!.lastKnownPath = ownPath + "/" + released[index]!.identifier
            released[index] = nil
        }
        if let presented = presentedViewController {
            presented.lastKnownPath = ownPath + "/" + presented.identifier
            presentedViewController = nil
        }
    }

    // MARK: View loading

    /// Creates the root view; the default makes a plain ``View``. Assign `view` here; do not call `super`.
    open func loadView() {
        view = View(name: "view")
    }

    /// Called once after the root view is loaded: build subviews and children here.
    open func viewDidLoad() {}

    /// Called after the whole archive this controller was decoded from is decoded and wired.
    open func awakeFromArchive() {}

    // MARK: State preservation and restoration

    /// Writes the state to restore at the next launch (the controller has a ``restorationIdentifier``): called after
    /// `applicationDidEnterBackground` has reached the whole tree, and before termination's teardown. The shape of the
    /// tree (children, navigation stacks, presentations) is saved by the framework; write only your own values.
    open func encodeRestorableState(with coder: StateCoder) {}

    /// Reads the state saved by ``encodeRestorableState(with:)`` at launch, between `willFinishLaunching` and
    /// `didFinishLaunching`, once the restored tree is wired and every controller made for it has run
    /// `awakeFromArchive()`.
    open func decodeRestorableState(with coder: StateCoder) {}

    /// Every restored controller has decoded its state (UIKit's `applicationFinishedRestoringState`).
    open func applicationFinishedRestoringState() {}

    /// Loads the root view now if it is not loaded yet.
    public func loadViewIfNeeded() {
        guard loadedView == nil, !isLoadingView else { return }
        building {
            isLoadingView = true
            trace("loadView")
            loadView()
            isLoadingView = false
            if loadedView == nil {
                // loadView() did not assign a view; UIKit would crash, a daemon keeps running with a plain one.
                setView(View(name: "view"))
            }
            finishLoading()
        }
    }

    /// Runs a load: the view is not in the window yet, so even inside a move the edits `loadView` and `viewDidLoad`
    /// make take effect at once, unless they touch a view in the window (docs/lifecycle.md, "Re-entrancy").
    private func building(_ load: () -> Void) {
        guard let edits = application?.edits else { return load() }
        let suspended = edits.beginBuilding()
        defer { edits.endBuilding(suspended) }
        load()
    }

    /// The end of every load: archived children's views embedded, then `viewDidLoad`.
    private func finishLoading() {
        guard let loadedView else { return }
        for subview in takeArchivedSubviews() { loadedView.insertSubviewNow(subview, at: loadedView.subviews.count) }
        for child in embeddedChildViewsOnLoad() { loadedView.insertSubviewNow(child.view, at: loadedView.subviews.count) }
        trace("viewDidLoad")
        viewDidLoad()
    }

    /// The views an archive declared for this controller: the ones made when it was decoded, at the first load; new
    /// ones after.
    private func takeArchivedSubviews() -> [View] {
        if !archivedSubviews.isEmpty {
            let views = archivedSubviews
            archivedSubviews = []
            return views
        }
        return archivedSubviewFactory?() ?? []
    }

    /// The children whose views this controller embeds itself when its view loads: archived children for a plain
    /// container, the top of the stack for a navigation controller.
    func embeddedChildViewsOnLoad() -> [ViewController] {
        embedsChildViewsOnLoad ? children : []
    }

    func lastTransitionAnimated(_ animated: Bool) {
        lastTransitionWasAnimated = animated
    }

    private func setView(_ newView: View) {
        if let owner = newView.viewController, owner !== self {
            preconditionFailure(
                "\(newView.path) is the view of \(owner.path); a view belongs to one controller, so \(path) cannot take it"
            )
        }
        if let old = loadedView, old !== newView { old.viewController = nil }
        newView.viewController = self
        loadedView = newView
        if let application { newView.adopt(application) }
    }

    // MARK: Appearance callbacks

    /// Called before the controller's view enters the window.
    open func viewWillAppear(_ animated: Bool) {}
    /// Called after the controller's view entered the window and was laid out, at the end of the turn.
    open func viewDidAppear(_ animated: Bool) {}
    /// Called before the controller's view leaves the window.
    open func viewWillDisappear(_ animated: Bool) {}
    /// Called after the controller's view left the window, at the end of the turn.
    open func viewDidDisappear(_ animated: Bool) {}
    /// Called in a layout pass before the root view's `layoutSubviews`.
    open func viewWillLayoutSubviews() {}
    /// Called in a layout pass after the root view's `layoutSubviews`, before its subviews'.
    open func viewDidLayoutSubviews() {}

    // MARK: Application events (docs/lifecycle.md §2)

    /// The application is about to return to the foreground (delegate first, then the tree in pre-order).
    open func applicationWillEnterForeground() {}
    /// The application became active.
    open func applicationDidBecomeActive() {}
    /// The application is about to stop being active (the tree in reverse pre-order, then the delegate).
    open func applicationWillResignActive() {}
    /// The application entered the background: pause work here.
    open func applicationDidEnterBackground() {}
    /// The application is about to terminate; the tree is torn down afterwards.
    open func applicationWillTerminate() {}
    /// Memory is tight: drop what can be rebuilt.
    open func didReceiveMemoryWarning() {}
    /// A reload is on offer, before anything applies it (the delegate first, then the tree in pre-order): throw,
    /// with the reason, to refuse settings this controller cannot apply; the reload then applies to nobody and the
    /// journal and `systemctl reload` name this controller and the reason.
    open func validateReload(_ proposal: ReloadProposal) throws {}
    /// A reload starts: let go of what the old configuration set up (reverse pre-order, then the delegate).
    open func applicationWillReload() {}
    /// The reload is done: apply the configuration (the delegate first, then the tree in pre-order).
    open func applicationDidReload() {}

    /// A run of one of this controller's lifecycle-bound tasks (or a hosted service) failed; the delegate hears it
    /// next. The task's restart policy then starts it again after a delay, or escalates.
    open func lifecycleTask(_ task: LifecycleTask, didFailWithError error: any Error) {}

    /// One of this controller's tasks failed more often than its restart policy allows: it is not restarted until its
    /// activity begins again. The delegate hears it next, and by default terminates the application.
    open func lifecycleTask(_ task: LifecycleTask, didExhaustRestartsWithError error: any Error) {}

    // MARK: Containment

    /// Called before the controller is added to (non-nil) or removed from (nil) a container. Overrides must call
    /// `super`, as in UIKit: the base implementation records the call in the trace.
    open func willMove(toParent parent: ViewController?) {
        trace("willMove(toParent:)", detail: parent.map { $0.path } ?? "nil")
    }

    /// Called after the controller was added to or removed from a container. Overrides must call `super`, as in
    /// UIKit: the base implementation records the call in the trace.
    open func didMove(toParent parent: ViewController?) {
        trace("didMove(toParent:)", detail: parent.map { $0.path } ?? "nil")
    }

    /// Adds a child controller; calls `child.willMove(toParent: self)`. Add its view, then call
    /// `child.didMove(toParent: self)`.
    ///
    /// A controller is in the tree once: adding one that already has another parent, that presents or is presented,
    /// or that is an ancestor of this one is a programming error, stopped with a message naming both paths. (The
    /// window's root may be added to a container that then becomes the root, as UIKit allows.) Made while a move is in progress in the application's tree (from a callback of one), the
    /// addition waits until that move is over (docs/lifecycle.md, "Re-entrancy"), and is checked then.
    public func addChild(_ child: ViewController) {
        TreeEdits.edit(
            in: (application ?? child.application)?.edits,
            touchingWindow: viewIfLoaded?.window != nil || child.viewIfLoaded?.window != nil,
            again: { [self] in addChild(child) },
            now: { addChildNow(child) }
        )
    }

    /// Adds a child now: the framework's own edits, and an edit whose turn has come. `bringingPresentations`: the
    /// child may present (a subtree a storyboard declares joins with its presentations).
    func addChildNow(_ child: ViewController, bringingPresentations: Bool = false) {
        guard child.parent !== self else { return }
        if let problem = reasonCannotAdopt(child, bringingPresentations: bringingPresentations) {
            preconditionFailure("cannot add \(child.path) as a child of \(path): \(problem)")
        }
        // A detached child is named by where it is going, so its arrival reads under one path (built only when
        // somebody reads the trace).
        if let application {
            if application.trace.isObserved(delegateEvent: false) {
                child.lastKnownPath = path + "/" + child.identifier
            }
            child.adopt(application)
        }
        child.notifyWillMove(toParent: self)
        children.append(child)
        child.parent = self
        showPresentations(inSubtreeOf: child)
    }

    /// A subtree joined this controller's tree: what was presented inside it while it was apart appears once the
    /// edit in progress is over (docs/lifecycle.md, "Re-entrancy").
    func showPresentations(inSubtreeOf joined: ViewController) {
        guard let window, let edits = application?.edits else { return }
        var found = false
        joined.forEachPresentedController { _ in found = true }
        guard found else { return }
        guard edits.isInProgress else { return window.showPresentations(inSubtreeOf: joined) }
        edits.wait { [weak window, weak joined, unowned edits] in
            guard let window, let joined, joined.window === window else { return }
            // A move of its own: what the presentations' callbacks edit waits for it.
            edits.begin()
            defer { edits.end() }
            window.showPresentations(inSubtreeOf: joined)
        }
    }

    /// Calls `body` on every controller presented in this subtree (by this controller, what it presents, its
    /// children), in tree order: a controller's children's presentations before its own.
    func forEachPresentedController(_ body: (ViewController) -> Void) {
        TreeWork.count(1)
        for child in children { child.forEachPresentedController(body) }
        if let presentedViewController {
            body(presentedViewController)
            presentedViewController.forEachPresentedController(body)
        }
    }

    /// Why `child` cannot join the tree under this controller, or nil when it can.
    private func reasonCannotAdopt(_ child: ViewController, bringingPresentations: Bool = false) -> String? {
        if child === self { return "a controller cannot be its own child" }
        if let other = child.parent {
            return "it is already a child of \(other.path); remove it from there first"
        }
        if let presenter = child.presentingViewController {
            return "it is presented by \(presenter.path); dismiss it first"
        }
        if !bringingPresentations, let presented = child.presentedViewController {
            return "it presents \(presented.path); dismiss that first"
        }
        if isDescendant(of: child) { return "it is an ancestor of \(path), which would make a cycle" }
        return nil
    }

    /// Whether this controller is `controller` or hangs below it (a child, or presented, at any depth).
    func isDescendant(of controller: ViewController) -> Bool {
        var node: ViewController? = self
        while let current = node {
            if current === controller { return true }
            node = current.parent ?? current.presentingViewController
        }
        return false
    }

    /// Removes this controller from its container; calls `didMove(toParent: nil)`. Call `willMove(toParent: nil)`
    /// and remove the view first. Made while a move is in progress (from a callback of one), the removal waits until
    /// that move is over.
    public func removeFromParent() {
        TreeEdits.edit(
            in: application?.edits,
            touchingWindow: viewIfLoaded?.window != nil || parent?.viewIfLoaded?.window != nil,
            again: { [self] in removeFromParent() },
            now: { removeFromParentNow() }
        )
    }

    /// Removes this controller from its container now.
    func removeFromParentNow() {
        guard parent != nil else { return }
        detachFromParent()
        dismissPresentationsInSubtree()
        notifyDidMove(toParent: nil)
        // As a popped or dismissed controller, it lives until the end of the turn: released now, inside the call that
        // removed it (an edit that waited runs at the end of somebody's call into the tree), a node of its graph that
        // call holds would outlive it, and the graph would not go in §3's order.
        application?.scheduleTurnEndWork { withExtendedLifetime(self) {} }
    }

    /// Takes this controller out of its container now, without a callback: a container finishes the move
    /// (`didMove(toParent: nil)`) at the end of the turn. The caller then dismisses what the subtree presents
    /// (``dismissPresentationsInSubtree()``), once the views have moved.
    func detachFromParent() {
        guard let parent else { return }
        parent.children.removeAll { $0 === self }
        self.parent = nil
    }

    /// This controller left the tree: whatever it, or anything below it, presents is dismissed, so nothing stays on
    /// screen out of reach of the application events. With `revealing` false, what the dismissals uncover is shown
    /// only when the caller asks (``Window/revealUncoveredLayers()``), once it has changed what they show.
    func dismissPresentationsInSubtree(revealing: Bool = true) {
        if presentedViewController != nil {
            // The dismissal takes what the presented hierarchy presents with it.
            dismissNow(animated: false, revealing: revealing, completion: nil)
        }
        for child in children { child.dismissPresentationsInSubtree(revealing: revealing) }
    }

    /// This controller stopped being a window's root: every presentation in its subtree is undone at once, without
    /// callbacks of its own (the window's layers are gone already; the views leave with what was visible).
    func unlinkPresentationsInSubtree() {
        var hierarchy: [ViewController] = []
        appendPreOrder(to: &hierarchy)
        for node in hierarchy {
            guard let presented = node.presentedViewController else { continue }
            node.presentedViewController = nil
            presented.presentingViewController = nil
        }
    }

    /// Puts the children in the given order (a navigation stack being replaced); every one must be a child.
    func reorderChildren(_ ordered: [ViewController]) {
        children = ordered
    }

    func notifyWillMove(toParent parent: ViewController?) {
        willMove(toParent: parent)
    }

    func notifyDidMove(toParent parent: ViewController?) {
        didMove(toParent: parent)
    }

    /// Adds a child, its view under this controller's view, and finishes the move: the usual three steps at once.
    /// Made while a move is in progress (from a callback of one), it waits until that move is over, whole.
    public func embed(_ child: ViewController, in container: View? = nil) {
        TreeEdits.edit(
            in: (application ?? child.application)?.edits,
            touchingWindow: (container ?? viewIfLoaded)?.window != nil || child.viewIfLoaded?.window != nil,
            again: { [self] in embed(child, in: container) },
            now: {
                addChildNow(child)
                let superview = container ?? view
                superview.insertSubviewNow(child.view, at: superview.subviews.count)
                child.notifyDidMove(toParent: self)
            }
        )
    }

    /// Removes an embedded child: `willMove(toParent: nil)`, its view from its superview, `removeFromParent()`.
    /// Made while a move is in progress (from a callback of one), it waits until that move is over, whole.
    public func unembed(_ child: ViewController) {
        TreeEdits.edit(
            in: application?.edits,
            touchingWindow: child.viewIfLoaded?.window != nil,
            again: { [self] in unembed(child) },
            now: {
                guard child.parent === self else { return }
                child.notifyWillMove(toParent: nil)
                child.viewIfLoaded?.removeFromSuperviewNow()
                child.removeFromParentNow()
            }
        )
    }

    // MARK: Presentation

    /// Presents a controller over this one: full screen (push order) or over the current context (this controller
    /// stays visible and gets no callbacks). `completion` runs after `viewDidAppear`. What the presented controller
    /// presents already appears with it.
    ///
    /// Presenting from a controller that already presents, or a controller that is elsewhere in the tree (a child,
    /// presented, the window's root, an ancestor of this one), is a programming error, stopped with a message naming
    /// both paths. Made while a move is in progress (from a callback of one), the presentation waits until that move
    /// is over (docs/lifecycle.md, "Re-entrancy"), and is checked then.
    public func present(
        _ controller: ViewController,
        animated: Bool,
        completion: (@MainActor () -> Void)? = nil
    ) {
        TreeEdits.edit(
            in: (application ?? controller.application)?.edits,
            touchingWindow: true,
            again: { [self] in present(controller, animated: animated, completion: completion) },
            now: { presentNow(controller, animated: animated, completion: completion) }
        )
    }

    /// Why this controller cannot present `controller`, or nil when it can.
    private func reasonCannotPresent(_ controller: ViewController) -> String? {
        if let presentedViewController {
            return "\(path) already presents \(presentedViewController.path); dismiss it first"
        }
        if controller === self { return "a controller cannot present itself" }
        if let parent = controller.parent {
            return "it is a child of \(parent.path); remove it from there first"
        }
        if let presenter = controller.presentingViewController {
            return "it is presented by \(presenter.path); dismiss it first"
        }
        if let window = controller.hostingWindow, window.rootViewController === controller {
            return "it is the root of the window"
        }
        if isDescendant(of: controller) { return "it is an ancestor of \(path), which would make a cycle" }
        return nil
    }

    /// Presents now: the framework's own edits, and an edit whose turn has come.
    func presentNow(_ controller: ViewController, animated: Bool, completion: (@MainActor () -> Void)?) {
        if let problem = reasonCannotPresent(controller) {
            preconditionFailure("cannot present \(controller.path) from \(path): \(problem)")
        }
        lastTransitionWasAnimated = animated
        controller.lastTransitionWasAnimated = animated
        presentedViewController = controller
        controller.presentingViewController = self
        if let application { controller.adopt(application) }
        controller.loadViewIfNeeded()
        if let window = self.window {
            window.pushLayer(controller, style: controller.modalPresentationStyle)
            // What it presented while apart comes with it.
            window.showPresentations(inSubtreeOf: controller)
        }
        guard let completion else { return }
        if let application {
            application.scheduleTurnEndWork(completion)
        } else {
            // Outside any application nothing appears, so nothing is waited for.
            completion()
        }
    }

    /// Dismisses the controller this one presents (or, when called on a presented controller, itself), and every
    /// controller presented above it. `completion` runs after the presenter's `viewDidAppear`.
    ///
    /// Called on a controller inside a presented hierarchy (the root of a presented navigation stack), it dismisses
    /// the nearest presented controller above it.
    ///
    /// Made while a move is in progress (from a callback of one), the dismissal waits until that move is over.
    public func dismiss(animated: Bool, completion: (@MainActor () -> Void)? = nil) {
        TreeEdits.edit(
            in: application?.edits,
            touchingWindow: true,
            again: { [self] in dismiss(animated: animated, completion: completion) },
            now: { dismissNow(animated: animated, revealing: true, completion: completion) }
        )
    }

    /// Dismisses now: the framework's own edits, and an edit whose turn has come.
    func dismissNow(animated: Bool, revealing: Bool, completion: (@MainActor () -> Void)?) {
        var node = self
        while node.presentedViewController == nil, node.presentingViewController == nil, let parent = node.parent {
            node = parent
        }
        let presenter: ViewController
        if node.presentedViewController != nil {
            presenter = node
        } else if let presentingViewController = node.presentingViewController {
            presenter = presentingViewController
        } else {
            return
        }
        guard let dismissed = presenter.presentedViewController else { return }
        lastTransitionWasAnimated = animated
        dismissed.lastTransitionWasAnimated = animated
        // Everything the dismissed hierarchy shows goes with it: what it presents, and what its children present.
        var leaving: [ViewController] = []
        dismissed.appendPreOrder(to: &leaving)
        // The presenter may have left the window (popped with its presentation): the layers are still there.
        if let window = presenter.window ?? presenter.application?.window {
            window.popLayers(of: leaving, revealing: revealing)
        }
        // Every presentation in the hierarchy is unlinked now; the controllers live until their did-disappear
        // callbacks ran, held through the roots of what is released: the dismissed controller and each one presented
        // inside it (a child goes with its parent, after it, in the order added: §3's release order).
        var released = [dismissed]
        for node in leaving {
            guard let presented = node.presentedViewController else { continue }
            node.presentedViewController = nil
            presented.presentingViewController = nil
            released.append(presented)
        }
        presenter.presentedViewController = nil
        dismissed.presentingViewController = nil
        if let application = presenter.application {
            application.scheduleTurnEndWork {
                withExtendedLifetime(released) {}
                completion?()
            }
        } else {
            completion?()
        }
    }

    /// The window this controller is shown in: the window of its root view, or of the controller it hangs from.
    public var window: Window? {
        if let window = loadedView?.window { return window }
        if let parent { return parent.window }
        if let presentingViewController { return presentingViewController.window }
        return hostingWindow
    }

    // MARK: Appearance transitions

    /// Whether the controller is on screen or on its way there.
    var isAppearingOrAppeared: Bool { appearance == .appearing || appearance == .appeared }

    func beginAppearanceTransition(_ appearing: Bool) {
        let animated = lastTransitionWasAnimated
        switch (appearing, appearance) {
        case (true, .disappeared), (true, .disappearing):
            appearance = .appearing
            trace("viewWillAppear")
            viewWillAppear(animated)
        case (false, .appeared), (false, .appearing):
            appearance = .disappearing
            trace("viewWillDisappear")
            viewWillDisappear(animated)
            updateLifecycleTasks(reason: .disappearance)
        default:
            // Already moving the requested way: a view re-entering within one turn; nothing to repeat.
            break
        }
    }

    func endAppearanceTransition(_ appearing: Bool) {
        let animated = lastTransitionWasAnimated
        switch (appearing, appearance) {
        case (true, .appearing):
            appearance = .appeared
            trace("viewDidAppear")
            viewDidAppear(animated)
            updateLifecycleTasks(reason: .disappearance)
        case (false, .disappearing):
            appearance = .disappeared
            trace("viewDidDisappear")
            viewDidDisappear(animated)
        default:
            // The transition was reversed within the same turn; its own completion delivers the final callback.
            break
        }
    }

    /// After `didReceiveMemoryWarning`: a loaded view that is not in the window is released (it loads again on the
    /// next access), unless the controller keeps it.
    func releaseViewAfterMemoryWarning() {
        // As UIKit did: only a view with no superview can be released safely; one embedded in a parent's view that
        // stays loaded is part of that view and goes only with it.
        guard appearance == .disappeared, !keepsViewOnMemoryWarning, let view = loadedView, view.window == nil,
            view.superview == nil
        else { return }
        // Named where it was: its deinit reads the path it last had.
        view.lastKnownPath = path + ".view"
        view.viewController = nil
        loadedView = nil
    }

    func notifyWillLayoutSubviews() {
        trace("viewWillLayoutSubviews")
        viewWillLayoutSubviews()
    }

    func notifyDidLayoutSubviews() {
        trace("viewDidLayoutSubviews")
        viewDidLayoutSubviews()
    }

    // MARK: Tree walks

    /// This controller and everything below it that receives application events, pre-order: itself, its
    /// children in the order added, then what it presents.
    func appendPreOrder(to list: inout [ViewController]) {
        TreeWork.count(1)
        list.append(self)
        for child in children { child.appendPreOrder(to: &list) }
        presentedViewController?.appendPreOrder(to: &list)
    }

    // MARK: Tracing

    /// The path of this controller in the trace: its container's (or presenter's) path, `/`, its identifier.
    ///
    /// A controller out of the tree keeps the path it last had, so its last events (a popped controller's `deinit`)
    /// name where it was.
    public var path: String {
        if pathIsCurrent, let lastKnownPath { return lastKnownPath }
        TreeWork.count(1)
        let computed: String
        let current: Bool
        if let parent {
            computed = parent.path + "/" + identifier
            current = parent.pathIsCurrent
        } else if let presentingViewController {
            computed = presentingViewController.path + "/" + identifier
            current = presentingViewController.pathIsCurrent
        } else if hostingWindow != nil {
            computed = identifier
            current = true
        } else {
            // Out of the tree: the path it last had, or its identifier; it stays so until the controller moves.
            computed = lastKnownPath ?? identifier
            current = true
        }
        lastKnownPath = computed
        pathIsCurrent = current
        return computed
    }

    /// This controller moved: its path, and those below it, are built again when next read.
    func invalidatePath() {
        guard pathIsCurrent else { return }
        TreeWork.count(1)
        pathIsCurrent = false
        for child in children { child.invalidatePath() }
        presentedViewController?.invalidatePath()
        loadedView?.invalidatePath()
    }

    func trace(_ event: String, detail: String? = nil) {
        if let application {
            application.traceEvent(event, target: self.callbackTarget, detail: detail)
        } else {
            detachedEvents.append((event, detail))
        }
    }

    /// Makes this controller, its view tree, its children and what it presents belong to `application`, and records
    /// the events they had before, each node's in the order they happened, pre-order.
    ///
    /// A subtree that already belongs to `application` is skipped: everything below a node joins with it.
    func adopt(_ application: Application) {
        TreeWork.count(1)
        guard self.application !== application else { return }
        self.application = application
        if initIsPending {
            initIsPending = false
            application.traceEvent("init", target: self.callbackTarget, detail: nil)
        }
        if !detachedEvents.isEmpty {
            let events = detachedEvents
            detachedEvents = []
            for (event, detail) in events { application.traceEvent(event, target: self.callbackTarget, detail: detail) }
        }
        loadedView?.adopt(application)
        for child in children { child.adopt(application) }
        presentedViewController?.adopt(application)
    }
}
