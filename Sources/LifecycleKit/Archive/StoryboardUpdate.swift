//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Applies a changed storyboard to the live tree (``Application/applyStoryboardChange(from:to:)``).
///
/// Nodes are matched by name (identifier) between the old storyboard, the new one and the live tree. What is equal
/// in both storyboards is left alone, whatever the application did to it since; a node whose own content (class,
/// identifiers, properties, style, views) changed is replaced with its whole subtree; a node whose content is the
/// same is walked into. A navigation controller whose stack changed gets the new stack (controllers whose nodes did
/// not change are kept). Everything new is made before anything moves, so a storyboard that fails to instantiate
/// leaves the tree as it was. A new part joins with what it declares it presents (and what is presented deeper in
/// it): the presentations appear once the change is applied.
///
/// The change is one move (docs/lifecycle.md, "Re-entrancy"): what the callbacks of its hand-overs edit waits until
/// the whole change is applied.
@MainActor
struct StoryboardUpdate {
    private enum Step {
        case replaceRoot(ViewController)
        case replaceChild(parent: ViewController, old: ViewController, new: ViewController)
        case addChild(parent: ViewController, new: ViewController)
        case removeChild(parent: ViewController, old: ViewController)
        case setStack(NavigationController, [ViewController])
        case present(presenter: ViewController, new: ViewController?)
    }

    let application: Application
    private var instantiation: ArchiveInstantiation
    private var steps: [Step] = []
    private var changes: [String] = []

    init(application: Application, source: String, registry: ArchiveClassRegistry) {
        self.application = application
        instantiation = ArchiveInstantiation(
            source: source,
            registry: registry,
            application: application,
            requiringEveryProperty: true
        )
    }

    private func name(of node: Archive.Node) -> String {
        ArchiveInstantiation.path(of: node, type: instantiation.registry.type(named: node.className), under: nil)
    }

    mutating func apply(old: Archive.Node, new: Archive.Node) throws(ArchiveError) -> [String] {
        try prepare(old: old, new: new)
        return perform()
    }

    /// Makes everything new and plans the steps, moving nothing: throws when the new storyboard cannot be
    /// instantiated, the tree left as it was (a reload's offer phase).
    mutating func prepare(old: Archive.Node, new: Archive.Node) throws(ArchiveError) {
        guard old != new else { return }
        if let live = application.window?.rootViewController, live.identifier == name(of: new),
            old.ownContent == new.ownContent
        {
            try plan(old: old, new: new, live: live)
        } else {
            let made = try instantiation.make(new, parentPath: nil)
            steps.append(.replaceRoot(made))
            changes.append("replaced the root with \(name(of: new)) (\(new.className))")
        }
        instantiation.finish()
    }

    /// Moves the tree as planned, as one move (edits its callbacks make wait for it); returns what changed, for the
    /// log (a reload's apply phase).
    func perform() -> [String] {
        let edits = application.edits
        edits.begin()
        defer { edits.end() }
        for step in steps { perform(step) }
        return changes
    }

    private mutating func plan(old: Archive.Node, new: Archive.Node, live: ViewController) throws(ArchiveError) {
        if let navigation = live as? NavigationController {
            if old.children != new.children {
                var stack: [ViewController] = []
                for child in new.children {
                    let childName = name(of: child)
                    if old.children.contains(where: { name(of: $0) == childName && $0 == child }),
                        let kept = navigation.children.first(where: { $0.identifier == childName })
                    {
                        stack.append(kept)
                    } else {
                        stack.append(try instantiation.make(child, parentPath: live.path))
                    }
                }
                steps.append(.setStack(navigation, stack))
                changes.append("\(live.path): stack \(new.children.map(name(of:)).joined(separator: ", "))")
            }
        } else {
            for child in new.children {
                let childName = name(of: child)
                let oldChild = old.children.first { name(of: $0) == childName }
                let liveChild = live.children.first { $0.identifier == childName }
                if let oldChild, oldChild == child { continue }
                if let oldChild, let liveChild, oldChild.ownContent == child.ownContent {
                    try plan(old: oldChild, new: child, live: liveChild)
                    continue
                }
                let made = try instantiation.make(child, parentPath: live.path)
                if let liveChild {
                    steps.append(.replaceChild(parent: live, old: liveChild, new: made))
                    changes.append("replaced \(liveChild.path) (\(child.className))")
                } else {
                    steps.append(.addChild(parent: live, new: made))
                    changes.append("added \(live.path)/\(childName) (\(child.className))")
                }
            }
            for oldChild in old.children where !new.children.contains(where: { name(of: $0) == name(of: oldChild) }) {
                if let liveChild = live.children.first(where: { $0.identifier == name(of: oldChild) }) {
                    steps.append(.removeChild(parent: live, old: liveChild))
                    changes.append("removed \(liveChild.path)")
                }
            }
        }
        guard old.presented != new.presented else { return }
        if let oldPresented = old.presented, let newPresented = new.presented,
            name(of: oldPresented) == name(of: newPresented), oldPresented.ownContent == newPresented.ownContent,
            let livePresented = live.presentedViewController, livePresented.identifier == name(of: newPresented)
        {
            try plan(old: oldPresented, new: newPresented, live: livePresented)
            return
        }
        let made = try new.presented.map { node throws(ArchiveError) in try instantiation.make(node, parentPath: live.path) }
        steps.append(.present(presenter: live, new: made))
        changes.append(made.map { "\(live.path) presents \($0.identifier)" } ?? "\(live.path) presents nothing")
    }

    /// Each step makes the incoming part load its view before the outgoing part leaves the window.
    private func perform(_ step: Step) {
        switch step {
        case .replaceRoot(let new):
            new.loadViewIfNeeded()
            if let window = application.window {
                window.replaceRootNow(with: new)
            } else {
                application.replaceWindowNow(with: Window(rootViewController: new))
            }
        case .replaceChild(let parent, let old, let new):
            let siblings = parent.children
            parent.addChildNow(new, bringingPresentations: true)
            new.loadViewIfNeeded()
            let container = old.viewIfLoaded?.superview
            let index = container?.subviews.firstIndex { $0 === old.viewIfLoaded }
            old.notifyWillMove(toParent: nil)
            old.viewIfLoaded?.removeFromSuperviewNow()
            old.removeFromParentNow()
            // The new child takes the old one's place among the children and the subviews.
            parent.reorderChildren(siblings.map { $0 === old ? new : $0 })
            if let container, let index {
                container.insertSubviewNow(new.view, at: index)
            } else if parent.isViewLoaded, parent.embedsChildViewsOnLoad {
                parent.view.insertSubviewNow(new.view, at: parent.view.subviews.count)
            }
            new.notifyDidMove(toParent: parent)
        case .addChild(let parent, let new):
            parent.addChildNow(new, bringingPresentations: true)
            if parent.isViewLoaded, parent.embedsChildViewsOnLoad {
                parent.view.insertSubviewNow(new.view, at: parent.view.subviews.count)
            }
            new.notifyDidMove(toParent: parent)
        case .removeChild(let parent, let old):
            guard old.parent === parent else { return }
            old.notifyWillMove(toParent: nil)
            old.viewIfLoaded?.removeFromSuperviewNow()
            old.removeFromParentNow()
        case .setStack(let navigation, let stack):
            navigation.setStack(stack, animated: false, bringingPresentations: true)
        case .present(let presenter, let new):
            new?.loadViewIfNeeded()
            if presenter.presentedViewController != nil {
                presenter.dismissNow(animated: false, revealing: true, completion: nil)
            }
            if let new { presenter.presentNow(new, animated: false, completion: nil) }
        }
    }
}
