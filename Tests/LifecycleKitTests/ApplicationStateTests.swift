//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleKit
import LifecycleKitTesting
import Testing

@MainActor
@Suite("Application states (docs/lifecycle.md §1)")
struct ApplicationStateTests {
    /// Moves a launched application to `state` with the public requests.
    private func move(_ app: Application, to state: ApplicationState) {
        switch state {
        case .active: app.requestBecomeActive()
        case .inactive: app.requestResignActive()
        case .background: app.requestEnterBackground()
        case .terminated: app.requestTermination()
        case .notRunning: Issue.record("cannot move back to notRunning")
        }
    }

    nonisolated static let running: [ApplicationState] = [.active, .inactive, .background]

    /// The delegate callbacks (with the state each fires in) of the legal path from one state to another.
    nonisolated static let paths: [ApplicationState: [ApplicationState: [String]]] = [
        .active: [
            .active: [],
            .inactive: ["applicationWillResignActive@active"],
            .background: ["applicationWillResignActive@active", "applicationDidEnterBackground@background"],
            .terminated: [
                "applicationWillResignActive@active", "applicationDidEnterBackground@background",
                "applicationWillTerminate@background",
            ],
        ],
        .inactive: [
            .active: ["applicationDidBecomeActive@active"],
            .inactive: [],
            .background: ["applicationDidEnterBackground@background"],
            .terminated: ["applicationDidEnterBackground@background", "applicationWillTerminate@background"],
        ],
        .background: [
            .active: ["applicationWillEnterForeground@background", "applicationDidBecomeActive@active"],
            .inactive: ["applicationWillEnterForeground@background"],
            .background: [],
            .terminated: ["applicationWillTerminate@background"],
        ],
    ]

    @Test(arguments: running, running + [.terminated])
    func everyStateReachesEveryOtherByTheLegalPath(from: ApplicationState, to: ApplicationState) {
        let app = makeApplication(delegate: TestDelegate())
        let recorder = CallbackRecorder(app)
        app.launch()
        move(app, to: from)
        #expect(app.applicationState == from)
        recorder.clear()
        move(app, to: to)
        #expect(app.applicationState == to)
        let fired = recorder.events.filter { $0.target == "delegate" }.map { "\($0.event)@\($0.state)" }
        #expect(fired == Self.paths[from]![to]!)
    }

