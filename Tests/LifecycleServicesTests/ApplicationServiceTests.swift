//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleServices
import Logging
import ServiceLifecycle
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A delegate that writes its callbacks, and whatever it is told to do in them, to a timeline.
@MainActor
final class TimelineDelegate: ApplicationDelegate {
    let timeline: Timeline
    var taskOnTerminate: Duration?
    weak var application: Application?

    init(timeline: Timeline) { self.timeline = timeline }

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        self.application = application
        application.window = Window(rootViewController: ViewController(identifier: "root"))
        timeline.append("didFinishLaunching")
        return true
    }
    func applicationDidBecomeActive(_ application: Application) { timeline.append("didBecomeActive") }
    func applicationWillResignActive(_ application: Application) { timeline.append("willResignActive") }
    func applicationDidEnterBackground(_ application: Application) { timeline.append("didEnterBackground") }
    func applicationWillEnterForeground(_ application: Application) { timeline.append("willEnterForeground") }
    func applicationDidReceiveMemoryWarning(_ application: Application) { timeline.append("memoryWarning") }
    func applicationWillTerminate(_ application: Application) {
        timeline.append("willTerminate")
        guard let taskOnTerminate else { return }
        var task = BackgroundTaskIdentifier.invalid
        let timeline = self.timeline
        task = application.beginBackgroundTask(withName: "flush")
        Task { @MainActor in
            try? await Task.sleep(for: taskOnTerminate)
            timeline.append("flushed")
            application.endBackgroundTask(task)
        }
    }
}

/// A service that finishes once the group shuts down gracefully; it records when.
struct Neighbour: Service {
    let timeline: Timeline
    func run() async throws {
        try? await gracefulShutdown()
        timeline.append("neighbour stopped")
    }
}

@Suite("The application as a Service of a ServiceGroup")
struct ApplicationServiceTests {
    @Test func theGroupsGracefulShutdownIsTermination() async throws {
        let timeline = Timeline()
        let service = ApplicationService(signals: [:], logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })) {
            let delegate = TimelineDelegate(timeline: timeline)
            delegate.taskOnTerminate = .milliseconds(30)
            return delegate
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: Neighbour(timeline: timeline)),
                    .init(service: service),
                ],
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            )
        )
        let running = Task { try await group.run() }
        while !timeline.lines.contains("didBecomeActive") { try await Task.sleep(for: .milliseconds(1)) }
        await group.triggerGracefulShutdown()
        try await running.value
        // The group shuts its services down in reverse order: the application (with its background task) first.
        #expect(
            timeline.lines == [
                "didFinishLaunching", "didBecomeActive", "willResignActive", "didEnterBackground", "willTerminate",
                "flushed", "neighbour stopped",
            ]
        )
    }

    @Test func theDefaultSignalsAreTheDaemonsMapWithoutTerminationOrTerminalStop() {
        // By number, as docs/lifecycle.md §6 names them; SIGTERM and SIGINT are the group's, SIGTSTP keeps stopping.
        let realTimeMin = Int32(__libc_current_sigrtmin())
        #expect(
            ApplicationService.defaultSignals == [
                SIGUSR1: .enterBackground, SIGUSR2: .becomeActive, SIGCONT: .becomeActive, SIGHUP: .reload,
                realTimeMin + 2: .memoryWarning, realTimeMin + 3: .resignActive,
            ]
        )
    }

    @Test func mappedSignalsReachTheApplication() async throws {
        let timeline = Timeline()
        let service = ApplicationService(
            signals: [SIGUSR2: .memoryWarning],
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        ) { TimelineDelegate(timeline: timeline) }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: service)],
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            )
        )
        let running = Task { try await group.run() }
        while !timeline.lines.contains("didBecomeActive") { try await Task.sleep(for: .milliseconds(1)) }
        kill(getpid(), SIGUSR2)
        // Long: the main actor is shared by every @MainActor test of the process (see `settle(until:)`).
        let deadline = ContinuousClock.now + .seconds(120)
        while !timeline.lines.contains("memoryWarning"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(timeline.lines.contains("memoryWarning"))
        running.cancel()
        try? await running.value
        #expect(timeline.lines.last == "willTerminate")
    }
}
