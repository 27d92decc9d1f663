//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
import LifecycleIPC
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Testing

/// A scene's root with one child, as the scene service's.
@MainActor
final class ControlSceneRoot: ViewController {
    init() {
        super.init(identifier: "root")
        restorationIdentifier = "root"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        if children.isEmpty { embed(ViewController(identifier: "leaf")) }
    }
}

/// An application delegate that uses scenes and gives each scene a delegate that builds its tree.
@MainActor
final class ControlSceneDelegate: ApplicationDelegate {
    /// A scene delegate that builds the root.
    final class Builder: SceneDelegate {
        func scene(_ scene: Scene, willConnectTo session: SceneSession, options: Scene.ConnectionOptions) {
            if session.savedState == nil { scene.window.rootViewController = ControlSceneRoot() }
        }
    }

    var sceneManifest: SceneManifest? { SceneManifest(launchSceneRole: nil) }

    func registerArchiveClasses(in registry: inout ArchiveClassRegistry) {
        registry.register(ControlSceneRoot.self)
    }

    func application(
        _ application: Application,
        configurationForConnecting session: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        SceneConfiguration(name: session.role == "tenant" ? "Tenant" : "Client", sessionRole: session.role) { _ in Builder() }
    }
}

@MainActor
@Suite("The control interface's scenes: GetScenes, RequestScene, GetTree and GetStatus with scenes")
struct SceneControlTests {
    /// A launched daemon whose application uses scenes, with the sessions `a` and `b` (clients) and `t` (a tenant)
    /// connected into the foreground, in that order.
    private func launched() throws -> (DaemonHarness, ControlService) {
        let harness = DaemonHarness(applicationDelegate: ControlSceneDelegate())
        harness.launch()
        let application = harness.application
        try application.requestSceneSessionActivation(role: "client", persistentIdentifier: "a", userInfo: ["seat": "1"])
        try application.requestSceneSessionActivation(role: "client", persistentIdentifier: "b", userInfo: ["seat": "2"])
        try application.requestSceneSessionActivation(role: "tenant", persistentIdentifier: "t", userInfo: ["tenant": "acme"])
        application.runEndOfTurn()
        harness.timeline.clear()
        return (harness, ControlService(daemon: harness.daemon, socketDescription: "test", serviceUID: 0))
    }

    private func call(_ control: ControlService, _ method: ControlProtocol.Method, _ parameters: JSONObject = [:]) -> RecordedCall {
        let call = RecordedCall(method.qualifiedName, parameters)
        control.handle(call)
        return call
    }

    /// `target event scene` of the events in a reply (`-` for an event outside every scene).
    private static func events(_ reply: JSONObject?) -> [String] {
        (reply?["events"]?.arrayValue ?? []).compactMap { $0.objectValue.flatMap(TraceRecord.init(json:)) }
            .map { "\($0.target) \($0.event) \($0.scene ?? "-")" }
    }

    private static func ids(_ call: RecordedCall) -> [String] {
        (call.result?["sessions"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
    }

    @Test func theSessionsAreListedInTheOrderTheyWereMadeAndEachFilterNarrowsThem() throws {
        let (harness, control) = try launched()
        _ = call(control, .requestScene, ["request": "background", "id": "b"])
        _ = call(control, .requestScene, ["request": "disconnect", "id": "t"])
        let all = call(control, .getScenes)
        #expect(all.result?["sessions"]?.arrayValue?.first == [
            "id": "a", "role": "client", "state": "foregroundActive", "userInfo": ["seat": "1"], "savedState": false,
            "configuration": "Client",
        ])
        #expect(Self.ids(all) == ["a", "b", "t"])
        #expect(all.result?["sessions"]?.arrayValue?.map { $0["state"] } == ["foregroundActive", "background", "unattached"])
        #expect(all.result?["sessions"]?.arrayValue?.last?["savedState"] == true)
        #expect(all.result?["matched"] == 3 && all.result?["total"] == 3)
        #expect(all.charged == 3 * ControlInterface.costPerSession)
        for (filters, listed) in [
            (["role": "tenant"], ["t"]),
            (["state": "connected"], ["a", "b"]),
            (["state": "background"], ["b"]),
            (["state": "unattached"], ["t"]),
            (["userInfo": "seat=2"], ["b"]),
            (["userInfo": "tenant="], []),
            (["prefix": "a"], ["a"]),
            (["role": "client", "state": "foregroundActive"], ["a"]),
        ] as [(JSONObject, [String])] {
            let narrowed = call(control, .getScenes, filters)
            #expect(Self.ids(narrowed) == listed, "\(filters)")
            #expect(narrowed.result?["matched"] == .int(listed.count) && narrowed.result?["total"] == 3)
        }
        #expect(call(control, .getScenes, ["state": "asleep"]).error == .invalidParameter("state"))
        #expect(call(control, .getScenes, ["userInfo": "seat"]).error == .invalidParameter("userInfo"))
        #expect(call(control, .getScenes, ["userInfo": "=1"]).error == .invalidParameter("userInfo"))
        withExtendedLifetime(harness) {}
    }

