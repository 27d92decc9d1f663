//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit

/// A reference model of docs/lifecycle.md §3–§4 (appearance and the view tree), extending ``ReferenceModel``'s
/// §1–§2, written from the contract and docs/lifecycle.md, never from the implementation's internals.
///
/// It keeps its own controller tree and view tree (whose root view is a subview of whose), the window's layers (the
/// root, then each presented controller; what is visible starts at the last full-screen one), the four appearance
/// states of UIKit (a will-callback starts a transition, its did-callback at the end of the turn finishes it unless
/// a later will-callback reversed it), the layout marks and the views laid out once more when leaving in push order.
/// Every operation writes the lines the trace must show, in order:
///
/// - `c3 loadView`, `c3 viewWillAppear`, `c3 viewWillLayoutSubviews`, `c3.view deinit` (a view released on a memory
///   warning), `c3 applicationDidEnterBackground@background op:4`, `delegate applicationDidEnterBackground@…`
///   into ``expected``, one exact sequence per turn;
/// - the controllers (and their root views) released in the turn into ``expectedReleases``, one list per object
///   graph that goes at once (a popped controller with what is below it, the layers of a replaced window), each in
///   the order the contract gives: a controller, its view, its children, then what it presents.
///
/// The controllers are of two kinds: a plain container (its `viewDidLoad` adds a plain subview, then the views of
/// all its children: a container that embeds its children again when its view is loaded again), and a navigation
/// controller (it shows its top, and embeds the top's view when its own view loads).
///
/// Several operations may share a turn: will-callbacks, loads and application events happen at once, layout and
/// did-callbacks at the end of the turn, a termination ends the turn itself.
///
/// Re-entrancy (docs/lifecycle.md, "Re-entrancy"): an operation may be *armed* on a callback — the next time that
/// controller (or the delegate) gets it, a code is decoded, against the model as it is then, into an operation made
/// from inside the callback: will/did appear and disappear, the layout pair, every application event, end-of-turn
/// work (``Operation/scheduleWork(code:)``) and the completions of presentations and dismissals. The model applies
/// the rules: an edit made during a move (an operation, a layout pass, termination's teardown) waits until the
/// outermost move is over, then runs, in order; outside a move it runs at once; a request made during a transition
/// queues behind it, one made during a move or from end-of-turn work waits for the end of the turn; one queue, §1's
/// coalescing and finality rules. Each firing is recorded (``firings``), so the application under test makes the same
/// operation from the same callback.
///
/// The stop (docs/lifecycle.md §2): termination's application events, `applicationWillTerminate` and the teardown's
/// disappearance are callbacks like the others, and the teardown's see the tree they are torn down with; during the
/// stop an armed callback may also replace or remove the window or its root. What joins the tree then goes in the
/// same teardown (in `applicationWillTerminate` it begins to appear, in the teardown nothing appears), and what left
/// it finishes disappearing and goes, all before "terminated".
///
/// What the model leaves out: the callbacks of plain views and of containment (`willMove(toWindow:)`,
/// `layoutSubviews`, `draw`, `willMove(toParent:)`…), frames and explicit layout or display marks, edits made from
/// `loadView`/`viewDidLoad` (the regression tests cover those), edits made from a `deinit` (WholeTeardownTests covers
/// the teardown's), launch, `animated: true`, and the order between graphs released separately in one turn (each
/// graph's own order is checked). The disagreements the model found with LifecycleKit are fixed, and each has a
/// regression test in PropertyFindings.swift, ReentrancyTests.swift or WholeTeardownTests.swift.
struct AppearanceModel {
    enum Kind: Equatable {
        case plain
        case navigation
    }

    enum Appearance: Equatable {
        case disappeared
        case appearing
        case appeared
        case disappearing
    }

    struct Controller {
        let kind: Kind
        let keepsView: Bool
        var parent: String?
        var children: [String] = []
        var presenter: String?
        var presented: String?
        var style = ModalPresentationStyle.fullScreen
        var isLoaded = false
        /// The controller whose root view this controller's root view is a subview of.
        var superview: String?
        /// The controllers whose root views are subviews of this one's root view, in subview order.
        var shown: [String] = []
        /// Whether the root view is in the window (set when a subtree moves in or out, as a view's `window`).
        var isInWindow = false
        var needsLayout = false
        var appearance = Appearance.disappeared
    }

    /// A controller to create: a plain one, or a navigation controller with a plain root.
    struct NewController: CustomStringConvertible {
        var id: String
        var navigationRoot: String?
        var keepsView = false

        var description: String {
            let kind = navigationRoot.map { "nav \(id)[\($0)]" } ?? id
            return keepsView ? kind + " (keeps its view)" : kind
        }
    }

