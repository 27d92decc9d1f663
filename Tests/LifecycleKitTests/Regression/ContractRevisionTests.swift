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

// The rules the contract gained from the seed documents (interruptions, background time, the outgoing controller's
// layout during a push, presentation that leaves the presenter visible, one view per controller, views released on a
// memory warning, one place in the tree per controller, a size change laying out the superview) and the defects a
// close reading of the core found. Each test asserts a whole sequence and failed before its change.

/// A controller whose `loadView` reads `view` before assigning one.
@MainActor
final class EagerLoadController: ViewController {
    override func loadView() {
        _ = view.subviews
    }
}

/// Counts its loads, for the memory-warning tests.
@MainActor
final class CountingController: ViewController {
    private(set) var loads = 0
    override func viewDidLoad() {
        loads += 1
        view.addSubview(View(name: "content"))
    }
}

@MainActor
@Suite("The contract's revised rules")
struct ContractRevisionTests {
    private func launched(_ root: @escaping @MainActor () -> ViewController) -> (Application, CallbackRecorder) {
        let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: root()) })
        let recorder = CallbackRecorder(app)
        app.launch()
        recorder.clear()
        return (app, recorder)
    }

    // §1: an interruption asks for `inactive`.
    @Test func anInterruptionFromActiveIsWillResignActiveAloneAndStaysInactive() {
        let (app, recorder) = launched { LeafController(identifier: "root") }
        app.requestResignActive(cause: "signal:SIGRTMIN+3")
        #expect(recorder.lines(targets: ["delegate", "root"]) == ["root applicationWillResignActive", "delegate applicationWillResignActive"])
        #expect(app.applicationState == .inactive)
        recorder.clear()
        app.runEndOfTurn()
        #expect(app.applicationState == .inactive)
        app.requestBecomeActive(cause: "signal:SIGUSR2")
        #expect(recorder.lines(targets: ["delegate", "root"]) == ["delegate applicationDidBecomeActive", "root applicationDidBecomeActive"])
    }

    // §3: the outgoing controller is laid out once more during a push.
    @Test func aPushLaysOutTheIncomingThenTheOutgoingControllerBeforeItDisappears() {
        let (app, recorder) = launched { NavigationController(rootViewController: LeafController(identifier: "a"), identifier: "nav") }
        let nav = app.window!.rootViewController as! NavigationController
        nav.pushViewController(LeafController(identifier: "b"), animated: true)
        app.runEndOfTurn()
        #expect(
            recorder.lines(targets: ["nav/a", "nav/b"], events: viewLifecycleEvents.subtracting(["init"])) == [
                "nav/b loadView", "nav/b viewDidLoad", "nav/a viewWillDisappear", "nav/b viewWillAppear",
                "nav/b viewWillLayoutSubviews", "nav/b viewDidLayoutSubviews",
                "nav/a viewWillLayoutSubviews", "nav/a viewDidLayoutSubviews",
                "nav/a viewDidDisappear", "nav/b viewDidAppear",
            ]
        )
    }

    @Test func aFullScreenPresentationFollowsThePushOrder() {
        let (app, recorder) = launched { LeafController(identifier: "a") }
        let b = LeafController(identifier: "b")
        b.modalPresentationStyle = .fullScreen
        app.window!.rootViewController!.present(b, animated: false)
        app.runEndOfTurn()
        #expect(
            recorder.lines(targets: ["a", "a/b"], events: viewLifecycleEvents.subtracting(["init"])) == [
                "a/b loadView", "a/b viewDidLoad", "a viewWillDisappear", "a/b viewWillAppear",
                "a/b viewWillLayoutSubviews", "a/b viewDidLayoutSubviews",
                "a viewWillLayoutSubviews", "a viewDidLayoutSubviews",
                "a viewDidDisappear", "a/b viewDidAppear",
            ]
        )
    }

    // §3: by default a presentation leaves its presenter visible.
    @Test func byDefaultAPresentedControllerLeavesItsPresenterVisible() {
        let (app, recorder) = launched { LeafController(identifier: "a") }
        let a = app.window!.rootViewController!
        a.present(LeafController(identifier: "sheet"), animated: false)
        app.runEndOfTurn()
        #expect(recorder.lines(targets: ["a"], events: appearanceEvents).isEmpty)
        #expect(recorder.lines(targets: ["a/sheet"], events: ["viewWillAppear", "viewDidAppear"]) == ["a/sheet viewWillAppear", "a/sheet viewDidAppear"])
        #expect(a.isVisible)
        a.dismiss(animated: false)
        app.runEndOfTurn()
        #expect(recorder.lines(targets: ["a"], events: appearanceEvents).isEmpty)
    }

    // §3: assigning a view counts as loading it.
    @Test func assigningAViewRunsViewDidLoadOnce() {
        let (app, recorder) = launched { ViewController(identifier: "root") }
        let controller = CountingController(identifier: "assigned")
        app.adopt(controller)
        recorder.clear()
        controller.view = View(name: "custom")
        #expect(controller.loads == 1)
        _ = controller.view
        #expect(controller.loads == 1)
        #expect(recorder.lines(targets: ["assigned"]) == ["assigned viewDidLoad"])
    }

    @Test func aViewAssignedToASecondControllerIsAProgrammingError() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await MainActor.run {
                let first = ViewController(identifier: "first")
                let shared = first.view
                let second = ViewController(identifier: "second")
                second.view = shared
            }
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("first.view is the view of first; a view belongs to one controller, so second cannot take it"), "\(message)")
    }

    // §3: off-window views are released on a memory warning and loaded again on the next access.
    @Test func aMemoryWarningReleasesViewsThatAreNotInTheWindow() {
        let (app, recorder) = launched { NavigationController(rootViewController: CountingController(identifier: "a"), identifier: "nav") }
        let nav = app.window!.rootViewController as! NavigationController
        let a = nav.topViewController as! CountingController
        nav.pushViewController(LeafController(identifier: "b"), animated: false)
        app.runEndOfTurn()
        recorder.clear()
        app.requestMemoryWarning()
        #expect(!a.isViewLoaded)
        #expect(nav.topViewController!.isViewLoaded, "the visible controller keeps its view")
        #expect(
            recorder.lines(targets: ["nav/a", "nav/a.view", "nav/a.view/content"]) == [
                "nav/a didReceiveMemoryWarning", "nav/a.view deinit",
                "nav/a.view/content willMove(toSuperview:)", "nav/a.view/content didMoveToSuperview", "nav/a.view/content deinit",
            ]
        )
        recorder.clear()
        nav.popViewController(animated: false)
        app.runEndOfTurn()
        #expect(a.loads == 2)
        #expect(recorder.lines(targets: ["nav/a"], events: ["loadView", "viewDidLoad", "viewWillAppear", "viewDidAppear"]) == [
            "nav/a loadView", "nav/a viewDidLoad", "nav/a viewWillAppear", "nav/a viewDidAppear",
        ])
    }

    @Test func aControllerMayKeepItsViewOnAMemoryWarning() {
        let (app, _) = launched { NavigationController(rootViewController: CountingController(identifier: "a"), identifier: "nav") }
        let nav = app.window!.rootViewController as! NavigationController
        let a = nav.topViewController as! CountingController
        a.keepsViewOnMemoryWarning = true
        nav.pushViewController(LeafController(identifier: "b"), animated: false)
        app.runEndOfTurn()
        app.requestMemoryWarning()
        #expect(a.isViewLoaded)
    }

    // §3: one place in the tree per controller.
    @Test func addingAPresentedControllerAsAChildIsAProgrammingErrorNamingBothPaths() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await MainActor.run {
                let app = makeApplication(delegate: TestDelegate { app in
                    let root = ViewController(identifier: "root")
                    root.addChild(ViewController(identifier: "b"))
                    app.window = Window(rootViewController: root)
                })
                app.launch()
                let root = app.window!.rootViewController!
                let modal = ViewController(identifier: "modal")
                root.present(modal, animated: false)
                root.children[0].addChild(modal)
            }
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("cannot add root/modal as a child of root/b"), "\(message)")
        #expect(message.contains("it is presented by root"), "\(message)")
    }

    @Test func addingAnAncestorAsAChildIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            await MainActor.run {
                let a = ViewController(identifier: "a")
                let b = ViewController(identifier: "b")
                a.addChild(b)
                b.addChild(a)
            }
        }
    }

    @Test func addingAControllerThatHasAnotherParentIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            await MainActor.run {
                let a = ViewController(identifier: "a")
                let b = ViewController(identifier: "b")
                let c = ViewController(identifier: "c")
                a.addChild(c)
                b.addChild(c)
            }
        }
    }

    // §4: a size change lays out the superview too; a move lays out the view itself.
    @Test func aSizeChangeLaysOutTheSuperviewAndAMoveOnlyTheView() {
        let (app, _) = launched { ViewController(identifier: "root") }
        let root = app.window!.rootViewController!
        let parent = StatusView(name: "parent")
        let child = StatusView(name: "child")
        parent.addSubview(child)
        root.view.addSubview(parent)
        app.runEndOfTurn()
        let (parentBefore, childBefore) = (parent.layoutCount, child.layoutCount)
        child.frame = Rect(x: 0, y: 0, width: 10, height: 10)
        app.runEndOfTurn()
        #expect(parent.layoutCount == parentBefore + 1)
        #expect(child.layoutCount == childBefore + 1)
        child.frame = Rect(x: 5, y: 5, width: 10, height: 10)
        app.runEndOfTurn()
        #expect(parent.layoutCount == parentBefore + 1)
        #expect(child.layoutCount == childBefore + 2)
    }
}

