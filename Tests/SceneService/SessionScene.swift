//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit

/// A scene's delegate: it builds the scene's tree when the session has no saved state to restore it from.
@MainActor
final class SessionSceneDelegate: SceneDelegate {
    func scene(_ scene: Scene, willConnectTo session: SceneSession, options: Scene.ConnectionOptions) {
        guard session.savedState == nil else { return }
        scene.window.rootViewController = SessionController()
    }
}

/// A scene's root: it counts how often its scene became active (preserved, so the count goes on across
/// disconnections, restarts and upgrades) and shows the count in its status line.
@MainActor
final class SessionController: ViewController {
    private(set) var activations = 0
    /// The status line (a restored child's view may come before it among the root view's subviews).
    private weak var summary: View?

    init() {
        super.init(identifier: "root")
        restorationIdentifier = "root"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        let label = StatusLabel(name: "summary") { [unowned self] in "activations \(activations)" }
        view.addSubview(label)
        summary = label
        if children.isEmpty { embed(FeedController()) }
    }

    override func applicationDidBecomeActive() {
        activations += 1
        summary?.setNeedsDisplay()
    }

    override func encodeRestorableState(with coder: StateCoder) {
        coder.encode(activations, forKey: "activations")
    }

    override func decodeRestorableState(with coder: StateCoder) {
        activations = coder.decodeInteger(forKey: "activations") ?? activations
    }
}

/// The work of a scene: it serves while its scene is in the foreground.
@MainActor
final class FeedController: ViewController {
    init() {
        super.init(identifier: "feed")
        restorationIdentifier = "feed"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }
}

/// A view that draws one line of the status from a closure.
@MainActor
final class StatusLabel: View {
    private let text: @MainActor () -> String

    init(name: String, text: @escaping @MainActor () -> String) {
        self.text = text
        super.init(name: name)
    }

    override func draw(in context: inout StatusContext) {
        context.write(text())
    }
}
