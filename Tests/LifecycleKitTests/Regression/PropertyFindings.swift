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

// Disagreements the appearance property test's reference model (AppearanceModel.swift) found with LifecycleKit,
// decided for the contract and fixed in the core. Each test is the smallest sequence that showed one; each failed
// before its fix.

@MainActor
@Suite("Findings of the appearance property test")
struct PropertyFindings {
    private func launched(_ root: @escaping @MainActor () -> ViewController) -> (Application, CallbackRecorder) {
        let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: root()) })
        let recorder = CallbackRecorder(app)
        app.launch()
        return (app, recorder)
    }

    // Finding 1. A controller that leaves the tree dismisses what it presents (docs/lifecycle.md §3: "a controller
    // that leaves the tree dismisses what it presents"), and so does everything below it, which leaves the tree with
    // it. LifecycleKit dismisses only the presentation of the controller that leaves: what a child of a popped (or
    // unembedded) controller presents stays on screen, visible, alive, and out of reach of the application events.
    @Test func poppingAControllerDismissesWhatItsChildPresents() {
        let (app, recorder) = launched {
            NavigationController(rootViewController: LeafController(identifier: "a"), identifier: "nav")
        }
        let nav = app.window!.rootViewController as! NavigationController
        let x = ContainerController(identifier: "x", children: [LeafController(identifier: "c")])
        nav.pushViewController(x, animated: false)
        app.runEndOfTurn()
        weak let p: ViewController? = {
            let p = LeafController(identifier: "p")
            nav.topViewController!.children[0].present(p, animated: false)
            return p
        }()
        app.runEndOfTurn()
        recorder.clear()

        _ = consume x
        nav.popViewController(animated: false)
        app.runEndOfTurn()

        #expect(p?.isVisible != true, "nav/x/c/p is still visible after nav/x was popped")
        #expect(p == nil, "nav/x/c/p is still alive (held by the window) after nav/x was popped")
        #expect(
            recorder.lines(targets: ["nav/x/c/p"], events: appearance) == [
                "nav/x/c/p viewWillDisappear", "nav/x/c/p viewDidDisappear",
            ]
        )
    }

    @Test func unembeddingAControllerDismissesWhatItsChildPresents() {
        let (app, _) = launched {
            ContainerController(
                identifier: "root",
                children: [ContainerController(identifier: "x", children: [LeafController(identifier: "c")])]
            )
        }
        let root = app.window!.rootViewController!
        weak let p: ViewController? = {
            let p = LeafController(identifier: "p")
            root.children[0].children[0].present(p, animated: false)
            return p
        }()
        app.runEndOfTurn()

        root.unembed(root.children[0])
        app.runEndOfTurn()

        #expect(p?.isVisible != true, "root/x/c/p is still visible after root/x was unembedded")
        #expect(p == nil, "root/x/c/p is still alive (held by the window) after root/x was unembedded")
    }

    // Finding 2. Dismissing a presented controller takes it out of the tree with everything below it; what a child
    // of the dismissed controller presents (the top of a presented navigation stack presenting a sheet) stays on
    // screen, out of the tree. Dismissal dismisses "everything presented above it": a presentation made from inside
    // the dismissed hierarchy is above it (in UIKit it would be presented by the dismissed controller itself).
    @Test func dismissingAPresentedNavigationControllerDismissesWhatItsTopPresents() {
        let (app, recorder) = launched { LeafController(identifier: "root") }
        let root = app.window!.rootViewController!
        let flow = NavigationController(rootViewController: LeafController(identifier: "form"), identifier: "flow")
        root.present(flow, animated: false)
        app.runEndOfTurn()
        weak let p: ViewController? = {
            let p = LeafController(identifier: "p")
            flow.topViewController!.present(p, animated: false)
            return p
        }()
        app.runEndOfTurn()
        recorder.clear()

        _ = consume flow
        root.dismiss(animated: false)
        app.runEndOfTurn()

        #expect(p?.isVisible != true, "root/flow/form/p is still visible after root/flow was dismissed")
        #expect(p == nil, "root/flow/form/p is still alive (held by the window) after root/flow was dismissed")
        #expect(
            recorder.lines(targets: ["root/flow/form/p"], events: appearance) == [
                "root/flow/form/p viewWillDisappear", "root/flow/form/p viewDidDisappear",
            ]
        )
    }

    // Finding 3. A navigation controller that keeps its view on a memory warning (keepsViewOnMemoryWarning) lost its
    // top: the warning released the top's view (out of the window under a full-screen presentation) and took it out
    // of the navigation controller's view; when the navigation controller appeared again, nothing put the top back.
    // Fixed as UIKit did it: a view that has a superview is part of its parent's view and is not released on its own,
    // so the top keeps its view inside the navigation controller's and appears again with it.
    @Test func aNavigationControllerThatKeepsItsViewShowsItsTopAgainAfterAMemoryWarning() {
        let (app, recorder) = launched {
            NavigationController(rootViewController: LeafController(identifier: "top"), identifier: "nav")
        }
        let nav = app.window!.rootViewController as! NavigationController
        nav.keepsViewOnMemoryWarning = true
        nav.present(fullScreen(LeafController(identifier: "cover")), animated: false)
        app.runEndOfTurn()
        app.requestMemoryWarning()
        app.runEndOfTurn()
        recorder.clear()

        nav.dismiss(animated: false)
        app.runEndOfTurn()

        let top = nav.topViewController!
        #expect(top.isVisible, "nav/top did not appear again with nav")
        #expect(top.viewIfLoaded?.superview === nav.view, "nav's view does not hold its top's view")
        #expect(
            recorder.lines(events: appearance) == [
                "nav/cover viewWillDisappear", "nav viewWillAppear", "nav/top viewWillAppear",
                "nav/cover viewDidDisappear", "nav/top viewDidAppear", "nav viewDidAppear",
            ]
        )
        #expect(recorder.lines(targets: ["nav/top"], events: ["loadView", "viewWillAppear"]) == ["nav/top viewWillAppear"])
    }

    // Finding 4. A push onto a navigation controller whose view is loaded but not in the window (under a full-screen
    // presentation), then, in the same turn, that navigation controller leaving the tree (unembedded, popped with its
    // container, dismissed), crashes at the end of the turn: "Attempted to read an unowned reference but object … was
    // already destroyed". The push's end-of-turn completion captures the navigation controller `unowned`, and nothing
    // else holds it once it left the tree (no appearance callback is pending for it). setViewControllers and
    // popToRootViewController capture it the same way.
    @Test func aNavigationControllerPushedOntoOutOfTheWindowCanLeaveTheTreeInTheSameTurn() async {
        await #expect(processExitsWith: .success) {
            await MainActor.run {
                let app = makeApplication(delegate: TestDelegate { app in
                    app.window = Window(rootViewController: ContainerController(identifier: "root", children: [
                        NavigationController(rootViewController: LeafController(identifier: "a"), identifier: "nav"),
                    ]))
                })
                app.launch()
                let root = app.window!.rootViewController!
                root.present(fullScreen(LeafController(identifier: "cover")), animated: false)
                app.runEndOfTurn()
                // One turn: push onto the covered navigation controller, then take it out of the tree.
                @MainActor func pushThenUnembed() {
                    let nav = root.children[0] as! NavigationController
                    nav.pushViewController(LeafController(identifier: "b"), animated: false)
                    root.unembed(nav)
                }
                pushThenUnembed()
                app.runEndOfTurn()
            }
        }
    }

    // Finding 5. popToRootViewController (and setViewControllers) take the removed controllers off the stack one at a
    // time, each dismissing what it presents before the next leaves. When such a dismissal shows the navigation
    // controller again and its view loads again (released on a memory warning while covered), the view embeds the
    // controller then on top — one the same call is popping: it loads, appears and disappears again, before the root
    // appears. docs/lifecycle.md §3: "A popped controller leaves the stack at once"; the new top is the one that appears.
    // (setViewControllers([a, new]) likewise shows a controller it removes, or the kept `a`, before `new`.)
    @Test func popToRootTakesEveryPoppedControllerOffTheStackBeforeAnythingAppears() {
        let (app, recorder) = launched {
            NavigationController(rootViewController: LeafController(identifier: "a"), identifier: "nav")
        }
        let nav = app.window!.rootViewController as! NavigationController
        nav.pushViewController(LeafController(identifier: "b"), animated: false)
        app.runEndOfTurn()
        nav.topViewController!.present(fullScreen(LeafController(identifier: "cover")), animated: false)
        app.runEndOfTurn()
        nav.pushViewController(LeafController(identifier: "c"), animated: false)
        app.runEndOfTurn()
        app.requestMemoryWarning()
        #expect(!nav.isViewLoaded)
        recorder.clear()

        nav.popToRootViewController(animated: false)
        app.runEndOfTurn()

        #expect(recorder.lines(targets: ["nav/c"], events: appearance.union(["loadView"])).isEmpty)
        #expect(
            recorder.lines(events: appearance) == [
                "nav/b/cover viewWillDisappear", "nav viewWillAppear", "nav/a viewWillAppear",
                "nav/b/cover viewDidDisappear", "nav/a viewDidAppear", "nav viewDidAppear",
            ]
        )
    }

    // Finding 6. Dismissing a full-screen presentation whose covered controller's view was released on a memory
    // warning loads that view only after the dismissed controller's viewWillDisappear. docs/lifecycle.md §3's hand-off:
    // "the incoming mode prepares (viewDidLoad) before the outgoing one stops (viewWillDisappear)"; dismissal mirrors
    // presentation, and a pop already loads the controller below first (ContractRevisionTests).
    @Test func dismissalLoadsTheReleasedViewOfTheCoveredControllerBeforeTheDismissedOneStops() {
        let (app, recorder) = launched { LeafController(identifier: "a") }
        let a = app.window!.rootViewController!
        a.present(fullScreen(LeafController(identifier: "b")), animated: false)
        app.runEndOfTurn()
        app.requestMemoryWarning()
        #expect(!a.isViewLoaded)
        recorder.clear()

        a.dismiss(animated: false)
        app.runEndOfTurn()

        #expect(
            recorder.lines(events: appearance.union(["loadView", "viewDidLoad"])) == [
                "a loadView", "a viewDidLoad", "a/b viewWillDisappear", "a viewWillAppear",
                "a/b viewDidDisappear", "a viewDidAppear",
            ]
        )
    }

    // Finding 7. A controller unembedded by an edit that waited for a move was released at once, inside the public
    // call that began the move — while the caller still held the controller it called (a child of the unembedded
    // one). The graph went in two pieces: the unembedded controller and its other children first, the called child
    // when the call returned. docs/lifecycle.md §3's release order (the controller, its view tree, its children in
    // order, what it presented) needs the graph to go at once: as a popped or dismissed controller does, an
    // unembedded one now lives until the end of the turn, when no call into it is running.
    @Test func aControllerUnembeddedByAWaitingEditGoesWithItsChildrenInOrder() {
        let (app, root, recorder) = launchedRoot { LeafController(identifier: "root") }
        do {
            let x = ContainerController(
                identifier: "x",
                children: [LeafController(identifier: "a"), LeafController(identifier: "b")]
            )
            root.embed(x)
            // x is covered: nothing of its own holds it once it leaves the tree (no appearance callback pending).
            let cover = fullScreen(Hooked("cover"))
            root.present(cover, animated: false)
            app.runEndOfTurn()
            // The presentation below covers the cover: its viewWillDisappear unembeds x, which waits for that move.
            cover.hooks[TraceEventName.viewWillDisappear] = { [unowned root, unowned x] _ in root.unembed(x) }
        }
        recorder.clear()

        // The caller holds `a` for the whole call; the unembed runs at the end of the move this call makes, and takes
        // what `a` presents out of the tree (the cover comes back).
        root.children[0].children[0].present(fullScreen(LeafController(identifier: "p")), animated: false)
        app.runEndOfTurn()

        #expect(root.children.isEmpty)
        #expect(
            recorder.lines(events: appearance) == [
                "root/cover viewWillDisappear", "root/x/a/p viewWillAppear", "root/x/a/p viewWillDisappear",
                "root/cover viewWillAppear", "root/x/a/p viewDidDisappear", "root/cover viewDidAppear",
            ]
        )
        #expect(
            recorder.lines(events: ["deinit"]).filter { !$0.contains(".view/") } == [
                "root/x/a/p deinit", "root/x/a/p.view deinit", "root/x deinit", "root/x.view deinit",
                "root/x/a deinit", "root/x/a.view deinit", "root/x/b deinit", "root/x/b.view deinit",
            ]
        )
    }

    // The same for a pop from a navigation controller whose view is not loaded (never shown, or released on a memory
    // warning): the pop's end-of-turn work, which keeps the popped controller until the end of the turn, ran at once
    // (nothing to show), so the popped controller went inside the call that began the move, before the child that
    // call holds. setViewControllers and popToRootViewController went the same way.
    @Test func aControllerPoppedByAWaitingEditFromAnUnloadedStackGoesWithItsChildrenInOrder() {
        let (app, root, recorder) = launchedRoot { LeafController(identifier: "root") }
        do {
            // A stack that is a child of the root without being embedded in its view: its view never loads.
            let nav = NavigationController(rootViewController: LeafController(identifier: "n0"), identifier: "nav")
            root.addChild(nav)
            nav.didMove(toParent: root)
            let x = ViewController(identifier: "x")
            for id in ["a", "b"] {
                let child = LeafController(identifier: id)
                x.addChild(child)
                child.didMove(toParent: x)
            }
            nav.pushViewController(x, animated: false)
            let cover = fullScreen(Hooked("cover"))
            root.present(cover, animated: false)
            app.runEndOfTurn()
            // The presentation below covers the cover: its viewWillDisappear pops x, which waits for that move.
            cover.hooks[TraceEventName.viewWillDisappear] = { [unowned nav] _ in
                nav.popViewController(animated: false)
            }
            #expect(!nav.isViewLoaded)
        }
        recorder.clear()

        // The caller holds `a` for the whole call; the pop runs at the end of the move this call makes.
        root.children[0].children[1].children[0].present(fullScreen(LeafController(identifier: "p")), animated: false)
        app.runEndOfTurn()

        #expect((root.children[0] as! NavigationController).viewControllers.map(\.identifier) == ["n0"])
        #expect(
            recorder.lines(events: ["deinit"]).filter { !$0.contains(".view/") } == [
                "root/nav/x/a/p deinit", "root/nav/x/a/p.view deinit", "root/nav/x deinit", "root/nav/x/a deinit",
                "root/nav/x/b deinit",
            ]
        )
    }

    /// The sequence the property test found (docs/lifecycle.md §3, "Release"): a push onto a covered navigation
    /// controller, a full-screen presentation from the controller the push covered, and an unembedding of the
    /// navigation controller from a callback of that presentation's move. Every graph released in the turn goes in
    /// the contract's order.
    @Test func theCounterexampleOfAnUnembeddingMadeDuringAPresentationFollowsTheModel() {
        let codes = [725852, 1992910, 1376167, 1796390, 0, 109026]
        #expect(AppearancePropertyTests.operations(codes) == [
            "embed nav c3[c4] in r", "arm c1.viewWillDisappear (code 390158)", "schedule end-of-turn work (code 985833)",
            "arm c6.viewWillDisappear (code 765970)", "push c8 (keeps its view) onto c1",
            "c2 presents nav c9[c10] (.fullScreen)",
        ])
        let problem = AppearancePropertyTests.play(codes)
        #expect(problem == nil, "\(problem ?? "")")
    }
}
