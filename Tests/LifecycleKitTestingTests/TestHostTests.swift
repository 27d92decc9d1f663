//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleKitTesting
import Testing

/// A controller that pauses a worker in the background and drops a cache on a memory warning, as an adopter's would.
@MainActor
private final class FeedController: ViewController {
    var cache: [String] = ["a", "b"]
    override func didReceiveMemoryWarning() { cache.removeAll() }
}

@MainActor
private final class AppDelegate: ApplicationDelegate {
    /// Weak, as a delegate that builds its tree leaves it to the window: termination releases it.
    weak var feed: FeedController?
    var backgroundTask: BackgroundTaskIdentifier?
    var expired = false
    var beginsTaskInBackground = false

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        let feed = FeedController(identifier: "feed")
        self.feed = feed
        application.window = Window(rootViewController: NavigationController(rootViewController: feed, identifier: "root"))
        return true
    }

    func applicationDidEnterBackground(_ application: Application) {
        guard beginsTaskInBackground else { return }
        backgroundTask = application.beginBackgroundTask(withName: "upload") { [unowned self] in
            expired = true
            application.endBackgroundTask(backgroundTask!)
        }
    }
}

@MainActor
@Suite("The test kit: TestHost, CallbackRecorder, TestClock")
struct TestHostTests {
    @Test func launchShowsTheTreeEndsTheTurnAndReportsReady() {
        let delegate = AppDelegate()
        let host = TestHost(delegate: delegate)
        host.launch()
        #expect(host.application.applicationState == .active)
        #expect(delegate.feed?.isVisible == true)
        // The status follows the state; readiness comes once the application is active, as under systemd.
        #expect(host.notifications == ["STATUS=inactive", "STATUS=active", "READY=1"])
        // The turn ended: the did-callbacks ran, root first in, root last out of its bracket.
        #expect(
            host.recorder.lines(events: ["viewWillAppear", "viewDidAppear"]) == [
                "root viewWillAppear", "root/feed viewWillAppear", "root/feed viewDidAppear", "root viewDidAppear",
            ]
        )
    }

    @Test func aSignalIsTheDefaultMapsRequestWithItsCause() {
        let host = TestHost(delegate: AppDelegate())
        host.launch()
        host.recorder.clear()
        let outcome = host.signal("SIGUSR1")
        #expect(host.application.applicationState == .background)
        #expect(
            host.recorder.lines(events: ["applicationWillResignActive", "applicationDidEnterBackground"]) == [
                "root/feed applicationWillResignActive", "root applicationWillResignActive",
                "delegate applicationWillResignActive",
                "root/feed applicationDidEnterBackground", "root applicationDidEnterBackground",
                "delegate applicationDidEnterBackground",
            ]
        )
        #expect(Set(host.recorder.events.map(\.cause.rawValue)) == ["signal:SIGUSR1"])
        #expect(outcome?.events?.count == host.recorder.events.count)
        #expect(host.notifications.last == "STATUS=background")
        host.signal("SIGUSR2")
        #expect(host.application.applicationState == .active)
    }

    @Test func aMemoryWarningReachesTheTreeLeafFirst() {
        let delegate = AppDelegate()
        let host = TestHost(delegate: delegate)
        host.launch()
        host.recorder.clear()
        host.signal("SIGRTMIN+2")
        #expect(
            host.recorder.lines() == [
                "root/feed didReceiveMemoryWarning", "root didReceiveMemoryWarning",
                "delegate applicationDidReceiveMemoryWarning",
            ]
        )
        #expect(delegate.feed?.cache.isEmpty == true)
    }

    @Test func aReloadReadsTheConfigurationBetweenItsTwoEvents() {
        let host = TestHost(delegate: AppDelegate())
        host.launch()
        host.recorder.clear()
        var order: [String] = []
        host.application.trace.observe { order.append("\($0.target) \($0.event)") }
        host.onReloadConfiguration = { order.append("configuration read") }
        host.signal("SIGHUP")
        #expect(Array(order.prefix(4)) == [
            "delegate application(_:validateReload:)", "root validateReload(_:)", "root/feed validateReload(_:)",
            "root/feed applicationWillReload",
        ])
        #expect(order.firstIndex(of: "configuration read")! > order.firstIndex(of: "delegate applicationWillReload")!)
        #expect(order.firstIndex(of: "configuration read")! < order.firstIndex(of: "delegate applicationDidReload")!)
        #expect(Array(host.notifications.suffix(2)) == ["RELOADING=1", "READY=1"])
    }

    @Test func backgroundTimeRunsOutOnlyWhenTheClockIsAdvanced() {
        let delegate = AppDelegate()
        delegate.beginsTaskInBackground = true
        let host = TestHost(delegate: delegate)
        host.application.backgroundTime = .seconds(30)
        host.launch()
        host.send(.enterBackground)
        #expect(host.application.backgroundTasks.map(\.name) == ["upload"])
        host.advance(by: .seconds(29))
        #expect(!delegate.expired)
        #expect(host.clock.pendingWork == 1)
        host.advance(by: .seconds(1))
        #expect(delegate.expired)
        #expect(host.application.backgroundTasks.isEmpty)
        #expect(host.recorder.lines(events: ["expirationHandler"]) == ["delegate expirationHandler"])
        #expect(host.clock.now == .seconds(30))
    }

    @Test func terminationTearsTheTreeDownAndSaysStopping() {
        let host = TestHost(delegate: AppDelegate())
        host.launch()
        host.signal("SIGTERM")
        #expect(host.isTerminated)
        #expect(host.application.applicationState == .terminated)
        #expect(host.notifications.contains("STOPPING=1"))
        #expect(
            host.recorder.lines(events: ["deinit"]) == ["root deinit", "root.view deinit", "root/feed deinit", "root/feed.view deinit"]
        )
        // Terminate is final: a later request is dropped and says why.
        #expect(host.send(.becomeActive).map { "\($0)" }?.hasPrefix("dropped") == true)
    }

    @Test func waitUntilEndsTurnsWhileATaskWorks() async {
        @MainActor final class Poller: ViewController {
            var polls = 0
            override func viewDidLoad() {
                task("poll") { @MainActor [unowned self] in
                    while !Task.isCancelled {
                        polls += 1
                        try await Task.sleep(for: .milliseconds(1))
                    }
                }
            }
        }
        @MainActor final class Delegate: ApplicationDelegate {
            let poller = Poller(identifier: "poller")
            func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
                application.window = Window(rootViewController: poller)
                return true
            }
        }
        let delegate = Delegate()
        let host = TestHost(delegate: delegate)
        host.launch()
        #expect(await host.waitUntil { delegate.poller.polls >= 3 })
        host.signal("SIGUSR1")
        #expect(await host.waitUntil { host.application.backgroundTasks.isEmpty })
        #expect(host.recorder.lines(events: ["taskDidStart", "taskWillStop", "taskDidEnd"]) == [
            "poller taskDidStart", "poller taskWillStop", "poller taskDidEnd",
        ])
    }

    /// Another test holding the main actor past the time-out (a long synchronous test in a parallel run) does not
    /// fail the wait: the pause moves the deadline. A condition that never holds still fails after the time-out.
    @Test func waitUntilCountsOnlyTheTimeItsHostHadTheMainActor() async {
        let host = TestHost(delegate: AppDelegate())
        host.launch()
        var done = false
        Task { @MainActor in
            try? await Task.sleep(for: .milliseconds(20))
            // Holds the main actor for three times the wait's time-out, as a long synchronous test would.
            let held = ContinuousClock.now + .milliseconds(600)
            while ContinuousClock.now < held {}
            Task { @MainActor in
                try? await Task.sleep(for: .milliseconds(20))
                done = true
            }
        }
        let clock = ContinuousClock()
        let started = clock.now
        #expect(await host.waitUntil(timeout: .milliseconds(200)) { done })
        #expect(clock.now - started >= .milliseconds(600))
        let never = clock.now
        #expect(await host.waitUntil(timeout: .milliseconds(100)) { false } == false)
        #expect(clock.now - never >= .milliseconds(100))
    }
}
