//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleKit
import Testing

/// The scenes' state machine as a plain value: no application, no concurrency.
@Suite("The scene state machine as a value")
struct SceneStateMachineTests {
    private func kinds(_ steps: [SceneStateMachine.Step]) -> [String] {
        steps.map { step in
            let kind: String =
                switch step.kind {
                case .treeEvent(let event): "tree:\(event.rawValue)"
                default: "\(step.kind)"
                }
            return "\(step.identifier) \(kind) \(step.stateWhileFiring)→\(step.stateAfter)"
        }
    }

    private func machine(connecting ids: [String], gate: ApplicationState = .active, limit: Int? = nil) -> SceneStateMachine {
        var machine = SceneStateMachine(maximumBackgroundScenes: limit)
        for id in ids {
            machine.addSession(id)
            _ = machine.plan(.init(.activate(.active), id), gate: gate)
        }
        return machine
    }

    @Test func connectingIntoTheForegroundWalksFromUnattachedToActiveAndShowsTheWindowOnce() {
        var machine = SceneStateMachine()
        let added = machine.addSession("a")
        let addedAgain = machine.addSession("a")
        #expect(added && !addedAgain)
        let steps1 = kinds(machine.plan(.init(.activate(.active), "a"), gate: .active))
        #expect(
            steps1 == [
                "a configure unattached→unattached", "a willConnect unattached→unattached",
                "a willEnterForeground unattached→foregroundInactive", "a showWindow foregroundInactive→foregroundInactive",
                "a didBecomeActive foregroundActive→foregroundActive",
            ]
        )
        let steps2 = kinds(machine.plan(.init(.activate(.background), "a"), gate: .active))
        #expect(
            steps2 == [
                "a willResignActive foregroundActive→foregroundInactive", "a didEnterBackground background→background",
            ]
        )
        // Shown once: the return does not show it again.
        let steps3 = kinds(machine.plan(.init(.activate(.active), "a"), gate: .active))
        #expect(
            steps3 == [
                "a willEnterForeground background→foregroundInactive", "a didBecomeActive foregroundActive→foregroundActive",
            ]
        )
        let steps4 = machine.plan(.init(.activate(.active), "a"), gate: .active)
        #expect(steps4.isEmpty)
    }

    @Test func theGateBoundsEveryScene() {
        #expect(SceneStateMachine.effective(.active, gate: .inactive) == .foregroundInactive)
        #expect(SceneStateMachine.effective(.active, gate: .background) == .background)
        #expect(SceneStateMachine.effective(.background, gate: .active) == .background)
        var machine = SceneStateMachine()
        machine.addSession("a")
        let steps1 = kinds(machine.plan(.init(.activate(.active), "a"), gate: .background))
        #expect(
            steps1 == [
                "a configure unattached→unattached", "a willConnect unattached→unattached",
                "a didEnterBackground background→background",
            ]
        )
        #expect(machine.records["a"]?.wanted == .active)
        let steps2 = kinds(machine.follow(gate: .inactive, leaving: false))
        #expect(
            steps2 == [
                "a willEnterForeground background→foregroundInactive", "a showWindow foregroundInactive→foregroundInactive",
            ]
        )
    }

    @Test func leavingStepsTakeTheScenesLastConnectedFirstAndEnteringOnesInOrder() {
        var machine = machine(connecting: ["a", "b", "c"])
        #expect(machine.connectedInOrder == ["a", "b", "c"])
        let steps1 = kinds(machine.follow(gate: .inactive, leaving: true)).map { $0.prefix(1) }
        #expect(steps1 == ["c", "b", "a"])
        let steps2 = kinds(machine.follow(gate: .active, leaving: false)).map { $0.prefix(1) }
        #expect(steps2 == ["a", "b", "c"])
        let steps3 = kinds(machine.treeEvent(.memoryWarning)).map { $0.prefix(1) }
        #expect(steps3 == ["c", "b", "a"])
        let steps4 = kinds(machine.treeEvent(.didReload)).map { $0.prefix(1) }
        #expect(steps4 == ["a", "b", "c"])
        let steps5 = kinds(machine.disconnectAll())
        #expect(
            steps5 == [
                "c didDisconnect unattached→unattached", "c tearDown unattached→unattached",
                "b didDisconnect unattached→unattached", "b tearDown unattached→unattached",
                "a didDisconnect unattached→unattached", "a tearDown unattached→unattached",
            ]
        )
        #expect(machine.records.isEmpty)
        #expect(machine.sessions == ["a", "b", "c"])
    }

    @Test func disconnectingKeepsTheSessionAndDiscardingDeletesIt() {
        var machine = machine(connecting: ["a"])
        let steps1 = kinds(machine.plan(.init(.disconnect, "a"), gate: .active))
        #expect(
            steps1 == [
                "a willResignActive foregroundActive→foregroundInactive", "a didEnterBackground background→background",
                "a encodeState background→background", "a didDisconnect unattached→unattached",
                "a tearDown unattached→unattached",
            ]
        )
        let steps2 = machine.plan(.init(.disconnect, "a"), gate: .active)
        #expect(steps2.isEmpty)
        let steps3 = kinds(machine.plan(.init(.discard, "a"), gate: .active))
        #expect(steps3 == ["a discard unattached→unattached"])
        #expect(machine.sessions.isEmpty)
        let steps4 = machine.plan(.init(.discard, "a"), gate: .active)
        #expect(steps4.isEmpty)
        let steps5 = machine.plan(.init(.activate(.active), "a"), gate: .active)
        #expect(steps5.isEmpty)
    }

    @Test func theMemoryPolicyDisconnectsTheLeastRecentlyUsedBackgroundScenesNotAlreadyAnswered() {
        var machine = machine(connecting: ["a", "b", "c", "d"], limit: 1)
        for id in ["c", "a", "b"] { _ = machine.plan(.init(.activate(.background), id), gate: .active) }
        var answered = machine
        let steps1 = kinds(machine.memoryPolicy(answered: []))
        #expect(
            steps1 == [
                "c encodeState background→background", "c didDisconnect unattached→unattached", "c tearDown unattached→unattached",
                "a encodeState background→background", "a didDisconnect unattached→unattached", "a tearDown unattached→unattached",
            ]
        )
        let steps2 = kinds(answered.memoryPolicy(answered: ["c"])).map { $0.prefix(1) }
        #expect(steps2 == ["a", "a", "a"])
        var unlimited = self.machine(connecting: ["a"])
        _ = unlimited.plan(.init(.activate(.background), "a"), gate: .active)
        let steps3 = unlimited.memoryPolicy(answered: [])
        #expect(steps3.isEmpty)
    }

    @Test func theApplicationMachinePlansTheScenesAmongItsOwnStepsAndQueuesSceneRequests() {
        var machine = ApplicationStateMachine()
        machine.scenes = SceneStateMachine()
        let action1 = machine.request(.launch(.active), cause: .launch)
        #expect(action1 == .start)
        var callbacks: [String] = []
        func drain() {
            while case .step(let step) = machine.nextStep() {
                callbacks.append(step.scene.map { "\(step.callback):\($0.kind)" } ?? "\(step.callback)")
            }
        }
        drain()
        #expect(
            callbacks == [
                "willFinishLaunching", "restoreState", "didFinishLaunching", "showWindow", "didBecomeActive",
                "connectScenesAtLaunch", "finishLaunch",
            ]
        )
        callbacks = []
        machine.scenes?.addSession("a")
        let action2 = machine.request(.scene(.init(.activate(.background), "a")), cause: .api)
        #expect(action2 == .start)
        drain()
        #expect(callbacks == ["scene:configure", "scene:willConnect", "scene:didEnterBackground", "saveState"])
        callbacks = []
        let action3 = machine.request(.terminate, cause: .api)
        #expect(action3 == .start)
        let action4 = machine.request(.scene(.init(.discard, "a")), cause: .api)
        #expect(action4 == .dropped(reason: "termination has started"))
        drain()
        #expect(
            callbacks == [
                "beginTermination", "willResignActive", "didEnterBackground", "scene:treeEvent(LifecycleKit.SceneStateMachine.Step.TreeEvent.willTerminate)",
                "willTerminate", "saveState", "disconnectScenes", "tearDown",
            ]
        )
    }

    @Test func withoutScenesTheMachineRefusesSceneRequests() {
        var machine = ApplicationStateMachine()
        _ = machine.request(.launch(.active), cause: .launch)
        let action1 = machine.request(.scene(.init(.disconnect, "a")), cause: .api)
        #expect(action1 == .dropped(reason: "the application does not use scenes"))
    }
}
