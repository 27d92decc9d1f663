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

/// `submit(_:cause:completion:)`: what became of a request, reported once its steps have all run.
@MainActor
@Suite("Request outcomes")
struct RequestOutcomeTests {
    /// A launched application with a two-controller tree and a recorder.
    private func launched() -> (Application, CallbackRecorder) {
        let app = makeApplication(
            delegate: TestDelegate { app in
                app.window = Window(rootViewController: ContainerController(identifier: "root", children: [LeafController(identifier: "leaf")]))
            }
        )
        let recorder = CallbackRecorder(app)
        app.launch()
        app.runEndOfTurn()
        recorder.clear()
        return (app, recorder)
    }

    @Test func aPerformedRequestReportsAfterItsLastStepWithTheNumbersOfExactlyItsEvents() throws {
        let (app, recorder) = launched()
        var outcomes: [RequestOutcome] = []
        var eventsSeenAtCompletion = 0
        app.submit(.enterBackground, cause: "control") { outcome in
            outcomes.append(outcome)
            eventsSeenAtCompletion = recorder.events.count
        }
        #expect(outcomes.count == 1)
        let range = try #require(outcomes.first?.events)
        guard case .performed = outcomes[0] else {
            Issue.record("expected performed, got \(outcomes[0])")
            return
        }
        // Every event of the transition had fired when the completion ran, and the range names exactly them.
        #expect(eventsSeenAtCompletion == recorder.events.count)
        let caused = recorder.events.filter { range.contains($0.sequence) && $0.cause == "control" }
        #expect(caused.map { "\($0.target) \($0.event)" } == [
            "root/leaf applicationWillResignActive", "root applicationWillResignActive", "delegate applicationWillResignActive",
            "root/leaf applicationDidEnterBackground", "root applicationDidEnterBackground",
            "delegate applicationDidEnterBackground",
        ])
        #expect(caused.count == range.count)
    }

    @Test func aRequestForTheCurrentStateReportsNoChangeAtOnce() {
        let (app, recorder) = launched()
        var outcome: RequestOutcome?
        app.submit(.becomeActive, cause: "control") { outcome = $0 }
        #expect(outcome == .noChange)
        #expect(recorder.events.isEmpty)
    }

    @Test func aDroppedRequestSaysWhy() {
        let app = makeApplication(delegate: TestDelegate())
        var outcome: RequestOutcome?
        app.submit(.enterBackground, cause: "control") { outcome = $0 }
        #expect(outcome == .dropped(reason: "the application has not launched yet"))
    }

    @Test func aQueuedRequestReportsWhenItsOwnTurnIsOverInArrivalOrder() {
        let delegate = TestDelegate { app in app.window = Window(rootViewController: LeafController(identifier: "root")) }
        let app = makeApplication(delegate: delegate)
        let recorder = CallbackRecorder(app)
        app.launch()
        app.runEndOfTurn()
        var log: [String] = []
        // Requests made from a callback queue behind the running transition.
        delegate.onEvent = { event, app in
            guard event == TraceEventName.applicationDidEnterBackground else { return }
            app.submit(.becomeActive, cause: "second") { log.append("second \($0)") }
            app.submit(.becomeActive, cause: "third") { log.append("third \($0)") }
        }
        app.submit(.enterBackground, cause: "first") { outcome in
            log.append("first done, state \(app.applicationState)")
            if case .performed(let range) = outcome {
                #expect(recorder.events.filter { range.contains($0.sequence) }.allSatisfy { $0.cause == "first" })
            }
        }
        delegate.onEvent = { _, _ in }
        #expect(log.count == 3)
        #expect(log[0] == "first done, state background")
        #expect(log[1].hasPrefix("second performed"))
        // The third asked for the state the second reached: nothing to do when its turn came.
        #expect(log[2] == "third no change")
        #expect(app.applicationState == .active)
    }

    @Test func aCoalescedMemoryWarningReportsWithTheOneItWasFoldedInto() {
        let delegate = TestDelegate { app in app.window = Window(rootViewController: LeafController(identifier: "root")) }
        let app = makeApplication(delegate: delegate)
        app.launch()
        app.runEndOfTurn()
        var log: [String] = []
        delegate.onEvent = { event, app in
            guard event == TraceEventName.applicationDidReceiveMemoryWarning else { return }
            // While one is delivered: folded into it.
            app.submit(.memoryWarning, cause: "psi") { log.append("folded \($0.events != nil) \($0)") }
        }
        app.submit(.memoryWarning, cause: "control") { log.append("delivered \($0)") }
        #expect(log.count == 2)
        #expect(log[0].hasPrefix("delivered performed"))
        #expect(log[1].hasPrefix("folded true coalesced"))
    }

    @Test func terminationReportsAfterTheTeardownAndLaterRequestsAreDropped() {
        let (app, recorder) = launched()
        var outcomes: [String] = []
        app.submit(.terminate, cause: "control") { outcome in
            outcomes.append("terminate \(app.applicationState) \(outcome.events != nil)")
        }
        #expect(outcomes == ["terminate terminated true"])
        #expect(recorder.events.last?.event == TraceEventName.deinitialize)
        app.submit(.enterBackground, cause: "control") { outcomes.append("late \($0)") }
        #expect(outcomes.last == "late dropped: the application has terminated")
    }

    @Test func aRequestFromEndOfTurnWorkReportsOnceItRanAfterThatWork() {
        let (app, _) = launched()
        var log: [String] = []
        app.scheduleTurnEndWork {
            app.submit(.reload, cause: "control") { log.append("first \($0)") }
            // A reload already waiting covers this one.
            app.submit(.reload, cause: "control") { log.append("second \($0)") }
            log.append("end-of-turn work done")
        }
        app.runEndOfTurn()
        #expect(log.count == 3)
        #expect(log[0] == "end-of-turn work done")
        #expect(log[1].hasPrefix("first performed"))
        #expect(log[2].hasPrefix("second coalesced"))
    }

    @Test func requestsWithoutACompletionKeepTheOthersAligned() {
        let delegate = TestDelegate { app in app.window = Window(rootViewController: LeafController(identifier: "root")) }
        let app = makeApplication(delegate: delegate)
        app.launch()
        app.runEndOfTurn()
        var log: [String] = []
        delegate.onEvent = { event, app in
            guard event == TraceEventName.applicationWillResignActive else { return }
            app.requestEnterBackground()
            app.submit(.becomeActive, cause: "tracked") { outcome in
                log.append("tracked \(app.applicationState) \(outcome.events != nil)")
            }
        }
        app.requestResignActive()
        delegate.onEvent = { _, _ in }
        #expect(log == ["tracked active true"])
    }
}