    enum Operation: CustomStringConvertible {
        case push(NewController, onto: String)
        case pop(String)
        case popToRoot(String)
        /// `setViewControllers`: the first `keeping` controllers of the stack, then a new one on top (push order).
        case setStack(String, keeping: Int, plus: NewController)
        /// `present`; with a `completion` code, the completion makes the operation the code decodes to.
        case present(NewController, by: String, style: ModalPresentationStyle, completion: Int? = nil)
        /// `dismiss(animated:)` called on a controller: the presenter, the presented one, or one inside it.
        case dismiss(from: String, completion: Int? = nil)
        case embed(NewController, in: String)
        /// `parent.unembed(child)`: nothing when `child` is no longer `parent`'s child by then.
        case unembed(String, from: String)
        case replaceWindow(NewController)
        /// `window.rootViewController = …` on the current window; nothing when there is no window.
        case replaceRoot(NewController)
        /// `application.window = nil` (made during the stop only).
        case removeWindow
        /// `window.rootViewController = nil` on the current window (made during the stop only).
        case removeRoot
        case request(ReferenceModel.Request)
        /// The next time `target` (a controller, or `delegate`) gets `callback`, the operation `code` decodes to then
        /// is made from inside it.
        case arm(target: String, callback: String, code: Int)
        /// `scheduleTurnEndWork`: the work makes the operation `code` decodes to when it runs.
        case scheduleWork(code: Int)

        var description: String {
            switch self {
            case .push(let new, let nav): "push \(new) onto \(nav)"
            case .pop(let nav): "pop \(nav)"
            case .popToRoot(let nav): "pop \(nav) to its root"
            case .setStack(let nav, let keeping, let new): "\(nav).setViewControllers(first \(keeping) + \(new))"
            case .present(let new, let presenter, let style, let completion):
                "\(presenter) presents \(new) (.\(style))" + (completion.map { " with a completion (code \($0))" } ?? "")
            case .dismiss(let id, let completion):
                "dismiss from \(id)" + (completion.map { " with a completion (code \($0))" } ?? "")
            case .embed(let new, let parent): "embed \(new) in \(parent)"
            case .unembed(let id, let parent): "unembed \(id) from \(parent)"
            case .replaceWindow(let new): "application.window = Window(root: \(new))"
            case .replaceRoot(let new): "window.rootViewController = \(new)"
            case .removeWindow: "application.window = nil"
            case .removeRoot: "window.rootViewController = nil"
            case .request(.state(let target)): "request \(target)"
            case .request(.terminate): "request termination"
            case .request(.memoryWarning): "memory warning"
            case .request(.reload): "request reload"
            case .arm(let target, let callback, let code): "arm \(target).\(callback) (code \(code))"
            case .scheduleWork(let code): "schedule end-of-turn work (code \(code))"
            }
        }

        /// Whether the operation is a request (not a tree edit).
        var isRequest: Bool {
            if case .request = self { return true }
            return false
        }
    }

    /// An operation armed on a callback (``Operation/arm(target:callback:code:)``, end-of-turn work, a completion).
    struct Arm: Equatable {
        var serial: Int
        var target: String
        var callback: String
        var code: Int
    }

    private(set) var controllers: [String: Controller] = [:]
    private(set) var state = ApplicationState.active
    private(set) var isTerminated = false
    /// The current window's root controller.
    private(set) var root: String?
    /// Whether the application has a window (with a root or not).
    private(set) var hasWindow = true
    /// The current window's layers: its root, then presented controllers in presentation order.
    private var layers: [String] = []
    private var windowIsShown = true
    /// What waits for the end of the turn, in order: each view move's did-callbacks (its controllers in post-order),
    /// and end-of-turn work (an armed target).
    private enum TurnEndWork {
        case appearance(ids: [String], appearing: Bool, serial: Int)
        case work(target: String)
    }
    private var didCallbacks: [TurnEndWork] = []
    /// Appearances that began inside a controller whose own appearance was the last one scheduled, by that controller:
    /// their did-callbacks come right before its own (its bracket holds theirs).
    private var nestedAppearances: [String: [[String]]] = [:]
    /// The appearance transition scheduled last, until its did-callbacks run.
    private var lastAppearance: (ids: [String], appearing: Bool, serial: Int)?
    private var serial = 0
    /// Root views that left the window in push order: laid out once more after the visible ones.
    private var leavingLayouts: [String] = []
    /// Controllers that left the tree in this turn, released at its end with everything below them.
    private var departed: [String] = []
    /// The layers of windows (or roots) replaced in this turn, released at its end, each on its own; after a root's
    /// replacement each takes what it presents with it (the presentations between them were undone, so anything
    /// presented since hangs from its presenter alone).
    private var replacedLayers: [(layers: [String], takePresented: Bool)] = []

