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
import Testing

// What real code does inside callbacks (docs/lifecycle.md, "Re-entrancy"): requests and tree edits made from a
// callback. Each test is one of the examples a close reading of the core found, asserts the whole sequence, and
// failed before its fix.

/// A leaf controller (one subview, added in `viewDidLoad`) that runs a hook the first time a named callback of its
/// own fires: `viewWillAppear`, `viewDidAppear`, `viewWillDisappear`, `viewDidDisappear`, the layout pair, or an
/// application event.
@MainActor
final class Hooked: ViewController {
    var hooks: [String: @MainActor (Hooked) -> Void] = [:]

    init(_ identifier: String, _ hooks: [String: @MainActor (Hooked) -> Void] = [:]) {
        self.hooks = hooks
        super.init(identifier: identifier)
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    private func fire(_ event: String) {
        if let hook = hooks.removeValue(forKey: event) { hook(self) }
    }

    override func viewDidLoad() { view.addSubview(View(name: "subview")) }
    override func viewWillAppear(_ animated: Bool) { fire("viewWillAppear") }
    override func viewDidAppear(_ animated: Bool) { fire("viewDidAppear") }
    override func viewWillDisappear(_ animated: Bool) { fire("viewWillDisappear") }
    override func viewDidDisappear(_ animated: Bool) { fire("viewDidDisappear") }
    override func viewWillLayoutSubviews() { fire("viewWillLayoutSubviews") }
    override func viewDidLayoutSubviews() { fire("viewDidLayoutSubviews") }
    override func applicationDidEnterBackground() { fire("applicationDidEnterBackground") }
    override func didReceiveMemoryWarning() { fire("didReceiveMemoryWarning") }
}

/// A host that applies a storyboard change when the reload re-reads its configuration, as the daemon does.
@MainActor
final class StoryboardReloadingHost: ApplicationHost {
    var log: [String] = []
    var change: (old: Archive, new: Archive)?
    var applied: [String] = []
    /// Run when termination begins (`STOPPING=1`) and when the host hears "terminated".
    var onStopping: (@MainActor () -> Void)?
    var onTerminated: (@MainActor () -> Void)?

    func applicationReloadConfiguration(_ application: Application) {
        log.append("host reread configuration")
        guard let change else { return }
        do {
            applied = try application.applyStoryboardChange(from: change.old, to: change.new)
        } catch {
            log.append("host: \(error)")
        }
    }
    func applicationWillBeginTermination(_ application: Application) {
        log.append("host stopping")
        onStopping?()
    }
    func applicationDidTerminate(_ application: Application) {
        log.append("host terminated")
        onTerminated?()
    }
}

/// The controller events of a log, without the events of views (targets with `.view`).
func controllerLines(_ log: [String]) -> [String] {
    log.filter { !$0.contains(".view") }
}

@MainActor
@Suite("Re-entrancy: requests and tree edits made from callbacks")
struct ReentrancyTests {
    private func navigation(_ ids: [String], pushing extra: [ViewController] = []) -> (Application, NavigationController, LoggingHost) {
        let (app, host, _) = makeLoggedApplication { app in
            app.window = Window(
                rootViewController: NavigationController(rootViewController: LeafController(identifier: ids[0]), identifier: "nav")
            )
        }
        app.launch()
        let nav = app.window!.rootViewController as! NavigationController
        for id in ids.dropFirst() { nav.pushViewController(LeafController(identifier: id), animated: false) }
        app.runEndOfTurn()
        host.log.removeAll()
        return (app, nav, host)
    }

