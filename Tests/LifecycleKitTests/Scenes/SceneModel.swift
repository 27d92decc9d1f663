//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit

/// A reference model of docs/lifecycle.md, "Scenes", written from the contract, never from the implementation: the
/// process-level state (the gate), each session and its scene (what it wants, where it is, whether its window has
/// shown, when it was last used), the one queue of requests with §1's rules (a memory warning or a reload waiting
/// absorbs an identical one, nothing after a termination), and each scene's tree of the tests' scene delegate: a root
/// whose leaf joins when its view first loads (or comes back with a restored tree).
///
/// Every request writes the lines the trace must show, `target event@application-state cause`: the scene delegates'
/// callbacks, the application delegate's that concern scenes (`configurationForConnecting`, `didDiscardSceneSessions`,
/// the memory warning, termination, reload, and `shouldSaveApplicationState` as the mark of each save), and each
/// tree's application events and releases (`deinit`). A request may be *armed* on a scene delegate's callback or on
/// the application delegate's memory warning: when it fires, the request is made from inside it and waits in the
/// queue, as a real callback's does.
struct SceneModel {
    enum Target: Equatable { case active, background }
    enum State: Equatable { case unattached, inactive, active, background }

    struct SceneRecord {
        var wanted: Target
        var state: State = .unattached
        var shown = false
        var hasLeaf = false
        var serial: Int
        var lastUse: Int
    }

    struct Session {
        var serial: Int
        /// Whether the saved tree it keeps has the leaf (nil: nothing saved).
        var savedLeaf: Bool?
    }

    enum Request: Equatable, CustomStringConvertible {
        case process(ApplicationState)
        case terminate
        case memoryWarning
        case reload
        case connect(String, Target)
        case activate(String, Target)
        case disconnect(String)
        case discard(String)

        var description: String {
            switch self {
            case .process(let state): "process \(state)"
            case .terminate: "terminate"
            case .memoryWarning: "memory warning"
            case .reload: "reload"
            case .connect(let id, let target): "connect \(id) \(target)"
            case .activate(let id, let target): "\(target == .active ? "foreground" : "background") \(id)"
            case .disconnect(let id): "disconnect \(id)"
            case .discard(let id): "discard \(id)"
            }
        }
    }

    /// A request armed on a callback: `target` is a scene's identifier, or `delegate` for the memory warning.
    struct Arm: CustomStringConvertible {
        var target: String
        var callback: String
        var request: Request
        var cause: String
        var description: String { "\(request) from \(target) \(callback) (\(cause))" }
    }

    var gate: ApplicationState = .active
    var terminated = false
    var sessions: [String: Session] = [:]
    var scenes: [String: SceneRecord] = [:]
    var limit: Int
    var expected: [String] = []
    var arms: [Arm] = []
    private var clock = 0
    private var sessionSerial = 0

    init(limit: Int) {
        self.limit = limit
    }

    var connectedInOrder: [String] { scenes.sorted { $0.value.serial < $1.value.serial }.map(\.key) }

    /// The application's state: its most active scene's.
    var applicationState: ApplicationState {
        if terminated { return .terminated }
        if scenes.values.contains(where: { $0.state == .active }) { return .active }
        return scenes.values.contains { $0.state == .inactive } ? .inactive : .background
    }

    // MARK: Making requests

    private var queue: [(Request, String)] = []
    private var current: Request?
    private var running = false

    /// Whether a request about sessions can be made now (the API checks it when called); a new connection registers
    /// its session at once.
    mutating func accepts(_ request: Request) -> Bool {
        switch request {
        case .connect(let id, _):
            guard sessions[id] == nil else { return false }
            sessionSerial += 1
            sessions[id] = Session(serial: sessionSerial)
            return true
        case .activate(let id, _), .disconnect(let id), .discard(let id):
            return sessions[id] != nil
        case .process, .terminate, .memoryWarning, .reload:
            return true
        }
    }

    /// A request made from outside (running it and what it queues) or from a callback (queued).
    mutating func submit(_ request: Request, cause: String) {
        guard accepts(request) else { return }
        if terminated || current == .terminate || queue.contains(where: { $0.0 == .terminate }) {
            if case .connect(let id, _) = request { sessions[id] = nil }
            return
        }
        if running {
            if request == .memoryWarning, current == .memoryWarning || queue.contains(where: { $0.0 == .memoryWarning }) { return }
            if request == .reload, queue.contains(where: { $0.0 == .reload }) { return }
            queue.append((request, cause))
            return
        }
        running = true
        queue.append((request, cause))
        while !queue.isEmpty {
            let (next, nextCause) = queue.removeFirst()
            current = next
            run(next, cause: nextCause)
        }
        current = nil
        running = false
    }

