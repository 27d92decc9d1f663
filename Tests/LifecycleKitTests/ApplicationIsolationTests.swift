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
@Suite("Each tree belongs to its own application")
struct ApplicationIsolationTests {
    @Test func twoApplicationsInOneProcessKeepSeparateTreesAndTraces() {
        let first = makeApplication(delegate: TestDelegate { $0.window = Window(rootViewController: LeafController(identifier: "one")) })
        let second = makeApplication(delegate: TestDelegate { $0.window = Window(rootViewController: LeafController(identifier: "two")) })
        let firstRecorder = CallbackRecorder(first)
        let secondRecorder = CallbackRecorder(second)
        first.launch()
        second.launch()
        // The second application is the process's `current` now; the first one's tree still reports to the first.
        first.requestEnterBackground()
        #expect(first.window?.rootViewController?.application === first)
        #expect(second.window?.rootViewController?.application === second)
        #expect(firstRecorder.events.allSatisfy { $0.target == "delegate" || $0.target.hasPrefix("one") })
        #expect(secondRecorder.events.allSatisfy { $0.target == "delegate" || $0.target.hasPrefix("two") })
        #expect(firstRecorder.lines(events: ["applicationDidEnterBackground"]) == [
            "one applicationDidEnterBackground", "delegate applicationDidEnterBackground",
        ])
        #expect(secondRecorder.lines(events: ["applicationDidEnterBackground"]).isEmpty)
        // Sequence numbers are per application: each trace counts from 1 without gaps.
        #expect(firstRecorder.events.map(\.sequence) == Array(1...firstRecorder.events.count))
        #expect(secondRecorder.events.map(\.sequence) == Array(1...secondRecorder.events.count))
    }

    @Test func aControllerMadeBeforeItJoinsRecordsItsEarlierEventsWhenItJoins() {
        let app = makeApplication(delegate: TestDelegate())
        let recorder = CallbackRecorder(app)
        let root = ViewController(identifier: "root")
        app.window = Window(rootViewController: root)
        app.launch()
        recorder.clear()
        let detached = LeafController(identifier: "late")
        _ = detached.view  // loadView and viewDidLoad happen before it joins the tree
        #expect(recorder.events.isEmpty)
        #expect(detached.application == nil)
        root.addChild(detached)
        #expect(detached.application === app)
        #expect(
            recorder.lines(targets: ["root/late"]) == [
                "root/late init", "root/late loadView", "root/late viewDidLoad", "root/late willMove(toParent:)",
            ]
        )
    }

    @Test func aPoppedControllerStillTracesItsDeinitToItsApplication() {
        let app = makeApplication(delegate: TestDelegate { app in
            app.window = Window(rootViewController: NavigationController(rootViewController: LeafController(identifier: "a")))
        })
        let recorder = CallbackRecorder(app)
        app.launch()
        let navigation = app.window!.rootViewController as! NavigationController
        navigation.pushViewController(LeafController(identifier: "b"), animated: false)
        app.runEndOfTurn()
        recorder.clear()
        navigation.popViewController(animated: false)
        app.runEndOfTurn()
        #expect(recorder.lines(events: ["deinit"]).first == "navigation/b deinit")
    }
}