    // 1. A storyboard reload that adds a child declaring a presentation stopped the daemon: the new child was made
    // with its presentation, then added as a child, and addChild refuses a controller that presents ("it presents
    // …"). Presentations deeper in a new subtree (made while it was apart) never appeared. Now the new part joins the
    // tree, then what it declares is presented, the deeper ones included.
    @Test func aStoryboardReloadAddingAChildThatPresentsShowsItsPresentations() throws {
        let app = Application(delegate: StoryboardDelegate(), logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
        let recorder = CallbackRecorder(app)
        let host = StoryboardReloadingHost()
        app.host = host
        let old = try StoryboardFormat.parse("Tuned root {\n  Tuned worker\n}", source: "s")
        let new = try StoryboardFormat.parse(
            """
            Tuned root {
              Tuned worker
              Tuned extra {
                Tuned inner { present Tuned deep }
                present Tuned sheet
              }
            }
            """,
            source: "s"
        )
        try app.loadStoryboard(old)
        app.launch()
        recorder.clear()
        host.change = (old, new)

        app.requestReload()
        app.runEndOfTurn()

        #expect(host.applied == ["added root/extra (Tuned)"])
        let events: Set<String> = [
            "init(coder:)", "awakeFromArchive", "loadView", "viewDidLoad", "viewWillAppear", "viewDidAppear",
            "willMove(toParent:)", "didMove(toParent:)", "applicationDidReload",
        ]
        #expect(
            recorder.lines(targets: ["root/extra", "root/extra/inner", "root/extra/inner/deep", "root/extra/sheet"], events: events) == [
                "root/extra init(coder:)", "root/extra/inner init(coder:)", "root/extra/inner/deep init(coder:)",
                "root/extra/inner willMove(toParent:)", "root/extra/inner didMove(toParent:)",
                "root/extra/sheet init(coder:)",
                "root/extra awakeFromArchive", "root/extra/inner awakeFromArchive", "root/extra/inner/deep awakeFromArchive",
                "root/extra/sheet awakeFromArchive",
                "root/extra/inner/deep loadView", "root/extra/inner/deep viewDidLoad",
                "root/extra/sheet loadView", "root/extra/sheet viewDidLoad",
                "root/extra willMove(toParent:)",
                "root/extra loadView", "root/extra/inner loadView", "root/extra/inner viewDidLoad", "root/extra viewDidLoad",
                "root/extra viewWillAppear", "root/extra/inner viewWillAppear",
                "root/extra didMove(toParent:)",
                "root/extra/inner/deep viewWillAppear", "root/extra/sheet viewWillAppear",
                "root/extra applicationDidReload", "root/extra/inner applicationDidReload",
                "root/extra/inner/deep applicationDidReload", "root/extra/sheet applicationDidReload",
                "root/extra/inner viewDidAppear", "root/extra viewDidAppear",
                "root/extra/inner/deep viewDidAppear", "root/extra/sheet viewDidAppear",
            ]
        )
        #expect(app.controllersInTreeOrder().map(\.path) == [
            "root", "root/worker", "root/extra", "root/extra/inner", "root/extra/inner/deep", "root/extra/sheet",
        ])
        #expect(app.controllersInTreeOrder().map(\.isVisible) == Array(repeating: true, count: 6))
        #expect(app.applicationState == .active)
    }

    // 2. Termination requested from a pushed controller's viewWillAppear ran inside the push's view move: the host
    // heard "terminated" and then the pushed controller appeared and was released. Now the request waits for the end
    // of the turn: the push completes (its did-callbacks), then the termination runs whole.
    @Test func terminationRequestedFromAPushedControllersViewWillAppearRunsOnceThePushIsOver() {
        let (app, _, host) = navigation(["a"])
        // The tree alone holds the controllers, so their deinits show when termination releases them.
        (app.window!.rootViewController as! NavigationController)
            .pushViewController(Hooked("b", ["viewWillAppear": { $0.application?.requestTermination() }]), animated: false)
        #expect(app.applicationState == .active, "the termination waits for the end of the turn")
        app.runEndOfTurn()

        #expect(
            controllerLines(host.log) == [
                "nav/b init", "nav/b willMove(toParent:)", "nav/b loadView", "nav/b viewDidLoad",
                "nav/a viewWillDisappear", "nav/b viewWillAppear",
                "nav viewWillLayoutSubviews", "nav viewDidLayoutSubviews",
                "nav/b viewWillLayoutSubviews", "nav/b viewDidLayoutSubviews",
                "nav/a viewWillLayoutSubviews", "nav/a viewDidLayoutSubviews",
                "nav/a viewDidDisappear", "nav/b viewDidAppear", "nav/b didMove(toParent:)",
                "host stopping",
                "nav/b applicationWillResignActive", "nav/a applicationWillResignActive", "nav applicationWillResignActive",
                "delegate applicationWillResignActive",
                "nav/b applicationDidEnterBackground", "nav/a applicationDidEnterBackground",
                "nav applicationDidEnterBackground", "delegate applicationDidEnterBackground",
                "nav/b applicationWillTerminate", "nav/a applicationWillTerminate", "nav applicationWillTerminate",
                "delegate applicationWillTerminate",
                "nav viewWillDisappear", "nav/b viewWillDisappear", "nav/b viewDidDisappear", "nav viewDidDisappear",
                "nav deinit", "nav/a deinit", "nav/b deinit",
                "host terminated",
            ]
        )
    }

    // 3. A controller popped from inside its own viewWillAppear (it was being pushed) still appeared and stayed
    // visible, out of the tree. Now the pop waits for the push's move: the popped controller's appearance is closed
    // by its disappearance, and the one below comes back.
    @Test func aControllerPoppedFromItsOwnViewWillAppearNeverStaysVisible() {
        let (app, nav, host) = navigation(["a"])
        weak let b: ViewController? = {
            let b = Hooked("b", ["viewWillAppear": { $0.navigationController?.popViewController(animated: false) }])
            nav.pushViewController(b, animated: false)
            return b
        }()
        app.runEndOfTurn()

        #expect(b == nil, "the popped controller is released")
        #expect(nav.viewControllers.map(\.identifier) == ["a"])
        #expect(nav.topViewController!.isVisible)
        #expect(nav.view.subviews.compactMap(\.viewController).map(\.identifier) == ["a"])
        #expect(
            controllerLines(host.log) == [
                "nav/b init", "nav/b willMove(toParent:)", "nav/b loadView", "nav/b viewDidLoad",
                "nav/a viewWillDisappear", "nav/b viewWillAppear",
                "nav/b willMove(toParent:)", "nav/b viewWillDisappear", "nav/a viewWillAppear",
                "nav viewWillLayoutSubviews", "nav viewDidLayoutSubviews",
                "nav/a viewWillLayoutSubviews", "nav/a viewDidLayoutSubviews",
                "nav/b viewDidDisappear", "nav/a viewDidAppear", "nav/b didMove(toParent:)", "nav/b deinit",
            ]
        )
    }

    // 4. A push from the viewWillAppear of a pushed controller ran inside the first push's move: both pushed
    // controllers ended up in the navigation controller's view, both visible. Now the second push waits: the first
    // pushed controller's appearance is reversed, the second one is the only one shown.
    @Test func aPushFromAPushedControllersViewWillAppearShowsOnlyTheNewTop() {
        let (app, nav, host) = navigation(["a"])
        nav.pushViewController(
            Hooked("b", ["viewWillAppear": { $0.navigationController?.pushViewController(LeafController(identifier: "c"), animated: false) }]),
            animated: false
        )
        app.runEndOfTurn()

        #expect(nav.viewControllers.map(\.identifier) == ["a", "b", "c"])
        #expect(nav.viewControllers.map(\.isVisible) == [false, false, true])
        #expect(nav.view.subviews.compactMap(\.viewController).map(\.identifier) == ["c"])
        #expect(
            controllerLines(host.log) == [
                "nav/b init", "nav/b willMove(toParent:)", "nav/b loadView", "nav/b viewDidLoad",
                "nav/a viewWillDisappear", "nav/b viewWillAppear",
                "nav/c init", "nav/c willMove(toParent:)", "nav/c loadView", "nav/c viewDidLoad",
                "nav/b viewWillDisappear", "nav/c viewWillAppear",
                "nav viewWillLayoutSubviews", "nav viewDidLayoutSubviews",
                "nav/c viewWillLayoutSubviews", "nav/c viewDidLayoutSubviews",
                "nav/a viewWillLayoutSubviews", "nav/a viewDidLayoutSubviews",
                "nav/b viewWillLayoutSubviews", "nav/b viewDidLayoutSubviews",
                "nav/a viewDidDisappear", "nav/b didMove(toParent:)", "nav/b viewDidDisappear", "nav/c viewDidAppear",
                "nav/c didMove(toParent:)",
            ]
        )
    }

    // 5. Requests deferred from end-of-turn work were kept in a list of their own and submitted one by one: a request
    // made during the first one's transition ran before the second one, which had arrived earlier. Now they go
    // through the state machine's queue, in arrival order.
    @Test func requestsFromEndOfTurnWorkKeepTheirArrivalOrder() {
        let delegate = TestDelegate { app in app.window = Window(rootViewController: LeafController(identifier: "a")) }
        let app = makeApplication(delegate: delegate)
        let recorder = CallbackRecorder(app)
        app.launch()
        app.runEndOfTurn()
        delegate.onEvent = { event, app in
            if event == TraceEventName.applicationDidEnterBackground { app.requestBecomeActive(cause: "third") }
        }
        recorder.clear()
        app.scheduleTurnEndWork {
            app.requestEnterBackground(cause: "first")
            app.requestReload(cause: "second")
        }
        app.runEndOfTurn()

        #expect(
            recorder.events.filter { PropertyTests.applicationEvents.contains($0.event) }
                .map { "\($0.target) \($0.event) \($0.cause)" } == [
                "a applicationWillResignActive first", "delegate applicationWillResignActive first",
                "a applicationDidEnterBackground first", "delegate applicationDidEnterBackground first",
                "a applicationWillReload second", "delegate applicationWillReload second",
                "delegate applicationDidReload second", "a applicationDidReload second",
                "delegate applicationWillEnterForeground third", "a applicationWillEnterForeground third",
                "delegate applicationDidBecomeActive third", "a applicationDidBecomeActive third",
            ]
        )
    }

    // 6. Presenting a controller that already presents showed it without what it presents: its presentation never
    // appeared. Now the presented hierarchy appears with it.
    @Test func presentingAControllerThatPresentsShowsWhatItPresentsToo() {
        let (app, root, recorder) = launchedRoot { LeafController(identifier: "root") }
        let x = LeafController(identifier: "x")
        x.present(LeafController(identifier: "y"), animated: false)
        root.present(x, animated: false)
        app.runEndOfTurn()

        #expect(app.window!.layers.map(\.controller.identifier) == ["root", "x", "y"])
        #expect(app.controllersInTreeOrder().map(\.isVisible) == [true, true, true])
        #expect(
            recorder.lines(events: appearance) == [
                "root/x viewWillAppear", "root/x/y viewWillAppear", "root/x viewDidAppear", "root/x/y viewDidAppear",
            ]
        )
    }

    // 7. A push made from the outgoing controller's viewWillDisappear ran inside the first push's removal of that
    // controller's view: the view was removed twice (its superview's willRemoveSubview, its superview and window
    // moves, twice each). Now the second push waits for the first.
    @Test func aPushFromTheOutgoingControllersViewWillDisappearRemovesItsViewOnce() {
        let (app, host, _) = makeLoggedApplication { app in
            app.window = Window(rootViewController: NavigationController(
                rootViewController: Hooked("a", ["viewWillDisappear": {
                    $0.navigationController?.pushViewController(LeafController(identifier: "c"), animated: false)
                }]),
                identifier: "nav"
            ))
        }
        app.launch()
        app.runEndOfTurn()
        let nav = app.window!.rootViewController as! NavigationController
        host.log.removeAll()

        nav.pushViewController(LeafController(identifier: "b"), animated: false)
        app.runEndOfTurn()

        let moves = host.log.filter { $0.hasPrefix("nav/a.view ") || $0.hasPrefix("nav.view ") }
        #expect(
            moves == [
                "nav.view willRemoveSubview(_:)", "nav/a.view willMove(toSuperview:)", "nav/a.view willMove(toWindow:)",
                "nav/a.view didMoveToWindow", "nav/a.view didMoveToSuperview",
                "nav.view didAddSubview(_:)",
                "nav.view willRemoveSubview(_:)", "nav.view didAddSubview(_:)",
                "nav.view layoutSubviews", "nav/a.view layoutSubviews",
            ]
        )
        #expect(
            controllerLines(host.log) == [
                "nav/b init", "nav/b willMove(toParent:)", "nav/b loadView", "nav/b viewDidLoad",
                "nav/a viewWillDisappear", "nav/b viewWillAppear",
                "nav/c init", "nav/c willMove(toParent:)", "nav/c loadView", "nav/c viewDidLoad",
                "nav/b viewWillDisappear", "nav/c viewWillAppear",
                "nav viewWillLayoutSubviews", "nav viewDidLayoutSubviews",
                "nav/c viewWillLayoutSubviews", "nav/c viewDidLayoutSubviews",
                "nav/a viewWillLayoutSubviews", "nav/a viewDidLayoutSubviews",
                "nav/b viewWillLayoutSubviews", "nav/b viewDidLayoutSubviews",
                "nav/a viewDidDisappear", "nav/b didMove(toParent:)", "nav/b viewDidDisappear", "nav/c viewDidAppear",
                "nav/c didMove(toParent:)",
            ]
        )
        #expect(nav.viewControllers.map(\.isVisible) == [false, false, true])
    }

    // 8. A memory warning requested during a pop (from the popped controller's viewWillDisappear) ran inside the pop,
    // between loading the view of the controller coming back and adding it to the window: the warning released that
    // view, and it was loaded a second time. Now the warning waits for the end of the turn.
    @Test func aMemoryWarningRequestedDuringAPopKeepsTheIncomingView() {
        let (app, nav, host) = navigation(["a"])
        nav.pushViewController(Hooked("b", ["viewWillDisappear": { $0.application?.requestMemoryWarning() }]), animated: false)
        app.runEndOfTurn()
        app.requestMemoryWarning()
        #expect(!nav.viewControllers[0].isViewLoaded)
        host.log.removeAll()

        nav.popViewController(animated: false)
        app.runEndOfTurn()

        #expect(nav.viewControllers[0].isViewLoaded)
        #expect(nav.viewControllers[0].isVisible)
        #expect(
            controllerLines(host.log) == [
                "nav/b willMove(toParent:)", "nav/a loadView", "nav/a viewDidLoad",
                "nav/b viewWillDisappear", "nav/a viewWillAppear",
                "nav viewWillLayoutSubviews", "nav viewDidLayoutSubviews",
                "nav/a viewWillLayoutSubviews", "nav/a viewDidLayoutSubviews",
                "nav/b viewDidDisappear", "nav/a viewDidAppear", "nav/b didMove(toParent:)", "nav/b deinit",
                "nav/a didReceiveMemoryWarning", "nav didReceiveMemoryWarning", "delegate applicationDidReceiveMemoryWarning",
            ]
        )
    }

    // 9. Replacing the window's root left what the old root presents linked to it: still presented, out of the
    // window, alive as long as the old root is, and in the tree again (not on screen) if the old root comes back.
    // Now the old root leaves the tree as any controller does, dismissing what it presents.
    @Test func replacingTheWindowsRootDismissesWhatTheOldRootPresents() {
        let (app, root, recorder) = launchedRoot { LeafController(identifier: "old") }
        weak let p: ViewController? = {
            let p = LeafController(identifier: "p")
            root.present(p, animated: false)
            return p
        }()
        app.runEndOfTurn()
        recorder.clear()

        app.window!.rootViewController = LeafController(identifier: "new")
        app.runEndOfTurn()

        #expect(p == nil, "what the old root presented is dismissed and released")
        #expect(root.presentedViewController == nil)
        #expect(app.window!.layers.map(\.controller.identifier) == ["new"])
        #expect(
            recorder.lines(events: appearance.union(["deinit", "loadView"])).filter { !$0.contains(".view") } == [
                "old viewWillDisappear", "old/p viewWillDisappear", "new loadView", "new viewWillAppear",
                "old viewDidDisappear", "old/p viewDidDisappear", "new viewDidAppear", "old/p deinit",
            ]
        )
        recorder.clear()
        app.window!.rootViewController = root
        app.runEndOfTurn()
        #expect(app.controllersInTreeOrder().map(\.path) == ["old"])
        #expect(recorder.lines(events: appearance).filter { $0.hasPrefix("old") } == ["old viewWillAppear", "old viewDidAppear"])
    }
}

