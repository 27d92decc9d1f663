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
@Suite("Propagation down the hosted tree (docs/lifecycle.md §2)")
struct PropagationTests {
    /// root ─ a ─ a1, a2 (a2 ─ deep) ; root ─ nav [n1, n2] ; root ─ b ; root presents p (over context).
    static let preOrder = [
        "root", "root/a", "root/a/a1", "root/a/a2", "root/a/a2/deep", "root/nav", "root/nav/n1", "root/nav/n2",
        "root/b", "root/p",
    ]

    private func launchedTree() -> (Application, CallbackRecorder) {
        let app = makeApplication(delegate: TestDelegate { app in
            let deep = ContainerController(identifier: "a2", children: [LeafController(identifier: "deep")])
            let a = ContainerController(identifier: "a", children: [LeafController(identifier: "a1"), deep])
            let nav = NavigationController(rootViewController: LeafController(identifier: "n1"), identifier: "nav")
            let root = ContainerController(identifier: "root", children: [a, nav, LeafController(identifier: "b")])
            app.window = Window(rootViewController: root)
            nav.pushViewController(LeafController(identifier: "n2"), animated: false)
        })
        let recorder = CallbackRecorder(app)
        app.launch()
        let p = LeafController(identifier: "p")
        p.modalPresentationStyle = .overCurrentContext
        app.window!.rootViewController!.present(p, animated: false)
        app.runEndOfTurn()
        #expect(app.controllersInTreeOrder().map(\.path) == Self.preOrder)
        recorder.clear()
        return (app, recorder)
    }

    private func events(_ recorder: CallbackRecorder, _ name: String) -> [String] {
        recorder.lines(events: [name])
    }

    @Test func backgroundingGoesLeafFirstThenTheDelegate() {
        let (app, recorder) = launchedTree()
        app.requestEnterBackground()
        for event in ["applicationWillResignActive", "applicationDidEnterBackground"] {
            #expect(events(recorder, event) == propagation(of: event, preOrder: Self.preOrder))
        }
        // Names, not text: a misspelt event would match nothing and pass.
        #expect(
            recorder.lines(events: [TraceEventName.viewWillDisappear, TraceEventName.viewDidDisappear]).isEmpty,
            "backgrounding hides nothing"
        )
    }

    @Test func foregroundingGoesDelegateFirstThenTheTreeInPreOrder() {
        let (app, recorder) = launchedTree()
        app.requestEnterBackground()
        recorder.clear()
        app.requestBecomeActive()
        for event in ["applicationWillEnterForeground", "applicationDidBecomeActive"] {
            #expect(events(recorder, event) == propagation(of: event, preOrder: Self.preOrder))
        }
        #expect(
            recorder.lines(events: [TraceEventName.viewWillAppear]).isEmpty,
            "nothing disappeared, so nothing re-appears"
        )
    }

    @Test func memoryWarningsGoLeafFirstThenTheDelegate() {
        let (app, recorder) = launchedTree()
        app.requestMemoryWarning(cause: .psi)
        let lines = recorder.lines()
        #expect(
            lines
                == propagation(
                    of: "applicationDidReceiveMemoryWarning",
                    controllerEvent: "didReceiveMemoryWarning",
                    preOrder: Self.preOrder
                ).map { $0.hasPrefix("delegate") ? $0 : $0 }
        )
        #expect(recorder.events.allSatisfy { $0.cause == .psi && $0.state == .active })
    }

    @Test func reloadLetsGoLeafFirstAndAppliesDelegateFirst() {
        let (app, recorder) = launchedTree()
        app.requestReload()
        #expect(events(recorder, "applicationWillReload") == propagation(of: "applicationWillReload", preOrder: Self.preOrder))
        #expect(events(recorder, "applicationDidReload") == propagation(of: "applicationDidReload", preOrder: Self.preOrder))
    }

    @Test func terminationReachesEveryControllerThenTearsTheTreeDown() {
        let (app, recorder) = launchedTree()
        app.requestTermination()
        for event in ["applicationWillResignActive", "applicationDidEnterBackground", "applicationWillTerminate"] {
            #expect(events(recorder, event) == propagation(of: event, preOrder: Self.preOrder))
        }
        let lines = recorder.lines()
        let lastTerminate = lines.lastIndex(of: "delegate applicationWillTerminate")!
        let firstDisappear = lines.firstIndex { $0.hasSuffix("viewWillDisappear") }!
        #expect(lastTerminate < firstDisappear, "the tree is torn down after applicationWillTerminate")
        // Visible controllers disappear, parents bracketing children; the hidden n1 and a presented-over root stay
        // as they were.
        #expect(
            recorder.lines(events: ["viewWillDisappear"]) == [
                "root viewWillDisappear", "root/a viewWillDisappear", "root/a/a1 viewWillDisappear",
                "root/a/a2 viewWillDisappear", "root/a/a2/deep viewWillDisappear", "root/nav viewWillDisappear",
                "root/nav/n2 viewWillDisappear", "root/b viewWillDisappear", "root/p viewWillDisappear",
            ]
        )
        #expect(Set(recorder.lines(events: ["deinit"]).filter { !$0.contains(".view") }) == Set(Self.preOrder.map { "\($0) deinit" }))
    }

    @Test func controllersAddedDuringAnEventMissThatEventButGetTheNext() {
        let (app, recorder) = launchedTree()
        let root = app.window!.rootViewController!
        (app.delegate as! TestDelegate).onEvent = { event, _ in
            if event == TraceEventName.applicationDidEnterBackground { root.embed(LeafController(identifier: "late")) }
        }
        app.requestEnterBackground()
        #expect(!recorder.lines(events: ["applicationDidEnterBackground"]).contains("root/late applicationDidEnterBackground"))
        recorder.clear()
        app.requestBecomeActive()
        #expect(
            recorder.lines(events: ["applicationWillEnterForeground"]).suffix(3) == [
                "root/b applicationWillEnterForeground", "root/late applicationWillEnterForeground",
                "root/p applicationWillEnterForeground",
            ],
            "a child comes after its earlier siblings and before what its parent presents"
        )
    }
}

