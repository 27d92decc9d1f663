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
import LifecycleServices
import Logging
import ServiceLifecycle
import Testing

/// What the services did, in order, from whichever thread they ran on.
final class Timeline: Sendable {
    private let entries = ConditionLock<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var lines: [String] { entries.withLock { $0 } }
}

/// A service that runs until its graceful shutdown, then takes `drain` to finish its in-flight work.
struct RecordingService: Service, CustomStringConvertible {
    let name: String
    let timeline: Timeline
    var drain: Duration = .zero
    var ignoresShutdown = false
    var failure: (any Error & Sendable)?

    var description: String { name }

    func run() async throws {
        timeline.append("\(name) run")
        if let failure {
            timeline.append("\(name) fails")
            throw failure
        }
        do {
            if ignoresShutdown {
                try await Task.sleep(for: .seconds(3600))
            } else {
                try await gracefulShutdown()
                timeline.append("\(name) draining")
                try await Task.sleep(for: drain)
            }
            timeline.append("\(name) stopped")
        } catch is CancellationError {
            timeline.append("\(name) cancelled")
        }
    }
}

struct Outage: Error, CustomStringConvertible {
    var description: String { "database unreachable" }
}

@MainActor
final class Delegate: ApplicationDelegate {
    let root: ViewController
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
func quietApplication(root: ViewController) -> (Application, Delegate) {
    let delegate = Delegate(root: root)
    let app = Application(delegate: delegate, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    return (app, delegate)
}

@MainActor
@Suite("Services hosted by a controller")
struct ServiceControllerTests {
    @Test func servicesRunWhileOnScreenAndDrainInReverseOrderOnBackground() async {
        let timeline = Timeline()
        let controller = ServiceController(identifier: "http") {
            [
                RecordingService(name: "database", timeline: timeline),
                RecordingService(name: "server", timeline: timeline, drain: .milliseconds(50)),
            ]
        }
        let (app, _) = quietApplication(root: controller)
        app.launch()
        await settle { timeline.lines.count == 2 }
        #expect(Set(timeline.lines) == ["database run", "server run"])
        app.requestEnterBackground()
        // The drain is under way: the controller holds a background task, so a stop or a sleep waits for it.
        #expect(app.backgroundTasks.map(\.name) == ["http: services"])
        await settle { app.backgroundTasks.isEmpty }
        #expect(
            Array(timeline.lines.dropFirst(2)) == [
                "server draining", "server stopped", "database draining", "database stopped",
            ]
        )
        app.requestBecomeActive()
        await settle { timeline.lines.count == 8 }
        #expect(Set(timeline.lines.suffix(2)) == ["database run", "server run"])
        #expect(controller.services.runCount == 2)
    }

    @Test func theCancelPolicyCancelsOnBackgroundButDisappearanceStillDrains() async {
        let timeline = Timeline()
        let controller = ServiceController(identifier: "poller", backgroundPolicy: .cancel) {
            [RecordingService(name: "poll", timeline: timeline)]
        }
        let root = ViewController(identifier: "root")
        let (app, _) = quietApplication(root: root)
        app.launch()
        root.embed(controller)
        app.runEndOfTurn()
        await settle { timeline.lines == ["poll run"] }
        app.requestEnterBackground()
        await settle { app.backgroundTasks.isEmpty && timeline.lines.count == 2 }
        #expect(timeline.lines == ["poll run", "poll cancelled"])
        app.requestBecomeActive()
        await settle { timeline.lines.count == 3 }
        root.unembed(controller)
        app.runEndOfTurn()
        await settle { timeline.lines.count == 5 }
        #expect(Array(timeline.lines.suffix(3)) == ["poll run", "poll draining", "poll stopped"])
    }

    @Test func keepRunningServesInTheBackgroundUntilTheControllerDisappears() async {
        let timeline = Timeline()
        let controller = ServiceController(identifier: "sync", backgroundPolicy: .keepRunning) {
            [RecordingService(name: "sync", timeline: timeline)]
        }
        let root = ViewController(identifier: "root")
        let (app, _) = quietApplication(root: root)
        app.launch()
        root.embed(controller)
        app.runEndOfTurn()
        await settle { timeline.lines == ["sync run"] }
        app.requestEnterBackground()
        try? await Task.sleep(for: .milliseconds(20))
        #expect(timeline.lines == ["sync run"])
        #expect(controller.services.isActive)
        root.unembed(controller)
        app.runEndOfTurn()
        await settle { timeline.lines.count == 3 }
        #expect(timeline.lines == ["sync run", "sync draining", "sync stopped"])
    }

    @Test func aServiceThatIgnoresTheGracefulShutdownIsCancelledAfterTheTimeout() async {
        let timeline = Timeline()
        let controller = ServiceController(identifier: "stubborn", shutdownTimeout: .milliseconds(50)) {
            [RecordingService(name: "stubborn", timeline: timeline, ignoresShutdown: true)]
        }
        let (app, _) = quietApplication(root: controller)
        app.launch()
        await settle { timeline.lines == ["stubborn run"] }
        let began = ContinuousClock.now
        app.requestEnterBackground()
        await settle { app.backgroundTasks.isEmpty }
        #expect(timeline.lines == ["stubborn run", "stubborn cancelled"])
        #expect(ContinuousClock.now - began >= .milliseconds(50))
    }

    @Test func aFailingServiceIsReportedAndTheApplicationCarriesOn() async {
        let timeline = Timeline()
        let controller = ServiceController(identifier: "api") {
            [
                RecordingService(name: "server", timeline: timeline),
                RecordingService(name: "database", timeline: timeline, failure: Outage()),
            ]
        }
        let (app, delegate) = quietApplication(root: controller)
        var trace: [String] = []
        app.trace.observe { event in trace.append("\(event.target) \(event.event)") }
        app.launch()
        await settle { !delegate.failures.isEmpty }
        #expect(delegate.failures == ["services: database unreachable"])
        #expect(trace.contains("api lifecycleTask(_:didFailWithError:)"))
        #expect(trace.contains("delegate application(_:lifecycleTask:didFailWithError:)"))
        #expect(!controller.services.isRunning)
        // Still serving requests of the lifecycle: the next foreground runs the services again.
        app.requestEnterBackground()
        app.requestBecomeActive()
        await settle { controller.services.runCount == 2 }
        #expect(app.applicationState == .active)
    }

    @Test func aFailingServiceIsRestartedAfterItsBackoffUntilThePolicyEscalates() async {
        let timeline = Timeline()
        let controller = ServiceController(
            identifier: "api",
            restartPolicy: .onFailure(
                maxRestarts: 2, within: .seconds(60), backoff: .exponential(initial: .milliseconds(100), maximum: .seconds(1))
            )
        ) {
            [
                RecordingService(name: "server", timeline: timeline),
                RecordingService(name: "database", timeline: timeline, failure: Outage()),
            ]
        }
        let host = TestHost(delegate: Delegate(root: controller))
        host.launch()
        let services = controller.services!
        for (failure, delay) in [(1, 100), (2, 200)] {
            #expect(await host.waitUntil { services.failureCount == failure && !services.isRunning })
            host.advance(by: .milliseconds(delay - 1))
            #expect(services.runCount == failure)
            host.advance(by: .milliseconds(1))
            #expect(services.runCount == failure + 1)
        }
        // The third failure within the minute is one more than two restarts allow: the application terminates as a
        // failure (the delegate's default), which the daemon turns into exit status 75.
        #expect(await host.waitUntil { host.isTerminated })
        #expect(services.failureCount == 3 && services.restartCount == 2 && services.hasExhaustedRestarts)
        #expect(host.application.terminationFailure?.hasPrefix("services failed more often than its restart policy allows") == true)
        #expect(
            host.recorder.lines(events: ["taskWillRestart", "lifecycleTask(_:didExhaustRestartsWithError:)"]) == [
                "api taskWillRestart", "api taskWillRestart", "api lifecycleTask(_:didExhaustRestartsWithError:)",
            ]
        )
    }

