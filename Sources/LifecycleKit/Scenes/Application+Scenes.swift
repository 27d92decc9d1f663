//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import FoundationEssentials
import Logging

/// The scene sessions of an application and its connected scenes, as the application performs the scenes' steps
/// (the state machine plans them: ``SceneStateMachine``).
@MainActor
struct SceneTable {
    /// Every session, by persistent identifier.
    var sessions: [String: SceneSession] = [:]
    /// The connected scenes (from their configuration to their teardown), by session.
    var scenes: [String: Scene] = [:]
    /// The connected scenes in the order they connected, kept as they connect and go (a new scene's serial is the
    /// highest: it goes last), so that no turn sorts them.
    var orderCache: [Scene]?
    /// The next session's serial, and the next scene's.
    var nextSerial = 0
    /// What each new connection is to be told, by session, until it connects.
    var pendingOptions: [String: Scene.ConnectionOptions] = [:]
    /// Sessions the saved state says were deleted while the service was not running, until they are reported.
    var discardedWhileNotRunning: [SceneSession] = []
    /// The saved sessions whose scenes were connected, in the order they connected, with what each wanted.
    var connectedWhenSaved: [(identifier: String, target: SceneStateMachine.Target)] = []
    /// How many connected scenes are active, and how many inactive (the application's state is the most active).
    var activeCount = 0
    var inactiveCount = 0
}

extension Application {
    // MARK: Sessions and scenes

    /// Whether the application uses scenes: its delegate has a ``ApplicationDelegate/sceneManifest``.
    public var usesScenes: Bool { sceneManifest != nil }

    /// Every scene session, connected or not, in the order they were made.
    public var sceneSessions: [SceneSession] {
        sceneTable.sessions.values.sorted { $0.serial < $1.serial }
    }

    /// The connected scenes, in the order they connected.
    public var connectedScenes: [Scene] {
        if let cached = sceneTable.orderCache { return cached }
        let ordered = sceneTable.scenes.values.sorted { $0.serial < $1.serial }
        sceneTable.orderCache = ordered
        return ordered
    }

    /// The session of this persistent identifier, or nil.
    public func sceneSession(withPersistentIdentifier identifier: String) -> SceneSession? {
        sceneTable.sessions[identifier]
    }

    /// Whether the application has scene sessions (its saved state then holds them).
    var hasSceneSessions: Bool { !sceneTable.sessions.isEmpty }

    // MARK: Requests

    /// Connects a scene, or brings a connected one to the foreground (UIKit's `requestSceneSessionActivation`): `session`
    /// nil makes a new session of `role`, named `persistentIdentifier` (a UUID when nil) and holding `userInfo`; an
    /// existing session's scene is connected again, restored from its saved state. The scene connects into the
    /// foreground — active while the application's process-level state lets it — or, `inBackground`, into the
    /// background. Returns the session at once; the connection waits in the one queue of requests (docs/lifecycle.md
    /// §1) and `completion` reports it.
    @discardableResult
    public func requestSceneSessionActivation(
        _ session: SceneSession? = nil,
        role: SceneSession.Role = .windowApplication,
        persistentIdentifier: String? = nil,
        userInfo: [String: String] = [:],
        inBackground: Bool = false,
        cause: Cause = .api,
        completion: RequestCompletion? = nil
    ) throws(SceneError) -> SceneSession {
        let target: SceneStateMachine.Target = inBackground ? .background : .active
        if let session {
            try enqueueScene(.init(.activate(target), try known(session)), userInfo: userInfo, cause: cause, completion: completion)
            return session
        }
        let identifier = persistentIdentifier ?? UUID().uuidString.lowercased()
        guard usesScenes else { throw SceneError(.scenesNotAdopted, identifier: identifier) }
        guard SceneError.isValid(identifier) else { throw SceneError(.invalidIdentifier, identifier: identifier) }
        guard sceneTable.sessions[identifier] == nil else { throw SceneError(.duplicateIdentifier, identifier: identifier) }
        let made = makeSession(identifier, role: role, userInfo: userInfo)
        try enqueueScene(.init(.activate(target), identifier), userInfo: userInfo, cause: cause) { [weak self] outcome in
            // A connection that never ran (termination had begun) leaves no session behind.
            if case .dropped = outcome { self?.forgetSession(identifier) }
            completion?(outcome)
        }
        return made
    }