    // Re-entrancy.
    /// Identifiers of new controllers: `c3`, `c4`, …
    var nextID = 3
    /// The operations armed on callbacks that have not fired yet, in the order armed.
    private(set) var arms: [Arm] = []
    private var armSerial = 0
    /// The arms created by the last top-level operation (an arm, end-of-turn work, a completion).
    private(set) var newArms: [Arm] = []
    /// What each arm that fired made, by serial (nil: its code decoded to nothing then).
    private(set) var firings: [Int: Operation?] = [:]
    /// Moves in progress (an operation, a layout pass, termination's teardown): edits made meanwhile wait.
    private var moveDepth = 0
    private var pendingEdits: [(operation: Operation, cause: String)] = []
    private var isRunningPendingEdits = false
    /// The requests accepted and not run yet (held for the end of the turn, or queued behind a transition), in
    /// arrival order, and the one whose steps run now.
    private var requestQueue: [(request: ReferenceModel.Request, cause: String)] = []
    private var requestInFlight: ReferenceModel.Request?
    private var isRunningRequests = false
    private var isInEndOfTurn = false
    /// Termination's teardown runs: edits still apply (to a tree out of the window), until the tree is released.
    private(set) var isTearingDown = false
    /// Termination runs (its application events, `applicationWillTerminate`, the teardown): the stop's callbacks.
    var isStopping: Bool { requestInFlight == .terminate }
    /// Whether an edit that replaces or removes the window waits for a move in progress (an edit of the window's root
    /// made meanwhile would edit a window on its way out, which the model leaves out).
    var hasPendingWindowChange: Bool {
        pendingEdits.contains { edit in
            switch edit.operation {
            case .replaceWindow, .removeWindow: true
            default: false
            }
        }
    }
    /// The presenters of presentations that wait for a move in progress.
    var pendingPresenters: Set<String> {
        Set(pendingEdits.compactMap { if case .present(_, let presenter, _, _) = $0.operation { presenter } else { nil } })
    }

    /// The lines the trace must show in this turn, in order.
    private(set) var expected: [String] = []
    /// The controllers and root views released in this turn, one list per graph released at once.
    private(set) var expectedReleases: [[String]] = []

    /// The tree after launch: a plain root `r` embedding a navigation controller `c1` whose root is `c2`, all shown.
    init() {
        controllers["r"] = Controller(kind: .plain, keepsView: false, children: ["c1"], shown: ["c1"])
        controllers["c1"] = Controller(
            kind: .navigation,
            keepsView: false,
            parent: "r",
            children: ["c2"],
            superview: "r",
            shown: ["c2"]
        )
        controllers["c2"] = Controller(kind: .plain, keepsView: false, parent: "c1", superview: "c1")
        for id in ["r", "c1", "c2"] {
            controllers[id]!.isLoaded = true
            controllers[id]!.isInWindow = true
            controllers[id]!.appearance = .appeared
        }
        root = "r"
        layers = ["r"]
    }

    private subscript(id: String) -> Controller {
        get { controllers[id]! }
        set { controllers[id] = newValue }
    }

    // MARK: Reading the model

    /// The controllers reachable from the window's root, pre-order: a controller, its children, what it presents.
    func preOrder() -> [String] {
        var list: [String] = []
        func visit(_ id: String) {
            list.append(id)
            for child in self[id].children { visit(child) }
            if let presented = self[id].presented { visit(presented) }
        }
        // The teardown's callbacks still see the tree they are torn down with.
        if let root, !isTerminated || isTearingDown { visit(root) }
        return list
    }

    /// The trace path of a controller in the tree: its container's or presenter's path, `/`, its identifier.
    func path(_ id: String) -> String {
        if let parent = self[id].parent { return path(parent) + "/" + id }
        if let presenter = self[id].presenter { return path(presenter) + "/" + id }
        return id
    }

    /// The layers whose views are in the window: from the last full-screen one up.
    private var visibleLayers: [String] {
        guard windowIsShown, !layers.isEmpty else { return [] }
        let start = layers.lastIndex { $0 == root || self[$0].style == .fullScreen } ?? 0
        return Array(layers[start...])
    }

    /// Whether a controller's root view is in the window.
    func isInWindow(_ id: String) -> Bool {
        controllers[id]?.isInWindow ?? false
    }

    /// Whether a controller's root view should be in the window once the turn settled: it is a visible layer, or a
    /// subview of a view that is (a check of the model itself).
    private func belongsInWindow(_ id: String) -> Bool {
        guard let controller = controllers[id], controller.isLoaded, windowIsShown else { return false }
        if visibleLayers.contains(id) { return true }
        return controller.superview.map(belongsInWindow) ?? false
    }

    /// The controllers whose root views lie in this controller's view subtree, pre-order (will-callbacks).
    private func subtreePreOrder(_ id: String) -> [String] {
        [id] + self[id].shown.flatMap(subtreePreOrder)
    }

    /// The same, post-order (did-callbacks: children before their parent).
    private func subtreePostOrder(_ id: String) -> [String] {
        self[id].shown.flatMap(subtreePostOrder) + [id]
    }

    /// Everything that goes when `id` leaves the tree: its children and what it presents, recursively.
    private func closure(_ id: String) -> [String] {
        [id] + self[id].children.flatMap(closure) + (self[id].presented.map(closure) ?? [])
    }

    private func presentationChain(from id: String) -> [String] {
        var chain = [id]
        while let next = self[chain.last!].presented { chain.append(next) }
        return chain
    }

    /// Which presentation `dismiss(animated:)` called on `id` dismisses: the nearest controller, going up through
    /// the containers, that presents (its presentation) or is presented (itself); nil when there is none.
    func presentationDismissed(from id: String) -> (presenter: String, dismissed: String)? {
        var node = id
        while self[node].presented == nil, self[node].presenter == nil, let parent = self[node].parent { node = parent }
        if let presented = self[node].presented { return (node, presented) }
        if let presenter = self[node].presenter { return (presenter, node) }
        return nil
    }

