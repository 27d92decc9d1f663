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

@MainActor
func launchedRoot(_ make: @escaping @MainActor () -> ViewController) -> (Application, ViewController, CallbackRecorder) {
    let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: make()) })
    let recorder = CallbackRecorder(app)
    app.launch()
    recorder.clear()
    return (app, app.window!.rootViewController!, recorder)
}

@MainActor
final class EmbedOnWillAppear: ViewController {
    var done = false
    override func viewWillAppear(_ animated: Bool) {
        guard !done else { return }
        done = true
        embed(LeafController(identifier: "child"))
    }
}

@MainActor
final class PresentOnWillAppear: ViewController {
    var done = false
    override func viewWillAppear(_ animated: Bool) {
        guard !done else { return }
        done = true
        let login = LeafController(identifier: "login")
        login.modalPresentationStyle = .fullScreen
        present(login, animated: false)
    }
}

@MainActor
@Suite("Regression: presentation edge cases") struct PresentationRegressionTests {
    // R6: a child embedded by its parent's viewWillAppear never gets appearance callbacks.
    @Test func childEmbeddedInViewWillAppearAppearsInsideTheParentsBrackets() {
        let app = makeApplication(delegate: TestDelegate { app in
            app.window = Window(rootViewController: EmbedOnWillAppear(identifier: "root"))
        })
        let recorder = CallbackRecorder(app)
        app.launch()
        let child = app.window!.rootViewController!.children[0]
        #expect(child.view.window != nil)
        #expect(child.isVisible, "child's view is in the window but the child never appeared")
        #expect(recorder.lines(targets: ["root", "root/child"], events: appearance) == [
            "root viewWillAppear", "root/child viewWillAppear", "root/child viewDidAppear", "root viewDidAppear",
        ])
    }

    // R7: full-screen presentation from the presenter's own viewWillAppear leaves the presenter in the window.
    @Test func fullScreenPresentFromViewWillAppearCoversThePresenter() {
        let app = makeApplication(delegate: TestDelegate { app in
            app.window = Window(rootViewController: PresentOnWillAppear(identifier: "root"))
        })
        app.launch()
        let root = app.window!.rootViewController!
        #expect(root.view.window == nil, "root's view is in the window under a full-screen presentation")
        #expect(!root.isVisible)
    }

    // R8: present from a child controller, then dismiss the root's presentation.
    @Test func dismissingOnePresentationLeavesAnotherPresentersControllerAlone() {
        let (app, root, recorder) = launchedRoot {
            ContainerController(identifier: "root", children: [LeafController(identifier: "c")])
        }
        let c = root.children[0]
        let a = LeafController(identifier: "a")
        a.modalPresentationStyle = .overCurrentContext
        root.present(a, animated: false)
        let b = LeafController(identifier: "b")
        b.modalPresentationStyle = .overCurrentContext
        c.present(b, animated: false)
        app.runEndOfTurn()
        recorder.clear()
        root.dismiss(animated: false)
        app.runEndOfTurn()
        #expect(recorder.lines(events: appearance) == ["root/a viewWillDisappear", "root/a viewDidDisappear"])
        #expect(b.isVisible == (c.presentedViewController === b), "b is still presented by c but no longer visible")
    }

    // R9: presenting before the presenter is in a window links the controllers but the presented one never appears.
    @Test func presentBeforeTheWindowExistsNeverAppears() {
        let app = makeApplication(delegate: TestDelegate { app in
            let root = LeafController(identifier: "root")
            root.present(LeafController(identifier: "onboarding"), animated: false)
            app.window = Window(rootViewController: root)
        })
        app.launch()
        let root = app.window!.rootViewController!
        #expect(root.presentedViewController?.isVisible == true, "a presentation made before the window showed appears with it")
    }

    // R10: switching the window root away and back while the old root presents something.
    @Test func rootSwitchedAwayAndBackKeepsAStalePresentation() {
        let (app, root, _) = launchedRoot { LeafController(identifier: "main") }
        let p = LeafController(identifier: "p")
        root.present(p, animated: false)
        app.runEndOfTurn()
        app.window!.rootViewController = LeafController(identifier: "login")
        app.runEndOfTurn()
        app.window!.rootViewController = root
        app.runEndOfTurn()
        #expect(root.presentedViewController == nil || p.isVisible,
                "main still presents p, p is in the tree, but p is not shown; main.present(_) now traps")
    }

    // R11 (sanity): dismissing a chain.
    @Test func dismissingAChain() {
        let (app, root, recorder) = launchedRoot { LeafController(identifier: "root") }
        do {
            let a = LeafController(identifier: "a")
            root.present(a, animated: false)
            a.present(LeafController(identifier: "b"), animated: false)
        }
        app.runEndOfTurn()
        recorder.clear()
        root.dismiss(animated: false)
        app.runEndOfTurn()
    }
}
