//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleKit
import LifecycleKitTesting
import Logging
import Synchronization
import LifecyclePrimitives
import Testing

/// The sequences of docs/lifecycle.md, "Scenes", each asserted whole.
@MainActor
@Suite("Scenes: the scene-based life cycle")
struct SceneTests {
    /// A scene host with scenes `ids` connected (into the foreground), its recorder cleared.
    private func hostWithScenes(
        _ ids: [String],
        manifest: SceneManifest = SceneManifest(launchSceneRole: nil)
    ) throws -> (TestHost, SceneAppDelegate) {
        let (host, delegate) = makeSceneHost(manifest)
        host.launch()
        for id in ids { try host.connectScene(id) }
        host.recorder.clear()
        return (host, delegate)
    }

    // MARK: Connecting

    @Test func connectingASceneShowsItsTreeBetweenSceneWillEnterForegroundAndSceneDidBecomeActive() throws {
        let (host, delegate) = try hostWithScenes([])
        let before = host.notifications.count
        try host.connectScene("a")
        #expect(
            host.recorder.sceneLines(sceneSequenceEvents.subtracting(["init", "loadView", "viewDidLoad"])) == [
                "delegate application(_:configurationForConnecting:options:)@background",
                "scene:a scene(_:willConnectTo:options:)@background",
                "scene:a sceneWillEnterForeground@background",
                "scene:a/root applicationWillEnterForeground@background",
                "scene:a/root viewWillAppear@inactive",
                "scene:a/root/leaf viewWillAppear@inactive",
                "scene:a/root/leaf viewDidAppear@inactive",
                "scene:a/root viewDidAppear@inactive",
                "scene:a sceneDidBecomeActive@active",
                "scene:a/root applicationDidBecomeActive@active",
                "scene:a/root/leaf applicationDidBecomeActive@active",
            ]
        )
        #expect(host.scene("a")?.activationState == .foregroundActive)
        #expect(host.application.applicationState == .active)
        #expect(delegate.sceneDelegates["a"]?.root?.isVisible == true)
        #expect(Array(host.notifications.dropFirst(before)) == ["STATUS=inactive: 1 scene: 1 inactive", "STATUS=active: 1 scene: 1 active"])
    }

    @Test func aSceneBasedApplicationLaunchesInTheBackgroundAndConnectsItsLaunchSceneBeforeReady() {
        let delegate = SceneAppDelegate(SceneManifest())
        let host = TestHost(delegate: delegate)
        host.launch()
        let id = host.application.connectedScenes.map(\.session.persistentIdentifier).first ?? "?"
        #expect(host.application.sceneSessions.map(\.role) == [.windowApplication])
        #expect(
            host.recorder.sceneLines(["willFinishLaunching", "didFinishLaunching", "application(_:configurationForConnecting:options:)",
                                      "scene(_:willConnectTo:options:)", "sceneWillEnterForeground", "sceneDidBecomeActive",
                                      "applicationDidBecomeActive", "applicationWillEnterForeground"]) == [
                "delegate willFinishLaunching@background",
                "delegate didFinishLaunching@background",
                "delegate application(_:configurationForConnecting:options:)@background",
                "scene:\(id) scene(_:willConnectTo:options:)@background",
                "scene:\(id) sceneWillEnterForeground@background",
                "scene:\(id)/root applicationWillEnterForeground@background",
                "scene:\(id) sceneDidBecomeActive@active",
                "scene:\(id)/root applicationDidBecomeActive@active",
                "scene:\(id)/root/leaf applicationDidBecomeActive@active",
            ]
        )
        // The application delegate hears none of the four foreground and background callbacks (UIKit's rule).
        #expect(!host.recorder.lines(targets: ["delegate"]).contains { $0.hasSuffix("Active") || $0.hasSuffix("Foreground") })
        #expect(
            host.notifications == [
                "STATUS=background: no scene connected", "STATUS=inactive: 1 scene: 1 inactive",
                "STATUS=active: 1 scene: 1 active", "READY=1",
            ]
        )
    }

    @Test func aBackgroundLaunchConnectsItsSceneIntoTheBackgroundAndShowsItAtTheFirstReturn() {
        let delegate = SceneAppDelegate(SceneManifest())
        let host = TestHost(delegate: delegate)
        host.launch(into: .background)
        let id = host.application.connectedScenes.first!.session.persistentIdentifier
        #expect(
            host.recorder.lines(scene: id, events: sceneSequenceEvents.subtracting(["init", "encodeRestorableState(with:)"])) == [
                "delegate application(_:configurationForConnecting:options:)",
                "scene:\(id) scene(_:willConnectTo:options:)",
                "scene:\(id)/root applicationDidEnterBackground",
                "scene:\(id) sceneDidEnterBackground",
            ]
        )
        #expect(host.notifications.last == "READY=1")
        host.recorder.clear()
        host.signal("SIGUSR2")
        #expect(
            host.recorder.sceneLines(sceneSequenceEvents.subtracting(["init", "loadView", "viewDidLoad"])) == [
                "scene:\(id) sceneWillEnterForeground@background",
                "scene:\(id)/root applicationWillEnterForeground@background",
                "scene:\(id)/root viewWillAppear@inactive",
                "scene:\(id)/root/leaf viewWillAppear@inactive",
                "scene:\(id)/root/leaf viewDidAppear@inactive",
                "scene:\(id)/root viewDidAppear@inactive",
                "scene:\(id) sceneDidBecomeActive@active",
                "scene:\(id)/root applicationDidBecomeActive@active",
                "scene:\(id)/root/leaf applicationDidBecomeActive@active",
            ]
        )
    }

    // MARK: One scene, and every scene

    @Test func backgroundingOneSceneLeavesTheApplicationActiveWhileAnotherIs() throws {
        let (host, _) = try hostWithScenes(["a", "b"])
        try host.backgroundScene("b")
        #expect(
            host.recorder.sceneLines() == [
                "scene:b/root/leaf applicationWillResignActive@active",
                "scene:b/root applicationWillResignActive@active",
                "scene:b sceneWillResignActive@active",
                "scene:b/root/leaf applicationDidEnterBackground@active",
                "scene:b/root applicationDidEnterBackground@active",
                "scene:b sceneDidEnterBackground@active",
                "delegate application(_:shouldSaveApplicationState:)@active",
                "delegate application(_:willEncodeRestorableStateWith:)@active",
                "scene:a/root encodeRestorableState(with:)@active",
                "scene:a/root/leaf encodeRestorableState(with:)@active",
                "scene:b/root encodeRestorableState(with:)@active",
                "scene:b/root/leaf encodeRestorableState(with:)@active",
            ]
        )
        #expect(host.application.applicationState == .active)
        #expect(host.scene("b")?.activationState == .background)
        // Backgrounding does not make a scene's controllers disappear.
        #expect(host.recorder.lines(events: appearanceEvents).isEmpty)
    }

    @Test func aProcessLevelBackgroundSendsEverySceneLastConnectedFirstAndTheReturnBringsBackOnlyThoseThatWereForeground() throws {
        let (host, delegate) = try hostWithScenes(["a", "b", "c"])
        try host.backgroundScene("b")
        host.recorder.clear()
        host.signal("SIGUSR1")
        #expect(
            host.recorder.sceneLines(sceneSequenceEvents.subtracting(["encodeRestorableState(with:)"])) == [
                "scene:c/root/leaf applicationWillResignActive@active",
                "scene:c/root applicationWillResignActive@active",
                "scene:c sceneWillResignActive@active",
                "scene:a/root/leaf applicationWillResignActive@active",
                "scene:a/root applicationWillResignActive@active",
                "scene:a sceneWillResignActive@active",
                "scene:c/root/leaf applicationDidEnterBackground@inactive",
                "scene:c/root applicationDidEnterBackground@inactive",
                "scene:c sceneDidEnterBackground@inactive",
                "scene:a/root/leaf applicationDidEnterBackground@background",
                "scene:a/root applicationDidEnterBackground@background",
                "scene:a sceneDidEnterBackground@background",
                "delegate application(_:shouldSaveApplicationState:)@background",
                "delegate application(_:willEncodeRestorableStateWith:)@background",
            ]
        )
        #expect(Set(host.recorder.events.map(\.cause.rawValue)) == ["signal:SIGUSR1"])
        host.recorder.clear()
        host.signal("SIGUSR2")
        #expect(
            host.recorder.sceneLines() == [
                "scene:a sceneWillEnterForeground@background",
                "scene:a/root applicationWillEnterForeground@background",
                "scene:a/root/leaf applicationWillEnterForeground@background",
                "scene:c sceneWillEnterForeground@inactive",
                "scene:c/root applicationWillEnterForeground@inactive",
                "scene:c/root/leaf applicationWillEnterForeground@inactive",
                "scene:a sceneDidBecomeActive@active",
                "scene:a/root applicationDidBecomeActive@active",
                "scene:a/root/leaf applicationDidBecomeActive@active",
                "scene:c sceneDidBecomeActive@active",
                "scene:c/root applicationDidBecomeActive@active",
                "scene:c/root/leaf applicationDidBecomeActive@active",
            ]
        )
        #expect(host.scene("b")?.activationState == .background)
        #expect(delegate.sceneDelegates["b"]?.root?.activations == 1)
    }

    @Test func aSceneBroughtToTheForegroundDuringAnInterruptionWaitsInactiveUntilTheApplicationIsActiveAgain() throws {
        let (host, _) = try hostWithScenes(["a"])
        try host.connectScene("b", inBackground: true)
        host.recorder.clear()
        host.signal("SIGRTMIN+3")
        #expect(
            host.recorder.sceneLines() == [
                "scene:a/root/leaf applicationWillResignActive@active",
                "scene:a/root applicationWillResignActive@active",
                "scene:a sceneWillResignActive@active",
            ]
        )
        #expect(host.scene("a")?.activationState == .foregroundInactive)
        #expect(host.application.applicationState == .inactive)
        host.recorder.clear()
        try host.foregroundScene("b")
        // Connected into the background, b shows its tree at its first foreground.
        #expect(
            host.recorder.sceneLines(sceneSequenceEvents.subtracting(["init", "loadView", "viewDidLoad"])) == [
                "scene:b sceneWillEnterForeground@inactive",
                "scene:b/root applicationWillEnterForeground@inactive",
                "scene:b/root viewWillAppear@inactive",
                "scene:b/root/leaf viewWillAppear@inactive",
                "scene:b/root/leaf viewDidAppear@inactive",
                "scene:b/root viewDidAppear@inactive",
            ]
        )
        #expect(host.scene("b")?.activationState == .foregroundInactive)
        host.recorder.clear()
        host.signal("SIGUSR2")
        #expect(
            host.recorder.sceneLines() == [
                "scene:a sceneDidBecomeActive@active",
                "scene:a/root applicationDidBecomeActive@active",
                "scene:a/root/leaf applicationDidBecomeActive@active",
                "scene:b sceneDidBecomeActive@active",
                "scene:b/root applicationDidBecomeActive@active",
                "scene:b/root/leaf applicationDidBecomeActive@active",
            ]
        )
    }

    @Test func aSceneAskedToTheForegroundWhileTheApplicationIsInTheBackgroundComesWithTheNextReturn() throws {
        let (host, _) = try hostWithScenes([])
        host.signal("SIGUSR1")
        try host.connectScene("a")
        #expect(host.scene("a")?.activationState == .background)
        host.recorder.clear()
        host.signal("SIGUSR2")
        #expect(host.scene("a")?.activationState == .foregroundActive)
        #expect(host.recorder.lines(events: ["viewDidAppear"]) == ["scene:a/root/leaf viewDidAppear", "scene:a/root viewDidAppear"])
    }

    // MARK: Disconnecting, reconnecting, discarding

    @Test func disconnectingKeepsTheSessionWithItsStateAndReleasesTheTree() throws {
        let (host, delegate) = try hostWithScenes(["a", "b"])
        weak let root = delegate.sceneDelegates["a"]?.root
        root?.activations = 7
        try host.disconnectScene("a")
        #expect(
            host.recorder.sceneLines() == [
                "scene:a/root/leaf applicationWillResignActive@active",
                "scene:a/root applicationWillResignActive@active",
                "scene:a sceneWillResignActive@active",
                "scene:a/root/leaf applicationDidEnterBackground@active",
                "scene:a/root applicationDidEnterBackground@active",
                "scene:a sceneDidEnterBackground@active",
                "scene:a/root encodeRestorableState(with:)@active",
                "scene:a/root/leaf encodeRestorableState(with:)@active",
                "scene:a sceneDidDisconnect@active",
                "scene:a/root viewWillDisappear@active",
                "scene:a/root/leaf viewWillDisappear@active",
                "scene:a/root/leaf viewDidDisappear@active",
                "scene:a/root viewDidDisappear@active",
                "scene:a/root deinit@active",
                "scene:a/root/leaf deinit@active",
                "delegate application(_:shouldSaveApplicationState:)@active",
                "delegate application(_:willEncodeRestorableStateWith:)@active",
                "scene:b/root encodeRestorableState(with:)@active",
                "scene:b/root/leaf encodeRestorableState(with:)@active",
            ]
        )
        #expect(root == nil)
        let session = try #require(host.application.sceneSession(withPersistentIdentifier: "a"))
        #expect(session.scene == nil)
        #expect(session.savedState?.root.state["activations"] == .integer(7))
        #expect(host.application.connectedScenes.map(\.session.persistentIdentifier) == ["b"])
    }

    @Test func reconnectingASessionRestoresItsSceneAsItWas() throws {
        let (host, delegate) = try hostWithScenes(["a"])
        delegate.sceneDelegates["a"]?.root?.activations = 7
        try host.disconnectScene("a")
        host.recorder.clear()
        try host.foregroundScene("a")
        #expect(
            host.recorder.sceneLines(sceneSequenceEvents.subtracting(["loadView", "viewDidLoad"])) == [
                "delegate application(_:configurationForConnecting:options:)@background",
                "scene:a scene(_:willConnectTo:options:)@background",
                "scene:a/root init(coder:)@background",
                "scene:a/root/leaf init(coder:)@background",
                "scene:a/root awakeFromArchive@background",
                "scene:a/root/leaf awakeFromArchive@background",
                "scene:a/root decodeRestorableState(with:)@background",
                "scene:a/root/leaf decodeRestorableState(with:)@background",
                "scene:a/root applicationFinishedRestoringState@background",
                "scene:a/root/leaf applicationFinishedRestoringState@background",
                "scene:a sceneWillEnterForeground@background",
                "scene:a/root applicationWillEnterForeground@background",
                "scene:a/root/leaf applicationWillEnterForeground@background",
                "scene:a/root viewWillAppear@inactive",
                "scene:a/root/leaf viewWillAppear@inactive",
                "scene:a/root/leaf viewDidAppear@inactive",
                "scene:a/root viewDidAppear@inactive",
                "scene:a sceneDidBecomeActive@active",
                "scene:a/root applicationDidBecomeActive@active",
                "scene:a/root/leaf applicationDidBecomeActive@active",
            ]
        )
        let root = try #require(host.scene("a")?.window.rootViewController as? SceneRoot)
        #expect(root.activations == 8)
    }

    @Test func discardingASessionDisconnectsItsSceneThenTellsTheApplicationDelegate() throws {
        let (host, delegate) = try hostWithScenes(["a", "b"])
        try host.backgroundScene("a")
        host.recorder.clear()
        try host.discardScene("a")
        #expect(
            host.recorder.sceneLines(sceneSequenceEvents.subtracting(["encodeRestorableState(with:)"])) == [
                "scene:a sceneDidDisconnect@active",
                "scene:a/root viewWillDisappear@active",
                "scene:a/root/leaf viewWillDisappear@active",
                "scene:a/root/leaf viewDidDisappear@active",
                "scene:a/root viewDidDisappear@active",
                "scene:a/root deinit@active",
                "scene:a/root/leaf deinit@active",
                "delegate application(_:didDiscardSceneSessions:)@active",
                "delegate application(_:shouldSaveApplicationState:)@active",
                "delegate application(_:willEncodeRestorableStateWith:)@active",
            ]
        )
        #expect(delegate.discarded == [["a"]])
        #expect(host.application.sceneSessions.map(\.persistentIdentifier) == ["b"])
        #expect(host.savedStates.last?.sessions.map(\.identifier) == ["b"])
        #expect(throws: SceneError(.unknownSession, identifier: "a")) { try host.foregroundScene("a") }
    }

    @Test func aRequestAboutASceneWhereItAlreadyIsChangesNothing() throws {
        let (host, _) = try hostWithScenes(["a"])
        #expect(try host.foregroundScene("a") == .noChange)
        try host.disconnectScene("a")
        #expect(try host.disconnectScene("a") == .noChange)
        #expect(host.recorder.sceneLines().count > 0)
    }

    // MARK: Process-level events

    @Test func terminationWalksEverySceneToTheBackgroundSavesThenDisconnectsThemLastConnectedFirst() throws {
        let (host, _) = try hostWithScenes(["a", "b"])
        try host.backgroundScene("a")
        host.recorder.clear()
        host.signal("SIGTERM")
        #expect(
            host.recorder.sceneLines(sceneSequenceEvents.subtracting(["encodeRestorableState(with:)"])) == [
                "scene:b/root/leaf applicationWillResignActive@active",
                "scene:b/root applicationWillResignActive@active",
                "scene:b sceneWillResignActive@active",
                "scene:b/root/leaf applicationDidEnterBackground@background",
                "scene:b/root applicationDidEnterBackground@background",
                "scene:b sceneDidEnterBackground@background",
                "scene:b/root/leaf applicationWillTerminate@background",
                "scene:b/root applicationWillTerminate@background",
                "scene:a/root/leaf applicationWillTerminate@background",
                "scene:a/root applicationWillTerminate@background",
                "delegate applicationWillTerminate@background",
                "delegate application(_:shouldSaveApplicationState:)@terminated",
                "delegate application(_:willEncodeRestorableStateWith:)@terminated",
                "scene:b sceneDidDisconnect@terminated",
                "scene:b/root viewWillDisappear@terminated",
                "scene:b/root/leaf viewWillDisappear@terminated",
                "scene:b/root/leaf viewDidDisappear@terminated",
                "scene:b/root viewDidDisappear@terminated",
                "scene:b/root deinit@terminated",
                "scene:b/root/leaf deinit@terminated",
                "scene:a sceneDidDisconnect@terminated",
                "scene:a/root viewWillDisappear@terminated",
                "scene:a/root/leaf viewWillDisappear@terminated",
                "scene:a/root/leaf viewDidDisappear@terminated",
                "scene:a/root viewDidDisappear@terminated",
                "scene:a/root deinit@terminated",
                "scene:a/root/leaf deinit@terminated",
            ]
        )
        #expect(host.isTerminated)
        #expect(host.application.connectedScenes.isEmpty)
        // The sessions stay, and the saved state remembers what each scene wanted.
        #expect(host.savedStates.last?.sessions.map { "\($0.identifier) \($0.connected ?? "-")" } == ["a background", "b active"])
    }

    @Test func theStateAnUpgradeHandsOverHoldsTheSessions() throws {
        let (host, _) = try hostWithScenes(["a", "b"])
        try host.disconnectScene("b")
        host.recorder.clear()
        host.application.preserveState(cause: "upgrade")
        #expect(host.savedStates.last?.sessions.map { "\($0.identifier) \($0.connected ?? "-") \($0.tree != nil)" } == ["a active true", "b - true"])
        #expect(Set(host.recorder.events.map(\.cause.rawValue)) == ["upgrade"])
        #expect(Scene.identifier(inTracePath: "scene:a/root/leaf.view") == "a")
        #expect(Scene.identifier(inTracePath: "root/scene:a") == nil)
    }

    @Test func aReloadReachesEverySceneTreeAsItReachesTheApplicationsOwn() throws {
        let (host, _) = try hostWithScenes(["a", "b"])
        host.signal("SIGHUP")
        #expect(
            host.recorder.lines(events: ["applicationWillReload", "applicationDidReload"]) == [
                "scene:b/root/leaf applicationWillReload", "scene:b/root applicationWillReload",
                "scene:a/root/leaf applicationWillReload", "scene:a/root applicationWillReload",
                "delegate applicationWillReload",
                "delegate applicationDidReload",
                "scene:a/root applicationDidReload", "scene:a/root/leaf applicationDidReload",
                "scene:b/root applicationDidReload", "scene:b/root/leaf applicationDidReload",
            ]
        )
        // The offer goes to the delegate, then every controller of every tree, in the order the scenes connected.
        #expect(
            host.recorder.lines(events: ["application(_:validateReload:)", "validateReload(_:)"]) == [
                "delegate application(_:validateReload:)",
                "scene:a/root validateReload(_:)", "scene:a/root/leaf validateReload(_:)",
                "scene:b/root validateReload(_:)", "scene:b/root/leaf validateReload(_:)",
            ]
        )
    }

    // MARK: Memory warnings

    @Test func aMemoryWarningTheApplicationDoesNotAnswerDisconnectsTheLeastRecentlyUsedBackgroundScenes() throws {
        let (host, delegate) = try hostWithScenes(["a", "b", "c", "d"], manifest: SceneManifest(launchSceneRole: nil, maximumBackgroundScenes: 1))
        try host.backgroundScene("a")
        try host.backgroundScene("c")
        try host.backgroundScene("b")
        weak let rootA = delegate.sceneDelegates["a"]?.root
        weak let rootC = delegate.sceneDelegates["c"]?.root
        weak let rootB = delegate.sceneDelegates["b"]?.root
        host.recorder.clear()
        host.signal("SIGRTMIN+2")
        #expect(
            host.recorder.sceneLines(sceneSequenceEvents.subtracting(["encodeRestorableState(with:)", "viewWillDisappear", "viewDidDisappear"])) == [
                "scene:d/root/leaf didReceiveMemoryWarning@active", "scene:d/root didReceiveMemoryWarning@active",
                "scene:c/root/leaf didReceiveMemoryWarning@active", "scene:c/root didReceiveMemoryWarning@active",
                "scene:b/root/leaf didReceiveMemoryWarning@active", "scene:b/root didReceiveMemoryWarning@active",
                "scene:a/root/leaf didReceiveMemoryWarning@active", "scene:a/root didReceiveMemoryWarning@active",
                "delegate applicationDidReceiveMemoryWarning@active",
                "scene:a sceneDidDisconnect@active", "scene:a/root deinit@active", "scene:a/root/leaf deinit@active",
                "scene:c sceneDidDisconnect@active", "scene:c/root deinit@active", "scene:c/root/leaf deinit@active",
                "delegate application(_:shouldSaveApplicationState:)@active",
                "delegate application(_:willEncodeRestorableStateWith:)@active",
            ]
        )
        // The memory they held is given back; their sessions keep their state.
        #expect(rootA == nil && rootC == nil && rootB != nil)
        #expect(host.application.connectedScenes.map(\.session.persistentIdentifier) == ["b", "d"])
        #expect(host.application.sceneSession(withPersistentIdentifier: "a")?.savedState != nil)
        #expect(Set(host.recorder.events.map(\.cause.rawValue)) == ["signal:SIGRTMIN+2"])
    }

    @Test func aMemoryWarningTheApplicationAnswersByDisconnectingScenesDisconnectsOnlyWhatIsStillBeyondTheLimit() throws {
        let (host, delegate) = try hostWithScenes(["a", "b", "c"], manifest: SceneManifest(launchSceneRole: nil, maximumBackgroundScenes: 1))
        for id in ["a", "b", "c"] { try host.backgroundScene(id) }
        delegate.hooks["applicationDidReceiveMemoryWarning"] = { application in
            _ = try? application.submitScene(.disconnect("c"), cause: "answer")
        }
        host.recorder.clear()
        host.signal("SIGRTMIN+2")
        #expect(
            host.recorder.lines(events: ["sceneDidDisconnect", "applicationDidReceiveMemoryWarning"]) == [
                "delegate applicationDidReceiveMemoryWarning", "scene:a sceneDidDisconnect", "scene:c sceneDidDisconnect",
            ]
        )
        #expect(host.recorder.events.first { $0.target == "scene:c" && $0.event == "sceneDidDisconnect" }?.cause == "answer")
        #expect(host.application.connectedScenes.map(\.session.persistentIdentifier) == ["b"])
    }

    @Test func withoutALimitAMemoryWarningDisconnectsNothing() throws {
        let (host, _) = try hostWithScenes(["a", "b"])
        try host.backgroundScene("a")
        host.signal("SIGRTMIN+2")
        #expect(host.application.connectedScenes.count == 2)
    }

    // MARK: Re-entrancy

    @Test func aSceneConnectedFromAnotherScenesCallbackConnectsOnceThatTransitionIsOver() throws {
        let (host, delegate) = try hostWithScenes(["a"])
        try host.backgroundScene("a")
        delegate.sceneDelegates["a"]?.hooks["sceneWillEnterForeground"] = { scene in
            _ = try? scene.application?.requestSceneSessionActivation(persistentIdentifier: "b")
        }
        host.recorder.clear()
        try host.foregroundScene("a")
        #expect(
            host.recorder.lines(events: ["sceneWillEnterForeground", "sceneDidBecomeActive", "scene(_:willConnectTo:options:)"]) == [
                "scene:a sceneWillEnterForeground", "scene:a sceneDidBecomeActive",
                "scene:b scene(_:willConnectTo:options:)", "scene:b sceneWillEnterForeground", "scene:b sceneDidBecomeActive",
            ]
        )
    }

    @Test func aSceneDisconnectingItselfFromItsOwnCallbackDisconnectsAfterTheTransitionItIsIn() throws {
        let (host, delegate) = try hostWithScenes(["a", "b"])
        delegate.sceneDelegates["b"]?.hooks["sceneDidEnterBackground"] = { scene in
            try? scene.application?.requestSceneDisconnection(scene.session)
        }
        host.signal("SIGUSR1")
        #expect(
            host.recorder.lines(events: ["sceneDidEnterBackground", "sceneDidDisconnect", "application(_:shouldSaveApplicationState:)"]) == [
                "scene:b sceneDidEnterBackground", "scene:a sceneDidEnterBackground",
                "delegate application(_:shouldSaveApplicationState:)",
                "scene:b sceneDidDisconnect",
                "delegate application(_:shouldSaveApplicationState:)",
            ]
        )
    }

    @Test func sceneRequestsMadeOnceTerminationHasBegunAreDropped() throws {
        let (host, delegate) = try hostWithScenes(["a"])
        var outcome: RequestOutcome?
        delegate.sceneDelegates["a"]?.hooks["sceneWillResignActive"] = { scene in
            _ = try? scene.application?.requestSceneSessionActivation(persistentIdentifier: "late") { outcome = $0 }
        }
        host.signal("SIGTERM")
        #expect(outcome == .dropped(reason: "termination has started"))
        #expect(host.application.sceneSession(withPersistentIdentifier: "late") == nil)
    }

    // MARK: Sessions across launches

    @Test func sessionsSurviveARestartAndTheirScenesComeBackAsTheyWere() throws {
        let (first, delegate) = try hostWithScenes(["a", "b"])
        delegate.sceneDelegates["a"]?.root?.activations = 5
        try first.connectScene("c", userInfo: ["client": "10.0.0.7"])
        try first.disconnectScene("c")
        try first.backgroundScene("b")
        first.signal("SIGTERM")
        let bytes = try #require(first.savedStates.last).encodedState()
        let saved = try Archive.decodeState(bytes, source: "test")
        #expect(saved.sessions.map(\.identifier) == ["a", "b", "c"])

        let (second, secondDelegate) = makeSceneHost()
        second.launch(options: LaunchOptions(restoredState: saved))
        #expect(second.application.sceneSessions.map(\.persistentIdentifier) == ["a", "b", "c"])
        #expect(second.application.connectedScenes.map(\.session.persistentIdentifier) == ["a", "b"])
        #expect(second.scene("a")?.activationState == .foregroundActive)
        #expect(second.scene("b")?.activationState == .background)
        #expect((second.scene("a")?.window.rootViewController as? SceneRoot)?.activations == 6)
        #expect(second.application.sceneSession(withPersistentIdentifier: "c")?.userInfo == ["client": "10.0.0.7"])
        #expect(
            second.recorder.lines(events: ["willFinishLaunching", "application(_:shouldRestoreApplicationState:)",
                                           "application(_:didDecodeRestorableStateWith:)", "didFinishLaunching",
                                           "scene(_:willConnectTo:options:)", "sceneDidBecomeActive", "sceneDidEnterBackground"]) == [
                "delegate willFinishLaunching", "delegate application(_:shouldRestoreApplicationState:)",
                "delegate application(_:didDecodeRestorableStateWith:)", "delegate didFinishLaunching",
                "scene:a scene(_:willConnectTo:options:)", "scene:a sceneDidBecomeActive",
                "scene:b scene(_:willConnectTo:options:)", "scene:b sceneDidEnterBackground",
            ]
        )
        _ = secondDelegate
        // The disconnected session reconnects later, restored.
        try second.foregroundScene("c")
        #expect(second.scene("c")?.window.rootViewController is SceneRoot)
    }

    @Test func sessionsDiscardedWhileTheServiceWasNotRunningAreReportedRightAfterDidFinishLaunching() throws {
        let (first, _) = try hostWithScenes(["a", "b"])
        first.signal("SIGTERM")
        var saved = try #require(first.savedStates.last)
        let found = saved.discardSession(withIdentifier: "a")
        let notFound = saved.discardSession(withIdentifier: "zz")
        #expect(found && !notFound)
        let (second, delegate) = makeSceneHost()
        second.launch(options: LaunchOptions(restoredState: try Archive.decodeState(saved.encodedState(), source: "test")))
        #expect(
            Array(second.recorder.lines(targets: ["delegate"]).prefix(5)) == [
                "delegate willFinishLaunching", "delegate application(_:shouldRestoreApplicationState:)",
                "delegate application(_:didDecodeRestorableStateWith:)", "delegate didFinishLaunching",
                "delegate application(_:didDiscardSceneSessions:)",
            ]
        )
        #expect(delegate.discarded == [["a"]])
        #expect(second.application.sceneSessions.map(\.persistentIdentifier) == ["b"])
    }

    @Test func aTreeSavedBeforeTheApplicationAdoptedScenesIsNotRestoredIntoAWindow() throws {
        let saved = Archive(root: Archive.Node(className: "SceneRoot", identifier: "root", restorationIdentifier: "root"))
        let (host, _) = makeSceneHost()
        host.launch(options: LaunchOptions(restoredState: saved))
        #expect(host.application.window == nil)
        #expect(host.application.hasFinishedLaunching)
        #expect(host.recorder.lines(events: ["init(coder:)"]).isEmpty)
    }

    @Test func anArchiveWithoutSessionsIsWrittenAsBeforeScenesAndOneWithSessionsAloneReadsBack() throws {
        var plain = Archive(root: Archive.Node(className: "Probe", identifier: "root", restorationIdentifier: "root"))
        plain.generation = 3
        let text = String(decoding: plain.encodedState(), as: UTF8.self)
        #expect(text.hasSuffix(#"{"application":{},"generation":3,"root":{"class":"Probe","identifier":"root","restorationIdentifier":"root"}}"#))
        var scenes = Archive(sessions: [Archive.Session(identifier: "a", role: "application", connected: "active")])
        scenes.generation = 1
        let read = try Archive.decodeState(scenes.encodedState(), source: "test")
        #expect(!read.hasRoot)
        #expect(read.sessions == scenes.sessions)
        #expect(read.encodedState() == scenes.encodedState())
        // docs/restoration.md's example, byte for byte.
        var documented = Archive(sessions: [
            Archive.Session(
                identifier: "alice",
                role: "client",
                userInfo: ["address": "10.0.0.7"],
                configuration: "client",
                connected: "active",
                tree: Archive.Node(className: "ClientController", identifier: "client", restorationIdentifier: "client", state: ["served": .integer(3)])
            ),
            Archive.Session(identifier: "bob", role: "client"),
        ])
        documented.generation = 4
        let marked = documented.discardSession(withIdentifier: "bob")
        #expect(marked)
        #expect(
            String(decoding: documented.encodedState(), as: UTF8.self).hasSuffix(
                #"{"application":{},"generation":4,"sessions":[{"configuration":"client","connected":"active","id":"alice","role":"client","tree":{"class":"ClientController","identifier":"client","restorationIdentifier":"client","state":{"served":{"i":3}}},"userInfo":{"address":"10.0.0.7"}},{"discarded":true,"id":"bob","role":"client"}]}"#
            )
        )
        var empty = Archive(sessions: [])
        empty.generation = 1
        #expect(throws: StateArchiveError.self) { try Archive.decodeState(empty.encodedState(), source: "test") }
    }

    @Test func theSessionsAndEachScenesTreeCanBeListedForTheDaemon() throws {
        let (host, _) = try hostWithScenes(["a", "b"])
        try host.disconnectScene("b")
        #expect(
            host.application.sceneSessionSnapshots().map { "\($0.identifier) \($0.state) \($0.hasSavedState)" } == [
                "a foregroundActive false", "b unattached true",
            ]
        )
        let scene = try #require(host.scene("a"))
        #expect(host.application.treeSnapshot(of: scene, includingViews: false).map(\.path) == ["scene:a/root", "scene:a/root/leaf"])
    }

    // MARK: The trace

    @Test func everySceneEventCarriesItsScenesIdentifierAndTheJournalGetsItAsAField() throws {
        let (host, _) = try hostWithScenes([])
        try host.connectScene("a")
        let events = host.recorder.events
        #expect(events.allSatisfy { $0.scene == "a" })
        #expect(events.contains { $0.target == "delegate" && $0.event == "application(_:configurationForConnecting:options:)" })
        #expect(events.contains { $0.target == "scene:a/root.view" })
        host.recorder.clear()
        host.signal("SIGHUP")
        #expect(host.recorder.events.filter { $0.target == "delegate" }.allSatisfy { $0.scene == nil })

        let captured = MetadataCapture()
        let logger = Logger(label: "t") { _ in CapturingHandler(capture: captured) }
        Trace.write(try #require(events.first { $0.target == "scene:a/root" }), at: .info, to: logger)
        #expect(captured.metadata[LogKey.scene] == "a")
        #expect(LogKey.scene == "lifecycle.scene")
    }

    @Test func theApplicationWithoutScenesHasNoneAndRefusesSceneRequests() {
        let host = TestHost(delegate: TestDelegate())
        host.launch()
        #expect(!host.application.usesScenes)
        #expect(throws: SceneError(.scenesNotAdopted, identifier: "a")) { try host.connectScene("a") }
        #expect(host.recorder.events.allSatisfy { $0.scene == nil })
    }

    @Test func sceneIdentifiersAreCheckedWhenASessionIsMade() throws {
        let (host, _) = try hostWithScenes(["a"])
        for bad in ["", "a/b", "a b", "a\u{7}", String(repeating: "x", count: 129)] {
            #expect(throws: SceneError(.invalidIdentifier, identifier: bad)) { try host.connectScene(bad) }
        }
        #expect(throws: SceneError(.duplicateIdentifier, identifier: "a")) { try host.connectScene("a") }
        #expect(throws: SceneError(.unknownSession, identifier: "nobody")) { try host.backgroundScene("nobody") }
        #expect(SceneError(.unknownSession, identifier: "x").description == #"No scene session is named "x"."#)
    }
}

/// Log metadata a handler saw, behind a lock (a log handler may be called from any thread).
final class MetadataCapture: Sendable {
    private let storage = Mutex<Logger.Metadata>([:])
    var metadata: Logger.Metadata { storage.withLock { $0 } }
    func record(_ metadata: Logger.Metadata) { storage.withLock { $0 = metadata } }
}

/// A log handler that keeps the metadata of the last record.
struct CapturingHandler: LogHandler {
    let capture: MetadataCapture
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        capture.record(event.metadata ?? [:])
    }
}