/// Findings of the property test's re-entrant injections (AppearancePropertyTests), each fixed in the core.
@MainActor
@Suite("Re-entrancy: findings of the property test")
struct ReentrancyFindings {
    // An entering event reaches the delegate first; the fan-out took the tree's controllers only after the delegate's
    // callback, so a controller the delegate added (a push from applicationDidReload) got the event too. §2: "the
    // list of controllers is taken when the event starts: a controller added during an event gets the next one", as
    // it already was for leaving events.
    @Test func aControllerTheDelegateAddsInAnEnteringEventGetsTheNextOne() {
        let (app, nav, recorder) = launchedNav(["a"])
        let delegate = app.delegate as! TestDelegate
        delegate.onEvent = { event, _ in
            if event == TraceEventName.applicationWillEnterForeground {
                nav.pushViewController(LeafController(identifier: "b"), animated: false)
            }
        }
        app.requestEnterBackground()
        recorder.clear()
        app.requestBecomeActive()
        app.runEndOfTurn()
        #expect(
            recorder.lines(events: PropertyTests.applicationEvents) == [
                "delegate applicationWillEnterForeground", "nav applicationWillEnterForeground",
                "nav/a applicationWillEnterForeground",
                "delegate applicationDidBecomeActive", "nav applicationDidBecomeActive", "nav/a applicationDidBecomeActive",
                "nav/b applicationDidBecomeActive",
            ]
        )
    }
}

