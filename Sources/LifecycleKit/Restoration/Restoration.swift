//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Logging

/// What the application remembers about state restoration between its steps.
struct RestorationRecord {
    /// The generation of the last state saved or restored; the next save is one more.
    var generation = 0
    /// The window restoration built or restored into, to notice a delegate that replaces it in `didFinishLaunching`.
    weak var restoredWindow: Window?
}

// UIKit's state preservation and restoration.
//
// Preservation (after `applicationDidEnterBackground` has reached the whole tree; after `applicationWillTerminate`,
// before the teardown): `application(_:shouldSaveApplicationState:)`, `application(_:willEncodeRestorableStateWith:)`,
// then `encodeRestorableState(with:)` on every preserved controller, pre-order; the host writes the archive.
//
// Restoration (between `willFinishLaunching` and `didFinishLaunching`): `application(_:shouldRestoreApplicationState:)`;
// each controller the archive has and the tree lacks is made (`application(_:viewControllerWithRestorationIdentifierPath:coder:)`,
// else its registered class's `init(coder:)`) and wired in; `awakeFromArchive` on each one made by its class, in the
// order they were made; the saved presentations; `decodeRestorableState(with:)` on every restored controller, pre-order;
// `applicationFinishedRestoringState` on each, pre-order; `application(_:didDecodeRestorableStateWith:)`.
extension Application {
    /// The classes archives may name: what the delegate registers (``ApplicationDelegate/registerArchiveClasses(in:)``)
    /// and ``archiveClasses``.
    package var registeredArchiveClasses: ArchiveClassRegistry {
        var registry = ArchiveClassRegistry()
        delegate.registerArchiveClasses(in: &registry)
        return registry.merging(archiveClasses)
    }

    /// The generation of the last state saved or restored (0 before any).
    package var restorationGeneration: Int { restoration.generation }

    /// Counts saves on from `generation` (the newest a launch found, restored or not: one set aside or discarded, or
    /// newer than the one restored on purpose), so the next save is newer than every copy kept.
    package func continueGenerations(from generation: Int) {
        restoration.generation = max(restoration.generation, generation)
    }

    // MARK: Preservation

    /// Preserves the tree: runs when the window's root controller has a restoration identifier, or the application
    /// has scene sessions (otherwise nothing could be preserved, and no callback fires), and the delegate agrees.
    @discardableResult
    func preserveState() -> Archive? {
        let root = window?.rootViewController
        let rootIdentifier = root?.restorationIdentifier
        // An application that uses scenes saves its sessions (docs/restoration.md, "Scene sessions").
        guard rootIdentifier != nil || hasSceneSessions else { return nil }
        let applicationCoder = StateCoder(restorationPath: "application")
        traceDelegateEvent(TraceEventName.applicationShouldSaveState)
        guard delegate.application(self, shouldSaveApplicationState: applicationCoder) else { return nil }
        traceDelegateEvent(TraceEventName.applicationWillEncodeState)
        delegate.application(self, willEncodeRestorableStateWith: applicationCoder)
        let registry = registeredArchiveClasses
        var archive = Archive(sessions: archivedSceneSessions(registry: registry), sourceName: "saved state")
        if let root, let rootIdentifier {
            archive.rootNode = encode(root, restorationPath: rootIdentifier, registry: registry)
        }
        restoration.generation += 1
        archive.generation = restoration.generation
        archive.applicationState = applicationCoder.values
        host?.application(self, didEncodeRestorableState: archive)
        return archive
    }

    /// Preserves the tree now, between transitions, its callbacks carrying `cause`, and returns what was saved (nil
    /// when nothing opted in): an upgrade hands it to the next process of the service.
    @discardableResult
    package func preserveState(cause: Cause) -> Archive? {
        let previous = currentCause
        currentCause = cause
        defer { currentCause = previous }
        return preserveState()
    }

