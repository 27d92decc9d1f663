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

let appearance: Set<String> = ["viewWillAppear", "viewDidAppear", "viewWillDisappear", "viewDidDisappear"]

@MainActor
func launchedNav(_ ids: [String]) -> (Application, NavigationController, CallbackRecorder) {
    let app = makeApplication(delegate: TestDelegate { app in
        app.window = Window(rootViewController:
            NavigationController(rootViewController: LeafController(identifier: ids[0]), identifier: "nav"))
    })
    let recorder = CallbackRecorder(app)
    app.launch()
    let nav = app.window!.rootViewController as! NavigationController
    for id in ids.dropFirst() { nav.pushViewController(LeafController(identifier: id), animated: false) }
    app.runEndOfTurn()
    recorder.clear()
    return (app, nav, recorder)
}


@MainActor
@Suite("Regression: navigation edge cases") struct NavigationRegressionTests {
    // R1: two pops in one turn.
    @Test func twoPopsInOneTurnPopTwoControllers() {
        let (app, nav, recorder) = launchedNav(["a", "b", "c"])
        let first = nav.popViewController(animated: false)
        let second = nav.popViewController(animated: false)
        app.runEndOfTurn()
        #expect(first?.identifier == "c")
        #expect(second?.identifier == "b")
        #expect(nav.viewControllers.map(\.identifier) == ["a"])
        #expect(recorder.lines(events: ["willMove(toParent:)"]) == ["nav/c willMove(toParent:)", "nav/b willMove(toParent:)"])
    }

    // R2: pop then push in one turn.
    @Test func popThenPushInOneTurnShowsOnlyTheNewTop() {
        let (app, nav, recorder) = launchedNav(["a", "b"])
        nav.popViewController(animated: false)
        nav.pushViewController(LeafController(identifier: "d"), animated: false)
        app.runEndOfTurn()
        let a = nav.viewControllers[0]
        #expect(nav.viewControllers.map(\.identifier) == ["a", "d"])
        #expect(!a.isVisible, "a is not on top but is visible")
        #expect(a.viewIfLoaded?.window == nil, "a's view is still in the window under d")
        #expect(nav.view.subviews.count == 1)
        #expect(
            recorder.lines(events: appearance) == [
                "nav/b viewWillDisappear", "nav/a viewWillAppear", "nav/a viewWillDisappear", "nav/d viewWillAppear",
                "nav/b viewDidDisappear", "nav/a viewDidDisappear", "nav/d viewDidAppear",
            ]
        )
    }

    // R3: pop to root, then push one of the popped controllers again, same turn.
    @Test func popToRootThenPushAPoppedControllerAgain() {
        let (app, nav, _) = launchedNav(["a", "b", "c"])
        weak let weakC = nav.topViewController
        let popped = nav.popToRootViewController(animated: false)!
        nav.pushViewController(popped.last!, animated: false)
        _ = consume popped
        app.runEndOfTurn()
        #expect(nav.viewControllers.map(\.identifier) == ["a", "c"])
        #expect(weakC != nil, "the visible top controller was released")
        #expect(weakC?.isVisible == true)
    }

    // R4 (sanity): push while a push is pending in the same turn.
    @Test func pushWhilePushPending() {
        let (app, nav, _) = launchedNav(["a"])
        nav.pushViewController(LeafController(identifier: "b"), animated: false)
        nav.pushViewController(LeafController(identifier: "c"), animated: false)
        app.runEndOfTurn()
        #expect(nav.viewControllers.map(\.identifier) == ["a", "b", "c"])
        #expect(nav.viewControllers.map(\.isVisible) == [false, false, true])
    }

    // R5: popping a controller that presents something orphans the presented controller.
    @Test func poppingAPresenterDismissesWhatItPresents() {
        let (app, nav, recorder) = launchedNav(["a", "b"])
        let p = LeafController(identifier: "p")
        nav.topViewController!.present(p, animated: false)
        app.runEndOfTurn()
        recorder.clear()
        nav.popViewController(animated: false)
        app.runEndOfTurn()
        #expect(!p.isVisible)
        #expect(p.presentingViewController == nil)
        #expect(app.window!.layers.map(\.controller.identifier) == ["nav"])
        #expect(app.controllersInTreeOrder().map(\.path) == ["nav", "nav/a"])
        #expect(recorder.lines(targets: ["nav/b/p"], events: appearance) == ["nav/b/p viewWillDisappear", "nav/b/p viewDidDisappear"])
        recorder.clear()
        p.dismiss(animated: false)
        app.requestEnterBackground()
        #expect(!recorder.lines().contains { $0.hasPrefix("nav/b/p ") }, "a dismissed controller gets nothing more")
    }

    // R17: pop, then push the popped controller back in the same turn.
    @Test func popThenPushTheSameControllerInOneTurn() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            await MainActor.run {
                let (app, nav, _) = launchedNav(["a", "b"])
                let b = nav.popViewController(animated: false)!
                nav.pushViewController(b, animated: false)   // UIKit allows this: b is no longer on the stack
                app.runEndOfTurn()
            }
        }.map { print("R17 stderr:", String(decoding: $0.standardErrorContent, as: UTF8.self).split(separator: "\n").prefix(3)) }
    }
}
