//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The window: it shows a root controller and the controllers presented over it.
///
/// The window becomes visible when the application first reaches the foreground (at launch, or at the first
/// return from a background launch); from then on its visible controllers' views are "in the window".
@MainActor
public final class Window {
    struct Layer {
        var controller: ViewController
        var style: ModalPresentationStyle
    }

    /// The controller whose view fills the window; replacing it while visible makes the old one disappear and the
    /// new one appear. The old root leaves the tree (unless the new one holds it, as a container it was put in): what
    /// it, or anything below it, presents is dismissed.
    ///
    /// The new root must be in no other place (a child, presented): that is a programming error, stopped with a
    /// message naming both paths. Set while a move is in progress (from a callback of one), the change waits until
    /// that move is over (docs/lifecycle.md, "Re-entrancy").
    public var rootViewController: ViewController? {
        get { layers.first?.controller }
        set { replaceRoot(with: newValue) }
    }

    /// Whether the window shows its content (its controllers' views are in the window).
    public private(set) var isVisible = false

    /// The application this window belongs to: set when it becomes the application's ``Application/window``.
    /// Every controller and view in the window reaches its application through it.
    public private(set) weak var application: Application?

    /// The scene this window belongs to (UIKit's `windowScene`); nil for the application's own window.
    public internal(set) weak var windowScene: Scene?

    /// What the trace paths of this window's controllers start with: empty for the application's window,
    /// `scene:<identifier>/` for a scene's.
    let pathPrefix: String

    var layers: [Layer] = []

    /// Creates a window, optionally with its root controller (which must be in no other place: not a child, not
    /// presented).
    public init(rootViewController: ViewController? = nil) {
        pathPrefix = ""
        if let rootViewController {
            if let problem = Self.reasonCannotBeRoot(rootViewController) {
                preconditionFailure("cannot make \(rootViewController.path) the root of a window: \(problem)")
            }
            layers = [Layer(controller: rootViewController, style: .fullScreen)]
            rootViewController.hostingWindow = self
        }
    }

    /// A scene's window, empty: its scene's delegate sets the root.
    init(pathPrefix: String) {
        self.pathPrefix = pathPrefix
    }

    /// Makes this window (and everything in it) belong to `application`.
    func attach(to application: Application) {
        self.application = application
        rootViewController?.adopt(application)
    }

    /// The controllers whose views are in the window now: from the last full-screen layer up.
    var visibleLayers: ArraySlice<Layer> {
        guard isVisible, !layers.isEmpty else { return [] }
        let start = layers.lastIndex { $0.style == .fullScreen } ?? 0
        return layers[start...]
    }

    /// Makes the window visible: its root controller (and what is presented) appears.
    func show() {
        guard !isVisible else { return }
        let edits = application?.edits
        edits?.begin()
        defer { edits?.end() }
        rebuildLayersFromTree()
        isVisible = true
        for layer in visibleLayers {
            layer.controller.view.moveTopLevel(toWindow: self)
        }
    }

    /// The layers the tree implies: the root, then every presented controller (presentations made before the
    /// window showed, or hanging from a root set again), in tree order.
    private func rebuildLayersFromTree() {
        guard let root = layers.first?.controller else { return }
        var tree: [ViewController] = []
        root.appendPreOrder(to: &tree)
        let presented = tree.filter { $0.presentingViewController != nil }
        let presentedIDs = Set(presented.map(ObjectIdentifier.init))
        // Keep the order of layers already known (presentation order), then add the ones the tree adds.
        var rebuilt = [layers[0]]
        var kept: Set<ObjectIdentifier> = []
        for layer in layers.dropFirst() where presentedIDs.contains(ObjectIdentifier(layer.controller)) {
            rebuilt.append(layer)
            kept.insert(ObjectIdentifier(layer.controller))
        }
        for controller in presented where !kept.contains(ObjectIdentifier(controller)) {
            rebuilt.append(Layer(controller: controller, style: controller.modalPresentationStyle))
        }
        layers = rebuilt
    }

    /// Makes every visible controller disappear (termination).
    func hide() {
        guard isVisible else { return }
        let edits = application?.edits
        edits?.begin()
        defer { edits?.end() }
        let leaving = visibleLayers
        isVisible = false
        for layer in leaving {
            layer.controller.viewIfLoaded?.moveTopLevel(toWindow: nil)
        }
    }

    /// Drops every controller; the last references go and their deinits run.
    func releaseContent() {
        // Swap the layers out first: the deinits that run when they go may read this window.
        var released: [Layer] = []
        swap(&released, &layers)
        released.removeAll()
    }