    @Test func aSceneRequestRepliesOnceItsStepsHaveRunWithExactlyTheEventsItCausedEachNamingItsScene() throws {
        let (harness, control) = try launched()
        let background = call(control, .requestScene, ["request": "background", "id": "a"])
        #expect(Self.events(background.result) == [
            "scene:a/root/leaf applicationWillResignActive a", "scene:a/root applicationWillResignActive a",
            "scene:a sceneWillResignActive a",
            "scene:a/root/leaf applicationDidEnterBackground a", "scene:a/root applicationDidEnterBackground a",
            "scene:a sceneDidEnterBackground a",
            "delegate application(_:shouldSaveApplicationState:) -",
        ])
        #expect(background.result?["request"] == "background" && background.result?["id"] == "a")
        #expect(background.result?["outcome"] == "performed")
        #expect(background.result?["sceneState"] == "background")
        // b and t are still active: so is the application.
        #expect(background.result?["state"] == "active")
        #expect(background.result?["eventsOmitted"] == 0)
        let again = call(control, .requestScene, ["request": "background", "id": "a"])
        #expect(again.result?["outcome"] == "noChange" && Self.events(again.result).isEmpty)

        let foreground = call(control, .requestScene, ["request": "foreground", "id": "a"])
        #expect(Self.events(foreground.result) == [
            "scene:a sceneWillEnterForeground a", "scene:a/root applicationWillEnterForeground a",
            "scene:a/root/leaf applicationWillEnterForeground a",
            "scene:a sceneDidBecomeActive a", "scene:a/root applicationDidBecomeActive a",
            "scene:a/root/leaf applicationDidBecomeActive a",
        ])
        #expect(foreground.result?["sceneState"] == "foregroundActive")
        // Every event has the cause control; the journal has it with LIFECYCLE_SCENE=a.
        let traced = (foreground.result?["events"]?.arrayValue ?? []).compactMap { $0.objectValue.flatMap(TraceRecord.init(json:)) }
        #expect(traced.allSatisfy { $0.cause == "control" })
        withExtendedLifetime(harness) {}
    }

    @Test func discardDisconnectsTheSceneThenTheDelegateHearsTheSessionIsGone() throws {
        let (harness, control) = try launched()
        let discard = call(control, .requestScene, ["request": "discard", "id": "t"])
        let events = Self.events(discard.result).filter { !$0.contains(".view") && !$0.contains(" view") }
        #expect(events == [
            "scene:t/root/leaf applicationWillResignActive t", "scene:t/root applicationWillResignActive t",
            "scene:t sceneWillResignActive t",
            "scene:t/root/leaf applicationDidEnterBackground t", "scene:t/root applicationDidEnterBackground t",
            "scene:t sceneDidEnterBackground t",
            "scene:t sceneDidDisconnect t",
            "scene:t/root deinit t", "scene:t/root/leaf deinit t",
            "delegate application(_:didDiscardSceneSessions:) t",
            "delegate application(_:shouldSaveApplicationState:) -",
        ])
        #expect(discard.result?["sceneState"] == "unattached")
        #expect(Self.ids(call(control, .getScenes)) == ["a", "b"])
        // Gone: the next request about it names what is wrong.
        let late = call(control, .requestScene, ["request": "foreground", "id": "t"])
        #expect(late.error?.name == "io.lifecyclekit.Lifecycle.SceneRefused")
        #expect(late.error?.parameters["kind"] == "unknown-session" && late.error?.parameters["id"] == "t")
        withExtendedLifetime(harness) {}
    }

    @Test func aRequestThatCannotBeMadeFailsWithItsKindAndTheSentenceOfItsError() throws {
        let (harness, control) = try launched()
        let unknown = call(control, .requestScene, ["request": "disconnect", "id": "nobody"])
        #expect(unknown.error == VarlinkError(
            "io.lifecyclekit.Lifecycle.SceneRefused",
            parameters: ["kind": "unknown-session", "id": "nobody", "reason": "No scene session is named \"nobody\"."]
        ))
        let invalid = call(control, .requestScene, ["request": "disconnect", "id": "a b"])
        #expect(invalid.error?.parameters["kind"] == "invalid-identifier")
        #expect(invalid.error?.parameters["reason"]?.stringValue?.hasSuffix(
            "use 1 to 128 characters, without /, spaces or control characters."
        ) == true)
        #expect(call(control, .requestScene, ["request": "suspend", "id": "a"]).error == .invalidParameter("request"))
        #expect(call(control, .getTree, ["scene": "nobody"]).error?.parameters["kind"] == "unknown-session")
        // Nothing moved.
        #expect(harness.application.connectedScenes.map(\.activationState) == [.foregroundActive, .foregroundActive, .foregroundActive])

        // An application without scenes: the request is refused as such, and there is nothing to list.
        let plain = DaemonHarness()
        plain.launch()
        let plainControl = ControlService(daemon: plain.daemon, socketDescription: "test", serviceUID: 0)
        #expect(call(plainControl, .requestScene, ["request": "discard", "id": "a"]).error?.parameters["kind"] == "scenes-not-adopted")
        #expect(call(plainControl, .getTree, ["scene": "a"]).error?.parameters["kind"] == "scenes-not-adopted")
        #expect(call(plainControl, .getScenes).result == ["sessions": [], "matched": 0, "total": 0])
        #expect(call(plainControl, .getStatus).result?["scenes"] == nil)
    }

    @Test func theTreeListsEveryConnectedScenesTreeOrOneAndTheStatusCountsTheScenesByState() throws {
        let (harness, control) = try launched()
        _ = call(control, .requestScene, ["request": "background", "id": "b"])
        _ = call(control, .requestScene, ["request": "disconnect", "id": "t"])
        let tree = call(control, .getTree)
        #expect(tree.result?["nodes"]?.arrayValue?.map { "\($0["path"]?.stringValue ?? "") \($0["depth"]?.integerValue ?? -1)" } == [
            "scene:a/root 0", "scene:a/root/leaf 1", "scene:b/root 0", "scene:b/root/leaf 1",
        ])
        let one = call(control, .getTree, ["scene": "b", "views": true])
        #expect(one.result?["nodes"]?.arrayValue?.map { $0["path"] } == [
            "scene:b/root", "scene:b/root.view", "scene:b/root/leaf", "scene:b/root/leaf.view",
        ])
        #expect(one.charged == 2 * ControlInterface.costPerNode)
        // A session whose scene is not connected has no tree.
        #expect(call(control, .getTree, ["scene": "t"]).result == ["nodes": []])
        // The status line is composed at the end of the turn, as the daemon's loop ends every turn.
        harness.application.runEndOfTurn()
        let status = call(control, .getStatus).result
        #expect(status?["scenes"] == ["sessions": 3, "foregroundActive": 1, "foregroundInactive": 0, "background": 1])
        #expect(status?["statusText"] == "active: 2 scenes: 1 active, 1 background")
        #expect(status?["controllers"] == 4)
        withExtendedLifetime(harness) {}
    }

    @Test func theTraceCarriesEachEventsSceneAndTheApplicationDelegatesEventsAboutItToo() throws {
        let harness = DaemonHarness(applicationDelegate: ControlSceneDelegate())
        let control = ControlService(daemon: harness.daemon, socketDescription: "test", serviceUID: 0)
        harness.launch()
        let follower = RecordedCall("io.lifecyclekit.Lifecycle.Trace", [:], more: true)
        control.handle(follower)
        try harness.application.requestSceneSessionActivation(persistentIdentifier: "a", inBackground: true)
        harness.application.runEndOfTurn()
        control.hub.flush()
        let events = Array(follower.replies.map { Self.events($0) }.joined()).filter { !$0.contains(".view") && !$0.contains(" view") }
        // Into the background: nothing appears, so the root's view (and the leaf it embeds) is not loaded yet.
        #expect(events == [
            "delegate application(_:configurationForConnecting:options:) a", "scene:a scene(_:willConnectTo:options:) a",
            "scene:a/root init a", "scene:a/root applicationDidEnterBackground a", "scene:a sceneDidEnterBackground a",
            "delegate application(_:shouldSaveApplicationState:) -",
        ])
        // The kept backlog (the delegates' events) has them too.
        let kept = call(control, .trace, ["backlog": 2])
        #expect(Self.events(kept.result) == [
            "scene:a sceneDidEnterBackground a", "delegate application(_:shouldSaveApplicationState:) -",
        ])
    }
}