@MainActor
@Suite("Tree snapshots")
struct TreeSnapshotTests {
    @Test func theSnapshotListsControllersPreOrderWithTheirOwnViewsAndStatus() {
        final class Label: View {
            let text: String
            init(name: String, text: String) {
                self.text = text
                super.init(name: name)
            }
            override func draw(in context: inout StatusContext) { context.write(text) }
        }
        final class Labelled: ViewController {
            override func viewDidLoad() { view.addSubview(Label(name: "label", text: "\(identifier) ok")) }
        }
        let app = makeApplication(
            delegate: TestDelegate { app in
                let navigation = NavigationController(rootViewController: Labelled(identifier: "first"), identifier: "nav")
                app.window = Window(rootViewController: ContainerController(identifier: "root", children: [navigation]))
            }
        )
        app.launch()
        app.runEndOfTurn()
        let controllers = app.treeSnapshot(includingViews: false)
        #expect(controllers.map(\.path) == ["root", "root/nav", "root/nav/first"])
        #expect(controllers.map(\.depth) == [0, 1, 2])
        #expect(controllers.allSatisfy { $0.appearance == .appeared && $0.isViewLoaded == true })
        #expect(controllers.map(\.typeName) == ["ContainerController", "NavigationController", "Labelled"])
        #expect(controllers[2].statusText == "first ok")
        #expect(controllers[0].statusText == "", "a controller's status is its own views', not its children's")

        let all = app.treeSnapshot(includingViews: true)
        #expect(all.map { "\($0.depth) \($0.kind.rawValue) \($0.path)" } == [
            "0 controller root", "1 view root.view", "2 view root.view/subview",
            "1 controller root/nav", "2 view root/nav.view",
            "2 controller root/nav/first", "3 view root/nav/first.view", "4 view root/nav/first.view/label",
        ])
        #expect(all.last?.statusText == "first ok")
        #expect(all.last?.isInWindow == true)
        let counts = app.treeCounts()
        #expect(counts.controllers == 3)
        #expect(counts.views == 5)

        app.requestEnterBackground()
        #expect(app.treeSnapshot(includingViews: false).allSatisfy { $0.appearance == .appeared },
                "backgrounding does not make controllers disappear")
        app.requestTermination()
        #expect(app.treeSnapshot(includingViews: true).isEmpty)
    }

    @Test func aPresentedControllerHangsFromItsPresenterWithItsStyle() {
        let presented = fullScreen(ViewController(identifier: "sheet"))
        let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: LeafController(identifier: "root")) })
        app.launch()
        app.runEndOfTurn()
        app.window?.rootViewController?.present(presented, animated: false)
        app.runEndOfTurn()
        let nodes = app.treeSnapshot(includingViews: false)
        #expect(nodes.map(\.path) == ["root", "root/sheet"])
        #expect(nodes[1].presentationStyle == "fullScreen")
        #expect(nodes[0].appearance == .disappeared)
        #expect(nodes[1].appearance == .appeared)
    }
}