    /// One preserved controller and the preserved ones below it: a controller is preserved when it and every
    /// controller above it have a restoration identifier.
    func encode(_ controller: ViewController, restorationPath: String, registry: ArchiveClassRegistry) -> Archive.Node {
        let coder = StateCoder(restorationPath: restorationPath)
        controller.trace(TraceEventName.encodeRestorableState)
        controller.encodeRestorableState(with: coder)
        let type = type(of: controller)
        var node = Archive.Node(
            className: registry.name(of: type) ?? String(describing: type),
            identifier: controller.identifier,
            restorationIdentifier: controller.restorationIdentifier,
            state: coder.values
        )
        if controller.presentingViewController != nil { node.modalPresentationStyle = controller.modalPresentationStyle }
        let version = type.restorableStateVersion
        // Version 1 is not written: what an application that never versions its values saves stays as it was.
        if version != 1 { node.stateVersion = version }
        for child in controller.children {
            guard let identifier = child.restorationIdentifier else { continue }
            node.children.append(encode(child, restorationPath: restorationPath + "/" + identifier, registry: registry))
        }
        if let presented = controller.presentedViewController, let identifier = presented.restorationIdentifier {
            node.presented = encode(presented, restorationPath: restorationPath + "/" + identifier, registry: registry)
        }
        return node
    }

    // MARK: Restoration

    /// Restores ``LaunchOptions/restoredState`` into the tree the window has (built in `willFinishLaunching`, or
    /// from a storyboard), or builds the tree from it when there is no window yet.
    func restoreSavedState() {
        guard let saved = launchOptions.restoredState else { return }
        let archive = saved.migratedFromFormat1()
        traceDelegateEvent(TraceEventName.applicationShouldRestoreState)
        guard delegate.application(self, shouldRestoreApplicationState: saved) else { return }
        restoration.generation = max(restoration.generation, archive.generation)
        if archive.hasRoot, usesScenes {
            // Saved before the application adopted scenes: its windows are its scenes' now.
            logger.notice("the saved state's window tree is not restored: the application uses scenes, whose windows hold its trees")
        } else if archive.hasRoot {
            var restorer = StateRestorer(application: self, archive: archive, registry: registeredArchiveClasses)
            restorer.restore()
        }
        restoreSceneSessions(archive.sessions)
        let applicationCoder = StateCoder(values: archive.applicationState, restorationPath: "application")
        traceDelegateEvent(TraceEventName.applicationDidDecodeState)
        delegate.application(self, didDecodeRestorableStateWith: applicationCoder)
        restoration.restoredWindow = window
    }

    /// The controllers of `archive` whose saved values are of a newer version than their registered class writes (a
    /// state saved by a newer build), described for the log: `http (HelloController) version 2, this build's 1`. Empty
    /// when the whole archive is understood.
    package func newerStateVersions(in archive: Archive) -> [String] {
        let registry = registeredArchiveClasses
        var nodes = archive.rootNode?.preOrder() ?? []
        for session in archive.sessions { nodes += session.tree?.preOrder() ?? [] }
        return nodes.compactMap { node in
            guard let saved = node.stateVersion, let type = registry.type(named: node.className) else { return nil }
            let current = type.restorableStateVersion
            guard saved > current else { return nil }
            return "\(node.restorationIdentifier ?? node.identifier ?? node.className) (\(node.className)) version \(saved), this build's \(current)"
        }
    }

    /// After `didFinishLaunching`: a delegate that replaced the restored window threw the restored tree away.
    func checkRestoredWindowKept() {
        guard let restored = restoration.restoredWindow else { return }
        restoration.restoredWindow = nil
        if window !== restored {
            logger.warning(
                """
                the window restored from the saved state was replaced in didFinishLaunching, so the restored tree is \
                gone: build the window in willFinishLaunching (restoration then restores into it), or in \
                didFinishLaunching only when application.window is nil
                """
            )
        }
    }

    // MARK: Storyboards

    /// Makes the tree a storyboard declares and shows it in a new window: the host calls it before ``launch(into:options:cause:)``,
    /// as UIKit loads the main storyboard before `willFinishLaunching`, so restoration applies on top of it. Its
    /// events carry the cause `launch`. Every property must be read by its class's `init(coder:)`.
    package func loadStoryboard(_ storyboard: Archive) throws(ArchiveError) {
        let previous = currentCause
        currentCause = .launch
        defer { currentCause = previous }
        let root = try storyboard.decodeTree(using: registeredArchiveClasses, for: self, requiringEveryProperty: true)
        window = Window(rootViewController: root)
    }

    /// Applies a changed storyboard to the live tree as a hand-over, changing only what changed: each changed part
    /// is made first (nothing in the tree moves if one fails: the error says why), then each incoming part loads its
    /// view (`viewDidLoad`) before the outgoing one leaves (`viewWillDisappear`), in the contract's navigation order.
    /// Returns one line per change, for the log.
    @discardableResult
    package func applyStoryboardChange(from old: Archive, to new: Archive) throws(ArchiveError) -> [String] {
        try prepareStoryboardChange(from: old, to: new).perform()
    }

