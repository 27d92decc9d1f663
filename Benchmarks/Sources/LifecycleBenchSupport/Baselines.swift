//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The plain-Swift baselines: what the same work costs with ordinary class instances and no framework.

/// A class with an overridable method, the shape of a controller callback without the framework.
public class PlainNode {
    /// Children, for the layout baseline's tree walk.
    public var children: [PlainNode] = []
    /// The layout mark the baseline's pass clears.
    public var needsLayout = true

    /// Creates a node.
    public init() {}

    /// The event every node receives (overridden below, so the call is dynamically dispatched).
    public func didReceiveMemoryWarning() {}
    /// The layout callback.
    public func layoutSubviews() {}
    /// Any other callback of a push/pop cycle.
    public func callback() {}

    /// A layout pass over this subtree that visits only marked views, as the framework's does.
    public final func layoutPass() {
        if needsLayout {
            needsLayout = false
            layoutSubviews()
        }
        for child in children { child.layoutPass() }
    }

    /// Marks the whole subtree for layout.
    public final func markSubtree() {
        needsLayout = true
        for child in children { child.markSubtree() }
    }
}

/// The overriding subclass: counts what it receives, so no call can be optimised away.
public final class PlainLeaf: PlainNode {
    /// Calls received.
    public private(set) var events = 0
    /// The view it owns, for the memory baseline (a controller and its view).
    public var view: PlainView?
    /// The parent, weak as a controller's is.
    public weak var parent: PlainLeaf?

    public override func didReceiveMemoryWarning() { events &+= 1 }
    public override func layoutSubviews() { events &+= 1 }
    public override func callback() { events &+= 1 }
}

/// The view half of the memory baseline: a class with a weak back reference and a subview array.
public final class PlainView {
    /// Subviews.
    public var subviews: [PlainView] = []
    /// The owning leaf, weak as a view's controller is.
    public weak var owner: PlainLeaf?

    /// Creates a view.
    public init() {}
}

/// Builders for the baselines, shaped like ``ControllerTree``'s trees.
public enum PlainTree {
    /// `count` instances of the overriding subclass in an array, as seen through the base class.
    public static func makeList(count: Int) -> [PlainNode] {
        (0..<count).map { _ in PlainLeaf() }
    }

    /// A tree of `count` nodes (at least one), ``ControllerTree/fanOut`` children each, breadth first.
    public static func makeTree(count: Int, fanOut: Int) -> PlainNode {
        breadthFirstTree(count: count, fanOut: fanOut, root: PlainLeaf() as PlainNode) { parent, _ in
            let child = PlainLeaf()
            parent.children.append(child)
            return child
        }
    }

    /// The launch baseline: ``makeOwningTree(count:fanOut:)``'s pairs, making the callbacks a launch makes per
    /// embedded controller and its view (17 trace events each, `init` included: counted on a launched tree of 1,000
    /// with the test kit's recorder), each a dynamically dispatched call. As the framework does: the seven of the
    /// embedding as the pair is linked (`loadView`, `viewDidLoad`, `willMove(toParent:)`, `willMove(toSuperview:)`,
    /// `didMoveToSuperview`, `didAddSubview(_:)`, `didMove(toParent:)`), then one walk over the tree per pass: the
    /// appearance (`viewWillAppear`, `willMove(toWindow:)`, `didMoveToWindow`), the layout
    /// (`viewWillLayoutSubviews`, `layoutSubviews`, `viewDidLayoutSubviews`), the display (`draw`), `viewDidAppear`,
    /// and `applicationDidBecomeActive`.
    public static func launch(count: Int, fanOut: Int) -> PlainLeaf {
        let root = makeOwningTree(count: count, fanOut: fanOut) { leaf in
            for _ in 0..<7 { leaf.callback() }
        }
        for callbacks in [3, 3, 1, 1, 1] { visit(root, callbacks: callbacks) }
        return root
    }

    private static func visit(_ node: PlainLeaf, callbacks: Int) {
        for _ in 0..<callbacks { node.callback() }
        for child in node.children { visit(child as! PlainLeaf, callbacks: callbacks) }
    }

    /// `count` controller+view pairs linked like an embedded tree: each leaf owns a view, the view is a subview of
    /// the parent's view, the leaf is a child of its parent; `linked` runs on each pair as it is linked.
    public static func makeOwningTree(count: Int, fanOut: Int, linked: (PlainLeaf) -> Void = { _ in }) -> PlainLeaf {
        func makePair() -> PlainLeaf {
            let leaf = PlainLeaf()
            let view = PlainView()
            view.owner = leaf
            leaf.view = view
            return leaf
        }
        let root = makePair()
        linked(root)
        return breadthFirstTree(count: count, fanOut: fanOut, root: root) { parent, _ in
            let child = makePair()
            child.parent = parent
            parent.children.append(child)
            parent.view!.subviews.append(child.view!)
            linked(child)
            return child
        }
    }
}
