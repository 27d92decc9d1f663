//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKitTesting
import Testing

@_spi(Internal) @testable import LifecycleKit

/// A controller that runs a hook the first time a named callback of its own fires, the termination path's included:
/// `applicationWillTerminate`, `viewWillDisappear`, `viewDidDisappear`, `deinit`.
@MainActor
final class StopNode: ViewController {
    var hooks: [String: @MainActor () -> Void] = [:]

    private func fire(_ event: String) {
        if let hook = hooks.removeValue(forKey: event) { hook() }
    }

    isolated deinit { fire("deinit") }

    override func viewDidLoad() { view.addSubview(View(name: "subview")) }
    override func viewWillDisappear(_ animated: Bool) { fire("viewWillDisappear") }
    override func viewDidDisappear(_ animated: Bool) { fire("viewDidDisappear") }
    override func applicationWillTerminate() { fire("applicationWillTerminate") }
}

/// The controllers of the tree a teardown test stops that its edits and hooks name, held weakly (the tree alone holds
/// them): `root` embeds a navigation stack `nav` [a, b], a container `side` with a child `leaf`, and a second stack
/// `tail` [t1, t2]; `root` presents `sheet`, `side` presents `aside` (both sheets, so everything but the covered `a`
/// and `t1` is on screen).
@MainActor
struct StopTree {
    weak var app: Application?
    weak var a: StopNode?
    weak var b: StopNode?
    weak var side: StopNode?
    weak var leaf: StopNode?
    weak var tail: NavigationController?
}

@MainActor
@Suite("Termination tears the whole tree down before the host hears it, whatever the stop's callbacks edit")
struct WholeTeardownTests {
    /// Where an edit is made from during the stop.
    enum Hook: String, CaseIterable, CustomTestStringConvertible {
        case delegateWillTerminate = "the delegate's applicationWillTerminate"
        case controllerWillTerminate = "b's applicationWillTerminate"
        case willDisappear = "b's viewWillDisappear in the teardown"
        case didDisappear = "b's viewDidDisappear in the teardown"
        // The release of the tree runs once the application let go of its window: an edit of the window's root does
        // nothing then, and a window set then is torn down in its turn.
        case deinitialization = "a's deinit in the teardown"

        var testDescription: String { rawValue }
    }

    /// The edit made.
    enum Edit: String, CaseIterable, CustomTestStringConvertible {
        case replaceWindow = "application.window = Window(rootViewController: x)"
        case removeWindow = "application.window = nil"
        case replaceRoot = "window.rootViewController = x"
        case removeRoot = "window.rootViewController = nil"
        case push = "tail.pushViewController(x)"
        case pop = "tail.popViewController()"
        case present = "leaf.present(x)"
        case dismiss = "side.dismiss()"
        case embed = "side.embed(x)"
        case unembed = "side.unembed(leaf)"
        case pushThenRemoveWindow = "tail.pushViewController(x), then application.window = nil"

        var testDescription: String { rawValue }

        /// Makes the edit on the tree (the controllers it names are alive, unless the teardown released them).
        @MainActor
        func make(on tree: StopTree, with x: @autoclosure () -> ViewController) {
            switch self {
            case .replaceWindow: tree.app?.window = Window(rootViewController: x())
            case .removeWindow: tree.app?.window = nil
            case .replaceRoot: tree.app?.window?.rootViewController = x()
            case .removeRoot: tree.app?.window?.rootViewController = nil
            case .push: tree.tail?.pushViewController(x(), animated: false)
            case .pop: _ = tree.tail?.popViewController(animated: false)
            case .present: tree.leaf?.present(x(), animated: false)
            case .dismiss: tree.side?.dismiss(animated: false)
            case .embed: tree.side?.embed(x())
            case .unembed: if let leaf = tree.leaf { tree.side?.unembed(leaf) }
            case .pushThenRemoveWindow:
                Edit.push.make(on: tree, with: x())
                Edit.removeWindow.make(on: tree, with: x())
            }
        }
    }