    // MARK: Running one request

    private mutating func run(_ request: Request, cause: String) {
        switch request {
        case .process(let target):
            walkGate(to: target, cause: cause, saving: true)
        case .terminate:
            walkGate(to: .background, cause: cause, saving: false)
            for id in connectedInOrder.reversed() { tree(id, "applicationWillTerminate", leaving: true, cause: cause) }
            emit("delegate applicationWillTerminate", cause)
            terminated = true
            save(cause)
            for id in connectedInOrder.reversed() { remove(id, cause: cause) }
        case .memoryWarning:
            for id in connectedInOrder.reversed() { tree(id, "didReceiveMemoryWarning", leaving: true, cause: cause) }
            emit("delegate applicationDidReceiveMemoryWarning", cause)
            fire("delegate", "applicationDidReceiveMemoryWarning")
            var answered: Set<String> = []
            for (queued, _) in queue {
                if case .disconnect(let id) = queued { answered.insert(id) }
                if case .discard(let id) = queued { answered.insert(id) }
            }
            let candidates = scenes.filter { $0.value.state == .background && !answered.contains($0.key) }
                .sorted { $0.value.lastUse < $1.value.lastUse }.map(\.key)
            if candidates.count > limit {
                for id in candidates.prefix(candidates.count - limit) {
                    sessions[id]!.savedLeaf = scenes[id]!.hasLeaf
                    remove(id, cause: cause)
                }
                save(cause)
            }
        case .reload:
            for id in connectedInOrder.reversed() { tree(id, "applicationWillReload", leaving: true, cause: cause) }
            emit("delegate applicationWillReload", cause)
            emit("delegate applicationDidReload", cause)
            for id in connectedInOrder { tree(id, "applicationDidReload", leaving: false, cause: cause) }
        case .connect(let id, let target), .activate(let id, let target):
            guard sessions[id] != nil else { return }
            if scenes[id] == nil {
                connect(id, target, cause: cause)
            } else {
                scenes[id]!.wanted = target
                let saves = walk(id, to: effective(target), cause: cause)
                if saves { save(cause) }
            }
        case .disconnect(let id):
            guard scenes[id] != nil else { return }
            _ = walk(id, to: .background, cause: cause)
            sessions[id]!.savedLeaf = scenes[id]!.hasLeaf
            remove(id, cause: cause)
            save(cause)
        case .discard(let id):
            guard sessions[id] != nil else { return }
            if scenes[id] != nil {
                _ = walk(id, to: .background, cause: cause)
                remove(id, cause: cause)
            }
            sessions[id] = nil
            emit("delegate application(_:didDiscardSceneSessions:)", cause)
            save(cause)
        }
    }

    private func effective(_ target: Target) -> State {
        guard target == .active else { return .background }
        switch gate {
        case .active: return .active
        case .inactive: return .inactive
        default: return .background
        }
    }

    private static func rank(_ state: State) -> Int {
        switch state {
        case .unattached, .background: 0
        case .inactive: 1
        case .active: 2
        }
    }

    /// The legal path of the gate, one step at a time; every scene follows each step.
    private mutating func walkGate(to target: ApplicationState, cause: String, saving: Bool) {
        while gate != target {
            let leaving = Self.order(gate) > Self.order(target)
            let next: ApplicationState
            switch (gate, target) {
            case (.active, _): next = .inactive
            case (.background, _): next = .inactive
            case (.inactive, let goal): next = goal
            default: return
            }
            gate = next
            let order = connectedInOrder
            for id in leaving ? order.reversed() : order {
                _ = walk(id, to: effective(scenes[id]!.wanted), cause: cause)
            }
            if next == .background, saving { save(cause) }
        }
    }

    private static func order(_ state: ApplicationState) -> Int {
        switch state {
        case .active: 2
        case .inactive: 1
        default: 0
        }
    }

