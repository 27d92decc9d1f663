//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleKit
import LifecycleKitTesting
import LifecyclePrimitives
import Testing

/// What the bodies of lifecycle-bound tasks did, from whichever thread they ran on.
final class Journal: Sendable {
    private let entries = ConditionLock<[String]>([])
    private let running = ConditionLock<(now: Int, most: Int)>((0, 0))

    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var lines: [String] { entries.withLock { $0 } }

    /// Marks a body running for the duration of `body`, counting how many ran at once.
    func running(_ body: () async throws -> Void) async rethrows {
        running.withLock { state in
            state.now += 1
            state.most = max(state.most, state.now)
        }
        defer { running.withLock { $0.now -= 1 } }
        try await body()
    }

    var mostAtOnce: Int { running.withLock { $0.most } }
}

struct Broken: Error, CustomStringConvertible {
    var description: String { "upstream unreachable" }
}

/// A controller whose one lifecycle-bound task waits until it is cancelled.
@MainActor
final class PollerController: ViewController {
    let journal = Journal()
    let activity: LifecycleActivity
    var poller: LifecycleTask!
    var failures: [String] = []

    init(identifier: String, activity: LifecycleActivity = .visibleInForeground) {
        self.activity = activity
        super.init(identifier: identifier)
        let journal = journal
        poller = task("poll", while: activity) {
            try await journal.running {
                journal.append("started")
                do {
                    try await Task.sleep(for: .seconds(3600))
                } catch {
                    journal.append("cancelled")
                    throw error
                }
            }
        }
    }

    required init(coder: Coder) throws { fatalError("not archived") }

    override func lifecycleTask(_ task: LifecycleTask, didFailWithError error: any Error) {
        failures.append("\(task.name): \(error)")
    }
}

/// A delegate that records reported task failures.
@MainActor
final class FailureDelegate: ApplicationDelegate {
    var root: ViewController
    var failures: [String] = []

    init(root: ViewController) { self.root = root }

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: root)
        return true
    }

    func application(_ application: Application, lifecycleTask task: LifecycleTask, didFailWithError error: any Error) {
        failures.append("\(task.name): \(error)")
    }
}

/// Lets the main actor run queued tasks until `condition` holds (or a generous deadline passes).
@MainActor
func settle(until condition: @MainActor () -> Bool) async {
    // The deadline only stops a test that would hang. It is long because the main actor is shared: every @MainActor
    // test of the process runs on the one main thread, and under a sanitizer on 2 cores the whole suite keeps it busy
    // for 20 s at a stretch, so what a test waits for (a task's start, a failure's report, all main-actor hops) can
    // come that late without being lost (issue 22: `make sanitize-thread`).
    let deadline = ContinuousClock.now + .seconds(120)
    while !condition(), ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(1))
    }
}