@MainActor
@Suite("Termination releases everything")
struct TeardownTests {
    @Test func everyControllerAndViewIsReleasedBeforeTheApplicationReportsTermination() {
        let (app, host, _) = makeLoggedApplication { app in
            let nav = NavigationController(rootViewController: LeafController(identifier: "b"), identifier: "nav")
            let root = ContainerController(identifier: "root", children: [LeafController(identifier: "a"), nav])
            app.window = Window(rootViewController: root)
        }
        app.launch()
        do {
            let nav = app.window!.rootViewController!.children[1] as! NavigationController
            nav.pushViewController(LeafController(identifier: "pushed"), animated: false)
        }
        app.window!.rootViewController!.present(LeafController(identifier: "modal"), animated: false)
        app.runEndOfTurn()
        var controllers: [() -> ViewController?] = []
        var views: [() -> View?] = []
        for controller in app.controllersInTreeOrder() {
            controllers.append { [weak controller] in controller }
            var stack = [controller.view]
            while let view = stack.popLast() {
                views.append { [weak view] in view }
                stack.append(contentsOf: view.subviews)
            }
        }
        #expect(controllers.count == 6)
        #expect(views.count >= 11)
        host.log.removeAll()
        app.requestTermination()
        #expect(controllers.allSatisfy { $0() == nil })
        #expect(views.allSatisfy { $0() == nil })
        #expect(app.window == nil)
        let lastDeinit = host.log.lastIndex { $0.hasSuffix(" deinit") }
        let terminated = host.log.firstIndex(of: "host terminated")
        #expect(lastDeinit != nil && terminated != nil && lastDeinit! < terminated!)
        #expect(host.log.filter { $0.hasSuffix(" deinit") }.count == 6 + 11)
    }
}