    private mutating func connect(_ id: String, _ target: Target, cause: String) {
        clock += 1
        scenes[id] = SceneRecord(wanted: target, serial: clock, lastUse: clock)
        emit("delegate application(_:configurationForConnecting:options:)", cause)
        if let savedLeaf = sessions[id]?.savedLeaf { scenes[id]!.hasLeaf = savedLeaf }
        emit("scene:\(id) scene(_:willConnectTo:options:)", cause)
        fire(id, "willConnect")
        guard scenes[id] != nil else { return }
        let goal = effective(target)
        if goal == .background {
            setState(id, .background)
            leavingEvent(id, scene: "sceneDidEnterBackground", tree: "applicationDidEnterBackground", cause: cause)
            save(cause)
        } else {
            _ = walk(id, to: goal, cause: cause)
        }
    }

    /// The single steps that take a connected scene to `goal`; returns whether it entered the background.
    @discardableResult
    private mutating func walk(_ id: String, to goal: State, cause: String) -> Bool {
        var enteredBackground = false
        while let record = scenes[id], record.state != goal {
            if Self.rank(record.state) > Self.rank(goal) {
                if record.state == .active {
                    leavingEvent(id, scene: "sceneWillResignActive", tree: "applicationWillResignActive", cause: cause)
                    setState(id, .inactive)
                } else {
                    setState(id, .background)
                    leavingEvent(id, scene: "sceneDidEnterBackground", tree: "applicationDidEnterBackground", cause: cause)
                    clock += 1
                    scenes[id]?.lastUse = clock
                    enteredBackground = true
                }
            } else if record.state == .inactive {
                setState(id, .active)
                enteringEvent(id, scene: "sceneDidBecomeActive", tree: "applicationDidBecomeActive", cause: cause)
            } else {
                enteringEvent(id, scene: "sceneWillEnterForeground", tree: "applicationWillEnterForeground", cause: cause)
                setState(id, .inactive)
                if !record.shown {
                    // The window shows its root, whose view loads: the leaf joins then, unless restored with the tree.
                    scenes[id]?.shown = true
                    scenes[id]?.hasLeaf = true
                }
            }
        }
        return enteredBackground
    }

    /// `sceneDidDisconnect`, then the tree is released (root, then leaf).
    private mutating func remove(_ id: String, cause: String) {
        setState(id, .unattached)
        emit("scene:\(id) sceneDidDisconnect", cause)
        fire(id, "sceneDidDisconnect")
        let hasLeaf = scenes[id]!.hasLeaf
        emit("scene:\(id)/root deinit", cause)
        if hasLeaf { emit("scene:\(id)/root/leaf deinit", cause) }
        scenes[id] = nil
        arms.removeAll { $0.target == id }
    }

    private mutating func save(_ cause: String) {
        guard !sessions.isEmpty else { return }
        emit("delegate application(_:shouldSaveApplicationState:)", cause)
    }

    private mutating func setState(_ id: String, _ state: State) {
        scenes[id]?.state = state
    }

    private mutating func tree(_ id: String, _ event: String, leaving: Bool, cause: String) {
        guard let record = scenes[id] else { return }
        var targets = ["scene:\(id)/root"]
        if record.hasLeaf { targets.append("scene:\(id)/root/leaf") }
        for target in leaving ? targets.reversed() : targets { emit("\(target) \(event)", cause) }
    }

    /// A will-callback fires in the state being left: the caller sets the state after; a did-callback in the state
    /// reached: the caller sets it before.
    private mutating func enteringEvent(_ id: String, scene event: String, tree treeEvent: String, cause: String) {
        // The tree is taken when the event starts.
        let record = scenes[id]!
        emit("scene:\(id) \(event)", cause)
        fire(id, event)
        var targets = ["scene:\(id)/root"]
        if record.hasLeaf { targets.append("scene:\(id)/root/leaf") }
        for target in targets { emit("\(target) \(treeEvent)", cause) }
    }

    private mutating func leavingEvent(_ id: String, scene event: String, tree treeEvent: String, cause: String) {
        tree(id, treeEvent, leaving: true, cause: cause)
        emit("scene:\(id) \(event)", cause)
        fire(id, event)
    }

    private mutating func emit(_ line: String, _ cause: String) {
        expected.append("\(line)@\(applicationState) \(cause)")
    }

    /// A callback fired: the request armed on it, if any, is made now (from inside it).
    private mutating func fire(_ target: String, _ callback: String) {
        guard let index = arms.firstIndex(where: { $0.target == target && $0.callback == callback }) else { return }
        let arm = arms.remove(at: index)
        submit(arm.request, cause: arm.cause)
    }
}