    /// A readable picture of the tree and the layers, for failure messages.
    var treeDescription: String {
        func describe(_ id: String) -> String {
            let node = self[id]
            var text = id
            if node.kind == .navigation { text += "(nav)" }
            if node.keepsView { text += "(keeps)" }
            if !node.isLoaded { text += "(unloaded)" }
            if !node.children.isEmpty { text += "[" + node.children.map(describe).joined(separator: " ") + "]" }
            if let presented = node.presented {
                text += " presents{.\(self[presented].style) " + describe(presented) + "}"
            }
            return text
        }
        guard let root, !isTerminated else { return "(terminated)" }
        return describe(root) + "; state \(state); visible layers \(visibleLayers)"
    }

    // MARK: Appearance transitions

    private mutating func emit(_ line: String) { expected.append(line) }

    /// A will-callback, unless the controller already moves that way (a view re-entering within the turn).
    private mutating func begin(_ id: String, appearing: Bool) {
        switch (appearing, self[id].appearance) {
        case (true, .disappeared), (true, .disappearing):
            self[id].appearance = .appearing
            emit("\(id) viewWillAppear")
            fire(id, "viewWillAppear")
        case (false, .appeared), (false, .appearing):
            self[id].appearance = .disappearing
            emit("\(id) viewWillDisappear")
            fire(id, "viewWillDisappear")
        default:
            break
        }
    }

    /// A did-callback at the end of the turn, unless a later will-callback reversed the transition.
    private mutating func end(_ id: String, appearing: Bool) {
        guard controllers[id] != nil else { return }
        switch (appearing, self[id].appearance) {
        case (true, .appearing):
            self[id].appearance = .appeared
            emit("\(id) viewDidAppear")
            fire(id, "viewDidAppear")
        case (false, .disappearing):
            self[id].appearance = .disappeared
            emit("\(id) viewDidDisappear")
            fire(id, "viewDidDisappear")
        default:
            break
        }
    }

    /// A view subtree enters or leaves the window: will-callbacks now in pre-order, did-callbacks at the end of the
    /// turn in post-order (so a parent's bracket holds its children's). A subtree entering the view of a controller
    /// whose appearance is the last one scheduled appears inside that controller's bracket.
    private mutating func move(_ id: String, appearing: Bool, inside container: String? = nil) {
        let post = subtreePostOrder(id)
        for controller in subtreePreOrder(id) { begin(controller, appearing: appearing) }
        for controller in post { self[controller].isInWindow = appearing }
        if appearing, let container, self[container].appearance == .appearing, let last = lastAppearance,
            last.appearing, last.ids.contains(container)
        {
            nestedAppearances[container, default: []].append(post)
        }
        serial += 1
        lastAppearance = (post, appearing, serial)
        didCallbacks.append(.appearance(ids: post, appearing: appearing, serial: serial))
    }

    /// The did-callback of one controller of a scheduled transition, after those of the appearances nested in it.
    private mutating func finish(_ id: String, appearing: Bool) {
        if let nested = nestedAppearances.removeValue(forKey: id) {
            for inner in nested.joined() { finish(inner, appearing: true) }
        }
        end(id, appearing: appearing)
    }

    // MARK: The view tree

    /// The first access to `view`: `loadView`, then `viewDidLoad`; a plain container embeds its children's views
    /// from `viewDidLoad`, a navigation controller its top's view before it.
    private mutating func load(_ id: String) {
        guard !self[id].isLoaded else { return }
        emit("\(id) loadView")
        self[id].isLoaded = true
        self[id].needsLayout = true
        self[id].isInWindow = false
        self[id].shown = []
        switch self[id].kind {
        case .plain:
            emit("\(id) viewDidLoad")
            for child in self[id].children {
                load(child)
                addSubview(child, to: id)
            }
        case .navigation:
            if let top = self[id].children.last {
                load(top)
                addSubview(top, to: id)
            }
            emit("\(id) viewDidLoad")
        }
    }

    /// `addSubview`: the superview is marked for layout; a subtree entering the window appears.
    private mutating func addSubview(_ id: String, to superview: String) {
        if self[superview].shown.contains(id) {
            // Already its subview: moved to the front, nothing enters the window.
            self[superview].shown.removeAll { $0 == id }
            self[superview].shown.append(id)
            self[superview].needsLayout = true
            return
        }
        let entersWindow = isInWindow(superview)
        self[superview].shown.append(id)
        self[id].superview = superview
        self[superview].needsLayout = true
        if entersWindow { move(id, appearing: true, inside: superview) }
    }

    /// `removeFromSuperview`: the superview is marked for layout; a subtree leaving the window disappears. Returns
    /// whether it was in the window.
    @discardableResult
    private mutating func removeFromSuperview(_ id: String) -> Bool {
        guard let superview = self[id].superview else { return false }
        let leavesWindow = isInWindow(id)
        if leavesWindow { move(id, appearing: false) }
        self[superview].shown.removeAll { $0 == id }
        self[id].superview = nil
        self[superview].needsLayout = true
        return leavesWindow
    }

    // MARK: Operations