    /// Sends one scene to the background (connecting it into the background when it is not connected): its tree hears
    /// `applicationWillResignActive`/`applicationDidEnterBackground`, its delegate `sceneWillResignActive`/
    /// `sceneDidEnterBackground`; the application's state follows its scenes.
    public func requestSceneEnterBackground(
        _ session: SceneSession,
        cause: Cause = .api,
        completion: RequestCompletion? = nil
    ) throws(SceneError) {
        try enqueueScene(.init(.activate(.background), try known(session)), cause: cause, completion: completion)
    }

    /// Disconnects one scene, keeping its session: it goes to the background first, the session keeps the state of its
    /// tree, its delegate hears `sceneDidDisconnect`, and its tree disappears and is released.
    public func requestSceneDisconnection(
        _ session: SceneSession,
        cause: Cause = .api,
        completion: RequestCompletion? = nil
    ) throws(SceneError) {
        try enqueueScene(.init(.disconnect, try known(session)), cause: cause, completion: completion)
    }

    /// Deletes a session (UIKit's `requestSceneSessionDestruction`): its scene disconnects first when connected, then
    /// the application delegate hears `application(_:didDiscardSceneSessions:)` and the session is gone, from the saved
    /// state too.
    public func requestSceneSessionDestruction(
        _ session: SceneSession,
        cause: Cause = .api,
        completion: RequestCompletion? = nil
    ) throws(SceneError) {
        try enqueueScene(.init(.discard, try known(session)), cause: cause, completion: completion)
    }

    /// Submits a request about the session named in it, as an operator's tool does (`lifecyclectl scene …`), and
    /// reports what became of it as ``submit(_:cause:completion:)`` does.
    public func submitScene(_ request: SceneRequest, cause: Cause, completion: RequestCompletion? = nil) throws(SceneError) {
        let identifier = request.persistentIdentifier
        guard usesScenes else { throw SceneError(.scenesNotAdopted, identifier: identifier) }
        guard sceneTable.sessions[identifier] != nil else { throw SceneError(.unknownSession, identifier: identifier) }
        let kind: SceneStateMachine.Request.Kind =
            switch request {
            case .foreground: .activate(.active)
            case .background: .activate(.background)
            case .disconnect: .disconnect
            case .discard: .discard
            }
        try enqueueScene(.init(kind, identifier), cause: cause, completion: completion)
    }

    private func known(_ session: SceneSession) throws(SceneError) -> String {
        let identifier = session.persistentIdentifier
        guard usesScenes else { throw SceneError(.scenesNotAdopted, identifier: identifier) }
        guard sceneTable.sessions[identifier] === session else { throw SceneError(.unknownSession, identifier: identifier) }
        return identifier
    }

    private func enqueueScene(
        _ request: SceneStateMachine.Request,
        userInfo: [String: String] = [:],
        cause: Cause,
        completion: RequestCompletion?
    ) throws(SceneError) {
        guard usesScenes else { throw SceneError(.scenesNotAdopted, identifier: request.identifier) }
        if case .activate = request.kind, sceneTable.scenes[request.identifier] == nil {
            sceneTable.pendingOptions[request.identifier] = Scene.ConnectionOptions(userInfo: userInfo, cause: cause)
        }
        enqueue(.scene(request), cause: cause, completion: completion)
    }

    private func makeSession(_ identifier: String, role: SceneSession.Role, userInfo: [String: String]) -> SceneSession {
        sceneTable.nextSerial += 1
        let session = SceneSession(persistentIdentifier: identifier, role: role, userInfo: userInfo, serial: sceneTable.nextSerial)
        sceneTable.sessions[identifier] = session
        machine.scenes?.addSession(identifier)
        return session
    }

    private func forgetSession(_ identifier: String) {
        guard sceneTable.scenes[identifier] == nil, let session = sceneTable.sessions[identifier], session.scene == nil else {
            return
        }
        sceneTable.sessions[identifier] = nil
        sceneTable.pendingOptions[identifier] = nil
        machine.scenes?.removeSession(identifier)
    }

    // MARK: The application's state with scenes

