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

// Presentation (docs/lifecycle.md §3): a controller shown over another one, and its dismissal, with what either does
// to the window's layers; and what happens to the presentations of a subtree that joins or leaves the tree.
extension ViewController {
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
}