extension ReentrancyFindings {
    // A dismissal kept the whole dismissed hierarchy alive until its did-callbacks ran, in a list in pre-order: the
    // list let go of the dismissed controller first, whose deinit released the children no one else held (c5, pushed
    // onto the dismissed navigation controller from a callback of the dismissal) before the one the list still held
    // (c4). §3's release order: a controller, its view, its children in the order added, then what it presented.
    @Test func aDismissedHierarchyIsReleasedInTheContractsOrder() {
        let (app, root, recorder) = launchedRoot { LeafController(identifier: "root") }
        do {
            let c4 = Hooked("c4")
            let c3 = NavigationController(rootViewController: c4, identifier: "c3")
            c4.hooks[TraceEventName.viewWillDisappear] = { [unowned c3] _ in
                c3.pushViewController(LeafController(identifier: "c5"), animated: false)
            }
            c3.modalPresentationStyle = .fullScreen
            root.present(c3, animated: false)
        }
        app.runEndOfTurn()
        recorder.clear()

        root.dismiss(animated: false)
        app.runEndOfTurn()

        #expect(
            recorder.lines(events: ["deinit"]).filter { !$0.contains(".view/") } == [
                "root/c3 deinit", "root/c3.view deinit", "root/c3/c4 deinit", "root/c3/c4.view deinit", "root/c3/c5 deinit",
                "root/c3/c5.view deinit",
            ]
        )
    }
}

