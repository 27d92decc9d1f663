//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// A controller: it owns a root view and a part of the application's work, and receives the view lifecycle
/// (docs/lifecycle.md §3) and every application event (§2).
///
/// Override the callbacks; calling `super` is not needed, the framework traces each call before making it.
@MainActor
open class ViewController: TracedNode {
    // Declared first, so an application event's fan-out finds what it reads of a controller (and the object's header)
    // on one cache line: a memory warning over a large tree is bound by memory, not by instructions.
    /// Where the controller is in its appearance.
    var appearance: Appearance = .disappeared
    /// Whether this controller keeps its loaded view on a memory warning while the view is not in the window; by
    /// default such a view is released after `didReceiveMemoryWarning` and loaded again on the next access.
    public var keepsViewOnMemoryWarning = false
    // Also on the first line: an event the trace logs or observes reads the path (see ``lastKnownPath``).
    /// The path cache (``TracedNode``).
    var traceState = NodeTraceState()
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
    public internal(set) unowned var parent: ViewController? {
        didSet { invalidatePath() }
    }
    /// The controller this one presents.
    public internal(set) var presentedViewController: ViewController? {
        didSet { application?.controllerTreeDidChange() }
    }
    /// The controller that presents this one.
    public internal(set) unowned var presentingViewController: ViewController? {
        didSet { invalidatePath() }
    }
    /// How this controller is shown when presented; set it before ``present(_:animated:completion:)``. By default
    /// (``ModalPresentationStyle/automatic``) the presenter stays visible, as in UIKit since iOS 13.
    public var modalPresentationStyle: ModalPresentationStyle = .automatic
    /// The `animated:` argument of the last appearance transition; recorded, never animated.
    package internal(set) var lastTransitionWasAnimated = false

    /// The application whose tree this controller joined; kept after it leaves, so its last events (a popped
    /// controller's `deinit`) still reach that application's trace.
    public internal(set) weak var application: Application?
    /// The window whose root this controller is.
    weak var hostingWindow: Window? {
        didSet { invalidatePath() }
    }
    /// The window this controller is shown in: the window of its root view, or of the controller it hangs from.
    public var window: Window? {
        if let window = loadedView?.window { return window }
        if let parent { return parent.window }
        if let presentingViewController { return presentingViewController.window }
        return hostingWindow
    }
    /// Events that happened before the controller joined an application's tree (its `init` is a flag in
    /// ``traceState``).
    var detachedEvents: [DetachedEvent] = []
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
    /// What the trace records this controller's callbacks on: the controller itself, its path read only when the event
    /// is logged or observed.
    var callbackTarget: TraceTarget { .controller(self) }

    /// The identifier a controller of this type gets when it is given none.
    private static var defaultIdentifier: String {
        String.defaultNodeName(for: self, strippingSuffixes: ["ViewController", "Controller"], fallback: "controller")
    }

    /// Creates a controller in code.
    public init(identifier: String? = nil) {
        self.identifier = identifier.map(NodeName.sanitized) ?? Self.defaultIdentifier
        // Nothing to trace it to yet, unless a subclass's own initializer found an application: held as a flag, so a
        // tree built apart costs no buffer per controller.
        traceState.initIsPending = true
    }

    /// Creates a controller decoded from an archive (a declarative tree file or a saved state).
    ///
    /// Subclasses read their own values from `coder`; ``awakeFromArchive()`` runs once the whole archive is
    /// decoded and wired.
    public required init(coder: Coder) throws {
        self.identifier = coder.identifier.map(NodeName.sanitized) ?? Self.defaultIdentifier
        self.restorationIdentifier = coder.restorationIdentifier
        self.application = coder.application
        // Named by where it is going, as a controller on its way into the tree is.
        if let destination = coder.destinationPath { lastKnownPath = destination }
        trace(TraceEventName.initWithCoder)
    }