    private mutating func create(_ new: NewController) {
        if let rootID = new.navigationRoot {
            controllers[new.id] = Controller(kind: .navigation, keepsView: new.keepsView, children: [rootID])
            controllers[rootID] = Controller(kind: .plain, keepsView: false, parent: new.id)
        } else {
            controllers[new.id] = Controller(kind: .plain, keepsView: new.keepsView)
        }
    }

    /// Starts a turn: what the previous one expected is forgotten.
    mutating func beginTurn() {
        expected = []
        expectedReleases = []
    }

    /// Applies one operation made from outside any callback: its immediate callbacks now, its deferred ones at
    /// ``endTurn()``.
    mutating func apply(_ operation: Operation, cause: String) {
        newArms = []
        guard !isTerminated else { return }
        switch operation {
        case .arm(let target, let callback, let code):
            _ = arm(target: target, callback: callback, code: code)
        case .scheduleWork(let code):
            scheduleWork(code: code)
        case .request(let request):
            submit(request, cause: cause)
        default:
            edit(operation, cause: cause)
        }
    }

    private mutating func arm(target: String, callback: String, code: Int) -> Arm {
        armSerial += 1
        let arm = Arm(serial: armSerial, target: target, callback: callback, code: code)
        arms.append(arm)
        newArms.append(arm)
        return arm
    }

    /// End-of-turn work (or a completion) that makes the operation `code` decodes to when it runs.
    private mutating func scheduleWork(code: Int) {
        let work = arm(target: "work#\(armSerial + 1)", callback: "work", code: code)
        didCallbacks.append(.work(target: work.target))
    }

    /// A callback fired: the operation armed on it, if any, is decoded now and made from inside it.
    private mutating func fire(_ target: String, _ callback: String) {
        guard !arms.isEmpty, let index = arms.firstIndex(where: { $0.target == target && $0.callback == callback })
        else { return }
        let arm = arms.remove(at: index)
        var next = nextID
        let operation = AppearanceGenerator.injected(code: arm.code, model: self, nextID: &next)
        nextID = next
        firings[arm.serial] = .some(operation)
        guard let operation else { return }
        let cause = "nested:\(arm.serial)"
        if case .request(let request) = operation {
            submit(request, cause: cause)
        } else {
            edit(operation, cause: cause)
        }
    }

    /// A tree edit: now, as a move of its own, or, during a move, once the outermost one is over.
    private mutating func edit(_ operation: Operation, cause: String) {
        guard !isTerminated || isTearingDown else { return }
        if moveDepth > 0 {
            pendingEdits.append((operation, cause))
            return
        }
        moveDepth += 1
        applyEdit(operation)
        moveDepth -= 1
        runPendingEdits()
    }

    /// The edits made during the moves that just ended, in order; what theirs make runs after them.
    private mutating func runPendingEdits() {
        guard moveDepth == 0, !isRunningPendingEdits else { return }
        isRunningPendingEdits = true
        while !pendingEdits.isEmpty {
            let (operation, _) = pendingEdits.removeFirst()
            moveDepth += 1
            applyEdit(operation)
            moveDepth -= 1
        }
        isRunningPendingEdits = false
    }

    /// A request: queued behind the transition that runs, held for the end of the turn when made during a move or
    /// from end-of-turn work, run at once otherwise; folded or dropped as §1 says.
    private mutating func submit(_ request: ReferenceModel.Request, cause: String) {
        guard !isTerminated else { return }
        let terminating = requestInFlight == .terminate || requestQueue.contains { $0.request == .terminate }
        let folded = switch request {
        case .memoryWarning:
            requestInFlight == .memoryWarning || requestQueue.contains { $0.request == .memoryWarning }
        case .reload:
            requestQueue.contains { $0.request == .reload }
        default:
            false
        }
        if !terminating, !folded { requestQueue.append((request, cause)) }
        // From outside, whatever became of it: the requests that wait run now, in arrival order.
        guard !isRunningRequests, moveDepth == 0, !isInEndOfTurn, !requestQueue.isEmpty else { return }
        runRequests()
    }

    /// Runs the requests accepted, in arrival order, and those their callbacks make.
    private mutating func runRequests() {
        guard !isRunningRequests else { return }
        isRunningRequests = true
        while !requestQueue.isEmpty {
            let (request, cause) = requestQueue.removeFirst()
            requestInFlight = request
            run(request, cause: cause)
            requestInFlight = nil
        }
        isRunningRequests = false
    }

    /// Whether the model is inside a move (an operation, a pass) — for the generator, which decodes what an armed
    /// callback makes.
    var isMoving: Bool { moveDepth > 0 }

    private func isInTree(_ id: String) -> Bool {
        preOrder().contains(id)
    }

