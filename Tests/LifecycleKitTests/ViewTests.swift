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

/// A view that writes a fixed status text and counts its passes.
@MainActor
final class StatusView: View {
    var text: String
    private(set) var layoutCount = 0
    private(set) var drawCount = 0

    init(name: String, text: String = "") {
        self.text = text
        super.init(name: name)
    }

    override func layoutSubviews() { layoutCount += 1 }

    override func draw(in context: inout StatusContext) {
        drawCount += 1
        context.write(text)
    }
}

@MainActor
@Suite("Views: live resources under a controller (docs/lifecycle.md §4)")
struct ViewTests {
    /// An active application whose root controller is `root`; the recorder starts empty after launch.
    private func launched() -> (Application, ViewController, CallbackRecorder) {
        let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: ViewController(identifier: "root")) })
        let recorder = CallbackRecorder(app)
        app.launch()
        recorder.clear()
        return (app, app.window!.rootViewController!, recorder)
    }

    @Test func addingASubviewInTheWindowMovesItToTheWindowThenToItsSuperview() {
        let (app, root, recorder) = launched()
        let v = StatusView(name: "v")
        root.view.addSubview(v)
        #expect(
            recorder.lines() == [
                "root.view/v willMove(toWindow:)",
                "root.view/v willMove(toSuperview:)",
                "root.view/v didMoveToWindow",
                "root.view/v didMoveToSuperview",
                "root.view didAddSubview(_:)",
            ]
        )
        #expect(v.window === app.window)
        #expect(v.layoutCount == 0, "layout waits for the end of the turn")
        app.runEndOfTurn()
        #expect(v.layoutCount == 1, "the new subtree is marked for layout")
    }

    @Test func removingASubviewInTheWindowTellsTheSuperviewFirst() {
        let (app, root, recorder) = launched()
        let v = View(name: "v")
        root.view.addSubview(v)
        app.runEndOfTurn()
        recorder.clear()
        v.removeFromSuperview()
        #expect(
            recorder.lines() == [
                "root.view willRemoveSubview(_:)",
                "root.view/v willMove(toSuperview:)",
                "root.view/v willMove(toWindow:)",
                "root.view/v didMoveToWindow",
                "root.view/v didMoveToSuperview",
            ]
        )
        #expect(v.window == nil && v.superview == nil)
    }

    @Test func offWindowAddsAndRemovesFireOnlyTheSuperviewCallbacks() {
        let app = makeApplication(delegate: TestDelegate())
        let recorder = CallbackRecorder(app)
        let parent = View(name: "parent")
        app.adopt(parent)
        let child = View(name: "child")
        parent.addSubview(child)
        child.removeFromSuperview()
        #expect(
            recorder.lines() == [
                "parent/child willMove(toSuperview:)",
                "parent/child didMoveToSuperview",
                "parent didAddSubview(_:)",
                "parent willRemoveSubview(_:)",
                "parent/child willMove(toSuperview:)",
                "parent/child didMoveToSuperview",
            ]
        )
    }

    @Test func windowMovesReachAWholeSubtreeInPreOrder() {
        let (_, root, recorder) = launched()
        let a = View(name: "a")
        let b = View(name: "b")
        let c = View(name: "c")
        a.addSubview(b)
        b.addSubview(c)
        recorder.clear()
        root.view.addSubview(a)
        #expect(
            recorder.lines(events: ["willMove(toWindow:)", "didMoveToWindow"]) == [
                "root.view/a willMove(toWindow:)",
                "root.view/a/b willMove(toWindow:)",
                "root.view/a/b/c willMove(toWindow:)",
                "root.view/a didMoveToWindow",
                "root.view/a/b didMoveToWindow",
                "root.view/a/b/c didMoveToWindow",
            ]
        )
        #expect(c.window != nil)
    }

    @Test func aViewHasAtMostOneSuperviewAndMovingItRemovesItFirst() {
        let (_, root, recorder) = launched()
        let first = View(name: "first")
        let second = View(name: "second")
        let v = View(name: "v")
        root.view.addSubview(first)
        root.view.addSubview(second)
        first.addSubview(v)
        recorder.clear()
        second.addSubview(v)
        #expect(first.subviews.isEmpty)
        #expect(second.subviews.first === v)
        #expect(v.superview === second)
        #expect(
            recorder.lines(events: ["willRemoveSubview(_:)", "didAddSubview(_:)"]) == [
                "root.view/first willRemoveSubview(_:)",
                "root.view/second didAddSubview(_:)",
            ]
        )
    }

    @Test func twoAddSubviewCallsInOneTurnGiveOneLayoutPass() {
        let (app, root, recorder) = launched()
        let container = StatusView(name: "container")
        root.view.addSubview(container)
        app.runEndOfTurn()
        recorder.clear()
        container.addSubview(View(name: "x"))
        container.addSubview(View(name: "y"))
        #expect(recorder.lines(events: ["layoutSubviews"]).isEmpty)
        app.runEndOfTurn()
        #expect(
            recorder.lines(events: ["layoutSubviews"]) == [
                "root.view/container layoutSubviews",
                "root.view/container/x layoutSubviews",
                "root.view/container/y layoutSubviews",
            ]
        )
        #expect(container.layoutCount == 2, "once when it arrived, once for both new subviews")
    }

    @Test func setNeedsLayoutOnlyMarksAndManyMarksInATurnGiveOnePass() {
        let (app, root, _) = launched()
        let v = StatusView(name: "v")
        root.view.addSubview(v)
        app.runEndOfTurn()
        v.setNeedsLayout()
        v.setNeedsLayout()
        v.frame = Rect(x: 1, y: 2, width: 3, height: 4)
        #expect(v.layoutCount == 1)
        app.runEndOfTurn()
        #expect(v.layoutCount == 2)
        app.runEndOfTurn()
        #expect(v.layoutCount == 2, "a clean turn lays out nothing")
    }

    @Test func changingTheFrameMarksLayoutButSettingTheSameFrameDoesNot() {
        let (app, root, _) = launched()
        let v = StatusView(name: "v")
        root.view.addSubview(v)
        app.runEndOfTurn()
        v.frame = .zero
        app.runEndOfTurn()
        #expect(v.layoutCount == 1)
        v.frame = Rect(width: 10)
        app.runEndOfTurn()
        #expect(v.layoutCount == 2)
    }

    @Test func layoutIfNeededRunsNowWhenMarkedAndDoesNothingWhenClean() {
        let (app, root, _) = launched()
        let v = StatusView(name: "v")
        root.view.addSubview(v)
        v.layoutIfNeeded()
        #expect(v.layoutCount == 1, "marked: laid out at once")
        v.layoutIfNeeded()
        #expect(v.layoutCount == 1, "clean: nothing")
        app.runEndOfTurn()
        #expect(v.layoutCount == 1, "the pass at the end of the turn finds it clean")
    }

    @Test func aMarkedSubviewsLayoutIfNeededRunsBeforeTheControllersLayoutCallbacks() {
        let (app, root, recorder) = launched()
        let v = View(name: "v")
        root.view.addSubview(v)
        root.view.setNeedsLayout()
        v.layoutIfNeeded()
        app.runEndOfTurn()
        #expect(
            recorder.lines(events: ["layoutSubviews", "viewWillLayoutSubviews", "viewDidLayoutSubviews"]) == [
                "root.view/v layoutSubviews",
                "root viewWillLayoutSubviews",
                "root.view layoutSubviews",
                "root viewDidLayoutSubviews",
            ]
        )
    }

    @Test func aLayoutPassGoesTopDownParentBeforeChild() {
        let (app, root, recorder) = launched()
        let a = View(name: "a")
        let b = View(name: "b")
        a.addSubview(b)
        root.view.addSubview(a)
        recorder.clear()
        b.setNeedsLayout()
        a.setNeedsLayout()
        root.view.setNeedsLayout()
        app.runEndOfTurn()
        #expect(
            recorder.lines(events: ["layoutSubviews", "viewWillLayoutSubviews", "viewDidLayoutSubviews"]) == [
                "root viewWillLayoutSubviews",
                "root.view layoutSubviews",
                "root viewDidLayoutSubviews",
                "root.view/a layoutSubviews",
                "root.view/a/b layoutSubviews",
            ]
        )
    }

    @Test func displayIsCoalescedPerTurnAndDrawWritesTheStatusText() {
        final class Host: ApplicationHost {
            var statuses: [String] = []
            func application(_ application: Application, didChangeStatus status: String) { statuses.append(status) }
        }
        let host = Host()
        let app = makeApplication(delegate: TestDelegate { app in app.window = Window(rootViewController: ViewController(identifier: "root")) })
        app.host = host
        app.launch()
        let root = app.window!.rootViewController!
        let v = StatusView(name: "v", text: "worker idle")
        root.view.addSubview(v)
        app.runEndOfTurn()
        #expect(v.drawCount == 1)
        #expect(app.statusText == "active: worker idle")
        v.text = "worker 3 jobs"
        v.setNeedsDisplay()
        v.setNeedsDisplay()
        #expect(v.drawCount == 1)
        app.runEndOfTurn()
        #expect(v.drawCount == 2)
        #expect(host.statuses == ["inactive", "active", "active: worker idle", "active: worker 3 jobs"])
        app.requestEnterBackground()
        #expect(host.statuses.last == "background: worker 3 jobs")
        v.removeFromSuperview()
        app.runEndOfTurn()
        #expect(host.statuses.last == "background", "a view out of the window contributes nothing")
    }

    @Test func insertSubviewPlacesTheViewAtTheIndex() {
        let app = makeApplication(delegate: TestDelegate())
        defer { withExtendedLifetime(app) {} }
        let parent = View(name: "p")
        let a = View(name: "a")
        let b = View(name: "b")
        let c = View(name: "c")
        parent.addSubview(a)
        parent.addSubview(c)
        parent.insertSubview(b, at: 1)
        #expect(parent.subviews.map(\.name) == ["a", "b", "c"])
        parent.insertSubview(c, at: 0)
        #expect(parent.subviews.map(\.name) == ["c", "a", "b"])
    }

    @Test func resourcesStartInDidMoveToWindowAndStopWhenTheWindowGoes() {
        final class Resource: View {
            var running = false
            override func didMoveToWindow() { running = window != nil }
        }
        let (app, root, _) = launched()
        let r = Resource(name: "r")
        root.view.addSubview(r)
        #expect(r.running)
        app.requestEnterBackground()
        #expect(r.running, "backgrounding does not take views out of the window")
        app.requestTermination()
        #expect(!r.running)
    }
}

@MainActor
@Suite("The trace as an asynchronous sequence")
struct TraceStreamTests {
    @Test func theEventStreamDeliversEveryEventInOrderAndEndsWithItsApplication() async {
        var app: Application? = makeApplication(delegate: TestDelegate())
        let stream = app!.trace.events()
        app!.launch()
        app!.requestEnterBackground(cause: .signal(named: "SIGUSR1"))
        app = nil
        var received: [TraceEvent] = []
        for await event in stream { received.append(event) }
        #expect(received.map(\.event) == [
            "willFinishLaunching", "didFinishLaunching", "applicationDidBecomeActive", "applicationWillResignActive",
            "applicationDidEnterBackground",
        ])
        #expect(received.map(\.sequence) == [1, 2, 3, 4, 5])
        #expect(received.allSatisfy { $0.target == "delegate" })
        #expect(received.last?.cause.rawValue == "signal:SIGUSR1")
        #expect(received.last?.state == .background)
    }
}