    /// The state the application is in when its walk has reached `gate`: with scenes, that of its most active scene
    /// (UIKit's `applicationState` in a scene-based app), `background` when none is in the foreground.
    func observedState(_ gate: ApplicationState) -> ApplicationState {
        guard usesScenes, gate != .notRunning, gate != .terminated else { return gate }
        if sceneTable.activeCount > 0 { return .active }
        return sceneTable.inactiveCount > 0 ? .inactive : .background
    }

    /// The application's state may have moved with its scenes: background time starts when it reaches the background,
    /// and ends when it leaves it.
    func sceneModeStateDidChange(from before: ApplicationState) {
        let wasForeground = before == .active || before == .inactive
        let isForeground = applicationState == .active || applicationState == .inactive
        if wasForeground, applicationState == .background {
            backgroundTasksCoordinator.applicationDidEnterBackground()
        } else if before == .background, isForeground {
            backgroundTasksCoordinator.applicationWillEnterForeground()
        }
    }

    /// `3 scenes: 1 active, 2 background`, for the status text.
    var sceneStatusSummary: String {
        let connected = sceneTable.scenes.count
        guard connected > 0 else { return "no scene connected" }
        let background = connected - sceneTable.activeCount - sceneTable.inactiveCount
        var parts: [String] = []
        if sceneTable.activeCount > 0 { parts.append("\(sceneTable.activeCount) active") }
        if sceneTable.inactiveCount > 0 { parts.append("\(sceneTable.inactiveCount) inactive") }
        if background > 0 { parts.append("\(background) background") }
        return "\(connected) scene\(connected == 1 ? "" : "s"): " + parts.joined(separator: ", ")
    }

    private func setActivationState(_ scene: Scene, _ state: Scene.ActivationState) {
        guard scene.activationState != state else { return }
        switch scene.activationState {
        case .foregroundActive: sceneTable.activeCount -= 1
        case .foregroundInactive: sceneTable.inactiveCount -= 1
        case .background, .unattached: break
        }
        switch state {
        case .foregroundActive: sceneTable.activeCount += 1
        case .foregroundInactive: sceneTable.inactiveCount += 1
        case .background, .unattached: break
        }
        scene.activationState = state
    }

    // MARK: Performing the steps

    /// Performs a step of an application that uses scenes when it is the scenes' business: a scene's step, launch's
    /// connections, the memory warning's policy, termination's disconnections, and the gate's moves (which fire nothing:
    /// UIKit does not call the application delegate's foreground and background callbacks once it uses scenes).
    /// Returns false for the steps §1 performs as it does without scenes.
    func performSceneModeStep(_ step: ApplicationStateMachine.Step) -> Bool {
        switch step.callback {
        case .scene:
            guard let sceneStep = step.scene else { preconditionFailure("a scene step without its scene: \(step)") }
            performSceneStep(sceneStep, gate: step.stateWhileFiring)
        case .connectScenesAtLaunch:
            machine.connectScenesAtLaunch(launchConnections())
        case .sceneMemoryPolicy:
            machine.applySceneMemoryPolicy()
        case .disconnectScenes:
            machine.disconnectScenesForTermination()
        case .willResignActive, .didEnterBackground, .willEnterForeground, .didBecomeActive:
            break
        default:
            return false
        }
        return true
    }

