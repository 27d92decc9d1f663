//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// One node of an application's controller and view tree as it is at one moment: a value, safe to hand to another
/// thread or to encode, for tools that show a running service (`lifecyclectl tree`, `lifecyclectl status`).
package struct TreeNode: Hashable, Sendable {
    /// A controller or a view.
    package enum Kind: String, Hashable, Sendable {
        case controller
        case view
    }

    /// Where a controller is in its appearance (UIKit's appearance states).
    package enum Appearance: String, Hashable, Sendable {
        /// Not on screen.
        case disappeared
        /// `viewWillAppear` has run; `viewDidAppear` comes at the end of the turn.
        case appearing
        /// On screen.
        case appeared
        /// `viewWillDisappear` has run; `viewDidDisappear` comes at the end of the turn.
        case disappearing
    }

    /// A controller or a view.
    package var kind: Kind
    /// Its path in the trace: `root/modes/serving`, `root/worker.view/progress`.
    package var path: String
    /// Its Swift type, without the module: `WorkerController`, `LabelView`.
    package var typeName: String
    /// How deep it hangs: the root controller is 0; a controller's children, what it presents and its root view are
    /// one deeper than it; a subview is one deeper than its superview.
    package var depth: Int
    /// A controller's appearance; nil for a view.
    package var appearance: Appearance?
    /// Whether a controller's root view is loaded; nil for a view.
    package var isViewLoaded: Bool?
    /// A view's frame, or a controller's root view's when it is loaded.
    package var frame: Rect?
    /// Whether a view is in the window; nil for a controller.
    package var isInWindow: Bool?
    /// A view's part of the application's status (what its last `draw` wrote); for a controller, the parts of its
    /// own views (not its children's) in pre-order, joined by "; ". Empty when there is none.
    package var statusText: String
    /// For a presented controller, how it was presented (`automatic`, `fullScreen`, `overCurrentContext`).
    package var presentationStyle: String?

    /// Creates a node.
    package init(
        kind: Kind,
        path: String,
        typeName: String,
        depth: Int,
        appearance: Appearance? = nil,
        isViewLoaded: Bool? = nil,
        frame: Rect? = nil,
        isInWindow: Bool? = nil,
        statusText: String = "",
        presentationStyle: String? = nil
    ) {
        self.kind = kind
        self.path = path
        self.typeName = typeName
        self.depth = depth
        self.appearance = appearance
        self.isViewLoaded = isViewLoaded
        self.frame = frame
        self.isInWindow = isInWindow
        self.statusText = statusText
        self.presentationStyle = presentationStyle
    }
}

extension Application {
    /// The window's tree now, pre-order: a controller, then (with `includingViews`) its own views, then its children
    /// in the order added and what it presents. A view that is another controller's root view is listed under that
    /// controller, not under the superview it is embedded in. Empty without a window.
    package func treeSnapshot(includingViews: Bool) -> [TreeNode] {
        var nodes: [TreeNode] = []
        if let root = window?.rootViewController {
            append(root, depth: 0, presented: false, includingViews: includingViews, to: &nodes)
        }
        return nodes
    }

    /// A scene's window's tree now, as ``treeSnapshot(includingViews:)`` gives the application's (paths start with
    /// `scene:<identifier>/`).
    package func treeSnapshot(of scene: Scene, includingViews: Bool) -> [TreeNode] {
        var nodes: [TreeNode] = []
        if let root = scene.window.rootViewController {
            append(root, depth: 0, presented: false, includingViews: includingViews, to: &nodes)
        }
        return nodes
    }

    /// How many controllers the window's tree holds (and, with scenes, every connected scene's), and how many views
    /// are loaded in them.
    package func treeCounts() -> (controllers: Int, views: Int) {
        Self.counts(of: controllersInTreeOrder())
    }

    /// How many controllers a scene's window's tree holds, and how many views are loaded in it.
    package func treeCounts(of scene: Scene) -> (controllers: Int, views: Int) {
        var list: [ViewController] = []
        scene.window.rootViewController?.appendPreOrder(to: &list)
        return Self.counts(of: list)
    }

    private static func counts(of list: [ViewController]) -> (controllers: Int, views: Int) {
        var views = 0
        func count(_ view: View) {
            views += 1
            for subview in view.subviews where subview.viewController == nil {
                count(subview)
            }
        }
        for controller in list {
            if let view = controller.viewIfLoaded { count(view) }
        }
        return (list.count, views)
    }

    private func append(
        _ controller: ViewController,
        depth: Int,
        presented: Bool,
        includingViews: Bool,
        to nodes: inout [TreeNode]
    ) {
        let view = controller.viewIfLoaded
        var parts: [String] = []
        if let view { Self.collectOwnStatus(of: view, into: &parts) }
        nodes.append(
            TreeNode(
                kind: .controller,
                path: controller.path,
                typeName: Self.typeName(of: controller),
                depth: depth,
                appearance: TreeNode.Appearance(controller.appearance),
                isViewLoaded: view != nil,
                frame: view?.frame,
                statusText: parts.joined(separator: "; "),
                presentationStyle: presented ? controller.modalPresentationStyle.rawValue : nil
            )
        )
        if includingViews, let view { append(view, depth: depth + 1, to: &nodes) }
        for child in controller.children {
            append(child, depth: depth + 1, presented: false, includingViews: includingViews, to: &nodes)
        }
        if let presentedController = controller.presentedViewController {
            append(presentedController, depth: depth + 1, presented: true, includingViews: includingViews, to: &nodes)
        }
    }

    private func append(_ view: View, depth: Int, to nodes: inout [TreeNode]) {
        nodes.append(
            TreeNode(
                kind: .view,
                path: view.path,
                typeName: Self.typeName(of: view),
                depth: depth,
                frame: view.frame,
                isInWindow: view.window != nil,
                statusText: view.statusText
            )
        )
        for subview in view.subviews where subview.viewController == nil {
            append(subview, depth: depth + 1, to: &nodes)
        }
    }

    /// A view's status text and its subviews', skipping views that belong to other controllers.
    private static func collectOwnStatus(of view: View, into parts: inout [String]) {
        if !view.statusText.isEmpty { parts.append(view.statusText) }
        for subview in view.subviews where subview.viewController == nil {
            collectOwnStatus(of: subview, into: &parts)
        }
    }

    private static func typeName(of object: AnyObject) -> String {
        var name = String(describing: type(of: object))
        if let generic = name.firstIndex(of: "<") { name = String(name[..<generic]) }
        return name
    }
}

extension TreeNode.Appearance {
    init(_ appearance: ViewController.Appearance) {
        switch appearance {
        case .disappeared: self = .disappeared
        case .appearing: self = .appearing
        case .appeared: self = .appeared
        case .disappearing: self = .disappearing
        }
    }
}