extension ReentrancyFindings {
    // A navigation call that waited ran, when its turn came, outside any move: an edit its own callbacks made (a
    // push from the viewWillAppear of the controller it pushed) ran inside it, and two controllers showed in one
    // navigation controller. A waiting edit is a move of its own when it runs.
    @Test func anEditMadeByAWaitingEditsCallbacksWaitsForIt() {
        let (app, nav, _) = navigation(["a"])
        nav.pushViewController(
            Hooked("b", ["viewWillAppear": {
                $0.navigationController?.pushViewController(
                    Hooked("c", ["viewWillAppear": {
                        $0.navigationController?.pushViewController(LeafController(identifier: "d"), animated: false)
                    }]),
                    animated: false
                )
            }]),
            animated: false
        )
        app.runEndOfTurn()
        #expect(nav.viewControllers.map(\.identifier) == ["a", "b", "c", "d"])
        #expect(nav.viewControllers.map(\.isVisible) == [false, false, false, true])
        #expect(nav.view.subviews.compactMap(\.viewController).map(\.identifier) == ["d"])
    }

    // The fan-out's list of controllers, in pre-order, was the last to hold a controller that left the tree during the
    // event (unembedded from an application event): letting go of the list released that controller first, whose
    // deinit released the children no one else held (c6, pushed from an application event too) before the one the
    // list still held (c4). The list is kept in reverse pre-order, so children go before their parents let go.
    @Test func aControllerThatLeftTheTreeDuringAnEventIsReleasedInTheContractsOrder() {
        let (app, root, recorder) = launchedRoot { Hooked("root") }
        do {
            let c4 = Hooked("c4")
            let c3 = NavigationController(rootViewController: c4, identifier: "c3")
            root.embed(c3)
            app.runEndOfTurn()
            c4.present(fullScreen(LeafController(identifier: "c5")), animated: false)
            app.runEndOfTurn()
            c4.hooks[TraceEventName.applicationDidEnterBackground] = { [unowned c3] _ in
                c3.pushViewController(LeafController(identifier: "c6"), animated: false)
            }
            (root as! Hooked).hooks[TraceEventName.applicationDidEnterBackground] = { [unowned c3] root in
                root.unembed(c3)
            }
        }
        recorder.clear()

        app.requestEnterBackground()
        app.runEndOfTurn()

        #expect(
            recorder.lines(events: ["deinit"]).filter { !$0.contains(".view/") && !$0.contains("c5") } == [
                "root/c3 deinit", "root/c3.view deinit", "root/c3/c4 deinit", "root/c3/c4.view deinit", "root/c3/c6 deinit",
                "root/c3/c6.view deinit",
            ]
        )
    }

    private func navigation(_ ids: [String]) -> (Application, NavigationController, CallbackRecorder) {
        launchedNav(ids)
    }
}