    /// The first half of ``applyStoryboardChange(from:to:)``, for a reload's offer phase: everything new is made and
    /// the steps planned, nothing moves; throws when the new storyboard cannot be instantiated.
    package func prepareStoryboardChange(from old: Archive, to new: Archive) throws(ArchiveError) -> PreparedStoryboardChange {
        var update = StoryboardUpdate(application: self, source: new.sourceName, registry: registeredArchiveClasses)
        try update.prepare(old: old.root, new: new.root)
        return PreparedStoryboardChange(update: update)
    }
}

/// A storyboard change made and planned, not yet performed (``Application/prepareStoryboardChange(from:to:)``).
@MainActor
package struct PreparedStoryboardChange {
    fileprivate let update: StoryboardUpdate

    /// Moves the tree as planned; returns what changed, for the log.
    package func perform() -> [String] {
        update.perform()
    }
}

/// Restores one archive into the application's tree (see the comment on the extension above).
@MainActor
struct StateRestorer {
    let application: Application
    let archive: Archive
    /// The scene whose window the archive restores into; nil: the application's window.
    let scene: Scene?
    private var instantiation: ArchiveInstantiation
    /// Every controller restored, with its node.
    private var restored: [ObjectIdentifier: Archive.Node] = [:]
    /// Controllers made by their class's `init(coder:)`, in the order made.
    private var madeByClass: [ViewController] = []
    /// Presentations to make once the made controllers are awake.
    private var presentations: [(ViewController, ViewController)] = []
    private var madeCount = 0

    init(application: Application, archive: Archive, registry: ArchiveClassRegistry, scene: Scene? = nil) {
        self.application = application
        self.archive = archive
        self.scene = scene
        instantiation = ArchiveInstantiation(
            source: archive.sourceName,
            registry: registry,
            application: application,
            requiringEveryProperty: false
        )
    }

    mutating func restore() {
        let node = archive.root
        guard let rootIdentifier = node.restorationIdentifier else {
            application.logger.notice("the saved state's root has no restoration identifier; nothing restored")
            return
        }
        if let root = (scene?.window ?? application.window)?.rootViewController {
            guard root.restorationIdentifier == rootIdentifier else {
                application.logger.notice(
                    """
                    the saved state's root is \(rootIdentifier) but the window's root is \
                    \(root.restorationIdentifier ?? "without a restoration identifier"); nothing restored
                    """
                )
                return
            }
            reconcile(root, node, restorationPath: [rootIdentifier])
        } else {
            guard let root = materialize(node, under: scene?.description, restorationPath: [rootIdentifier]) else { return }
            if let scene {
                scene.window.rootViewController = root
            } else {
                application.window = Window(rootViewController: root)
            }
            reconcile(root, node, restorationPath: [rootIdentifier])
        }
        for controller in madeByClass {
            controller.trace(TraceEventName.awakeFromArchive)
            controller.awakeFromArchive()
        }
        for (presenter, presented) in presentations {
            presenter.present(presented, animated: false)
        }
        var tree: [ViewController] = []
        (scene?.window ?? application.window)?.rootViewController?.appendPreOrder(to: &tree)
        let order = tree.compactMap { controller in
            restored[ObjectIdentifier(controller)].map { (controller, $0) }
        }
        for (controller, node) in order {
            let saved = node.stateVersion ?? 1
            let current = type(of: controller).restorableStateVersion
            let coder = StateCoder(values: node.state, restorationPath: controller.restorationPathForLog)
            if saved > current {
                // Written by a newer build: never misread. (A rollback normally restores the generation its own build
                // wrote instead: docs/restoration.md, "Versioned state".)
                application.logger.notice(
                    "\(controller.restorationPathForLog): its saved values are version \(saved), newer than \(type(of: controller))'s \(current); not decoded"
                )
                continue
            }
            if saved < current {
                controller.trace(TraceEventName.migrateRestorableState, detail: "\(saved) → \(current)")
                controller.migrateRestorableState(with: coder, fromVersion: saved)
            }
            controller.trace(TraceEventName.decodeRestorableState)
            controller.decodeRestorableState(with: coder)
        }
        for (controller, _) in order {
            controller.trace(TraceEventName.applicationFinishedRestoringState)
            controller.applicationFinishedRestoringState()
        }
        let what = scene.map { "the saved state of \($0)" } ?? "the saved state: generation \(archive.generation),"
        application.logger.info("restored \(what) \(order.count) controllers (\(madeCount) made for it)")
    }

