//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleKitTesting
import Testing

/// A client's session as an adopter writes it: a controller that counts the messages it served, restorable.
@MainActor
private final class ClientController: ViewController {
    var served = 0

    init() {
        super.init(identifier: "client")
        restorationIdentifier = "client"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func encodeRestorableState(with coder: StateCoder) { coder.encode(served, forKey: "served") }
    override func decodeRestorableState(with coder: StateCoder) { served = coder.decodeInteger(forKey: "served") ?? 0 }
}

/// Its scene delegate: builds the tree for a new session, and holds a background task while the scene flushes.
@MainActor
private final class ClientSceneDelegate: SceneDelegate {
    var expired = false
    var task: BackgroundTaskIdentifier?

    func scene(_ scene: Scene, willConnectTo session: SceneSession, options: Scene.ConnectionOptions) {
        if session.savedState == nil { scene.window.rootViewController = ClientController() }
    }

    func sceneDidEnterBackground(_ scene: Scene) {
        guard let application = scene.application else { return }
        task = application.beginBackgroundTask(withName: "flush \(scene.session.persistentIdentifier)") { [weak self] in
            self?.expired = true
            if let task = self?.task { application.endBackgroundTask(task) }
        }
    }
}

@MainActor
private final class ClientsDelegate: ApplicationDelegate {
    var sceneDelegates: [String: ClientSceneDelegate] = [:]
    var discarded: [String] = []

    var sceneManifest: SceneManifest? { SceneManifest(launchSceneRole: nil) }

    func registerArchiveClasses(in registry: inout ArchiveClassRegistry) { registry.register(ClientController.self) }
    func application(_ application: Application, shouldSaveApplicationState coder: StateCoder) -> Bool { true }
    func application(_ application: Application, shouldRestoreApplicationState archive: Archive) -> Bool { true }

    func application(
        _ application: Application,
        configurationForConnecting session: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        SceneConfiguration(name: "client", sessionRole: session.role) { [unowned self] scene in
            let delegate = ClientSceneDelegate()
            sceneDelegates[scene.session.persistentIdentifier] = delegate
            return delegate
        }
    }

    func application(_ application: Application, didDiscardSceneSessions sessions: Set<SceneSession>) {
        discarded += sessions.map(\.persistentIdentifier)
    }
}

@MainActor
@Suite("The test kit drives scenes")
struct TestHostSceneTests {
    @Test func connectBackgroundDisconnectReconnectAndDiscardOnTheManualClock() throws {
        let delegate = ClientsDelegate()
        let host = TestHost(delegate: delegate)
        host.launch()
        try host.connectScene("alice", role: "client", userInfo: ["address": "10.0.0.7"])
        try host.connectScene("bob", role: "client")
        #expect(host.application.applicationState == .active)
        (host.scene("alice")?.window.rootViewController as? ClientController)?.served = 3

        // One scene in the background: the application stays active while bob is.
        host.recorder.clear()
        let background = try host.backgroundScene("alice")
        #expect(host.recorder.lines(scene: "alice", events: ["sceneWillResignActive", "sceneDidEnterBackground"]) == [
            "scene:alice sceneWillResignActive", "scene:alice sceneDidEnterBackground",
        ])
        #expect(background?.events?.count == host.recorder.events.count)
        #expect(host.application.applicationState == .active)

        // Every scene in the background: the application is, and the background time runs on the test's clock.
        try host.backgroundScene("bob")
        #expect(host.application.applicationState == .background)
        #expect(host.application.backgroundTasks.count == 2)
        host.advance(by: .seconds(30))
        #expect(delegate.sceneDelegates["bob"]?.expired == true)
        #expect(host.application.backgroundTasks.isEmpty)

        // Disconnected, alice's session keeps her state; reconnected, she is as she was.
        try host.disconnectScene("alice")
        #expect(host.scene("alice") == nil)
        try host.foregroundScene("alice")
        #expect((host.scene("alice")?.window.rootViewController as? ClientController)?.served == 3)
        #expect(host.application.applicationState == .active)
        #expect(host.application.sceneSession(withPersistentIdentifier: "alice")?.userInfo == ["address": "10.0.0.7"])

        // Discarded, bob's session is gone and the delegate heard it.
        try host.discardScene("bob")
        #expect(delegate.discarded == ["bob"])
        #expect(host.application.sceneSessions.map(\.persistentIdentifier) == ["alice"])
        #expect(host.notifications.last == "STATUS=active: 1 scene: 1 active")
        #expect(!host.savedStates.isEmpty)
    }
}
