//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// A stack of controllers, the top one on screen, as UIKit's navigation controller.
///
/// Pushing B over A: `B.loadView → B.viewDidLoad → A.viewWillDisappear → B.viewWillAppear → (layout of B) →
/// A.viewDidDisappear → B.viewDidAppear`. Popping B: `B.viewWillDisappear → A.viewWillAppear →
/// B.viewDidDisappear → A.viewDidAppear → B.deinit`. Every controller on the stack is a child and receives the
/// application events, visible or not.
@MainActor
open class NavigationController: ViewController {
    /// The stack, bottom first; the same controllers as ``ViewController/children``.
    public var viewControllers: [ViewController] { children }

    /// The controller on top of the stack.
    public var topViewController: ViewController? { children.last }

    /// Creates a navigation controller with a root controller.
    public init(rootViewController: ViewController, identifier: String? = nil) {
        super.init(identifier: identifier)
        addChildNow(rootViewController)
        rootViewController.notifyDidMove(toParent: self)
    }

    /// Creates an empty navigation controller.
    public override init(identifier: String? = nil) {
        super.init(identifier: identifier)
    }

    /// Decodes a navigation controller; its archived children become the stack.
    public required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    open override func loadView() {
        view = View(name: "view")
    }

    override func embeddedChildViewsOnLoad() -> [ViewController] {
        topViewController.map { [$0] } ?? []
    }

    /// Pops made while a move is in progress that have not run yet: a pop returns the controller it will pop.
    private var waitingPops = 0

    /// Runs `edit` now (a move of its own), or, made while a move is in progress in the application's tree (from a
    /// callback of one), once that move is over (docs/lifecycle.md, "Re-entrancy"); false when it waits.
    private func edit(with other: ViewController? = nil, _ edit: @escaping @MainActor () -> Void) -> Bool {
        TreeEdits.edit(
            in: (application ?? other?.application)?.edits,
            touchingWindow: viewIfLoaded?.window != nil,
            again: { [self] in _ = self.edit(with: other, edit) },
            now: edit
        )
    }

    /// Pushes a controller on top of the stack; it appears and the previous top disappears. Pushing one that is on
    /// the stack already, or elsewhere in the tree, is a programming error, stopped with a message naming both paths.
    public func pushViewController(_ controller: ViewController, animated: Bool) {
        _ = edit(with: controller) { [self] in pushViewControllerNow(controller, animated: animated) }
    }

    func pushViewControllerNow(_ controller: ViewController, animated: Bool) {
        if children.contains(where: { $0 === controller }) {
            preconditionFailure("cannot push \(controller.path) onto \(path): it is already on the stack")
        }
        addChildNow(controller)
        // Weak: the completion keeps neither alive; a stack that leaves the tree in this turn releases both in order.
        transition(to: controller, animated: animated, pushing: true) { [weak self, weak controller] in
            // Unless it was popped again in the same turn (or this controller left meanwhile).
            if let self, let controller, controller.parent === self { controller.notifyDidMove(toParent: self) }
        }
    }

    /// Pops the top controller; the one below appears. Returns the popped controller (released once the
    /// transition is over if nobody else holds it). The root controller is never popped.
    ///
    /// The popped controller leaves the stack at once (a second pop in the same turn pops the next one); its
    /// `didMove(toParent: nil)` comes at the end of the turn, after the one below appeared.
    ///
    /// Made while a move is in progress (from a callback of one), the pop waits until that move is over; it returns
    /// the controller it will pop then, unless another waiting edit changes the stack first.
    @discardableResult
    public func popViewController(animated: Bool) -> ViewController? {
        let expected = children.count - waitingPops > 1 ? children[children.count - 1 - waitingPops] : nil
        waitingPops += 1
        var popped: ViewController?
        let ranNow = edit { [self] in
            waitingPops -= 1
            popped = popViewControllerNow(animated: animated)
        }
        return ranNow ? popped : expected
    }

    @discardableResult
    func popViewControllerNow(animated: Bool) -> ViewController? {
        guard children.count > 1, let top = topViewController else { return nil }
        top.notifyWillMove(toParent: nil)
        top.detachFromParent()
        // What the popped hierarchy presents leaves first (the topmost goes first); what that uncovers is shown only
        // once this stack shows its new top, so the popped controller never comes back on screen.
        top.dismissPresentationsInSubtree(revealing: false)
        transition(to: topViewController, animated: animated, pushing: false) {
            // Unless it was pushed again in the same turn.
            if top.parent == nil { top.notifyDidMove(toParent: nil) }
            withExtendedLifetime(top) {}
        }
        (window ?? application?.window)?.revealUncoveredLayers()
        return top
    }