    /// Matches the archive's children (and presentation) of `node` to the controller's by restoration identifier;
    /// makes and wires in what the tree lacks. A navigation controller's stack becomes the saved one.
    private mutating func reconcile(_ controller: ViewController, _ node: Archive.Node, restorationPath: [String]) {
        restored[ObjectIdentifier(controller)] = node
        var pairs: [(ViewController, Archive.Node, [String])] = []
        var used: Set<ObjectIdentifier> = []
        var stack: [ViewController] = []
        for child in node.children {
            guard let identifier = child.restorationIdentifier else { continue }
            let childPath = restorationPath + [identifier]
            if let existing = controller.children.first(where: {
                $0.restorationIdentifier == identifier && !used.contains(ObjectIdentifier($0))
            }) {
                used.insert(ObjectIdentifier(existing))
                stack.append(existing)
                pairs.append((existing, child, childPath))
                continue
            }
            guard let made = materialize(child, under: controller.path, restorationPath: childPath) else { continue }
            stack.append(made)
            pairs.append((made, child, childPath))
            if !(controller is NavigationController) {
                controller.addChild(made)
                made.notifyDidMove(toParent: controller)
                if controller.isViewLoaded, controller.embedsChildViewsOnLoad { controller.view.addSubview(made.view) }
            }
        }
        if let navigation = controller as? NavigationController, !stack.isEmpty,
            stack.map(ObjectIdentifier.init) != navigation.children.map(ObjectIdentifier.init)
        {
            navigation.setViewControllers(stack, animated: false)
        }
        for (child, childNode, childPath) in pairs { reconcile(child, childNode, restorationPath: childPath) }

        guard let presentedNode = node.presented, let identifier = presentedNode.restorationIdentifier else { return }
        let presentedPath = restorationPath + [identifier]
        if let presented = controller.presentedViewController {
            if presented.restorationIdentifier == identifier {
                reconcile(presented, presentedNode, restorationPath: presentedPath)
            } else {
                application.logger.notice(
                    "\(presentedPath.joined(separator: "/")) not restored: \(controller.path) presents another controller"
                )
            }
            return
        }
        guard let made = materialize(presentedNode, under: controller.path, restorationPath: presentedPath) else { return }
        reconcile(made, presentedNode, restorationPath: presentedPath)
        presentations.append((controller, made))
    }

    /// Makes the controller for a node the tree lacks: the delegate's, or its registered class's `init(coder:)`.
    /// `parentPath`: the trace path of the controller it joins (nil for the window's root).
    private mutating func materialize(_ node: Archive.Node, under parentPath: String?, restorationPath: [String]) -> ViewController? {
        let tracePath = ArchiveInstantiation.path(
            of: node,
            type: instantiation.registry.type(named: node.className),
            under: parentPath
        )
        let coder = Coder(node: node, application: application, destinationPath: tracePath)
        application.traceDelegateEvent(
            TraceEventName.applicationViewControllerForRestoration,
            detail: restorationPath.joined(separator: "/")
        )
        let made: ViewController
        if let delegates = application.delegate.application(
            application,
            viewControllerWithRestorationIdentifierPath: restorationPath,
            coder: coder
        ) {
            made = delegates
            if let identifier = node.identifier, made.identifier != identifier { made.identifier = identifier }
            made.restorationIdentifier = node.restorationIdentifier
            if let style = node.modalPresentationStyle { made.modalPresentationStyle = style }
        } else {
            do {
                made = try instantiation.makeController(node, path: tracePath)
                // A container made for the saved state embeds its restored children's views when its view loads.
                made.embedsChildViewsOnLoad = !(made is NavigationController)
            } catch {
                application.logger.warning(
                    "\(restorationPath.joined(separator: "/")) not restored: \(error.reason); the delegate made no controller for it either"
                )
                return nil
            }
            madeByClass.append(made)
        }
        madeCount += 1
        return made
    }
}

extension ViewController {
    /// The restoration path of this controller: the restoration identifiers from the root, joined by `/`.
    var restorationPathForLog: String {
        var parts: [String] = []
        var node: ViewController? = self
        while let current = node {
            parts.append(current.restorationIdentifier ?? current.identifier)
            node = current.parent ?? current.presentingViewController
        }
        return parts.reversed().joined(separator: "/")
    }
}