    private func performSceneStep(_ step: SceneStateMachine.Step, gate: ApplicationState) {
        let id = step.identifier
        // Every callback of the step is the scene's, also one whose path is never built: the stall detector names it.
        let outerScene = trace.runningScene
        trace.runningScene = id
        defer { trace.runningScene = outerScene }
        if let scene = sceneTable.scenes[id] {
            setActivationState(scene, step.stateWhileFiring)
            applicationState = observedState(gate)
        }
        switch step.kind {
        case .configure:
            configureScene(id)
        case .willConnect:
            guard let scene = sceneTable.scenes[id] else { break }
            traceSceneEvent(TraceEventName.sceneWillConnect, scene)
            scene.delegate?.scene(scene, willConnectTo: scene.session, options: scene.connectionOptions)
            if let saved = scene.session.savedState {
                var restorer = StateRestorer(application: self, archive: saved, registry: registeredArchiveClasses, scene: scene)
                restorer.restore()
            }
        case .willEnterForeground:
            guard let scene = sceneTable.scenes[id] else { break }
            deliverEntering(to: scene, TraceEventName.sceneWillEnterForeground, TraceEventName.applicationWillEnterForeground) {
                $0.sceneWillEnterForeground(scene)
            } controller: {
                $0.applicationWillEnterForeground()
                $0.updateLifecycleTasks(foreground: true, reason: .background)
            }
        case .showWindow:
            guard let scene = sceneTable.scenes[id] else { break }
            scene.window.show()
            runEndOfTurn()
        case .didBecomeActive:
            guard let scene = sceneTable.scenes[id] else { break }
            deliverEntering(to: scene, TraceEventName.sceneDidBecomeActive, TraceEventName.applicationDidBecomeActive) {
                $0.sceneDidBecomeActive(scene)
            } controller: {
                $0.applicationDidBecomeActive()
            }
        case .willResignActive:
            guard let scene = sceneTable.scenes[id] else { break }
            deliverLeaving(from: scene, TraceEventName.sceneWillResignActive, TraceEventName.applicationWillResignActive) {
                $0.sceneWillResignActive(scene)
            } controller: {
                $0.applicationWillResignActive()
            }
        case .didEnterBackground:
            guard let scene = sceneTable.scenes[id] else { break }
            deliverLeaving(from: scene, TraceEventName.sceneDidEnterBackground, TraceEventName.applicationDidEnterBackground) {
                $0.sceneDidEnterBackground(scene)
            } controller: {
                $0.applicationDidEnterBackground()
                $0.updateLifecycleTasks(foreground: false, reason: .background)
            }
        case .encodeState:
            guard let scene = sceneTable.scenes[id] else { break }
            scene.session.savedState = encodeTree(of: scene)
        case .didDisconnect:
            guard let scene = sceneTable.scenes[id] else { break }
            traceSceneEvent(TraceEventName.sceneDidDisconnect, scene)
            scene.delegate?.sceneDidDisconnect(scene)
        case .tearDown:
            guard let scene = sceneTable.scenes[id] else { break }
            tearDown(scene)
        case .discard:
            guard let session = sceneTable.sessions.removeValue(forKey: id) else { break }
            sceneTable.pendingOptions[id] = nil
            traceDelegateEvent(TraceEventName.applicationDidDiscardSceneSessions, detail: id, scene: id)
            delegate.application(self, didDiscardSceneSessions: [session])
        case .treeEvent(let event):
            guard let scene = sceneTable.scenes[id] else { break }
            deliver(event, to: scene)
        }
        if let scene = sceneTable.scenes[id] {
            setActivationState(scene, step.stateAfter)
        }
        applicationState = observedState(gate)
        // The status says how many scenes are in which state; it is composed again at the end of the turn.
        setNeedsStatusUpdate()
    }

    /// Asks the application delegate for the configuration, and makes the scene and its delegate.
    private func configureScene(_ id: String) {
        guard let session = sceneTable.sessions[id] else { return }
        let options = sceneTable.pendingOptions.removeValue(forKey: id) ?? Scene.ConnectionOptions(cause: currentCause)
        traceDelegateEvent(TraceEventName.applicationConfigurationForConnecting, detail: id, scene: id)
        let configuration = delegate.application(self, configurationForConnecting: session, options: options)
        let scene = Scene(session: session, application: self, options: options)
        sceneTable.nextSerial += 1
        scene.serial = sceneTable.nextSerial
        sceneTable.scenes[id] = scene
        sceneTable.orderCache?.append(scene)
        session.scene = scene
        session.configuration = configuration
        session.configurationName = configuration.name
        scene.delegate = configuration.delegateFactory?(scene)
    }

    /// The scene's tree disappears and is released, and the application lets go of the scene (its delegate goes with
    /// it at the end of the turn, after the did-callbacks).
    private func tearDown(_ scene: Scene) {
        scene.window.hide()
        runEndOfTurn()
        scene.window.releaseContent()
        setActivationState(scene, .unattached)
        sceneTable.scenes[scene.session.persistentIdentifier] = nil
        if let index = sceneTable.orderCache?.firstIndex(where: { $0 === scene }) {
            sceneTable.orderCache?.remove(at: index)
        }
        scene.session.scene = nil
        scheduleTurnEndWork { withExtendedLifetime(scene) {} }
    }

    // MARK: Delivering a scene's events (docs/lifecycle.md §2, per scene)