    @Test func aRequestForTheCurrentStateFiresNothing() {
        let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: LeafController(identifier: "root")) })
        let recorder = CallbackRecorder(app)
        app.launch()
        recorder.clear()
        app.requestBecomeActive()
        app.runEndOfTurn()
        #expect(recorder.events.isEmpty)
    }

    @Test func launchingIntoTheForegroundShowsTheRootThenBecomesActiveThenReportsReady() {
        let (app, host, _) = makeLoggedApplication { app in
            app.window = Window(rootViewController: ViewController(identifier: "root"))
        }
        app.launch(into: .active)
        #expect(
            host.log.filter { !$0.contains("Layout") && !$0.contains(".view") && !$0.hasSuffix(" init") } == [
                "delegate willFinishLaunching",
                "delegate didFinishLaunching",
                "root loadView",
                "root viewDidLoad",
                "root viewWillAppear",
                "root viewDidAppear",
                "delegate applicationDidBecomeActive",
                "root applicationDidBecomeActive",
                "host ready",
            ]
        )
        #expect(app.applicationState == .active)
    }

    @Test func launchingIntoTheBackgroundShowsNothingUntilTheFirstForeground() {
        let (app, host, _) = makeLoggedApplication { app in
            app.window = Window(rootViewController: ViewController(identifier: "root"))
        }
        app.launch(into: .background)
        #expect(
            host.log.filter { !$0.hasSuffix(" init") } == [
                "delegate willFinishLaunching",
                "delegate didFinishLaunching",
                "root applicationDidEnterBackground",
                "delegate applicationDidEnterBackground",
                "host ready",
            ]
        )
        #expect(app.applicationState == .background)
        host.log.removeAll()
        app.requestBecomeActive()
        #expect(
            host.log.filter { !$0.contains("Layout") && !$0.contains(".view") } == [
                "delegate applicationWillEnterForeground",
                "root applicationWillEnterForeground",
                "root loadView",
                "root viewDidLoad",
                "root viewWillAppear",
                "root viewDidAppear",
                "delegate applicationDidBecomeActive",
                "root applicationDidBecomeActive",
            ]
        )
    }

    @Test func requestsMadeInsideACallbackAreQueuedAndNeverNest() {
        let (app, host, delegate) = makeLoggedApplication { app in
            app.window = Window(rootViewController: ViewController(identifier: "root"))
        }
        app.launch()
        delegate.onEvent = { event, app in
            if event == TraceEventName.applicationWillResignActive { app.requestBecomeActive(cause: "test:nested") }
        }
        host.log.removeAll()
        app.requestEnterBackground()
        #expect(
            host.log == [
                "root applicationWillResignActive",
                "delegate applicationWillResignActive",
                "root applicationDidEnterBackground",
                "delegate applicationDidEnterBackground",
                "delegate applicationWillEnterForeground",
                "root applicationWillEnterForeground",
                "delegate applicationDidBecomeActive",
                "root applicationDidBecomeActive",
            ]
        )
        #expect(app.applicationState == .active)
    }

    @Test func queuedRequestsRunInArrivalOrderWithTheirOwnCause() {
        let app = makeApplication(delegate: TestDelegate())
        let recorder = CallbackRecorder(app)
        app.launch()
        (app.delegate as! TestDelegate).onEvent = { event, app in
            guard event == TraceEventName.applicationWillResignActive else { return }
            app.requestMemoryWarning(cause: "first")
            app.requestBecomeActive(cause: "second")
        }
        recorder.clear()
        app.requestResignActive(cause: "outer")
        #expect(
            recorder.events.map { "\($0.event) \($0.cause)" } == [
                "applicationWillResignActive outer",
                "applicationDidReceiveMemoryWarning first",
                "applicationDidBecomeActive second",
            ]
        )
    }

    @Test func memoryWarningsArrivingDuringADeliveryAreCoalescedIntoIt() {
        let (app, host, delegate) = makeLoggedApplication { app in
            app.window = Window(rootViewController: ViewController(identifier: "root"))
        }
        app.launch()
        delegate.onEvent = { event, app in
            if event == TraceEventName.applicationDidReceiveMemoryWarning {
                app.requestMemoryWarning()
                app.requestMemoryWarning()
            }
        }
        host.log.removeAll()
        app.requestMemoryWarning()
        #expect(host.log == ["root didReceiveMemoryWarning", "delegate applicationDidReceiveMemoryWarning"])
        #expect(app.applicationState == .active, "a memory warning changes no state")
    }

    @Test func memoryWarningsQueuedDuringATransitionAreDeliveredOnce() {
        let app = makeApplication(delegate: TestDelegate())
        let recorder = CallbackRecorder(app)
        app.launch()
        (app.delegate as! TestDelegate).onEvent = { event, app in
            guard event == TraceEventName.applicationDidEnterBackground else { return }
            app.requestMemoryWarning()
            app.requestMemoryWarning()
            app.requestMemoryWarning()
        }
        recorder.clear()
        app.requestEnterBackground()
        #expect(
            recorder.lines() == [
                "delegate applicationWillResignActive",
                "delegate applicationDidEnterBackground",
                "delegate applicationDidReceiveMemoryWarning",
            ]
        )
        #expect(recorder.events.last?.state == .background)
    }

    @Test func terminationIsFinalAndLaterRequestsAreDropped() {
        let (app, host, delegate) = makeLoggedApplication()
        app.launch()
        delegate.onEvent = { event, app in
            if event == TraceEventName.applicationWillTerminate { app.requestBecomeActive() }
        }
        host.log.removeAll()
        app.requestTermination()
        app.requestBecomeActive()
        app.requestMemoryWarning()
        #expect(
            host.log == [
                "host stopping",
                "delegate applicationWillResignActive",
                "delegate applicationDidEnterBackground",
                "delegate applicationWillTerminate",
                "host terminated",
            ]
        )
        #expect(app.applicationState == .terminated)
    }

    @Test func reloadTellsTheHostOffersTheConfigurationThenTheTreeLetsGoThenItAppliesThenTheTreeApplies() {
        let (app, host, _) = makeLoggedApplication { app in
            app.window = Window(rootViewController: ViewController(identifier: "root"))
        }
        app.launch()
        host.log.removeAll()
        app.requestReload(cause: .signal(named: "SIGHUP"))
        #expect(
            host.log == [
                "host reloading",
                "delegate application(_:validateReload:)",
                "root validateReload(_:)",
                "root applicationWillReload",
                "delegate applicationWillReload",
                "host reread configuration",
                "delegate applicationDidReload",
                "root applicationDidReload",
                "host ready",
            ]
        )
        #expect(app.applicationState == .active)
    }

    @Test func everyEventCarriesItsCauseAndASequenceFromOne() {
        let app = makeApplication(delegate: TestDelegate())
        let recorder = CallbackRecorder(app)
        app.launch()
        app.requestEnterBackground(cause: .signal(named: "SIGUSR1"))
        #expect(recorder.events.map(\.sequence) == Array(1...recorder.events.count))
        #expect(recorder.events.first?.cause == .launch)
        #expect(recorder.events.last?.cause.rawValue == "signal:SIGUSR1")
    }

    @Test func requestsBeforeLaunchAreDroppedAndLaunchHappensOnce() {
        let app = makeApplication(delegate: TestDelegate())
        let recorder = CallbackRecorder(app)
        app.requestEnterBackground()
        #expect(app.applicationState == .notRunning)
        app.launch()
        app.launch()
        #expect(recorder.lines().filter { $0.contains("Launching") }.count == 2, "one launch: will and did")
    }
}