extension ReentrancyTests {
    // UIKit's pattern, which the checks of example 9 must leave alone: the window's root put in a navigation
    // controller that then becomes the root. The old root stays in the tree, in the new one.
    @Test func theWindowsRootPutInANavigationControllerThatBecomesTheRootStaysInTheTree() {
        let (app, old, recorder) = launchedRoot { LeafController(identifier: "old") }
        app.runEndOfTurn()
        recorder.clear()

        app.window!.rootViewController = NavigationController(rootViewController: old, identifier: "nav")
        app.runEndOfTurn()

        #expect(app.controllersInTreeOrder().map(\.path) == ["nav", "nav/old"])
        #expect(app.controllersInTreeOrder().map(\.isVisible) == [true, true])
        #expect(
            recorder.lines(events: appearance) == [
                "nav/old viewWillDisappear", "nav viewWillAppear", "nav/old viewWillAppear", "nav/old viewDidAppear",
                "nav viewDidAppear",
            ]
        )
    }
}

/// A view that adds a subview from its first `layoutSubviews`.
@MainActor
final class GrowingView: View {
    private var grown = false
    override func layoutSubviews() {
        guard !grown else { return }
        grown = true
        addSubview(View(name: "added"))
        // The addition waits for the pass: nothing is added yet.
        precondition(subviews.isEmpty, "an edit made in a layout callback took effect inside the pass")
    }
}

