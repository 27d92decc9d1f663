import LifecycleKit
import Testing

@MainActor
@Suite("Controller lifecycle (LIFECYCLE.md §3)")
struct ControllerLifecycleTests {
    @Test func showingAControllerFollowsTheObservedOrder() {
        let delegate = TestDelegate { app in app.window = Window(rootViewController: LeafController(identifier: "root")) }
        let app = makeApplication(delegate: delegate)
        let recorder = Recorder(app)
        app.launch()
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
}