    /// Launches the tree, arms nothing yet; the tree alone holds its controllers.
    private func launched() -> (Application, LoggingHost, TestDelegate, StopTree) {
        let (app, host, delegate) = makeLoggedApplication { app in
            let root = StopNode(identifier: "root")
            app.window = Window(rootViewController: root)
            root.embed(NavigationController(rootViewController: StopNode(identifier: "a"), identifier: "nav"))
            let side = StopNode(identifier: "side")
            side.embed(StopNode(identifier: "leaf"))
            root.embed(side)
            root.embed(NavigationController(rootViewController: StopNode(identifier: "t1"), identifier: "tail"))
        }
        app.launch()
        let root = app.window!.rootViewController as! StopNode
        let nav = root.children[0] as! NavigationController
        let tail = root.children[2] as! NavigationController
        nav.pushViewController(StopNode(identifier: "b"), animated: false)
        tail.pushViewController(StopNode(identifier: "t2"), animated: false)
        root.present(StopNode(identifier: "sheet"), animated: false)
        root.children[1].present(StopNode(identifier: "aside"), animated: false)
        app.runEndOfTurn()
        let tree = StopTree(
            app: app,
            a: nav.viewControllers[0] as? StopNode,
            b: nav.viewControllers[1] as? StopNode,
            side: root.children[1] as? StopNode,
            leaf: root.children[1].children[0] as? StopNode,
            tail: tail
        )
        host.log.removeAll()
        return (app, host, delegate, tree)
    }

    /// What must hold once the host heard "terminated": it is the last thing that happened; every controller of the
    /// tree at the start of the stop, and every one made during it (`x`), closed every appearance it began and was
    /// released before it, the visible ones after their disappearance; none is alive, nor any view of theirs. `x`
    /// never completes an appearance, and never begins one when the teardown's own callbacks made it (§2's decision).
    private func teardownProblems(
        log: [String],
        atStart: [(id: String, visible: Bool, controller: WeakBox)],
        made: [WeakBox],
        madeDuringTeardown: Bool,
        views: [WeakBox]
    ) -> [String] {
        var problems: [String] = []
        guard let terminated = log.firstIndex(of: "host terminated") else { return ["the host never heard terminated"] }
        if terminated != log.count - 1 {
            problems.append("after \"terminated\": " + log[(terminated + 1)...].joined(separator: ", "))
        }
        let before = log[..<terminated].map { line in
            let (target, event) = (line.prefix { $0 != " " }, line.drop { $0 != " " }.dropFirst())
            return (id: AppearanceHarness.lastComponent(of: String(target)), event: String(event))
        }
        let appearance: Set<String> = ["viewWillAppear", "viewDidAppear", "viewWillDisappear", "viewDidDisappear"]
        let x = made.isEmpty ? [] : [(id: "x", visible: false, controller: WeakBox(nil))]
        for (id, visible, box) in atStart + x {
            if box.object != nil { problems.append("\(id) is alive after terminated") }
            let events = before.filter { $0.id == id }.map(\.event)
            guard let release = events.lastIndex(of: "deinit") else {
                problems.append("\(id) was not released before terminated")
                continue
            }
            // The brackets: each will-callback is closed, by its did-callback or by the reversal's, before the deinit.
            var last = visible ? "viewDidAppear" : "viewDidDisappear"
            for event in events[..<release] where appearance.contains(event) {
                let opener = ["viewDidAppear": "viewWillAppear", "viewDidDisappear": "viewWillDisappear"][event]
                if let opener, last != opener { problems.append("\(id) \(event) after \(last)") }
                last = event
            }
            if last != "viewDidDisappear" { problems.append("\(id) is left after \(last) when it is released") }
        }
        let madeEvents = before.filter { $0.id == "x" }.map(\.event)
        if madeEvents.contains("viewDidAppear") { problems.append("x, made during the stop, appeared") }
        if madeDuringTeardown, madeEvents.contains("viewWillAppear") {
            problems.append("x, made during the teardown, began to appear")
        }
        for box in made where box.object != nil { problems.append("x, made during the stop, is alive") }
        if views.contains(where: { $0.object != nil }) { problems.append("a view of the tree is alive") }
        return problems
    }

    /// An object held weakly: gone once its last owner let go.
    final class WeakBox {
        weak var object: AnyObject?
        init(_ object: AnyObject?) { self.object = object }
    }