/// A controller that builds its view in `viewDidLoad` (a subview, a child) and, when it is loaded inside a move,
/// also pushes onto a navigation controller that is in the window.
@MainActor
final class BuildingController: ViewController {
    weak var visibleNavigation: NavigationController?
    override func viewDidLoad() {
        view.addSubview(View(name: "label"))
        embed(LeafController(identifier: "part"))
        visibleNavigation?.pushViewController(LeafController(identifier: "later"), animated: false)
    }
}

extension ReentrancyTests {
    // A layout pass is a move: a subview added by layoutSubviews joins once the pass is over, and the pass runs again
    // over what that marked, before the did-callbacks.
    @Test func anEditMadeInALayoutCallbackTakesEffectOnceThePassIsOverAndIsLaidOutBeforeTheDidCallbacks() {
        let (app, root, recorder) = launchedRoot { ContainerController(identifier: "root", children: []) }
        recorder.clear()
        root.embed(LeafController(identifier: "child"))
        root.view.addSubview(GrowingView(name: "growing"))
        app.runEndOfTurn()
        #expect(
            recorder.lines(targets: ["root", "root/child", "root.view/growing", "root.view/growing/added"]).filter {
                !$0.hasSuffix("draw") && !$0.contains("Parent")
            } == [
                "root/child init", "root/child loadView", "root/child viewDidLoad", "root/child viewWillAppear",
                "root.view/growing willMove(toWindow:)", "root.view/growing willMove(toSuperview:)",
                "root.view/growing didMoveToWindow", "root.view/growing didMoveToSuperview",
                "root viewWillLayoutSubviews", "root viewDidLayoutSubviews",
                "root/child viewWillLayoutSubviews", "root/child viewDidLayoutSubviews",
                "root.view/growing layoutSubviews",
                "root.view/growing/added willMove(toWindow:)", "root.view/growing/added willMove(toSuperview:)",
                "root.view/growing/added didMoveToWindow", "root.view/growing/added didMoveToSuperview",
                "root.view/growing didAddSubview(_:)",
                "root.view/growing layoutSubviews", "root.view/growing/added layoutSubviews",
                "root/child viewDidAppear",
            ]
        )
    }

    // Building a view is not a move: loaded inside a push (the pushed controller's view), viewDidLoad's own edits (a
    // subview, an embedded child) take effect at once, before viewWillAppear (§3); its push onto a navigation
    // controller in the window waits for the push in progress.
    @Test func viewDidLoadBuildsItsViewAtOnceEvenInsideAMoveAndItsEditsOfTheWindowWait() {
        let (app, nav, recorder) = launchedNav(["a"])
        let other = NavigationController(rootViewController: LeafController(identifier: "x"), identifier: "other")
        nav.viewControllers[0].embed(other)
        app.runEndOfTurn()
        let building = BuildingController(identifier: "b")
        building.visibleNavigation = other
        recorder.clear()

        nav.pushViewController(building, animated: false)
        app.runEndOfTurn()

        #expect(
            recorder.lines(events: ["loadView", "viewDidLoad", "viewWillAppear", "viewWillDisappear", "viewDidAppear", "viewDidDisappear"]) == [
                // The event is traced as viewDidLoad starts; what it builds follows, at once.
                "nav/b loadView", "nav/b viewDidLoad", "nav/b/part loadView", "nav/b/part viewDidLoad",
                "nav/a viewWillDisappear", "nav/a/other viewWillDisappear", "nav/a/other/x viewWillDisappear",
                "nav/b viewWillAppear", "nav/b/part viewWillAppear",
                // The push onto `other` (in the window when it was made) waits for the push of b; `other` has left the
                // window by then, so `later` only loads.
                "nav/a/other/later loadView", "nav/a/other/later viewDidLoad",
                "nav/a/other/x viewDidDisappear", "nav/a/other viewDidDisappear", "nav/a viewDidDisappear",
                "nav/b/part viewDidAppear", "nav/b viewDidAppear",
            ]
        )
        #expect(building.view.subviews.map(\.name) == ["label", "view"])
    }
}