@Suite("The application state machine as a value")
struct StateMachineTests {
    /// Drains the machine, returning the callbacks it hands out.
    private func drain(_ machine: inout ApplicationStateMachine) -> [ApplicationStateMachine.Callback] {
        var callbacks: [ApplicationStateMachine.Callback] = []
        while case .step(let step) = machine.nextStep() { callbacks.append(step.callback) }
        return callbacks
    }

    @Test func launchIntoTheForegroundWalksEveryLaunchStep() {
        var machine = ApplicationStateMachine()
        #expect(machine.request(.launch(.active), cause: .launch) == .start)
        #expect(
            drain(&machine) == [
                .willFinishLaunching, .restoreState, .didFinishLaunching, .showWindow, .didBecomeActive, .finishLaunch,
            ]
        )
        #expect(machine.applicationState == .active)
        #expect(machine.hasShownWindow)
    }

    @Test func requestsDuringATransitionQueueCoalesceOrDrop() {
        var machine = ApplicationStateMachine()
        _ = machine.request(.launch(.active), cause: .launch)
        _ = drain(&machine)
        #expect(machine.request(.becomeActive, cause: .api) == .noChange)
        #expect(machine.request(.enterBackground, cause: .api) == .start)
        guard case .step(let first) = machine.nextStep() else { Issue.record("no step"); return }
        #expect(first.callback == .willResignActive && first.stateWhileFiring == .active)
        #expect(machine.request(.memoryWarning, cause: .api) == .queued)
        #expect(machine.request(.memoryWarning, cause: .api) == .coalesced)
        #expect(machine.request(.reload, cause: .api) == .queued)
        #expect(machine.request(.reload, cause: .api) == .coalesced)
        #expect(machine.request(.terminate, cause: .api) == .queued)
        #expect(machine.request(.becomeActive, cause: .api) == .dropped(reason: "termination has started"))
        #expect(
            drain(&machine) == [
                .didEnterBackground, .saveState, .didReceiveMemoryWarning, .beginReload, .willReload,
                .reloadConfiguration, .didReload, .finishReload, .beginTermination, .willTerminate, .saveState, .tearDown,
            ]
        )
        #expect(machine.applicationState == .terminated)
        #expect(machine.request(.memoryWarning, cause: .api) == .dropped(reason: "the application has terminated"))
    }

    // A request the host holds (made from a view move or end-of-turn work) is the transition in progress, not begun:
    // what arrives meanwhile queues behind it, a reload folds into a held reload, a memory warning into a held one,
    // and a termination held drops what comes after it (docs/lifecycle.md, "Re-entrancy").
    @Test func aHeldRequestIsOneQueueWithWhatArrivesAfterIt() {
        var machine = ApplicationStateMachine()
        _ = machine.request(.launch(.active), cause: .launch)
        _ = drain(&machine)
        #expect(machine.request(.reload, cause: "held") == .start)
        #expect(machine.request(.reload, cause: "folded") == .coalesced, "a reload not begun reads the newest file anyway")
        #expect(machine.request(.enterBackground, cause: "second") == .queued)
        guard case .step(let first) = machine.nextStep() else { Issue.record("no step"); return }
        #expect(first.callback == .beginReload && first.cause == "held")
        #expect(machine.request(.reload, cause: "third") == .queued, "a reload under way may have read the file already")
        #expect(
            drain(&machine) == [
                .willReload, .reloadConfiguration, .didReload, .finishReload, .willResignActive, .didEnterBackground,
                .saveState, .beginReload, .willReload, .reloadConfiguration, .didReload, .finishReload,
            ]
        )
        #expect(machine.request(.memoryWarning, cause: "held") == .start)
        #expect(machine.request(.memoryWarning, cause: "folded") == .coalesced)
        #expect(machine.request(.terminate, cause: "final") == .queued)
        #expect(machine.request(.becomeActive, cause: "late") == .dropped(reason: "termination has started"))
    }

    @Test func aQueuedRequestIsPlannedFromTheStateReachedWhenItStarts() {
        var machine = ApplicationStateMachine()
        _ = machine.request(.launch(.background), cause: .launch)
        guard case .step = machine.nextStep() else { Issue.record("no step"); return }
        #expect(machine.request(.enterBackground, cause: .api) == .queued)
        #expect(machine.request(.becomeActive, cause: .api) == .queued)
        var sawNoChange = false
        var callbacks: [ApplicationStateMachine.Callback] = []
        loop: while true {
            switch machine.nextStep() {
            case .step(let step): callbacks.append(step.callback)
            case .noChange(let request, _):
                #expect(request == .enterBackground)
                sawNoChange = true
            case .idle: break loop
            }
        }
        #expect(sawNoChange, "the launch ended in the background already")
        #expect(
            callbacks == [
                .restoreState, .didFinishLaunching, .didEnterBackground, .saveState, .finishLaunch, .willEnterForeground,
                .showWindow, .didBecomeActive,
            ]
        )
    }
}