    /// Why `controller` cannot be a window's root, or nil when it can.
    private static func reasonCannotBeRoot(_ controller: ViewController) -> String? {
        if let parent = controller.parent { return "it is a child of \(parent.path); remove it from there first" }
        if let presenter = controller.presentingViewController { return "it is presented by \(presenter.path); dismiss it first" }
        return nil
    }

    private func replaceRoot(with controller: ViewController?) {
        TreeEdits.edit(
            in: (application ?? controller?.application)?.edits,
            touchingWindow: true,
            again: { [self] in replaceRoot(with: controller) },
            now: { replaceRootNow(with: controller) }
        )
    }

    /// Replaces the root now: the framework's own edits, and an edit whose turn has come.
    func replaceRootNow(with controller: ViewController?) {
        guard controller !== rootViewController else { return }
        if let controller, let problem = Self.reasonCannotBeRoot(controller) {
            preconditionFailure("cannot make \(controller.path) the root of the window: \(problem)")
        }
        let leaving = visibleLayers
        let old = layers.map(\.controller)
        let oldRoot = old.first
        if let oldRoot, oldRoot !== controller, oldRoot.hostingWindow === self { oldRoot.hostingWindow = nil }
        layers = controller.map { [Layer(controller: $0, style: .fullScreen)] } ?? []
        if let oldRoot, controller.map({ !oldRoot.isDescendant(of: $0) }) ?? true {
            // The old root left the tree (unless the new root holds it, a container it was put in): what it, or
            // anything below it, presents is dismissed. The layers are gone already; their views leave the window
            // below, with the rest of what was visible.
            oldRoot.unlinkPresentationsInSubtree()
        }
        controller?.hostingWindow = self
        application?.controllerTreeDidChange()
        if let application, let controller { controller.adopt(application) }
        rebuildLayersFromTree()
        for layer in leaving {
            layer.controller.viewIfLoaded?.moveTopLevel(toWindow: nil)
        }
        if isVisible {
            for layer in visibleLayers { layer.controller.view.moveTopLevel(toWindow: self) }
        }
        // The old controllers live until their did-disappear callbacks ran at the end of the turn.
        application?.scheduleTurnEndWork { withExtendedLifetime(old) {} }
    }

    /// Adds the layers of what is presented in a subtree that joined this window's tree while it was apart (or that
    /// a presented controller brings), in tree order; they appear if the window shows.
    func showPresentations(inSubtreeOf controller: ViewController) {
        var presented: [ViewController] = []
        controller.forEachPresentedController { presented.append($0) }
        for controller in presented where !layers.contains(where: { $0.controller === controller }) {
            // Only what hangs from this window's tree.
            guard controller.presentingViewController?.window === self else { continue }
            pushLayer(controller, style: controller.modalPresentationStyle)
        }
    }

    func pushLayer(_ controller: ViewController, style: ModalPresentationStyle) {
        let covered = style == .fullScreen ? Array(visibleLayers) : []
        layers.append(Layer(controller: controller, style: style))
        guard isVisible else { return }
        for layer in covered {
            guard let view = layer.controller.viewIfLoaded else { continue }
            view.moveTopLevel(toWindow: nil)
            // A full-screen presentation follows the push order: the covered controller is laid out once more.
            application?.layOutBeforeLeaving(view)
        }
        controller.view.moveTopLevel(toWindow: self)
    }

    /// Removes the layers of dismissed controllers (a dismissed hierarchy: what it presents, what its children
    /// present; a presentation from elsewhere stays), and shows what they covered — unless `revealing` is false: the
    /// caller then changes what the uncovered layers show (a pop) and calls ``revealUncoveredLayers()``.
    func popLayers(of controllers: [ViewController], revealing: Bool = true) {
        let dismissed = Set(controllers.map(ObjectIdentifier.init))
        let before = Set(visibleLayers.map { ObjectIdentifier($0.controller) })
        let removed = layers.filter { dismissed.contains(ObjectIdentifier($0.controller)) }
        guard !removed.isEmpty else { return }
        layers.removeAll { dismissed.contains(ObjectIdentifier($0.controller)) }
        guard isVisible else { return }
        // The hand-off: what comes back prepares (loads its view) before what leaves stops.
        for layer in visibleLayers where !before.contains(ObjectIdentifier(layer.controller)) {
            layer.controller.loadViewIfNeeded()
        }
        for layer in removed where before.contains(ObjectIdentifier(layer.controller)) {
            layer.controller.viewIfLoaded?.moveTopLevel(toWindow: nil)
        }
        if revealing { revealUncoveredLayers() }
    }

    /// Moves into the window the visible layers whose views are not in it (what a dismissal uncovered).
    func revealUncoveredLayers() {
        guard isVisible else { return }
        for layer in visibleLayers where layer.controller.viewIfLoaded?.window !== self {
            layer.controller.view.moveTopLevel(toWindow: self)
        }
    }
}