@MainActor
@Suite("Lifecycle-bound tasks")
struct LifecycleTaskTests {
    @Test func aTaskRunsWhileVisibleInTheForegroundAndStartsAgainOnReturn() async {
        let controller = PollerController(identifier: "feed")
        let app = makeApplication(delegate: TestDelegate { $0.window = Window(rootViewController: controller) })
        let recorder = CallbackRecorder(app)
        app.launch()
        await settle { controller.journal.lines == ["started"] }
        #expect(controller.poller.isActive)
        app.requestEnterBackground()
        #expect(!controller.poller.isActive)
        await settle { !controller.poller.isRunning }
        app.requestBecomeActive()
        await settle { controller.journal.lines.count == 3 }
        #expect(controller.journal.lines == ["started", "cancelled", "started"])
        #expect(controller.poller.runCount == 2)
        #expect(
            recorder.lines(
                targets: ["feed", "delegate"],
                events: [
                    "viewDidAppear", "taskDidStart", "taskWillStop", "taskDidEnd", "applicationDidEnterBackground",
                    "applicationWillEnterForeground",
                ]
            ) == [
                "feed viewDidAppear", "feed taskDidStart",
                "feed applicationDidEnterBackground", "feed taskWillStop", "delegate applicationDidEnterBackground",
                "feed taskDidEnd",
                "delegate applicationWillEnterForeground", "feed applicationWillEnterForeground", "feed taskDidStart",
            ]
        )
        #expect(recorder.events.filter { $0.event.hasPrefix("task") }.allSatisfy { $0.detail == "poll" })
    }

    @Test func aStoppingRunHoldsABackgroundTaskUntilItEnds() async {
        let gate = Gate()
        let journal = Journal()
        let app = makeApplication(delegate: TestDelegate())
        let controller = ViewController(identifier: "drain")
        controller.task("flush") {
            journal.append("started")
            do { try await Task.sleep(for: .seconds(3600)) } catch {}
            // Ignores cancellation until the gate opens: a flush that must finish.
            await gate.wait()
        }
        app.window = Window(rootViewController: controller)
        app.launch()
        await settle { journal.lines == ["started"] }
        app.requestEnterBackground()
        #expect(app.backgroundTasks.map(\.name) == ["drain: flush"])
        try? await Task.sleep(for: .milliseconds(20))
        #expect(app.backgroundTasks.map(\.name) == ["drain: flush"])
        await gate.open()
        await settle { app.backgroundTasks.isEmpty }
        #expect(app.backgroundTasks.isEmpty)
    }

    @Test func theNextRunStartsOnlyOnceThePreviousOneHasEnded() async {
        let gate = Gate()
        let journal = Journal()
        let app = makeApplication(delegate: TestDelegate())
        let controller = ViewController(identifier: "server")
        let server = controller.task("listen") {
            await journal.running {
                journal.append("bind")
                do { try await Task.sleep(for: .seconds(3600)) } catch {}
                await gate.wait()
                journal.append("closed")
            }
        }
        app.window = Window(rootViewController: controller)
        app.launch()
        await settle { journal.lines == ["bind"] }
        app.requestEnterBackground()
        app.requestBecomeActive()
        try? await Task.sleep(for: .milliseconds(20))
        // The second run waits for the first one's listener to close.
        #expect(journal.lines == ["bind"])
        await gate.open()
        await settle { journal.lines.count == 3 }
        #expect(journal.lines == ["bind", "closed", "bind"])
        #expect(journal.mostAtOnce == 1)
        #expect(server.runCount == 2)
    }

    @Test func aFailedRunIsReportedToTheControllerTheDelegateAndTheTrace() async {
        let root = ViewController(identifier: "worker")
        let failing = FailingController(identifier: "upstream")
        let delegate = FailureDelegate(root: root)
        let application = Application(delegate: delegate, logger: makeApplication(delegate: TestDelegate()).logger)
        let recorder = CallbackRecorder(application)
        application.launch()
        root.embed(failing)
        application.runEndOfTurn()
        await settle { !delegate.failures.isEmpty }
        #expect(failing.failures == ["fetch: upstream unreachable"])
        #expect(delegate.failures == ["fetch: upstream unreachable"])
        #expect(
            recorder.lines(events: ["lifecycleTask(_:didFailWithError:)", "application(_:lifecycleTask:didFailWithError:)"])
                == ["worker/upstream lifecycleTask(_:didFailWithError:)", "delegate application(_:lifecycleTask:didFailWithError:)"]
        )
        #expect(!failing.fetch.isRunning)
        // The application carries on, and the work starts again at the next foreground.
        application.requestEnterBackground()
        application.requestBecomeActive()
        await settle { failing.fetch.runCount == 2 }
        #expect(failing.fetch.runCount == 2)
    }

    @Test func expiredBackgroundTimeCancelsAStoppingRun() async {
        let journal = Journal()
        let app = makeApplication(delegate: TestDelegate())
        let controller = ViewController(identifier: "slow")
        controller.task("drain") {
            // Stops only when cancelled a second time: the graceful stop is ignored.
            journal.append("started")
            while !Task.isCancelled { await Task.yield() }
            journal.append("cancelled")
        } 
        app.window = Window(rootViewController: controller)
        app.launch()
        await settle { journal.lines == ["started"] }
        app.requestEnterBackground()
        app.expireBackgroundTasks()
        await settle { journal.lines.count == 2 }
        #expect(journal.lines == ["started", "cancelled"])
        #expect(app.backgroundTasks.isEmpty)
    }

    @Test func aVisibleActivityKeepsRunningInTheBackgroundUntilTheControllerDisappears() async {
        let serving = PollerController(identifier: "serving")
        let visible = PollerController(identifier: "screen", activity: .visible)
        let root = ViewController(identifier: "root")
        let app = makeApplication(delegate: TestDelegate { app in
            app.window = Window(rootViewController: root)
        })
        app.launch()
        root.embed(serving)
        root.embed(visible)
        app.runEndOfTurn()
        #expect(serving.poller.isActive)
        #expect(visible.poller.isActive)
        app.requestEnterBackground()
        #expect(!serving.poller.isActive)
        #expect(visible.poller.isActive)
        root.unembed(visible)
        app.runEndOfTurn()
        #expect(!visible.poller.isActive)
        // A controller out of the window never runs its work, in the foreground either.
        app.requestBecomeActive()
        #expect(serving.poller.isActive)
        #expect(!visible.poller.isActive)
    }

    @Test func aControllerReleasedWhileItsRunStopsStillEndsTheBackgroundTask() async {
        let gate = Gate()
        let app = makeApplication(delegate: TestDelegate { app in
            app.window = Window(rootViewController: NavigationController(rootViewController: ViewController(identifier: "list")))
        })
        let recorder = CallbackRecorder(app)
        app.launch()
        let navigation = app.window!.rootViewController as! NavigationController
        weak var released: ViewController?
        do {
            let detail = ViewController(identifier: "detail")
            detail.task("stream") {
                do { try await Task.sleep(for: .seconds(3600)) } catch {}
                await gate.wait()
            }
            released = detail
            navigation.pushViewController(detail, animated: false)
            app.runEndOfTurn()
        }
        navigation.popViewController(animated: false)
        app.runEndOfTurn()
        #expect(released == nil)
        #expect(app.backgroundTasks.map(\.name) == ["navigation/detail: stream"])
        await gate.open()
        await settle { app.backgroundTasks.isEmpty }
        #expect(app.backgroundTasks.isEmpty)
        #expect(recorder.lines(targets: ["navigation/detail"], events: ["taskWillStop", "deinit", "taskDidEnd"]) == [
            "navigation/detail taskWillStop", "navigation/detail deinit", "navigation/detail taskDidEnd",
        ])
    }
}

/// A controller whose task fails at once.
@MainActor
final class FailingController: ViewController {
    var fetch: LifecycleTask!
    var failures: [String] = []

    override init(identifier: String? = nil) {
        super.init(identifier: identifier)
        fetch = task("fetch") { throw Broken() }
    }

    required init(coder: Coder) throws { fatalError("not archived") }

    override func lifecycleTask(_ task: LifecycleTask, didFailWithError error: any Error) {
        failures.append("\(task.name): \(error)")
    }
}

/// A one-shot gate: `wait()` returns once `open()` was called.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
    }
}
