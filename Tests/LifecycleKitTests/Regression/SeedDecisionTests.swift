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

// Where the seed documents and the contract disagreed or the contract was silent, decided in docs/lifecycle.md §3–§4:
// the layout pair's count, a released superview's willRemoveSubview, what a view reads in each appearance callback,
// a decoded view's creation callbacks. Each test asserts the whole sequence.

/// Records what its root view reads (`superview`, `window`) in each appearance callback.
@MainActor
final class ReadingController: ViewController {
    private(set) var reads: [String] = []

    private func read(_ callback: String) {
        let view = viewIfLoaded
        reads.append("\(callback) superview:\(view?.superview == nil ? "nil" : "set") window:\(view?.window == nil ? "nil" : "set")")
    }

    override func viewWillAppear(_ animated: Bool) { read("viewWillAppear") }
    override func viewDidAppear(_ animated: Bool) { read("viewDidAppear") }
    override func viewWillDisappear(_ animated: Bool) { read("viewWillDisappear") }
    override func viewDidDisappear(_ animated: Bool) { read("viewDidDisappear") }
}

/// Marks its layout again once, from its first `viewDidLayoutSubviews`.
@MainActor
final class RelayingOutController: ViewController {
    private var marked = false
    override func viewDidLayoutSubviews() {
        guard !marked else { return }
        marked = true
        view.setNeedsLayout()
    }
}

@MainActor
@Suite("The seeds against the contract")
struct SeedDecisionTests {
    // The seeds log the layout pair twice during a push and say it "may be called several times". The contract: at
    // least once, and again only when something marks the layout again.
    @Test func theLayoutPairComesOnceAndAgainOnlyWhenTheLayoutIsMarkedAgain() {
        let (app, nav, recorder) = launchedNav(["a"])
        nav.pushViewController(LeafController(identifier: "b"), animated: false)
        nav.pushViewController(RelayingOutController(identifier: "c"), animated: false)
        app.runEndOfTurn()
        let layout: Set<String> = ["viewWillLayoutSubviews", "viewDidLayoutSubviews"]
        #expect(recorder.lines(targets: ["nav/b"], events: layout) == ["nav/b viewWillLayoutSubviews", "nav/b viewDidLayoutSubviews"])
        #expect(
            recorder.lines(targets: ["nav/c"], events: layout.union(["viewWillAppear", "viewDidAppear"])) == [
                "nav/c viewWillAppear",
                "nav/c viewWillLayoutSubviews", "nav/c viewDidLayoutSubviews",
                "nav/c viewWillLayoutSubviews", "nav/c viewDidLayoutSubviews",
                "nav/c viewDidAppear",
            ]
        )
        recorder.clear()
        app.runEndOfTurn()
        #expect(recorder.lines(events: layout).isEmpty, "nothing is marked: no layout")
    }

    // A released view does not call its own willRemoveSubview (it is in its deinit); each subview, first added first,
    // hears that it has no superview, then goes.
    @Test func aReleasedViewTellsEachSubviewItHasNoSuperviewWithoutWillRemoveSubview() {
        let (app, root, recorder) = launchedRoot { ViewController(identifier: "root") }
        do {
            let box = View(name: "box")
            box.addSubview(View(name: "a"))
            box.addSubview(View(name: "b"))
            root.view.addSubview(box)
            app.runEndOfTurn()
            recorder.clear()
            box.removeFromSuperview()
        }
        #expect(
            recorder.lines().filter { !$0.hasPrefix("root.view ") } == [
                "root.view/box willMove(toSuperview:)", "root.view/box willMove(toWindow:)",
                "root.view/box/a willMove(toWindow:)", "root.view/box/b willMove(toWindow:)",
                "root.view/box didMoveToWindow", "root.view/box/a didMoveToWindow", "root.view/box/b didMoveToWindow",
                "root.view/box didMoveToSuperview",
                "root.view/box deinit",
                "root.view/box/a willMove(toSuperview:)", "root.view/box/a didMoveToSuperview", "root.view/box/a deinit",
                "root.view/box/b willMove(toSuperview:)", "root.view/box/b didMoveToSuperview", "root.view/box/b deinit",
            ]
        )
        #expect(recorder.lines(events: ["willRemoveSubview(_:)"]) == ["root.view willRemoveSubview(_:)"])
    }

    // What `view.superview` and `view.window` read in each appearance callback, for each way a view enters and leaves.
    @Test func whatAViewReadsInEachAppearanceCallback() {
        let (app, nav, _) = launchedNav(["a"])
        // A push, then a pop: the view is itself added and removed.
        let pushed = ReadingController(identifier: "pushed")
        nav.pushViewController(pushed, animated: false)
        app.runEndOfTurn()
        nav.popViewController(animated: false)
        app.runEndOfTurn()
        #expect(pushed.reads == [
            "viewWillAppear superview:nil window:nil", "viewDidAppear superview:set window:set",
            "viewWillDisappear superview:set window:set", "viewDidDisappear superview:nil window:nil",
        ])
        // A child inside a container that is presented, then dismissed: it enters and leaves with its parent's view.
        let child = ReadingController(identifier: "child")
        let container = ContainerController(identifier: "container", children: [child])
        nav.present(container, animated: false)
        app.runEndOfTurn()
        nav.dismiss(animated: false)
        app.runEndOfTurn()
        #expect(child.reads == [
            "viewWillAppear superview:set window:nil", "viewDidAppear superview:set window:set",
            "viewWillDisappear superview:set window:set", "viewDidDisappear superview:set window:nil",
        ])
        // A presented controller: a root view of the window's, which never has a superview.
        let sheet = ReadingController(identifier: "sheet")
        nav.present(sheet, animated: false)
        app.runEndOfTurn()
        nav.dismiss(animated: false)
        app.runEndOfTurn()
        #expect(sheet.reads == [
            "viewWillAppear superview:nil window:nil", "viewDidAppear superview:nil window:set",
            "viewWillDisappear superview:nil window:set", "viewDidDisappear superview:nil window:nil",
        ])
    }

    // A view declared in a storyboard has no creation callback of its own: its declared subviews join it when it is
    // made (recorded when it joins the tree), and it joins its controller's root view at the load, after loadView and
    // before viewDidLoad.
    @Test func aDecodedViewJoinsItsControllersViewAtTheLoadWithoutCreationCallbacks() throws {
        let app = Application(delegate: StoryboardDelegate(), logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
        let recorder = CallbackRecorder(app)
        try app.loadStoryboard(
            try StoryboardFormat.parse("Tuned root {\n  view Caption title { text = t; view View inner }\n}", source: "s")
        )
        app.launch()
        #expect(
            recorder.lines(targets: ["root", "root.view", "root.view/title", "root.view/title/inner"]).prefix(12) == [
                "root init(coder:)", "root awakeFromArchive", "root loadView",
                // Held since the views were made, recorded when they join: each node's events together, pre-order (§7).
                "root.view/title didAddSubview(_:)",
                "root.view/title/inner willMove(toSuperview:)", "root.view/title/inner didMoveToSuperview",
                "root.view/title willMove(toSuperview:)", "root.view/title didMoveToSuperview",
                "root.view didAddSubview(_:)", "root viewDidLoad", "root viewWillAppear",
                "root.view willMove(toWindow:)",
            ]
        )
    }
}