extension ReentrancyTests {
    // Application.replaceWindow from a callback: the window the root's viewWillAppear (at launch) replaces is
    // replaced once the window has shown it; the old root's appearance is reversed, the new one appears, in that turn.
    @Test func theWindowReplacedFromTheRootsViewWillAppearIsReplacedOnceItShowed() {
        let (app, host, _) = makeLoggedApplication { app in
            app.window = Window(rootViewController: Hooked("old", ["viewWillAppear": { old in
                old.application?.window = Window(rootViewController: LeafController(identifier: "new"))
            }]))
        }
        app.launch()
        app.runEndOfTurn()
        #expect(app.window?.rootViewController?.identifier == "new")
        #expect(
            host.log.filter { $0.hasSuffix("Appear") || $0.hasSuffix("Disappear") || $0.hasSuffix("deinit") || $0.hasPrefix("host") }
                .filter { !$0.contains(".view") } == [
                    "old viewWillAppear", "old viewWillDisappear", "new viewWillAppear",
                    "old viewDidDisappear", "new viewDidAppear", "old deinit", "host ready",
                ]
        )
    }
}

/// Programming errors stop with a message naming both places (docs/lifecycle.md §3, "One place in the tree").
@MainActor
@Suite("Re-entrancy: programming errors")
struct PlacementErrorTests {
    private static func text(_ result: ExitTest.Result) -> String {
        String(decoding: result.standardErrorContent, as: UTF8.self)
    }

    // 6. setViewControllers listing one controller twice put it in the tree twice, silently.
    @Test func setViewControllersListingOneControllerTwiceIsAProgrammingError() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await MainActor.run {
                let (app, nav, _) = launchedNav(["a"])
                let b = LeafController(identifier: "b")
                withExtendedLifetime(app) { nav.setViewControllers([nav.viewControllers[0], b, b], animated: false) }
            }
        }
        let message = Self.text(result)
        #expect(message.contains("cannot set the stack of nav: it lists b twice (at 1 and 2)"), "\(message)")
    }

    // 6. Presenting the window's root (from a controller below it) recursed without a message.
    @Test func presentingTheWindowsRootIsAProgrammingError() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await MainActor.run {
                let (app, root, _) = launchedRoot { ContainerController(identifier: "root", children: [LeafController(identifier: "c")]) }
                withExtendedLifetime(app) { root.children[0].present(root, animated: false) }
            }
        }
        let message = Self.text(result)
        #expect(message.contains("cannot present root from root/c: it is the root of the window"), "\(message)")
    }

    @Test func presentingAnAncestorIsAProgrammingError() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await MainActor.run {
                let a = LeafController(identifier: "a")
                let b = LeafController(identifier: "b")
                a.addChild(b)
                b.present(a, animated: false)
            }
        }
        let message = Self.text(result)
        #expect(message.contains("cannot present a from a/b: it is an ancestor of a/b, which would make a cycle"), "\(message)")
    }

    @Test func presentingFromAControllerThatAlreadyPresentsIsAProgrammingErrorNamingBoth() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await MainActor.run {
                let (app, root, _) = launchedRoot { LeafController(identifier: "root") }
                withExtendedLifetime(app) {
                    root.present(LeafController(identifier: "first"), animated: false)
                    root.present(LeafController(identifier: "second"), animated: false)
                }
            }
        }
        let message = Self.text(result)
        #expect(message.contains("cannot present second from root: root already presents root/first; dismiss it first"), "\(message)")
    }

    // 9. The window's root set to a controller that is already in the tree somewhere else.
    @Test func makingAChildTheWindowsRootIsAProgrammingError() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await MainActor.run {
                let (app, root, _) = launchedRoot { ContainerController(identifier: "root", children: [LeafController(identifier: "c")]) }
                app.window!.rootViewController = root.children[0]
            }
        }
        let message = Self.text(result)
        #expect(message.contains("cannot make root/c the root of the window: it is a child of root; remove it from there first"), "\(message)")
    }
}
