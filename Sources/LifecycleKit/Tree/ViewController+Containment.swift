//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// Containment (docs/lifecycle.md §3): a controller's children, added and removed as in UIKit or embedded in one step,
// and the walks over the tree of controllers that these moves and the application events make. The callbacks a
// subclass overrides, `willMove(toParent:)` and `didMove(toParent:)`, are declared with the class.
extension ViewController {
    /// The nearest navigation controller above this one.
    public var navigationController: NavigationController? {
        var node = parent
        while let current = node {
            if let navigation = current as? NavigationController { return navigation }
            node = current.parent
        }
        return nil
    }

    /// Adds a child controller; calls `child.willMove(toParent: self)`. Add its view, then call
    /// `child.didMove(toParent: self)`.
    ///
    /// A controller is in the tree once: adding one that already has another parent, that presents or is presented,
    /// or that is an ancestor of this one is a programming error, stopped with a message naming both paths. (The
    /// window's root may be added to a container that then becomes the root, as UIKit allows.) Made while a move is
    /// in progress in the application's tree (from a callback of one), the addition waits until that move is over
    /// (docs/lifecycle.md, "Re-entrancy"), and is checked then.
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

    /// This controller and everything below it that receives application events, pre-order: itself, its
    /// children in the order added, then what it presents.
    func appendPreOrder(to list: inout [ViewController]) {
        TreeWork.count(1)
        list.append(self)
        for child in children { child.appendPreOrder(to: &list) }
        presentedViewController?.appendPreOrder(to: &list)
    }
}