    /// Pops every controller above the root; the root appears. Returns the popped controllers (made while a move is
    /// in progress, the ones above the root now: the pop waits until the move is over).
    @discardableResult
    public func popToRootViewController(animated: Bool) -> [ViewController]? {
        let expected = children.count > 1 ? Array(children.dropFirst()) : nil
        var popped: [ViewController]?
        let ranNow = edit { [self] in
            guard children.count > 1 else { return }
            popped = setStack(Array(children.prefix(1)), animated: animated)
        }
        return ranNow ? popped : expected
    }

    /// Replaces the stack; if the top changes, the new top appears (push order if it is new, pop order if it was
    /// on the stack). Listing a controller twice, or one that is elsewhere in the tree, is a programming error,
    /// stopped with a message naming both paths.
    public func setViewControllers(_ controllers: [ViewController], animated: Bool) {
        _ = edit(with: controllers.last) { [self] in setStack(controllers, animated: animated) }
    }

    /// Replaces the stack now; `bringingPresentations`: the new controllers may present (a storyboard's stack).
    @discardableResult
    func setStack(_ controllers: [ViewController], animated: Bool, bringingPresentations: Bool = false) -> [ViewController] {
        var positions: [ObjectIdentifier: Int] = [:]
        for (index, controller) in controllers.enumerated() {
            if let first = positions.updateValue(index, forKey: ObjectIdentifier(controller)) {
                preconditionFailure("cannot set the stack of \(path): it lists \(controller.path) twice (at \(first) and \(index))")
            }
        }
        let old = children
        let oldIDs = Set(old.map(ObjectIdentifier.init))
        let newIDs = Set(controllers.map(ObjectIdentifier.init))
        let removed = old.filter { !newIDs.contains(ObjectIdentifier($0)) }
        let added = controllers.filter { !oldIDs.contains(ObjectIdentifier($0)) }
        for controller in removed { controller.notifyWillMove(toParent: nil) }
        // Every removed controller leaves the stack before anything else happens: no dismissal below may show one.
        for controller in removed { controller.detachFromParent() }
        for controller in added { addChildNow(controller, bringingPresentations: bringingPresentations) }
        reorderChildren(controllers)
        // The stack is final now: what the removed controllers present leaves (what that uncovers shows this stack's
        // new top, and only once the views have moved).
        for controller in removed { controller.dismissPresentationsInSubtree(revealing: false) }
        // Push order when the new top is new, pop order when it was on the stack.
        let pushing = topViewController.map { !oldIDs.contains(ObjectIdentifier($0)) } ?? false
        // The removed controllers live until their did-callbacks ran; the added ones are the stack's to keep.
        let joined = added.map { WeakController($0) }
        transition(to: topViewController, animated: animated, pushing: pushing) { [weak self] in
            // Each finishes its move unless a later change in the same turn moved it again.
            for controller in removed where controller.parent == nil { controller.notifyDidMove(toParent: nil) }
            guard let self else { return }
            for controller in joined.compactMap(\.controller) where controller.parent === self {
                controller.notifyDidMove(toParent: self)
            }
            withExtendedLifetime(removed) {}
        }
        (window ?? application?.window)?.revealUncoveredLayers()
        return removed
    }

    /// Shows `incoming` in this controller's view: whatever controller view it shows now leaves (the view moves
    /// drive the appearance callbacks), the incoming view enters, and `completion` runs at the end of the turn
    /// after the did-callbacks.
    private func transition(
        to incoming: ViewController?,
        animated: Bool,
        pushing: Bool,
        completion: @escaping @MainActor () -> Void
    ) {
        guard let container = viewIfLoaded else {
            // Not loaded: nothing is shown; the top's view is embedded when this controller's view loads. What the
            // completion keeps (the controllers that left the stack) still lives until the end of the turn (§3).
            completion()
            application?.scheduleTurnEndWork { withExtendedLifetime(completion) {} }
            return
        }
        incoming?.lastTransitionAnimated(animated)
        incoming?.loadViewIfNeeded()
        for shown in container.subviews where shown.viewController != nil && shown !== incoming?.viewIfLoaded {
            shown.viewController?.lastTransitionAnimated(animated)
            let wasInWindow = shown.window != nil
            shown.removeFromSuperviewNow()
            if pushing, wasInWindow { application?.layOutBeforeLeaving(shown) }
        }
        if let incoming, incoming.view.superview !== container {
            container.insertSubviewNow(incoming.view, at: container.subviews.count)
        }
        if let application {
            application.scheduleTurnEndWork(completion)
        } else {
            completion()
        }
    }
}

/// A controller held weakly, for work that must not keep it alive.
@MainActor
struct WeakController {
    weak var controller: ViewController?

    init(_ controller: ViewController) {
        self.controller = controller
    }
}