    /// The scene's controllers, reverse pre-order, taken when an event starts.
    private func controllers(of scene: Scene) -> [ViewController] {
        var list: [ViewController] = []
        scene.window.rootViewController?.appendPreOrder(to: &list)
        list.reverse()
        return list
    }

    /// An entering event: the scene delegate, then the scene's tree in pre-order.
    private func deliverEntering(
        to scene: Scene,
        _ event: String,
        _ controllerEvent: String,
        _ delegateCallback: (any SceneDelegate) -> Void,
        controller controllerCallback: (ViewController) -> Void
    ) {
        let list = controllers(of: scene)
        traceSceneEvent(event, scene)
        if let delegate = scene.delegate { delegateCallback(delegate) }
        fanOut.deliver(controllerEvent, to: list, reversed: false, application: self, controllerCallback)
    }

    /// A leaving event: the scene's tree in reverse pre-order, then the scene delegate.
    private func deliverLeaving(
        from scene: Scene,
        _ event: String,
        _ controllerEvent: String,
        _ delegateCallback: (any SceneDelegate) -> Void,
        controller controllerCallback: (ViewController) -> Void
    ) {
        fanOut.deliver(controllerEvent, to: controllers(of: scene), reversed: true, application: self, controllerCallback)
        traceSceneEvent(event, scene)
        if let delegate = scene.delegate { delegateCallback(delegate) }
    }

    /// A process-level event reaching one scene's tree (the scene delegate has no such callback).
    private func deliver(_ event: SceneStateMachine.Step.TreeEvent, to scene: Scene) {
        let list = controllers(of: scene)
        switch event {
        case .willTerminate:
            fanOut.deliver(TraceEventName.applicationWillTerminate, to: list, reversed: true, application: self) {
                $0.applicationWillTerminate()
            }
        case .memoryWarning:
            fanOut.deliver(TraceEventName.didReceiveMemoryWarning, to: list, reversed: true, application: self) {
                $0.didReceiveMemoryWarning()
                $0.releaseViewAfterMemoryWarning()
            }
        case .willReload:
            guard reloadRefusal == nil else { return }
            fanOut.deliver(TraceEventName.applicationWillReload, to: list, reversed: true, application: self) {
                $0.applicationWillReload()
            }
        case .didReload:
            guard reloadRefusal == nil else { return }
            fanOut.deliver(TraceEventName.applicationDidReload, to: list, reversed: false, application: self) {
                $0.applicationDidReload()
            }
        }
    }

    /// Records a callback of a scene's delegate: its target is the scene (`scene:<identifier>`).
    private func traceSceneEvent(_ event: String, _ scene: Scene) {
        trace.record(
            event: event,
            isDelegate: true,
            target: .named(scene.description),
            state: applicationState,
            cause: currentCause,
            scene: scene.session.persistentIdentifier
        )
    }

    // MARK: Launch

    /// The connections launch makes: the saved sessions that were connected, in their order, each into what it
    /// wanted (``SceneManifest/reconnectsScenesAtLaunch``); else a new session of the manifest's launch role; else none.
    private func launchConnections() -> [(identifier: String, target: SceneStateMachine.Target)] {
        guard let manifest = sceneManifest else { return [] }
        let saved = sceneTable.connectedWhenSaved.filter { sceneTable.sessions[$0.identifier] != nil }
        sceneTable.connectedWhenSaved = []
        if manifest.reconnectsScenesAtLaunch, !saved.isEmpty {
            for (identifier, _) in saved {
                sceneTable.pendingOptions[identifier] = Scene.ConnectionOptions(cause: currentCause)
            }
            return saved
        }
        guard let role = manifest.launchSceneRole else { return [] }
        let identifier = UUID().uuidString.lowercased()
        _ = makeSession(identifier, role: role, userInfo: [:])
        sceneTable.pendingOptions[identifier] = Scene.ConnectionOptions(cause: currentCause)
        return [(identifier, .active)]
    }

    /// Right after `didFinishLaunching`: the sessions the saved state says were deleted while the service was not
    /// running are reported to the application delegate, then forgotten.
    func reportSessionsDiscardedWhileNotRunning() {
        let discarded = sceneTable.discardedWhileNotRunning
        guard !discarded.isEmpty else { return }
        sceneTable.discardedWhileNotRunning = []
        traceDelegateEvent(
            TraceEventName.applicationDidDiscardSceneSessions,
            detail: discarded.map(\.persistentIdentifier).joined(separator: ",")
        )
        delegate.application(self, didDiscardSceneSessions: Set(discarded))
    }