    private mutating func applyEdit(_ operation: Operation) {
        guard !isTerminated || isTearingDown else { return }
        switch operation {
        case .push(let new, let nav):
            changeStack(of: nav, keeping: self[nav].children.count, adding: new)
        case .pop(let nav):
            guard self[nav].children.count > 1 else { return }
            changeStack(of: nav, keeping: self[nav].children.count - 1)
        case .popToRoot(let nav):
            guard self[nav].children.count > 1 else { return }
            changeStack(of: nav, keeping: 1)
        case .setStack(let nav, let keeping, let new):
            changeStack(of: nav, keeping: keeping, adding: new)
        case .present(let new, let presenter, let style, let completion):
            create(new)
            self[new.id].style = style
            let inTree = isInTree(presenter)
            self[presenter].presented = new.id
            self[new.id].presenter = presenter
            load(new.id)
            // A presenter out of the window's tree (it left while the presentation waited) only links it.
            if inTree {
                let covered = style == .fullScreen ? visibleLayers : []
                layers.append(new.id)
                if windowIsShown {
                    for layer in covered where self[layer].isLoaded {
                        move(layer, appearing: false)
                        // Push order: the covered controller is laid out once more before it disappears.
                        self[layer].needsLayout = true
                        leavingLayouts.append(layer)
                    }
                    move(new.id, appearing: true)
                }
            }
            if let completion { scheduleWork(code: completion) }
        case .dismiss(let id, let completion):
            if dismiss(from: id), let completion { scheduleWork(code: completion) }
        case .embed(let new, let parent):
            create(new)
            self[parent].children.append(new.id)
            self[new.id].parent = parent
            load(parent)
            load(new.id)
            addSubview(new.id, to: parent)
        case .unembed(let id, let parent):
            guard self[id].parent == parent else { return }
            removeFromSuperview(id)
            self[parent].children.removeAll { $0 == id }
            self[id].parent = nil
            dismissPresentations(inSubtreeOf: id)
            departed.append(id)
        case .replaceWindow(let new):
            create(new)
            replaceContent(with: new.id, isRoot: false)
        case .replaceRoot(let new):
            // `application.window?.rootViewController = …`: nothing (no controller is made) without a window.
            guard hasWindow else { return }
            create(new)
            replaceContent(with: new.id, isRoot: true)
        case .removeWindow:
            replaceContent(with: nil, isRoot: false)
        case .removeRoot:
            guard hasWindow else { return }
            replaceContent(with: nil, isRoot: true)
        case .request, .arm, .scheduleWork:
            preconditionFailure("not a tree edit: \(operation)")
        }
    }

    /// The window (or its root) is replaced or removed: the old content disappears, the new root appears if the
    /// window shows (during the teardown it does not, and the new root is not even loaded); the old layers go at the
    /// end of the turn, each on its own (the window, or the root's replacement, holds every layer). A replaced root
    /// leaves the tree: what it, or anything below it, presents is undone (the layers are gone with it).
    private mutating func replaceContent(with new: String?, isRoot: Bool) {
        let leaving = visibleLayers
        if isRoot, let oldRoot = root {
            for node in closure(oldRoot) {
                guard let presented = self[node].presented else { continue }
                self[node].presented = nil
                self[presented].presenter = nil
            }
        }
        replacedLayers.append((layers, isRoot))
        root = new
        layers = new.map { [$0] } ?? []
        // A window whose root is removed stays, empty.
        hasWindow = new != nil || isRoot
        for layer in leaving where self[layer].isLoaded { move(layer, appearing: false) }
        if let new, windowIsShown {
            load(new)
            move(new, appearing: true)
        }
    }

    /// A navigation call: the stack changes at once (the controllers above the first `keeping` leave it, a new one
    /// joins on top), then each controller that left dismisses what it presents (bottom first), then the navigation
    /// controller shows its new top (push order when the top is new).
    private mutating func changeStack(of nav: String, keeping: Int, adding new: NewController? = nil) {
        let removed = self[nav].children.dropFirst(keeping)
        self[nav].children.removeLast(removed.count)
        for id in removed { self[id].parent = nil }
        if let new {
            create(new)
            self[nav].children.append(new.id)
            self[new.id].parent = nav
        }
        // What the removed controllers present leaves first; what that uncovers comes back once the stack shows its
        // new top, so no removed controller shows again.
        for id in removed {
            dismissPresentations(inSubtreeOf: id, revealing: false)
            departed.append(id)
        }
        showTop(of: nav, pushing: new != nil)
        revealUncoveredLayers()
    }

    /// A navigation controller shows its top: the top's view is loaded, the view it showed leaves (laid out once more
    /// when pushing), the top's enters. Nothing happens while the navigation controller's own view is not loaded.
    private mutating func showTop(of nav: String, pushing: Bool) {
        guard self[nav].isLoaded else { return }
        let top = self[nav].children.last!
        load(top)
        for shown in self[nav].shown where shown != top {
            if removeFromSuperview(shown), pushing {
                self[shown].needsLayout = true
                leavingLayouts.append(shown)
            }
        }
        if !self[nav].shown.contains(top) { addSubview(top, to: nav) }
    }