    /// Every edit from every callback of the stop: the host hears "terminated" last, once the tree of the start and
    /// what joined it since are gone. Before the fix, letting go of the window in `applicationWillTerminate` left the
    /// whole tree alive after "terminated", a pushed view stayed when the window went in the same callback, a window
    /// set by a deinit stayed with its root, and an edit made from a deinit trapped.
    @Test(arguments: Hook.allCases, Edit.allCases)
    func theTeardownIsWholeBeforeTheHostHearsTerminated(hook: Hook, edit: Edit) {
        let (app, host, delegate, tree) = launched()
        var made: [WeakBox] = []
        let arm: @MainActor () -> Void = {
            edit.make(
                on: tree,
                with: {
                    let x = StopNode(identifier: "x")
                    made.append(WeakBox(x))
                    return x
                }()
            )
        }
        switch hook {
        case .delegateWillTerminate:
            delegate.onEvent = { event, _ in if event == TraceEventName.applicationWillTerminate { arm() } }
        case .controllerWillTerminate:
            tree.b!.hooks[TraceEventName.applicationWillTerminate] = arm
        case .willDisappear:
            tree.b!.hooks[TraceEventName.viewWillDisappear] = arm
        case .didDisappear:
            tree.b!.hooks[TraceEventName.viewDidDisappear] = arm
        case .deinitialization:
            tree.a!.hooks[TraceEventName.deinitialize] = arm
        }
        let controllers = app.controllersInTreeOrder()
        let atStart = controllers.map { ($0.identifier, $0.isVisible, WeakBox($0)) }
        var views: [WeakBox] = []
        var stack = controllers.compactMap(\.viewIfLoaded)
        while let view = stack.popLast() {
            views.append(WeakBox(view))
            stack += view.subviews
        }
        _ = consume controllers

        app.requestTermination()

        let problems = teardownProblems(
            log: host.log,
            atStart: atStart,
            made: made,
            madeDuringTeardown: [.willDisappear, .didDisappear, .deinitialization].contains(hook),
            views: views
        )
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))\n\(host.log.joined(separator: "\n"))")
        #expect(app.window == nil)
    }

    // MARK: Whole sequences

    /// A window whose root is a navigation stack [a, b], launched; the tree alone holds its controllers.
    private func stack() -> (Application, LoggingHost, TestDelegate, a: StopNode, b: StopNode) {
        let (app, host, delegate) = makeLoggedApplication { app in
            let nav = NavigationController(rootViewController: StopNode(identifier: "a"), identifier: "nav")
            app.window = Window(rootViewController: nav)
        }
        app.launch()
        let nav = app.window!.rootViewController as! NavigationController
        nav.pushViewController(StopNode(identifier: "b"), animated: false)
        app.runEndOfTurn()
        host.log.removeAll()
        return (app, host, delegate, nav.viewControllers[0] as! StopNode, nav.viewControllers[1] as! StopNode)
    }

    /// The stop's application events over the stack, up to the delegate's `applicationWillTerminate`.
    private let stopping =
        ["host stopping"]
        + propagation(of: "applicationWillResignActive", preOrder: ["nav", "nav/a", "nav/b"])
        + propagation(of: "applicationDidEnterBackground", preOrder: ["nav", "nav/a", "nav/b"])
        + propagation(of: "applicationWillTerminate", preOrder: ["nav", "nav/a", "nav/b"])

    // The defect of issue 26: the delegate let go of the window in applicationWillTerminate, the teardown found no
    // window and the host heard "terminated" at once; the old window's viewDidDisappear callbacks and every deinit came
    // after it (in the daemon, never: the process had exited). Now they come first.
    @Test func aWindowTheDelegateLetsGoOfInApplicationWillTerminateIsTornDownBeforeTerminated() {
        let (app, host, delegate, _, _) = stack()
        delegate.onEvent = { event, app in if event == TraceEventName.applicationWillTerminate { app.window = nil } }

        app.requestTermination()

        #expect(
            controllerLines(host.log) == stopping + [
                "nav viewWillDisappear", "nav/b viewWillDisappear", "nav/b viewDidDisappear", "nav viewDidDisappear",
                "nav deinit", "nav/a deinit", "nav/b deinit",
                "host terminated",
            ]
        )
        #expect(host.log.filter { $0.hasSuffix(".view deinit") }.count == 3)
    }

    // The decision of docs/lifecycle.md §2: in applicationWillTerminate the window still shows, so a new root appears
    // as any edit makes it appear; the teardown closes its bracket (no viewDidAppear: the reversal rule of §3) and
    // releases it with the rest, before "terminated".
    @Test func aRootSetInApplicationWillTerminateIsTornDownWithTheRest() {
        let (app, host, delegate, _, _) = stack()
        delegate.onEvent = { event, app in
            if event == TraceEventName.applicationWillTerminate {
                app.window!.rootViewController = StopNode(identifier: "x")
            }
        }

        app.requestTermination()

        #expect(
            controllerLines(host.log) == stopping + [
                "x init", "nav viewWillDisappear", "nav/b viewWillDisappear", "x loadView", "x viewDidLoad",
                "x viewWillAppear",
                "x viewWillDisappear",
                "nav/b viewDidDisappear", "nav viewDidDisappear", "x viewDidDisappear",
                "nav deinit", "nav/a deinit", "nav/b deinit", "x deinit",
                "host terminated",
            ]
        )
    }

    // A deinit of the teardown set a new window: the release of the tree trapped (an exclusive access: the fan-out's
    // list was being dropped when the deinit changed the tree), and, past that, the new window stayed with its root
    // alive after "terminated". Now the window set during the teardown never shows and goes in the same teardown.
    @Test func aWindowSetFromADeinitOfTheTeardownNeverAppearsAndGoesBeforeTerminated() {
        let (app, host, _, a, _) = stack()
        a.hooks[TraceEventName.deinitialize] = { [weak app] in
            app?.window = Window(rootViewController: StopNode(identifier: "x"))
        }
        _ = consume a

        app.requestTermination()

        #expect(
            controllerLines(host.log) == stopping + [
                "nav viewWillDisappear", "nav/b viewWillDisappear", "nav/b viewDidDisappear", "nav viewDidDisappear",
                "nav deinit", "x init", "nav/a deinit", "nav/b deinit", "x deinit",
                "host terminated",
            ]
        )
        #expect(app.window == nil)
    }

    // Edits made by the teardown's own will-callbacks wait for its move (Re-entrancy), then apply to a tree out of the
    // window: the popped controller goes as a pop makes it go, and nothing comes back on screen.
    @Test func aPopFromTheTeardownsViewWillDisappearWaitsForItsMoveAndShowsNothing() {
        let (app, host, _, _, b) = stack()
        b.hooks[TraceEventName.viewWillDisappear] = { [weak b] in
            _ = b?.navigationController?.popViewController(animated: false)
        }
        _ = consume b

        app.requestTermination()

        #expect(
            controllerLines(host.log) == stopping + [
                "nav viewWillDisappear", "nav/b viewWillDisappear", "nav/b willMove(toParent:)",
                "nav/b viewDidDisappear", "nav viewDidDisappear", "nav/b didMove(toParent:)", "nav/b deinit",
                "nav deinit", "nav/a deinit",
                "host terminated",
            ]
        )
    }

    // A presentation made by the teardown's did-callbacks: the window is hidden, so the presented controller loads
    // but never appears, and goes with its presenter.
    @Test func aPresentationFromTheTeardownsViewDidDisappearNeverAppears() {
        let (app, host, _, _, b) = stack()
        b.hooks[TraceEventName.viewDidDisappear] = { [weak b] in
            b?.present(StopNode(identifier: "x"), animated: false)
        }
        _ = consume b

        app.requestTermination()

        #expect(
            controllerLines(host.log) == stopping + [
                "nav viewWillDisappear", "nav/b viewWillDisappear", "nav/b viewDidDisappear",
                "nav/b/x init", "nav/b/x loadView", "nav/b/x viewDidLoad",
                "nav viewDidDisappear",
                "nav deinit", "nav/a deinit", "nav/b deinit", "nav/b/x deinit",
                "host terminated",
            ]
        )
    }
}
