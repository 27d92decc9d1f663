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
@Suite("Controller lifecycle (docs/lifecycle.md §3)")
struct ControllerLifecycleTests {
    /// Launches an application whose window's root is `root`; returns it and a recorder cleared after launch.
    private func launched(_ root: @escaping @MainActor () -> ViewController) -> (Application, CallbackRecorder) {
        let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: root()) })
        let recorder = CallbackRecorder(app)
        app.launch()
        return (app, recorder)
    }

    @Test func showingAControllerFollowsTheObservedOrder() {
        let (_, recorder) = launched { LeafController(identifier: "root") }
        #expect(
            recorder.lines(targets: ["root", "root.view/subview"], events: viewLifecycleEvents) == [
                "root init",
                "root loadView",
                "root viewDidLoad",
                "root.view/subview willMove(toSuperview:)",
                "root.view/subview didMoveToSuperview",
                "root viewWillAppear",
                "root.view/subview willMove(toWindow:)",
                "root.view/subview didMoveToWindow",
                "root viewWillLayoutSubviews",
                "root viewDidLayoutSubviews",
                "root.view/subview layoutSubviews",
                "root.view/subview draw",
                "root viewDidAppear",
            ]
        )
    }

    @Test func theRootViewLaysItselfOutBetweenTheControllersLayoutCallbacks() {
        let (_, recorder) = launched { LeafController(identifier: "root") }
        #expect(
            recorder.lines(events: ["viewWillLayoutSubviews", "viewDidLayoutSubviews", "layoutSubviews"]) == [
                "root viewWillLayoutSubviews",
                "root.view layoutSubviews",
                "root viewDidLayoutSubviews",
                "root.view/subview layoutSubviews",
            ]
        )
    }

    @Test func hidingAndReleasingAControllerFollowsTheObservedOrder() {
        let (app, recorder) = launched { LeafController(identifier: "root") }
        recorder.clear()
        app.window!.rootViewController = nil
        app.runEndOfTurn()
        #expect(
            recorder.lines(targets: ["root", "root.view/subview"], events: viewLifecycleEvents) == [
                "root viewWillDisappear",
                "root.view/subview willMove(toWindow:)",
                "root.view/subview didMoveToWindow",
                "root viewDidDisappear",
                "root deinit",
                "root.view/subview willMove(toSuperview:)",
                "root.view/subview didMoveToSuperview",
                "root.view/subview deinit",
            ]
        )
    }

    @Test func nestedControllersAppearInsideTheirParentsBrackets() {
        let (app, recorder) = launched {
            ContainerController(identifier: "parent", children: [LeafController(identifier: "child")])
        }
        #expect(
            recorder.lines(events: ["viewWillAppear", "viewDidAppear"]) == [
                "parent viewWillAppear",
                "parent/child viewWillAppear",
                "parent/child viewDidAppear",
                "parent viewDidAppear",
            ]
        )
        recorder.clear()
        app.window!.rootViewController = nil
        app.runEndOfTurn()
        #expect(
            recorder.lines(events: ["viewWillDisappear", "viewDidDisappear"]) == [
                "parent viewWillDisappear",
                "parent/child viewWillDisappear",
                "parent/child viewDidDisappear",
                "parent viewDidDisappear",
            ]
        )
    }

    @Test func siblingsAppearInTheOrderAddedAndFinishBeforeTheirParent() {
        let (_, recorder) = launched {
            ContainerController(
                identifier: "p",
                children: [LeafController(identifier: "c1"), LeafController(identifier: "c2")]
            )
        }
        #expect(
            recorder.lines(events: ["viewWillAppear", "viewDidAppear"]) == [
                "p viewWillAppear", "p/c1 viewWillAppear", "p/c2 viewWillAppear",
                "p/c1 viewDidAppear", "p/c2 viewDidAppear", "p viewDidAppear",
            ]
        )
    }

    @Test func containmentCallsWillMoveOnAddAndDidMoveOnRemove() {
        let parent = ViewController(identifier: "parent")
        let app = makeApplication(delegate: TestDelegate())
        let recorder = CallbackRecorder(app)
        app.adopt(parent)
        let child = ViewController(identifier: "child")
        parent.addChild(child)
        parent.view.addSubview(child.view)
        child.didMove(toParent: parent)
        #expect(child.parent === parent)
        #expect(parent.children.count == 1)
        child.willMove(toParent: nil)
        child.view.removeFromSuperview()
        child.removeFromParent()
        #expect(child.parent == nil)
        #expect(parent.children.isEmpty)
        #expect(
            recorder.lines(events: ["willMove(toParent:)", "didMove(toParent:)"]) == [
                "parent/child willMove(toParent:)",
                "parent/child didMove(toParent:)",
                "parent/child willMove(toParent:)",
                "parent/child didMove(toParent:)",
            ]
        )
        #expect(
            recorder.events.filter { $0.event.hasSuffix("(toParent:)") }.map(\.detail) == ["parent", "parent", "nil", "nil"]
        )
    }

    @Test func pushingPreparesTheIncomingControllerBeforeTheOutgoingOneStops() {
        let (app, recorder) = launched {
            NavigationController(rootViewController: LeafController(identifier: "a"), identifier: "nav")
        }
        recorder.clear()
        let nav = app.window!.rootViewController as! NavigationController
        nav.pushViewController(LeafController(identifier: "b"), animated: true)
        app.runEndOfTurn()
        #expect(
            recorder.lines(
                targets: ["nav/a", "nav/b"],
                events: viewLifecycleEvents.subtracting(["init"])
            ) == [
                "nav/b loadView",
                "nav/b viewDidLoad",
                "nav/a viewWillDisappear",
                "nav/b viewWillAppear",
                "nav/b viewWillLayoutSubviews",
                "nav/b viewDidLayoutSubviews",
                "nav/a viewWillLayoutSubviews",
                "nav/a viewDidLayoutSubviews",
                "nav/a viewDidDisappear",
                "nav/b viewDidAppear",
            ]
        )
        #expect(nav.topViewController?.identifier == "b")
        #expect(nav.viewControllers.map(\.identifier) == ["a", "b"])
        #expect(recorder.lines(targets: ["nav/b"], events: ["didMove(toParent:)"]) == ["nav/b didMove(toParent:)"])
    }

    @Test func poppingReleasesTheControllerAfterTheOneBelowAppears() {
        let (app, recorder) = launched {
            NavigationController(rootViewController: LeafController(identifier: "a"), identifier: "nav")
        }
        let nav = app.window!.rootViewController as! NavigationController
        nav.pushViewController(LeafController(identifier: "b"), animated: false)
        app.runEndOfTurn()
        recorder.clear()
        nav.popViewController(animated: false)
        app.runEndOfTurn()
        #expect(
            recorder.lines(targets: ["nav/a", "nav/b"], events: viewLifecycleEvents) == [
                "nav/b viewWillDisappear",
                "nav/a viewWillAppear",
                "nav/b viewDidDisappear",
                "nav/a viewDidAppear",
                "nav/b deinit",
            ]
        )
        #expect(nav.viewControllers.map(\.identifier) == ["a"])
    }

    @Test func popToRootAndSetViewControllersShowTheNewTop() {
        let (app, recorder) = launched {
            NavigationController(rootViewController: LeafController(identifier: "a"), identifier: "nav")
        }
        let nav = app.window!.rootViewController as! NavigationController
        nav.pushViewController(LeafController(identifier: "b"), animated: false)
        nav.pushViewController(LeafController(identifier: "c"), animated: false)
        app.runEndOfTurn()
        recorder.clear()
        let popped = nav.popToRootViewController(animated: false)
        #expect(popped?.map(\.identifier) == ["b", "c"])
        app.runEndOfTurn()
        #expect(
            recorder.lines(events: ["viewWillAppear", "viewDidAppear", "viewWillDisappear", "viewDidDisappear"]) == [
                "nav/c viewWillDisappear", "nav/a viewWillAppear", "nav/c viewDidDisappear", "nav/a viewDidAppear",
            ]
        )
        recorder.clear()
        nav.setViewControllers([LeafController(identifier: "x")], animated: false)
        app.runEndOfTurn()
        #expect(
            recorder.lines(targets: ["nav/a", "nav/x"], events: ["viewWillAppear", "viewDidAppear", "viewWillDisappear", "viewDidDisappear", "deinit"])
                == [
                    "nav/a viewWillDisappear", "nav/x viewWillAppear", "nav/a viewDidDisappear", "nav/x viewDidAppear",
                    "nav/a deinit",
                ]
        )
    }

    @Test func fullScreenPresentationFollowsThePushOrderAndDismissalThePopOrder() {
        let (app, recorder) = launched { LeafController(identifier: "a") }
        recorder.clear()
        let a = app.window!.rootViewController!
        a.present(fullScreen(LeafController(identifier: "b")), animated: true)
        app.runEndOfTurn()
        #expect(
            recorder.lines(targets: ["a", "a/b"], events: viewLifecycleEvents.subtracting(["init"])) == [
                "a/b loadView",
                "a/b viewDidLoad",
                "a viewWillDisappear",
                "a/b viewWillAppear",
                "a/b viewWillLayoutSubviews",
                "a/b viewDidLayoutSubviews",
                "a viewWillLayoutSubviews",
                "a viewDidLayoutSubviews",
                "a viewDidDisappear",
                "a/b viewDidAppear",
            ]
        )
        #expect(a.presentedViewController?.presentingViewController === a)
        recorder.clear()
        a.presentedViewController!.dismiss(animated: true)
        app.runEndOfTurn()
        #expect(
            recorder.lines(targets: ["a", "a/b"], events: viewLifecycleEvents) == [
                "a/b viewWillDisappear",
                "a viewWillAppear",
                "a/b viewDidDisappear",
                "a viewDidAppear",
                "a/b deinit",
            ]
        )
        #expect(a.presentedViewController == nil)
    }

    @Test func overContextPresentationLeavesThePresenterAlone() {
        let (app, recorder) = launched { LeafController(identifier: "a") }
        recorder.clear()
        let a = app.window!.rootViewController!
        let b = LeafController(identifier: "b")
        b.modalPresentationStyle = .overCurrentContext
        a.present(b, animated: false)
        app.runEndOfTurn()
        #expect(
            recorder.lines(targets: ["a", "a/b"], events: viewLifecycleEvents.subtracting(["init"])) == [
                "a/b loadView",
                "a/b viewDidLoad",
                "a/b viewWillAppear",
                "a/b viewWillLayoutSubviews",
                "a/b viewDidLayoutSubviews",
                "a/b viewDidAppear",
            ]
        )
        recorder.clear()
        a.dismiss(animated: false)
        app.runEndOfTurn()
        #expect(
            recorder.lines(targets: ["a", "a/b"], events: viewLifecycleEvents) == [
                "a/b viewWillDisappear",
                "a/b viewDidDisappear",
            ]
        )
        #expect(a.isVisible)
    }

    @Test func presentAndDismissRunTheirCompletionsAfterTheDidCallbacks() {
        let (app, recorder) = launched { LeafController(identifier: "a") }
        let a = app.window!.rootViewController!
        var order: [String] = []
        let b = LeafController(identifier: "b")
        b.modalPresentationStyle = .fullScreen
        a.present(b, animated: false) {
            order.append(recorder.events.last!.event)
        }
        app.runEndOfTurn()
        a.dismiss(animated: false) { order.append(recorder.events.last!.event) }
        app.runEndOfTurn()
        #expect(order == ["viewDidAppear", "viewDidAppear"])
    }

    @Test func controllersDecodedFromAnArchiveAwakeOnceTheWholeTreeIsWired() throws {
        final class Labeled: ViewController {
            var label = ""
            var sawChildrenWhenAwake = 0
            required init(coder: Coder) throws {
                label = coder.decodeString(forKey: "label") ?? ""
                try super.init(coder: coder)
            }
            override func awakeFromArchive() { sawChildrenWhenAwake = children.count }
        }
        let json = #"{"class": "Labeled", "identifier": "root", "properties": {"label": "hello"}, "children": [{"class": "Labeled", "identifier": "leaf"}]}"#
        let archive = try Archive(json: Array(json.utf8), source: "tree.json")
        var registry = ArchiveClassRegistry()
        registry.register(Labeled.self)
        let app = makeApplication(delegate: TestDelegate())
        let recorder = CallbackRecorder(app)
        let root = try archive.decodeTree(using: registry, for: app) as! Labeled
        #expect(root.label == "hello")
        #expect(root.sawChildrenWhenAwake == 1)
        app.window = Window(rootViewController: root)
        app.launch()
        #expect(
            recorder.lines(targets: ["root"], events: viewLifecycleEvents) == [
                "root init(coder:)", "root awakeFromArchive", "root loadView", "root viewDidLoad",
                "root viewWillAppear", "root viewWillLayoutSubviews", "root viewDidLayoutSubviews", "root viewDidAppear",
            ]
        )
        // A decoded controller is named by where it is going from its init(coder:) on.
        #expect(recorder.lines(targets: ["root/leaf"], events: ["init(coder:)", "awakeFromArchive", "viewDidAppear"]) == [
            "root/leaf init(coder:)", "root/leaf awakeFromArchive", "root/leaf viewDidAppear",
        ])
        #expect(root.children.first?.viewIfLoaded?.superview === root.view)
    }

    @Test func anArchiveNamingAnUnknownClassSaysWhichNodeAndWhatIsRegistered() throws {
        let archive = try Archive(json: Array(#"{"class": "Nope", "identifier": "root"}"#.utf8), source: "tree.json")
        let app = makeApplication(delegate: TestDelegate())
        defer { withExtendedLifetime(app) {} }
        #expect(throws: ArchiveError.self) { try archive.decodeTree(using: ArchiveClassRegistry()) }
        do {
            _ = try archive.decodeTree(using: ArchiveClassRegistry())
        } catch {
            #expect(error.description.contains("tree.json"))
            #expect(error.description.contains("\"Nope\""))
            #expect(error.description.contains("NavigationController"))
        }
    }

    @Test func viewLoadsLazilyOncePerLoad() {
        let app = makeApplication(delegate: TestDelegate())
        defer { withExtendedLifetime(app) {} }
        let controller = LeafController(identifier: "c")
        #expect(!controller.isViewLoaded)
        controller.loadViewIfNeeded()
        controller.loadViewIfNeeded()
        _ = controller.view
        #expect(controller.isViewLoaded)
        #expect(controller.view.subviews.count == 1)
    }
}