    // MARK: Saved state

    /// A scene's tree as its session keeps it: its preserved controllers (the root and those below it with a
    /// restoration identifier), their values written by `encodeRestorableState(with:)`; nil when its root has no
    /// restoration identifier.
    private func encodeTree(of scene: Scene) -> Archive? {
        guard let root = scene.window.rootViewController, let identifier = root.restorationIdentifier else { return nil }
        let node = encode(root, restorationPath: identifier, registry: registeredArchiveClasses)
        return Archive(root: node, sourceName: "saved state of \(scene)")
    }

    /// Every session, as the saved state keeps it: a connected scene's tree encoded now, a disconnected one's as it was
    /// saved when it disconnected.
    func archivedSceneSessions(registry: ArchiveClassRegistry) -> [Archive.Session] {
        sceneSessions.map { session in
            let id = session.persistentIdentifier
            var tree = session.savedState?.rootNode
            var connected: String?
            if let scene = sceneTable.scenes[id] {
                if let root = scene.window.rootViewController, let identifier = root.restorationIdentifier {
                    tree = encode(root, restorationPath: identifier, registry: registry)
                }
                connected = (machine.scenes?.records[id]?.wanted ?? .background).rawValue
            }
            return Archive.Session(
                identifier: id,
                role: session.role.rawValue,
                userInfo: session.userInfo,
                configuration: session.configurationName,
                connected: connected,
                tree: tree
            )
        }
    }

    /// At launch (restoration): the saved sessions come back, disconnected, each with its scene's saved tree; the ones
    /// that were connected are connected again at the end of launch, the ones deleted meanwhile are reported.
    func restoreSceneSessions(_ sessions: [Archive.Session]) {
        guard !sessions.isEmpty else { return }
        guard usesScenes else {
            logger.notice("the saved state has \(sessions.count) scene sessions, but the application does not use scenes; they are dropped")
            return
        }
        for record in sessions {
            guard SceneError.isValid(record.identifier), sceneTable.sessions[record.identifier] == nil else {
                logger.warning("the saved state's scene session \(record.identifier.debugDescription) is not restored: its identifier is invalid or repeated")
                continue
            }
            let role = SceneSession.Role(rawValue: record.role)
            let session: SceneSession
            if record.discarded {
                sceneTable.nextSerial += 1
                session = SceneSession(persistentIdentifier: record.identifier, role: role, userInfo: record.userInfo, serial: sceneTable.nextSerial)
                sceneTable.discardedWhileNotRunning.append(session)
                continue
            }
            session = makeSession(record.identifier, role: role, userInfo: record.userInfo)
            session.configurationName = record.configuration
            session.savedState = record.tree.map { Archive(root: $0, sourceName: "saved state of \(session)") }
            if let connected = record.connected {
                sceneTable.connectedWhenSaved.append((record.identifier, connected == "background" ? .background : .active))
            }
        }
    }
}

/// One scene session as it is at one moment: a value for tools that list a running service's scenes
/// (`lifecyclectl scenes`, the control socket).
package struct SceneSessionSnapshot: Hashable, Sendable {
    /// The session's persistent identifier.
    package var identifier: String
    /// Its role.
    package var role: String
    /// Its scene's state (`unattached` when none is connected).
    package var state: Scene.ActivationState
    /// The application's values for it.
    package var userInfo: [String: String]
    /// Whether it holds a saved state its next connection restores.
    package var hasSavedState: Bool
    /// The name of the configuration its scene was last connected with.
    package var configuration: String?
}

extension Application {
    /// Every scene session now, in the order they were made.
    package func sceneSessionSnapshots() -> [SceneSessionSnapshot] {
        sceneSessions.map { session in
            SceneSessionSnapshot(
                identifier: session.persistentIdentifier,
                role: session.role.rawValue,
                state: session.scene?.activationState ?? .unattached,
                userInfo: session.userInfo,
                hasSavedState: session.savedState != nil,
                configuration: session.configurationName
            )
        }
    }
}