    @Test func aServiceThatReturnsWhileItShouldRunIsAFailure() async {
        struct Quits: Service {
            func run() async throws {}
        }
        let controller = ServiceController(identifier: "api", restartPolicy: .never) { [Quits()] }
        let host = TestHost(delegate: Delegate(root: controller))
        host.launch()
        #expect(await host.waitUntil { controller.services.failureCount == 1 })
        #expect(host.recorder.lines(events: ["lifecycleTask(_:didFailWithError:)"]) == ["api lifecycleTask(_:didFailWithError:)"])
    }

    @Test func terminationWaitsForTheDrainThroughABackgroundTask() async {
        let timeline = Timeline()
        let controller = ServiceController(identifier: "http") {
            [RecordingService(name: "server", timeline: timeline, drain: .milliseconds(30))]
        }
        let (app, _) = quietApplication(root: controller)
        var trace: [String] = []
        app.trace.observe { event in trace.append("\(event.target) \(event.event)") }
        app.launch()
        await settle { timeline.lines == ["server run"] }
        app.requestTermination()
        #expect(app.applicationState == .terminated)
        #expect(app.backgroundTasks.map(\.name) == ["http: services"])
        await settle { app.backgroundTasks.isEmpty }
        #expect(timeline.lines == ["server run", "server draining", "server stopped"])
        #expect(
            trace.filter { $0.hasPrefix("http ") && ($0.contains("task") || $0.contains("Terminate")) } == [
                "http taskDidStart", "http taskWillStop", "http applicationWillTerminate", "http taskDidEnd",
            ]
        )
    }
}