    /// `dismiss(animated:)` called on `id`: the presented controller and what it presents leave the window (and the
    /// tree); the layers they covered appear again, their views loaded first if a memory warning released them (the
    /// hand-off: the incoming prepares before the outgoing stops, as a pop does).
    ///
    /// The dismissed hierarchy takes with it everything presented inside it (by it, by what it presents, by its
    /// children). With `revealing` false (a navigation call), the uncovered layers come back only once the stack shows
    /// its new top (``revealUncoveredLayers()``).
    @discardableResult
    private mutating func dismiss(from id: String, revealing: Bool = true) -> Bool {
        guard let (presenter, dismissed) = presentationDismissed(from: id) else { return false }
        let hierarchy = closure(dismissed)
        let before = visibleLayers
        let removed = layers.filter(hierarchy.contains)
        layers.removeAll(where: hierarchy.contains)
        if windowIsShown {
            for layer in visibleLayers where !before.contains(layer) { load(layer) }
            for layer in removed where before.contains(layer) && self[layer].isLoaded { move(layer, appearing: false) }
            if revealing { revealUncoveredLayers() }
        }
        // Every presentation inside is undone; each presented controller is then released on its own.
        for node in hierarchy {
            guard let presented = self[node].presented else { continue }
            self[node].presented = nil
            self[presented].presenter = nil
            departed.append(presented)
        }
        self[presenter].presented = nil
        self[dismissed].presenter = nil
        departed.append(dismissed)
        return true
    }

    /// The visible layers whose views are not in the window come back (what a dismissal uncovered).
    private mutating func revealUncoveredLayers() {
        guard windowIsShown else { return }
        for layer in visibleLayers where !isInWindow(layer) {
            load(layer)
            move(layer, appearing: true)
        }
    }

    /// A controller left the tree: what it, or anything below it, presents is dismissed.
    private mutating func dismissPresentations(inSubtreeOf id: String, revealing: Bool = true) {
        if self[id].presented != nil { dismiss(from: id, revealing: revealing) }
        for child in self[id].children { dismissPresentations(inSubtreeOf: child, revealing: revealing) }
    }

    // MARK: Application events (§1, §2) and memory warnings (§3)

    private static let entering: Set<String> = [
        "applicationWillEnterForeground", "applicationDidBecomeActive", "applicationDidReload",
    ]

    /// One application event down the tree (§2): entering ones delegate first then pre-order, leaving ones the reverse
    /// then the delegate; after each controller's memory warning, its view may go.
    private mutating func deliver(
        _ event: String,
        controllerEvent: String? = nil,
        firing: ApplicationState,
        cause: String
    ) {
        // The list is taken when the event starts: a controller added by a callback gets the next one.
        let tree = preOrder()
        let delegateLine = "delegate \(event)@\(firing) \(cause)"
        if Self.entering.contains(event) {
            emit(delegateLine)
            fire("delegate", event)
            for id in tree {
                emit("\(id) \(controllerEvent ?? event)@\(firing) \(cause)")
                fire(id, controllerEvent ?? event)
            }
        } else {
            for id in tree.reversed() {
                emit("\(id) \(controllerEvent ?? event)@\(firing) \(cause)")
                fire(id, controllerEvent ?? event)
                if event == "applicationDidReceiveMemoryWarning" { releaseViewAfterMemoryWarning(id) }
            }
            emit(delegateLine)
            fire("delegate", event)
        }
    }

    private mutating func run(_ request: ReferenceModel.Request, cause: String) {
        switch request {
        case .state(let target):
            for (callback, firing, after) in ReferenceModel.path(from: state, to: target) {
                deliver(callback, firing: firing, cause: cause)
                state = after
            }
        case .terminate:
            for (callback, firing, after) in ReferenceModel.path(from: state, to: .background) {
                deliver(callback, firing: firing, cause: cause)
                state = after
            }
            deliver("applicationWillTerminate", firing: .background, cause: cause)
            state = .terminated
            tearDown()
        case .memoryWarning:
            deliver(
                "applicationDidReceiveMemoryWarning",
                controllerEvent: "didReceiveMemoryWarning",
                firing: state,
                cause: cause
            )
        case .reload:
            deliver("applicationWillReload", firing: state, cause: cause)
            deliver("applicationDidReload", firing: state, cause: cause)
        }
    }

    /// After its `didReceiveMemoryWarning`, a controller whose view is loaded, not in the window, without a superview,
    /// and fully disappeared lets it go (unless it keeps it): the view is released; the views of its children that
    /// keep theirs are left without a superview.
    private mutating func releaseViewAfterMemoryWarning(_ id: String) {
        let node = self[id]
        // As UIKit did: only a view without a superview is released (one embedded in a parent's view goes with it).
        guard node.isLoaded, !node.keepsView, node.appearance == .disappeared, !isInWindow(id), node.superview == nil
        else { return }
        emit("\(id).view deinit")
        for child in node.shown { self[child].superview = nil }
        self[id].shown = []
        self[id].isLoaded = false
        self[id].isInWindow = false
        self[id].needsLayout = false
    }

    /// Termination, after `applicationWillTerminate`: every visible controller disappears (one move: what its
    /// callbacks edit waits for it, then applies to a tree out of the window, where nothing appears), the turn ends
    /// (what left the tree during the stop, a window `applicationWillTerminate` let go of included, finishes
    /// disappearing and goes), then the window's layers are released — all before the host hears "terminated".
    private mutating func tearDown() {
        isTerminated = true
        isTearingDown = true
        let visible = visibleLayers
        windowIsShown = false
        moveDepth += 1
        for layer in visible where self[layer].isLoaded { move(layer, appearing: false) }
        moveDepth -= 1
        runPendingEdits()
        endTurn()
        releaseLayers(layers, takePresented: false)
        layers = []
        root = nil
        hasWindow = false
        isTearingDown = false
    }

