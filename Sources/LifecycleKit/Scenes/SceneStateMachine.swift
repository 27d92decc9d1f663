//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The scenes' part of the application's state machine, as a value: which scene callbacks a scene request, or a step of
/// the application's own walk, fires, in which order (docs/lifecycle.md, "Scenes"). ``ApplicationStateMachine`` holds
/// it, plans with it, and hands its steps out with its own, so every scene request waits in the one queue of §1.
///
/// Each connected scene *wants* a state (active or background: the last request about it) and is held below it by
/// the application's process-level state, the *gate* (what `SIGUSR1`, `SIGUSR2`, an interruption, logind ask for): a
/// scene is in the lower of the two. A request about one scene changes what it wants; a step of the application's walk
/// moves the gate, and with it every scene whose state it bounds.
package struct SceneStateMachine: Sendable, Hashable {
    /// What a scene asks to be in.
    package enum Target: String, Hashable, Sendable {
        /// In the foreground and active (while the gate lets it).
        case active
        /// In the background.
        case background
    }

    /// A request about one session.
    package struct Request: Hashable, Sendable, CustomStringConvertible {
        /// What is asked for.
        package enum Kind: Hashable, Sendable {
            /// Bring the scene to `target`, connecting it first when it is not connected.
            case activate(Target)
            /// Disconnect the scene, keeping its session and saving its state.
            case disconnect
            /// Delete the session, disconnecting its scene first.
            case discard
        }

        /// What is asked for.
        package var kind: Kind
        /// The session's persistent identifier.
        package var identifier: String

        /// A request of `kind` about the session `identifier`.
        package init(_ kind: Kind, _ identifier: String) {
            self.kind = kind
            self.identifier = identifier
        }

        package var description: String {
            switch kind {
            case .activate(let target): "scene \(target == .active ? "foreground" : "background") \(identifier)"
            case .disconnect: "scene disconnect \(identifier)"
            case .discard: "scene discard \(identifier)"
            }
        }
    }

    /// One thing done to one scene.
    package struct Step: Hashable, Sendable {
        /// What to do.
        package enum Kind: Hashable, Sendable {
            /// Ask the application delegate for the configuration (`application(_:configurationForConnecting:options:)`)
            /// and make the scene and its delegate.
            case configure
            /// `scene(_:willConnectTo:options:)`, then the session's saved state is restored into its tree.
            case willConnect
            /// `sceneWillEnterForeground` (the delegate, then the tree).
            case willEnterForeground
            /// The scene's window shows its root controller (it appears), the first time the scene is in the foreground;
            /// the turn's did-callbacks follow at once.
            case showWindow
            /// `sceneDidBecomeActive` (the delegate, then the tree).
            case didBecomeActive
            /// `sceneWillResignActive` (the tree, then the delegate).
            case willResignActive
            /// `sceneDidEnterBackground` (the tree, then the delegate).
            case didEnterBackground
            /// The session keeps the restorable state of the scene's tree.
            case encodeState
            /// `sceneDidDisconnect`.
            case didDisconnect
            /// The scene's tree disappears and is released; the application lets go of the scene.
            case tearDown
            /// `application(_:didDiscardSceneSessions:)`, and the session is deleted.
            case discard
            /// An application event that reaches the scene's tree only (the application delegate hears it, the scene
            /// delegate has no such callback).
            case treeEvent(TreeEvent)
        }

        /// A process-level event the scene's tree hears as the application's tree does.
        package enum TreeEvent: String, Hashable, Sendable {
            /// `applicationWillTerminate` (leaving: the scenes last connected first).
            case willTerminate
            /// `didReceiveMemoryWarning` (leaving).
            case memoryWarning
            /// `applicationWillReload` (leaving).
            case willReload
            /// `applicationDidReload` (entering: the scenes in the order connected).
            case didReload
        }

        /// What to do.
        package var kind: Kind
        /// The session's persistent identifier.
        package var identifier: String
        /// The scene's state while its callback runs: *will* callbacks fire in the state being left, *did* callbacks in
        /// the state reached.
        package var stateWhileFiring: Scene.ActivationState
        /// The scene's state once the step is done.
        package var stateAfter: Scene.ActivationState
    }

    /// What the machine knows of a connected scene.
    package struct Record: Hashable, Sendable {
        /// Its state once the steps handed out so far have run.
        package var state: Scene.ActivationState
        /// What it asks to be in.
        package var wanted: Target
        /// Whether its window has shown its root (a scene connected into the background shows it at its first return).
        package var hasShownWindow = false
        /// Its place in the connection order.
        package var serial: Int
        /// When it was last in use: connected, or left the foreground. The smallest is the least recently used.
        package var lastUse: Int
    }

    /// The sessions that exist (connected or not).
    package private(set) var sessions: Set<String> = []
    /// The connected scenes, by session.
    package private(set) var records: [String: Record] = [:]
    /// How many scenes may stay in the background after a memory warning the application does not answer; nil: any.
    package var maximumBackgroundScenes: Int?
    /// A clock of the machine's own, for the connection order and the last use: deterministic.
    private var clock = 0

    /// A machine with no session.
    package init(maximumBackgroundScenes: Int? = nil) {
        self.maximumBackgroundScenes = maximumBackgroundScenes
    }

    /// The connected scenes, in the order they connected.
    package var connectedInOrder: [String] {
        records.sorted { $0.value.serial < $1.value.serial }.map(\.key)
    }

    /// Records a new session; false when one of that identifier exists.
    @discardableResult
    package mutating func addSession(_ identifier: String) -> Bool {
        sessions.insert(identifier).inserted
    }

    /// Forgets a session that never connected (its request was dropped).
    package mutating func removeSession(_ identifier: String) {
        guard records[identifier] == nil else { return }
        sessions.remove(identifier)
    }

    // MARK: Requests about one scene

    /// The steps of a request about one scene, planned from the gate `gate` when the request starts; empty when it
    /// changes nothing (the session is gone, the scene is already where it is asked to be, or is not connected).
    package mutating func plan(_ request: Request, gate: ApplicationState) -> [Step] {
        let id = request.identifier
        guard sessions.contains(id) else { return [] }
        var steps: [Step] = []
        switch request.kind {
        case .activate(let target):
            if records[id] == nil {
                connect(id, wanting: target, gate: gate, into: &steps)
            } else {
                records[id]!.wanted = target
                walk(id, to: Self.effective(target, gate: gate), into: &steps)
            }
        case .disconnect:
            guard records[id] != nil else { return [] }
            walk(id, to: .background, into: &steps)
            add(.encodeState, id, .background, .background, into: &steps)
            remove(id, into: &steps)
        case .discard:
            if records[id] != nil {
                walk(id, to: .background, into: &steps)
                remove(id, into: &steps)
            }
            sessions.remove(id)
            add(.discard, id, .unattached, .unattached, into: &steps)
        }
        return steps
    }

    // MARK: The application's walk

    /// The steps by which the scenes follow the gate to `gate`: leaving (`leaving`: toward the background), the
    /// scenes last connected first; entering, in the order they connected.
    package mutating func follow(gate: ApplicationState, leaving: Bool) -> [Step] {
        var steps: [Step] = []
        let order = connectedInOrder
        for id in leaving ? order.reversed() : order {
            walk(id, to: Self.effective(records[id]!.wanted, gate: gate), into: &steps)
        }
        return steps
    }

    /// An application event that reaches every scene's tree: leaving ones the scenes last connected first, entering
    /// ones in connection order.
    package mutating func treeEvent(_ event: Step.TreeEvent) -> [Step] {
        let order = connectedInOrder
        let entering = event == .didReload
        return (entering ? order : order.reversed()).map { id in
            let state = records[id]!.state
            return Step(kind: .treeEvent(event), identifier: id, stateWhileFiring: state, stateAfter: state)
        }
    }

    /// Termination's teardown: every scene disconnects, the one last connected first (teardown mirrors setup).
    package mutating func disconnectAll() -> [Step] {
        var steps: [Step] = []
        for id in connectedInOrder.reversed() { remove(id, into: &steps) }
        return steps
    }

    /// The scenes the connection at launch brings back, or the new one, each into the state it wants.
    package mutating func connectAtLaunch(_ list: [(identifier: String, target: Target)], gate: ApplicationState) -> [Step] {
        var steps: [Step] = []
        for (id, target) in list { steps += plan(Request(.activate(target), id), gate: gate) }
        return steps
    }

    /// After a memory warning's delivery: when more scenes are connected in the background than
    /// ``maximumBackgroundScenes`` allows, the least recently used ones beyond it disconnect. The application answers
    /// the warning by asking, from its callbacks, to disconnect or discard scenes: those (`answered`) are counted as
    /// gone already.
    package mutating func memoryPolicy(answered: Set<String>) -> [Step] {
        guard let limit = maximumBackgroundScenes else { return [] }
        let candidates = records.filter { $0.value.state == .background && !answered.contains($0.key) }
            .sorted { $0.value.lastUse < $1.value.lastUse }
        guard candidates.count > limit else { return [] }
        var steps: [Step] = []
        for (id, _) in candidates.prefix(candidates.count - limit) {
            add(.encodeState, id, .background, .background, into: &steps)
            remove(id, into: &steps)
        }
        return steps
    }

    // MARK: Walking one scene

    private static func rank(_ state: Scene.ActivationState) -> Int {
        switch state {
        case .unattached, .background: 0
        case .foregroundInactive: 1
        case .foregroundActive: 2
        }
    }

    /// The state a scene that wants `target` is in under `gate`: the lower of the two.
    package static func effective(_ target: Target, gate: ApplicationState) -> Scene.ActivationState {
        guard target == .active else { return .background }
        switch gate {
        case .active: return .foregroundActive
        case .inactive: return .foregroundInactive
        case .background, .notRunning, .terminated: return .background
        }
    }

    private mutating func tick() -> Int {
        clock += 1
        return clock
    }

    private mutating func add(
        _ kind: Step.Kind,
        _ id: String,
        _ firing: Scene.ActivationState,
        _ after: Scene.ActivationState,
        into steps: inout [Step]
    ) {
        steps.append(Step(kind: kind, identifier: id, stateWhileFiring: firing, stateAfter: after))
        if records[id] != nil { records[id]!.state = after }
    }

    private mutating func connect(_ id: String, wanting target: Target, gate: ApplicationState, into steps: inout [Step]) {
        let now = tick()
        records[id] = Record(state: .unattached, wanted: target, serial: now, lastUse: now)
        add(.configure, id, .unattached, .unattached, into: &steps)
        add(.willConnect, id, .unattached, .unattached, into: &steps)
        let goal = Self.effective(target, gate: gate)
        if goal == .background {
            // Connected into the background, as a background launch: `sceneDidEnterBackground`, nothing appears.
            add(.didEnterBackground, id, .background, .background, into: &steps)
        } else {
            walk(id, to: goal, into: &steps)
        }
    }

    /// The single steps that take a connected scene to `goal` (§1's legal steps, with a scene's names).
    private mutating func walk(_ id: String, to goal: Scene.ActivationState, into steps: inout [Step]) {
        while let record = records[id], record.state != goal {
            if Self.rank(record.state) > Self.rank(goal) {
                if record.state == .foregroundActive {
                    add(.willResignActive, id, .foregroundActive, .foregroundInactive, into: &steps)
                } else {
                    add(.didEnterBackground, id, .background, .background, into: &steps)
                    records[id]!.lastUse = tick()
                }
            } else if record.state == .foregroundInactive {
                add(.didBecomeActive, id, .foregroundActive, .foregroundActive, into: &steps)
            } else {
                add(.willEnterForeground, id, record.state, .foregroundInactive, into: &steps)
                if !record.hasShownWindow {
                    records[id]!.hasShownWindow = true
                    add(.showWindow, id, .foregroundInactive, .foregroundInactive, into: &steps)
                }
            }
        }
    }

    /// `sceneDidDisconnect`, then the teardown; the scene is no longer connected.
    private mutating func remove(_ id: String, into steps: inout [Step]) {
        add(.didDisconnect, id, .unattached, .unattached, into: &steps)
        add(.tearDown, id, .unattached, .unattached, into: &steps)
        records[id] = nil
    }
}

extension SceneStateMachine.Step {
    /// Whether the state must be saved once the request this step belongs to is over: a scene reached the background,
    /// disconnected, or its session was deleted.
    var callsForSave: Bool {
        switch kind {
        case .didEnterBackground, .didDisconnect, .discard: true
        default: false
        }
    }
}