    isolated deinit {
        // Clear every unowned back-reference to this controller first: it is being deinitialized.
        loadedView?.viewController = nil
        for child in children { child.parent = nil }
        presentedViewController?.presentingViewController = nil
        trace(TraceEventName.deinitialize)
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

    // MARK: State preservation and restoration

    /// Writes the state to restore at the next launch (the controller has a ``restorationIdentifier``): called after
    /// `applicationDidEnterBackground` has reached the whole tree, and before termination's teardown. The shape of the
    /// tree (children, navigation stacks, presentations) is saved by the framework; write only your own values.
    open func encodeRestorableState(with coder: StateCoder) {}

    /// Reads the state saved by ``encodeRestorableState(with:)`` at launch, between `willFinishLaunching` and
    /// `didFinishLaunching`, once the restored tree is wired and every controller made for it has run
    /// `awakeFromArchive()`.
    open func decodeRestorableState(with coder: StateCoder) {}

    /// The version of the values this class writes in ``encodeRestorableState(with:)`` (Cocoa's class version, which
    /// `NSCoder` records beside an object's values); 1 unless a subclass says otherwise. The saved state records it for
    /// each controller; raise it when the values change their keys or their meaning, and bring older ones up in
    /// ``migrateRestorableState(with:fromVersion:)``. Values saved by a newer version than the class's are never
    /// decoded (docs/restoration.md, "Versioned state").
    open class var restorableStateVersion: Int { 1 }

    /// Brings values saved by an older version of this class (`version`, below ``restorableStateVersion``) up to the
    /// current one, in place, right before ``decodeRestorableState(with:)`` reads the same coder: rename a key, convert
    /// a value, fill in a default. The default changes nothing.
    open func migrateRestorableState(with coder: StateCoder, fromVersion version: Int) {}

    /// Every restored controller has decoded its state (UIKit's `applicationFinishedRestoringState`).
    open func applicationFinishedRestoringState() {}

    // MARK: View loading

    /// Creates the root view; the default makes a plain ``View``. Assign `view` here; do not call `super`.
    open func loadView() {
        view = View(name: "view")
    }

    /// Called once after the root view is loaded: build subviews and children here.
    open func viewDidLoad() {}

    /// Called after the whole archive this controller was decoded from is decoded and wired.
    open func awakeFromArchive() {}

    /// Loads the root view now if it is not loaded yet.
    public func loadViewIfNeeded() {
        guard loadedView == nil, !isLoadingView else { return }
        building {
            isLoadingView = true
            trace(TraceEventName.loadView)
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
        trace(TraceEventName.viewDidLoad)
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

    // MARK: Appearance callbacks (the transitions: ViewController+Appearance.swift)

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

    // MARK: Containment callbacks (the moves: ViewController+Containment.swift)

    /// Called before the controller is added to (non-nil) or removed from (nil) a container. Overrides must call
    /// `super`, as in UIKit: the base implementation records the call in the trace.
    open func willMove(toParent parent: ViewController?) {
        trace(TraceEventName.willMoveToParent, detail: parent.map { $0.path } ?? "nil")
    }

    /// Called after the controller was added to or removed from a container. Overrides must call `super`, as in
    /// UIKit: the base implementation records the call in the trace.
    open func didMove(toParent parent: ViewController?) {
        trace(TraceEventName.didMoveToParent, detail: parent.map { $0.path } ?? "nil")
    }

    // MARK: Tracing

    /// The path of this controller in the trace: its container's (or presenter's) path, `/`, its identifier.
    ///
    /// A controller out of the tree keeps the path it last had, so its last events (a popped controller's `deinit`)
    /// name where it was.
    public var path: String {
        cachedPath {
            if let parent { return (parent.path + "/" + identifier, parent.pathIsCurrent) }
            if let presentingViewController {
                return (presentingViewController.path + "/" + identifier, presentingViewController.pathIsCurrent)
            }
            if let hostingWindow {
                return (hostingWindow.pathPrefix.isEmpty ? identifier : hostingWindow.pathPrefix + identifier, true)
            }
            // Out of the tree: the path it last had, or its identifier; it stays so until the controller moves.
            return (lastKnownPath ?? identifier, true)
        }
    }

    /// This controller moved: its path, and those below it, are built again when next read.
    func invalidatePath() {
        guard clearPathIsCurrent() else { return }
        for child in children { child.invalidatePath() }
        presentedViewController?.invalidatePath()
        loadedView?.invalidatePath()
    }

    /// Makes this controller, its view tree, its children and what it presents belong to `application`, and records
    /// the events they had before, each node's in the order they happened, pre-order.
    ///
    /// A subtree that already belongs to `application` is skipped: everything below a node joins with it.
    func adopt(_ application: Application) {
        guard join(application) else { return }
        loadedView?.adopt(application)
        for child in children { child.adopt(application) }
        presentedViewController?.adopt(application)
    }
}