@MainActor
@Suite("Defects found by reading the core")
struct CoreDefectTests {
    // 1. dismiss from inside a presented hierarchy dismisses that presented controller.
    @Test func dismissCalledOnTheRootOfAPresentedNavigationStackDismissesIt() {
        let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: LeafController(identifier: "a")) })
        app.launch()
        let a = app.window!.rootViewController!
        let inner = LeafController(identifier: "form")
        let presented = NavigationController(rootViewController: inner, identifier: "flow")
        a.present(presented, animated: false)
        app.runEndOfTurn()
        #expect(inner.isVisible)
        inner.dismiss(animated: false)
        app.runEndOfTurn()
        #expect(a.presentedViewController == nil)
        #expect(!inner.isVisible)
        #expect(app.controllersInTreeOrder().map(\.identifier) == ["a"])
    }

    // 3. a loadView that reads `view` first gets a message, not a bare force-unwrap.
    @Test func aLoadViewThatReadsViewBeforeAssigningOneStopsWithAMessage() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await MainActor.run { _ = EagerLoadController(identifier: "eager").view }
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("eager: loadView() read `view` before assigning one"), "\(message)")
    }

    // 7. requests made from end-of-turn work complete within the same turn.
    @Test func terminationRequestedFromViewDidAppearCompletesWithinTheTurn() {
        let root = TerminatingOnAppear(identifier: "root")
        let host = LoggingHost()
        let app = makeApplication(delegate: TestDelegate { $0.window = Window(rootViewController: root) })
        app.host = host
        app.launch()
        // One end of turn (the launch's): the termination it asked for ran to its end, with nothing left over.
        #expect(app.applicationState == .terminated)
        #expect(host.log.last == "host terminated")
    }

    @Test func aReloadRequestedFromEndOfTurnWorkDeliversItsHandOverWithinTheSameTurn() {
        let app = makeApplication(delegate: TestDelegate { app in
            app.window = Window(rootViewController: HandingOver(rootViewController: LeafController(identifier: "old"), identifier: "modes"))
        })
        let recorder = CallbackRecorder(app)
        app.launch()
        recorder.clear()
        app.scheduleTurnEndWork { app.requestReload() }
        app.runEndOfTurn()
        // The reload's hand-over (a new top pushed in applicationDidReload) completes in this turn: the incoming
        // controller has appeared and the outgoing one has disappeared.
        #expect(recorder.lines(events: ["viewDidDisappear", "viewDidAppear"]) == ["modes/old viewDidDisappear", "modes/new viewDidAppear"])
    }

    @Test func aBackgroundRequestFromAPresentationCompletionDeliversItsDidCallbacksInTheSameTurn() {
        let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: LeafController(identifier: "a")) })
        let recorder = CallbackRecorder(app)
        app.launch()
        let a = app.window!.rootViewController!
        let b = LeafController(identifier: "b")
        b.modalPresentationStyle = .fullScreen
        a.present(b, animated: false) { app.requestEnterBackground() }
        app.runEndOfTurn()
        // The presentation's did-callbacks, then the completion's background request, then nothing left.
        #expect(app.applicationState == .background)
        #expect(recorder.lines(events: ["viewDidAppear", "applicationDidEnterBackground"]).suffix(4) == [
            "a/b viewDidAppear", "a/b applicationDidEnterBackground", "a applicationDidEnterBackground",
            "delegate applicationDidEnterBackground",
        ])
        let count = recorder.events.count
        app.runEndOfTurn()
        #expect(recorder.events.count == count, "nothing was left for a later turn")
    }

    // 8. memory warnings deferred from end-of-turn work are folded as the docs say.
    @Test func memoryWarningsRequestedFromEndOfTurnWorkAreFoldedIntoOne() {
        let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: LeafController(identifier: "a")) })
        let recorder = CallbackRecorder(app)
        app.launch()
        recorder.clear()
        app.scheduleTurnEndWork {
            app.requestMemoryWarning()
            app.requestMemoryWarning()
        }
        app.runEndOfTurn()
        #expect(recorder.lines(events: ["applicationDidReceiveMemoryWarning"]) == ["delegate applicationDidReceiveMemoryWarning"])
    }
}

/// Hands over to a new top controller on every reload.
@MainActor
final class HandingOver: NavigationController {
    override func applicationDidReload() {
        setViewControllers([LeafController(identifier: "new")], animated: false)
    }
}

/// Asks for termination as soon as it appears.
@MainActor
final class TerminatingOnAppear: ViewController {
    override func viewDidAppear(_ animated: Bool) {
        application?.requestTermination()
    }
}