    // MARK: The end of a turn (§4)

    /// The layout pass (again while it leaves marks: what its callbacks edit waits for it, then is laid out before
    /// the did-callbacks), then the did-callbacks and end-of-turn work in the order scheduled, again while they
    /// schedule more; then the requests made meanwhile, and what their transitions defer; then the releases.
    mutating func endTurn() {
        let outer = isInEndOfTurn
        repeat {
            isInEndOfTurn = true
            repeat {
                repeat {
                    moveDepth += 1
                    layoutPass()
                    moveDepth -= 1
                    runPendingEdits()
                } while hasLayoutWork
                let batch = didCallbacks
                didCallbacks = []
                for work in batch {
                    switch work {
                    case .appearance(let ids, let appearing, let serial):
                        if lastAppearance?.serial == serial { lastAppearance = nil }
                        for id in ids { finish(id, appearing: appearing) }
                    case .work(let target):
                        fire(target, "work")
                    }
                }
            } while !didCallbacks.isEmpty || hasLayoutWork
            isInEndOfTurn = outer
            // Nested in a transition (termination's own end of turn), the transition's loop runs what waits.
            if !outer, !isRunningRequests, !requestQueue.isEmpty { runRequests() }
        } while !outer && !isRunningRequests && (!didCallbacks.isEmpty || !requestQueue.isEmpty)
        for id in departed where controllers[id] != nil { expectedReleases.append(release(id, withPresented: true)) }
        departed = []
        for (replaced, takePresented) in replacedLayers { releaseLayers(replaced, takePresented: takePresented) }
        replacedLayers = []
    }

    /// Whether a layout pass has something to lay out: a marked view in the window, a view that left in push order.
    private var hasLayoutWork: Bool {
        guard root != nil, windowIsShown else { return !leavingLayouts.isEmpty }
        func marked(_ id: String) -> Bool { self[id].needsLayout || self[id].shown.contains(where: marked) }
        return !leavingLayouts.isEmpty || visibleLayers.contains { self[$0].isLoaded && marked($0) }
    }

    /// One pass, top-down over the visible layers (a marked root view is wrapped in its controller's
    /// `viewWillLayoutSubviews`/`viewDidLayoutSubviews`), then the views that left in push order, if still marked
    /// and out of the window.
    private mutating func layoutPass() {
        // Without a window (termination's delegate let go of it) the views that left in push order are still laid out.
        for layer in visibleLayers { layOut(layer) }
        let leaving = leavingLayouts
        leavingLayouts = []
        for id in leaving where controllers[id] != nil && self[id].isLoaded && self[id].needsLayout && !isInWindow(id) {
            layOut(id)
        }
    }

    private mutating func layOut(_ id: String) {
        if self[id].needsLayout {
            self[id].needsLayout = false
            emit("\(id) viewWillLayoutSubviews")
            fire(id, "viewWillLayoutSubviews")
            emit("\(id) viewDidLayoutSubviews")
            fire(id, "viewDidLayoutSubviews")
        }
        for child in self[id].shown { layOut(child) }
    }

    /// Releases a window's layers (or a replaced root's), each graph on its own. Unless the graphs take what they
    /// present, what is presented goes as a layer of its own, after the others when it is not one yet: presented from
    /// the content of a window once that window had left the application (during the stop), it joined that window.
    private mutating func releaseLayers(_ layers: [String], takePresented: Bool) {
        var queue = layers
        var index = 0
        while index < queue.count {
            let layer = queue[index]
            index += 1
            guard controllers[layer] != nil else { continue }
            if !takePresented {
                var nodes = [layer]
                while let node = nodes.popLast() {
                    nodes += self[node].children
                    if let presented = self[node].presented, !queue.contains(presented) { queue.append(presented) }
                }
            }
            expectedReleases.append(release(layer, withPresented: takePresented))
        }
    }

    /// A released controller: its `deinit`, then its view's, then its children, then (when it holds it alone) what
    /// it presents. Removes them from the model.
    private mutating func release(_ id: String, withPresented: Bool) -> [String] {
        let node = self[id]
        var lines = ["\(id) deinit"]
        if node.isLoaded { lines.append("\(id).view deinit") }
        controllers[id] = nil
        for child in node.children { lines += release(child, withPresented: withPresented) }
        if withPresented, let presented = node.presented { lines += release(presented, withPresented: true) }
        return lines
    }

    // MARK: Checks of the model itself

    /// After a turn, a controller's view is in the window exactly when the layers and the view tree put it there,
    /// and the controller has appeared exactly then.
    func inconsistencies() -> [String] {
        controllers.keys.sorted().compactMap { id in
            let node = self[id]
            guard node.isInWindow == belongsInWindow(id), (node.appearance == .appeared) == node.isInWindow else {
                return "\(id): appearance \(node.appearance), view in window \(node.isInWindow), "
                    + "belongs there \(belongsInWindow(id))"
            }
            return nil
        }
    }
}
