//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The application's state machine as a value: it decides which callbacks a request fires, in which order, and
/// what happens to requests that arrive while a transition runs. ``Application`` performs what it returns.
///
/// Rules (docs/lifecycle.md §1): a request names a target; the machine walks the legal path to it one step at a time;
/// a request equal to the current state is a no-op; requests made during a transition are queued in arrival order;
/// terminate is final; memory warnings (and reloads) that arrive while one is pending are coalesced into it. A request
/// the host accepts but holds (made from a view move or end-of-turn work) is the transition in progress, not begun:
/// what arrives meanwhile queues behind it, and a reload folds into a held reload.
package struct ApplicationStateMachine: Sendable {
    /// What a host, a signal or the application itself can ask for.
    package enum Request: Hashable, Sendable, CustomStringConvertible {
        /// Launch from `notRunning` into the foreground or the background.
        case launch(LaunchTarget)
        /// Go to `active`.
        case becomeActive
        /// Go to `inactive` (foreground, not serving).
        case resignActive
        /// Go to `background`.
        case enterBackground
        /// Terminate; final.
        case terminate
        /// Deliver a memory warning; changes no state.
        case memoryWarning
        /// Reload the configuration; changes no state.
        case reload
        /// A request about one scene (an application that uses scenes).
        case scene(SceneStateMachine.Request)

        package var description: String {
            switch self {
            case .launch(let target): "launch(\(target.rawValue))"
            case .becomeActive: "becomeActive"
            case .resignActive: "resignActive"
            case .enterBackground: "enterBackground"
            case .terminate: "terminate"
            case .memoryWarning: "memoryWarning"
            case .reload: "reload"
            case .scene(let request): request.description
            }
        }
    }

    /// One thing the application does while walking a transition.
    package enum Callback: String, Sendable, Hashable, CaseIterable {
        /// `application(_:willFinishLaunchingWithOptions:)`.
        case willFinishLaunching
        /// Restoration of saved state, between the two launch callbacks.
        case restoreState
        /// `application(_:didFinishLaunchingWithOptions:)`.
        case didFinishLaunching
        /// The window shows its root controller (it appears, section 3), the first time the app is in the foreground.
        case showWindow
        /// `applicationDidBecomeActive`.
        case didBecomeActive
        /// `applicationWillResignActive`.
        case willResignActive
        /// `applicationDidEnterBackground`.
        case didEnterBackground
        /// The tree's state is preserved (after `applicationDidEnterBackground` has reached the whole tree, and after
        /// `applicationWillTerminate`, before the teardown).
        case saveState
        /// `applicationWillEnterForeground`.
        case willEnterForeground
        /// Termination begins: the host tells the service manager (`STOPPING=1`).
        case beginTermination
        /// `applicationWillTerminate`.
        case willTerminate
        /// Every visible controller disappears and the whole tree is released.
        case tearDown
        /// `applicationDidReceiveMemoryWarning`.
        case didReceiveMemoryWarning
        /// A reload begins: the host tells the service manager (`RELOADING=1`).
        case beginReload
        /// `applicationWillReload`: the tree lets go of what the old configuration set up.
        case willReload
        /// The host re-reads its configuration; an invalid one keeps the old.
        case reloadConfiguration
        /// `applicationDidReload`: the tree applies the (new or kept) configuration.
        case didReload
        /// The launch is over: the host reports readiness (`READY=1`).
        case finishLaunch
        /// The reload is over: the host reports readiness again (`READY=1`).
        case finishReload
        /// A step of one scene (``Step/scene``).
        case scene
        /// Launch connects the scenes: the saved sessions that were connected, or a new one (planned when it comes, once
        /// restoration has read the sessions).
        case connectScenesAtLaunch
        /// After a memory warning, the least recently used background scenes beyond the manifest's limit disconnect
        /// (planned when it comes, once the warning's callbacks have answered it).
        case sceneMemoryPolicy
        /// Termination's teardown disconnects every scene, the last connected first (planned when it comes, so the save
        /// before it still sees them connected).
        case disconnectScenes
    }

    /// One step of a transition: the callback, the state it fires in, and the state after it.
    package struct Step: Hashable, Sendable {
        /// What to do.
        package var callback: Callback
        /// The application state while the callback runs.
        package var stateWhileFiring: ApplicationState
        /// The application state once the callback has returned.
        package var stateAfter: ApplicationState
        /// The request this step belongs to.
        package var request: Request
        /// What asked for the request.
        package var cause: Cause
        /// The scene step, for ``Callback/scene``.
        package var scene: SceneStateMachine.Step? = nil
    }

    /// What ``request(_:cause:)`` decided.
    package enum RequestAction: Hashable, Sendable {
        /// A transition starts now: call ``nextStep()`` until it returns ``Next/idle``.
        case start
        /// A transition is running; the request runs after it, in arrival order.
        case queued
        /// An identical request is already being delivered or waiting; this one is folded into it.
        case coalesced
        /// The request asks for the current state: nothing fires.
        case noChange
        /// The request cannot run now; the reason says why (terminating, not launched, launched twice).
        case dropped(reason: String)
    }

    /// What ``nextStep()`` hands out.
    package enum Next: Hashable, Sendable {
        /// Perform this step.
        case step(Step)
        /// A queued request turned out to ask for the state the application is already in.
        case noChange(Request, Cause)
        /// Nothing more to do: the machine is idle (or terminated).
        case idle
    }

    private struct Pending: Hashable, Sendable {
        var request: Request
        var cause: Cause
    }

    private struct Transition: Hashable, Sendable {
        var current: Pending
        /// The steps left, the next one last: handing one out is a `popLast`, whatever the length (a process-level
        /// event of an application with 10,000 scenes has some 20,000 steps).
        private var stepsLeft: [Step]
        var queue: [Pending]
        /// Whether `current` has handed out a step: a request accepted while the application finishes the work it
        /// was made from (a view move, the end of a turn) waits, not started, as a queued one does.
        var hasBegun = false

        init(current: Pending, steps: [Step], queue: [Pending]) {
            self.current = current
            self.stepsLeft = steps.reversed()
            self.queue = queue
        }

        /// Whether no step is left.
        var isOver: Bool { stepsLeft.isEmpty }

        /// The next step, taken.
        mutating func takeStep() -> Step? { stepsLeft.popLast() }

        /// Replaces the steps left (the next request's).
        mutating func setSteps(_ steps: [Step]) { stepsLeft = steps.reversed() }

        /// Puts `steps` before the steps left, in their order.
        mutating func prepend(_ steps: [Step]) { stepsLeft.append(contentsOf: steps.reversed()) }
    }

    private enum State: Hashable, Sendable {
        /// Nothing launched yet.
        case notRunning
        /// Running, no transition in progress.
        case idle(ApplicationState)
        /// Walking a transition; `state` is the application state reached so far.
        case transitioning(ApplicationState, Transition)
        /// Terminated; every request is dropped.
        case terminated
    }

    private var state: State = .notRunning
    /// Whether the window has shown its root controller yet (a background launch defers it to the first foreground).
    package private(set) var hasShownWindow = false
    /// The scenes, for an application that uses them (nil: one implicit window, the steps of §1 alone).
    package var scenes: SceneStateMachine?

    /// Creates a machine in `notRunning`.
    package init() {}

    /// The application state reached so far (during a transition: after the last step handed out).
    package var applicationState: ApplicationState {
        switch state {
        case .notRunning: .notRunning
        case .idle(let s): s
        case .transitioning(let s, _): s
        case .terminated: .terminated
        }
    }

    /// Whether a transition is in progress (requests are being queued).
    package var isTransitioning: Bool {
        if case .transitioning = state { return true }
        return false
    }

    /// Whether termination has begun (its transition runs or waits in the queue) or is over.
    package var isTerminating: Bool {
        switch state {
        case .terminated:
            return true
        case .transitioning(_, let transition):
            return transition.current.request == .terminate || transition.queue.contains { $0.request == .terminate }
        case .notRunning, .idle:
            return false
        }
    }

    /// Whether the request being walked has handed out its last step (true when no transition runs): the next step,
    /// if any, starts a queued request.
    package var isBetweenRequests: Bool {
        guard case .transitioning(_, let transition) = state else { return true }
        return transition.isOver
    }

    /// Takes a request; returns what to do about it.
    package mutating func request(_ request: Request, cause: Cause) -> RequestAction {
        let pending = Pending(request: request, cause: cause)
        if case .scene = request, scenes == nil { return .dropped(reason: "the application does not use scenes") }
        switch state {
        case .notRunning:
            guard case .launch = request else {
                return .dropped(reason: "the application has not launched yet")
            }
            let steps = plan(pending, from: .notRunning)
            state = .transitioning(.notRunning, Transition(current: pending, steps: steps, queue: []))
            return .start

        case .terminated:
            return .dropped(reason: "the application has terminated")

        case .idle(let current):
            if case .launch = request {
                return .dropped(reason: "the application has already launched")
            }
            let steps = plan(pending, from: current)
            if steps.isEmpty { return .noChange }
            state = .transitioning(current, Transition(current: pending, steps: steps, queue: []))
            return .start

        case .transitioning(let current, var transition):
            if transition.current.request == .terminate || transition.queue.contains(where: { $0.request == .terminate })
            {
                return .dropped(reason: "termination has started")
            }
            if case .launch = request {
                return .dropped(reason: "the application is already launching or running")
            }
            if request == .memoryWarning || request == .reload {
                // A memory warning being delivered covers the ones that arrive during it; a reload that has not
                // started yet will read the newest configuration anyway. A reload in progress may have read the
                // file already, so a new one queues behind it.
                let inFlight = transition.current.request == request
                let waiting = transition.queue.contains { $0.request == request } || (inFlight && !transition.hasBegun)
                if waiting || (inFlight && request == .memoryWarning) { return .coalesced }
            }
            transition.queue.append(pending)
            state = .transitioning(current, transition)
            return .queued
        }
    }

    /// Hands out the next step of the running transition, starting queued requests as earlier ones finish.
    package mutating func nextStep() -> Next {
        guard case .transitioning(let current, var transition) = state else { return .idle }
        // The transition's steps are this copy's alone while it changes (the state would share them until it is
        // written back, and taking a step would copy them all): every path below writes the state again.
        state = .idle(current)
        if let step = transition.takeStep() {
            transition.hasBegun = true
            if step.callback == .showWindow { hasShownWindow = true }
            if step.stateAfter == .terminated {
                // Terminate is final: whatever was queued behind it is dropped by request() already.
                state = transition.isOver ? .terminated : .transitioning(.terminated, transition)
            } else {
                state = .transitioning(step.stateAfter, transition)
            }
            return .step(step)
        }
        guard !transition.queue.isEmpty else {
            state = current == .terminated ? .terminated : .idle(current)
            return .idle
        }
        let next = transition.queue.removeFirst()
        let steps = plan(next, from: current)
        transition.current = next
        transition.setSteps(steps)
        transition.hasBegun = false
        state = .transitioning(current, transition)
        if steps.isEmpty { return .noChange(next.request, next.cause) }
        return nextStep()
    }

    /// The steps of `pending` from `state`: §1's, and for an application that uses scenes, the scenes' steps among
    /// them (docs/lifecycle.md, "Scenes").
    private mutating func plan(_ pending: Pending, from state: ApplicationState) -> [Step] {
        guard var scenes else { return Self.steps(for: pending, from: state, hasShownWindow: hasShownWindow) }
        // Taken out while it plans, so that its tables are not copied (they are one per connected scene); put back
        // when the plan is made.
        self.scenes = nil
        defer { self.scenes = scenes }
        func wrap(_ sceneSteps: [SceneStateMachine.Step], state: ApplicationState) -> [Step] {
            sceneSteps.map {
                Step(callback: .scene, stateWhileFiring: state, stateAfter: state, request: pending.request, cause: pending.cause, scene: $0)
            }
        }
        if case .scene(let request) = pending.request {
            let sceneSteps = scenes.plan(request, gate: state)
            var steps = wrap(sceneSteps, state: state)
            if sceneSteps.contains(where: \.callsForSave) {
                steps.append(Step(callback: .saveState, stateWhileFiring: state, stateAfter: state, request: pending.request, cause: pending.cause))
            }
            return steps
        }
        // The application's own walk moves the gate; the scenes follow each of its steps. The application delegate
        // hears none of the four foreground and background callbacks (UIKit's rule with scenes): the step stays, as
        // the gate's move, and its performer calls nobody.
        var steps: [Step] = []
        for step in Self.steps(for: pending, from: state, hasShownWindow: hasShownWindow) {
            switch step.callback {
            case .willResignActive, .didEnterBackground:
                steps.append(step)
                steps += wrap(scenes.follow(gate: step.stateAfter, leaving: true), state: step.stateAfter)
            case .willEnterForeground, .didBecomeActive:
                steps.append(step)
                steps += wrap(scenes.follow(gate: step.stateAfter, leaving: false), state: step.stateAfter)
            case .willTerminate:
                steps += wrap(scenes.treeEvent(.willTerminate), state: step.stateWhileFiring)
                steps.append(step)
            case .tearDown:
                steps.append(Step(callback: .disconnectScenes, stateWhileFiring: step.stateWhileFiring, stateAfter: step.stateWhileFiring, request: step.request, cause: step.cause))
                steps.append(step)
            case .didReceiveMemoryWarning:
                steps += wrap(scenes.treeEvent(.memoryWarning), state: step.stateWhileFiring)
                steps.append(step)
                steps.append(Step(callback: .sceneMemoryPolicy, stateWhileFiring: step.stateAfter, stateAfter: step.stateAfter, request: step.request, cause: step.cause))
            case .willReload:
                steps += wrap(scenes.treeEvent(.willReload), state: step.stateWhileFiring)
                steps.append(step)
            case .didReload:
                steps.append(step)
                steps += wrap(scenes.treeEvent(.didReload), state: step.stateAfter)
            case .finishLaunch:
                steps.append(Step(callback: .connectScenesAtLaunch, stateWhileFiring: step.stateWhileFiring, stateAfter: step.stateWhileFiring, request: step.request, cause: step.cause))
                steps.append(step)
            default:
                steps.append(step)
            }
        }
        return steps
    }

    /// Plans launch's connections (``Callback/connectScenesAtLaunch``, being performed): they run next, before the
    /// launch's last step. `list`: the sessions, in order, each with the state it is to be connected into.
    package mutating func connectScenesAtLaunch(_ list: [(identifier: String, target: SceneStateMachine.Target)]) {
        insertSceneSteps { scenes, gate in scenes.connectAtLaunch(list, gate: gate) }
    }

    /// Plans the disconnections a memory warning the application did not answer calls for
    /// (``Callback/sceneMemoryPolicy``, being performed): the application answered it by asking, from its callbacks,
    /// to disconnect or discard scenes, which wait in the queue now.
    package mutating func applySceneMemoryPolicy() {
        guard case .transitioning(_, let transition) = state else { return }
        var answered: Set<String> = []
        for pending in transition.queue {
            if case .scene(let request) = pending.request, request.kind == .disconnect || request.kind == .discard {
                answered.insert(request.identifier)
            }
        }
        insertSceneSteps { scenes, _ in scenes.memoryPolicy(answered: answered) }
    }

    /// Plans termination's disconnections (``Callback/disconnectScenes``, being performed): every scene, the last
    /// connected first, before the teardown of what is left.
    package mutating func disconnectScenesForTermination() {
        insertSceneSteps(saving: false) { scenes, _ in scenes.disconnectAll() }
    }

    /// Puts the steps `plan` makes at the front of the running transition, followed by a save when they call for one
    /// (and `saving`).
    private mutating func insertSceneSteps(
        saving: Bool = true,
        _ plan: (inout SceneStateMachine, ApplicationState) -> [SceneStateMachine.Step]
    ) {
        guard case .transitioning(let current, var transition) = state, var scenes else { return }
        // Both taken out while they change, so that neither is copied; written back below.
        self.scenes = nil
        state = .idle(current)
        let sceneSteps = plan(&scenes, current)
        self.scenes = scenes
        let pending = transition.current
        var steps = sceneSteps.map {
            Step(callback: .scene, stateWhileFiring: current, stateAfter: current, request: pending.request, cause: pending.cause, scene: $0)
        }
        if saving, sceneSteps.contains(where: \.callsForSave) {
            steps.append(Step(callback: .saveState, stateWhileFiring: current, stateAfter: current, request: pending.request, cause: pending.cause))
        }
        transition.prepend(steps)
        state = .transitioning(current, transition)
    }

    /// The steps that take the application from `state` to what `pending` asks for.
    private static func steps(for pending: Pending, from state: ApplicationState, hasShownWindow: Bool) -> [Step] {
        var steps: [Step] = []
        var now = state
        var shown = hasShownWindow
        func add(_ callback: Callback, firing: ApplicationState, after: ApplicationState) {
            steps.append(
                Step(
                    callback: callback,
                    stateWhileFiring: firing,
                    stateAfter: after,
                    request: pending.request,
                    cause: pending.cause
                )
            )
            now = after
        }
        // The single legal steps of docs/lifecycle.md §1. "Will" callbacks fire in the state being left, "did" callbacks
        // in the state reached, as UIKit reports `applicationState`; the launch callbacks both see `inactive`.
        func toInactive() {
            switch now {
            case .active: add(.willResignActive, firing: .active, after: .inactive)
            case .background:
                add(.willEnterForeground, firing: .background, after: .inactive)
                if !shown {
                    add(.showWindow, firing: .inactive, after: .inactive)
                    shown = true
                }
            default: break
            }
        }
        func toActive() {
            if now == .background { toInactive() }
            if now == .inactive { add(.didBecomeActive, firing: .active, after: .active) }
        }
        func toBackground() {
            if now == .active { toInactive() }
            if now == .inactive {
                add(.didEnterBackground, firing: .background, after: .background)
                // Termination saves once, after applicationWillTerminate.
                if pending.request != .terminate { add(.saveState, firing: .background, after: .background) }
            }
        }

        switch pending.request {
        case .launch(let target):
            guard state == .notRunning else { return [] }
            add(.willFinishLaunching, firing: .inactive, after: .inactive)
            add(.restoreState, firing: .inactive, after: .inactive)
            add(.didFinishLaunching, firing: .inactive, after: .inactive)
            switch target {
            case .active:
                add(.showWindow, firing: .inactive, after: .inactive)
                shown = true
                toActive()
            case .background:
                toBackground()
            }
            add(.finishLaunch, firing: now, after: now)
        case .becomeActive:
            toActive()
        case .resignActive:
            toInactive()
        case .enterBackground:
            toBackground()
        case .terminate:
            add(.beginTermination, firing: now, after: now)
            toBackground()
            add(.willTerminate, firing: .background, after: .terminated)
            add(.saveState, firing: .terminated, after: .terminated)
            add(.tearDown, firing: .terminated, after: .terminated)
        case .memoryWarning:
            add(.didReceiveMemoryWarning, firing: now, after: now)
        case .reload:
            add(.beginReload, firing: now, after: now)
            add(.willReload, firing: now, after: now)
            add(.reloadConfiguration, firing: now, after: now)
            add(.didReload, firing: now, after: now)
            add(.finishReload, firing: now, after: now)
        case .scene:
            // Planned by the scenes' machine (plan(_:from:)).
            break
        }
        return steps
    }
}
