//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleKit
import LifecycleKitTesting
import Logging

/// A scene's root: a container with one leaf, both restorable, the root counting how often it became active (its
/// preserved value).
@MainActor
final class SceneRoot: ViewController {
    var activations = 0
    var onEvent: [String: @MainActor (SceneRoot) -> Void] = [:]

    init() {
        super.init(identifier: "root")
        restorationIdentifier = "root"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        if children.isEmpty {
            let leaf = SceneLeaf()
            embed(leaf)
        }
    }

    override func applicationDidBecomeActive() {
        activations += 1
        onEvent.removeValue(forKey: "applicationDidBecomeActive")?(self)
    }
    override func didReceiveMemoryWarning() { onEvent.removeValue(forKey: "didReceiveMemoryWarning")?(self) }
    override func encodeRestorableState(with coder: StateCoder) { coder.encode(activations, forKey: "activations") }
    override func decodeRestorableState(with coder: StateCoder) {
        activations = coder.decodeInteger(forKey: "activations") ?? activations
    }
}

/// The leaf of a scene's tree.
@MainActor
final class SceneLeaf: ViewController {
    init() {
        super.init(identifier: "leaf")
        restorationIdentifier = "leaf"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }
}

/// A scene delegate that builds the tree (unless the session restores one) and runs hooks on its callbacks.
@MainActor
final class RecordingSceneDelegate: SceneDelegate {
    var hooks: [String: @MainActor (Scene) -> Void] = [:]
    weak var root: SceneRoot?

    private func fire(_ event: String, _ scene: Scene) { hooks.removeValue(forKey: event)?(scene) }

    func scene(_ scene: Scene, willConnectTo session: SceneSession, options: Scene.ConnectionOptions) {
        if session.savedState == nil {
            let root = SceneRoot()
            self.root = root
            scene.window.rootViewController = root
        }
        fire("willConnect", scene)
    }
    func sceneDidDisconnect(_ scene: Scene) { fire("sceneDidDisconnect", scene) }
    func sceneWillEnterForeground(_ scene: Scene) { fire("sceneWillEnterForeground", scene) }
    func sceneDidBecomeActive(_ scene: Scene) { fire("sceneDidBecomeActive", scene) }
    func sceneWillResignActive(_ scene: Scene) { fire("sceneWillResignActive", scene) }
    func sceneDidEnterBackground(_ scene: Scene) { fire("sceneDidEnterBackground", scene) }
}

/// An application delegate that adopts scenes, saves and restores, and gives every scene a recording delegate.
@MainActor
final class SceneAppDelegate: ApplicationDelegate {
    var manifest: SceneManifest
    var sceneDelegates: [String: RecordingSceneDelegate] = [:]
    var discarded: [[String]] = []
    var hooks: [String: @MainActor (Application) -> Void] = [:]
    var saves = true

    init(_ manifest: SceneManifest = SceneManifest(launchSceneRole: nil)) {
        self.manifest = manifest
    }

    var sceneManifest: SceneManifest? { manifest }

    func registerArchiveClasses(in registry: inout ArchiveClassRegistry) {
        registry.register(SceneRoot.self)
        registry.register(SceneLeaf.self)
    }

    func application(_ application: Application, shouldSaveApplicationState coder: StateCoder) -> Bool { saves }
    func application(_ application: Application, shouldRestoreApplicationState archive: Archive) -> Bool { true }

    func application(
        _ application: Application,
        configurationForConnecting session: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        SceneConfiguration(name: "Default Configuration", sessionRole: session.role) { [unowned self] scene in
            let delegate = RecordingSceneDelegate()
            sceneDelegates[scene.session.persistentIdentifier] = delegate
            return delegate
        }
    }

    func application(_ application: Application, didDiscardSceneSessions sessions: Set<SceneSession>) {
        discarded.append(sessions.map(\.persistentIdentifier).sorted())
    }

    func applicationDidReceiveMemoryWarning(_ application: Application) {
        hooks.removeValue(forKey: "applicationDidReceiveMemoryWarning")?(application)
    }
    func applicationDidBecomeActive(_ application: Application) {}
}

/// A hosted scene application: a test host (its recorder, its notifications) and the delegate.
@MainActor
func makeSceneHost(_ manifest: SceneManifest = SceneManifest(launchSceneRole: nil)) -> (TestHost, SceneAppDelegate) {
    let delegate = SceneAppDelegate(manifest)
    return (TestHost(delegate: delegate), delegate)
}

/// The controller events of the view lifecycle and of the application that scene tests assert (no view events).
let sceneSequenceEvents: Set<String> = [
    "application(_:configurationForConnecting:options:)", "scene(_:willConnectTo:options:)", "sceneDidDisconnect",
    "sceneWillEnterForeground", "sceneDidBecomeActive", "sceneWillResignActive", "sceneDidEnterBackground",
    "application(_:didDiscardSceneSessions:)", "applicationWillEnterForeground", "applicationDidBecomeActive",
    "applicationWillResignActive", "applicationDidEnterBackground", "applicationWillTerminate",
    "applicationDidReceiveMemoryWarning", "didReceiveMemoryWarning", "viewWillAppear", "viewDidAppear",
    "viewWillDisappear", "viewDidDisappear", "deinit", "init", "init(coder:)", "loadView", "viewDidLoad",
    "willFinishLaunching", "didFinishLaunching", "application(_:shouldSaveApplicationState:)",
    "application(_:willEncodeRestorableStateWith:)", "encodeRestorableState(with:)",
    "application(_:shouldRestoreApplicationState:)", "decodeRestorableState(with:)",
    "applicationFinishedRestoringState", "application(_:didDecodeRestorableStateWith:)", "awakeFromArchive",
    "applicationWillReload", "applicationDidReload",
]

extension CallbackRecorder {
    /// The recorded events of controllers and delegates (no view's), as `target event@state`.
    func sceneLines(_ names: Set<String> = sceneSequenceEvents) -> [String] {
        events.filter { names.contains($0.event) && !$0.target.contains(".view") }.map { "\($0.target) \($0.event)@\($0.state)" }
    }
}
