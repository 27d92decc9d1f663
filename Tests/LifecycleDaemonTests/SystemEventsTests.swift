//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging
import SystemPackage
import Testing

// SystemEvents with stand-ins for logind, PSI and the loop's timers, so that each ordering is asserted as one
// sequence: the application's trace, the delegate's background tasks and what was done to the inhibitor, in the
// order they happened. The real logind client and PSI monitor are tested against real peers in
// LifecycleSystemdTests and end to end.

/// One ordered record of everything a test looks at.
@MainActor
final class Timeline {
    private(set) var lines: [String] = []

    func append(_ line: String) { lines.append(line) }
    func clear() { lines.removeAll() }
}

@MainActor
final class FakeLogind: LogindConnection {
    let timeline: Timeline
    var holdsInhibitors = false
    var inhibitDelayMax: Duration?
    /// What the launch waits for before READY=1, as the real client reports it.
    var awaiting: [String] = []
    private(set) var progress: (@MainActor () -> Void)?

    init(timeline: Timeline) { self.timeline = timeline }

    func observeSetup(_ progress: @escaping @MainActor () -> Void) { self.progress = progress }

    /// Something the launch waits for arrived: `awaiting` is what is still missing.
    func setUp(leaving missing: [String]) {
        awaiting = missing
        progress?()
    }

    func takeInhibitors() {
        timeline.append("logind take")
        holdsInhibitors = true
    }

    func releaseInhibitors() {
        timeline.append("logind release")
        holdsInhibitors = false
    }

    func close() {
        timeline.append("logind close")
        holdsInhibitors = false
    }
}

@MainActor
final class FakeMemoryPressure: MemoryPressureWatching {
    let settings: MemoryPressureMonitor.Settings
    let fire: @MainActor () -> Void
    var minimumInterval: Duration
    var stopped = false

    init(settings: MemoryPressureMonitor.Settings, fire: @escaping @MainActor () -> Void) {
        self.settings = settings
        self.fire = fire
        self.minimumInterval = settings.minimumInterval
    }

    func stop() { stopped = true }
}

@MainActor
final class FakeTimer: ScheduledWork {
    let delay: Duration
    let work: @MainActor () -> Void
    var cancelled = false
    var due = ContinuousClock.now

    init(delay: Duration, work: @escaping @MainActor () -> Void) {
        self.delay = delay
        self.work = work
    }

    func cancel() { cancelled = true }

    func fire() {
        guard !cancelled else { return }
        cancelled = true
        work()
    }
}

/// A delegate that begins a background task in `applicationDidEnterBackground` when told to.
@MainActor
final class BackgroundWorkDelegate: ApplicationDelegate {
    let timeline: Timeline
    var beginsTaskInBackground = false
    /// Whether `applicationWillTerminate` lets go of the window (`application.window = nil`).
    var dropsWindowOnTermination = false
    var task = BackgroundTaskIdentifier.invalid

    init(timeline: Timeline) { self.timeline = timeline }

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: ViewController(identifier: "root"))
        return true
    }

    func applicationDidEnterBackground(_ application: Application) {
        guard beginsTaskInBackground else { return }
        task = application.beginBackgroundTask(withName: "work") { [timeline, unowned application, unowned self] in
            timeline.append("task expired")
            application.endBackgroundTask(task)
        }
        timeline.append("task began")
    }

    func applicationWillTerminate(_ application: Application) {
        if dropsWindowOnTermination { application.window = nil }
    }

    func endTask(_ application: Application) {
        timeline.append("task ended")
        application.endBackgroundTask(task)
    }
}

/// Log records kept in memory.
final class RecordedLog: Sendable {
    private let storage = ConditionLock<[(Logger.Level, String)]>([])

    func messages(_ level: Logger.Level) -> [String] {
        storage.withLock { $0.filter { $0.0 == level }.map(\.1) }
    }

    func logger() -> Logger {
        var logger = Logger(label: "test") { _ in Handler(log: self) }
        logger.logLevel = .debug
        return logger
    }

    private struct Handler: LogHandler {
        let log: RecordedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.storage.withLock { $0.append((event.level, event.message.description)) }
        }
    }
}

/// The stand-ins SystemEvents reaches through its effects.
@MainActor
final class Stage {
    let timeline = Timeline()
    var logind: FakeLogind?
    var memoryPressure: [FakeMemoryPressure] = []
    var timers: [FakeTimer] = []
    var send: (@MainActor (Logind.Event) -> Void)?
    var logindUnavailable: SystemCallError?
    var inhibitDelayMax: Duration?

    /// Now, on the manual clock the effects use.
    var now = ContinuousClock.now
    /// sd_notify assignments sent, in order.
    var notified: [NotifyAssignment] = []
    /// Notifications (`notify`) and waits for journald to take the logs (`logs delivered`), in order.
    var deliveries: [String] = []
    /// Whether the process stopped itself (job control), and the exit codes asked for.
    var stops = 0
    var exits: [Int32] = []
    /// What the terminal says.
    var terminal = TerminalProbe(startedOnTerminal: false, stdinIsTerminal: { false }, hasHungUp: { false })
    /// The sockets passed to the process (`LISTEN_FDS`), as the daemon takes them.
    var inherited: [SocketActivation.Socket] = []
    /// The environment the daemon read at start, and whether it runs under systemd or as a namespace's PID 1.
    var environment: [String: String] = [:]
    var underSystemd = false
    var isContainerInit = false

    func effects() -> DaemonEffects {
        var effects = DaemonEffects(
            now: { [unowned self] in now },
            schedule: { [unowned self] delay, work in
                let timer = FakeTimer(delay: delay, work: work)
                timer.due = now + delay
                timers.append(timer)
                return timer
            },
            notify: { [unowned self] assignments in
                notified += assignments
                deliveries.append("notify")
            },
            terminal: terminal,
            stopProcess: { [unowned self] in
                stops += 1
                timeline.append("process stopped")
            },
            exit: { [unowned self] code in
                exits.append(code)
                timeline.append("exit \(code)")
            },
            connectLogind: { [unowned self] onEvent throws(SystemCallError) in
                if let logindUnavailable { throw logindUnavailable }
                let fake = FakeLogind(timeline: timeline)
                fake.inhibitDelayMax = inhibitDelayMax
                logind = fake
                send = onEvent
                return fake
            },
            watchMemoryPressure: { [unowned self] settings, onPressure in
                let fake = FakeMemoryPressure(settings: settings, fire: onPressure)
                memoryPressure.append(fake)
                return fake
            },
            deliverLogs: { [unowned self] in deliveries.append("logs delivered") }
        )
        effects.passedDescriptors = { [unowned self] in inherited }
        effects.environment = environment
        effects.underSystemd = underSystemd
        effects.isContainerInit = isContainerInit
        return effects
    }

    /// Moves the manual clock on, firing every timer that falls due, in order.
    func advance(by duration: Duration) {
        let target = now + duration
        while let next = timers.filter({ !$0.cancelled && $0.due <= target }).min(by: { $0.due < $1.due }) {
            now = next.due
            next.fire()
        }
        now = target
    }
}

/// An application with a root controller, and SystemEvents on stand-ins.
@MainActor
final class SystemEventsHarness {
    let stage = Stage()
    let log = RecordedLog()
    let delegate: BackgroundWorkDelegate
    let application: Application
    let events: SystemEvents
    private let host: HostForwarder

    var timeline: Timeline { stage.timeline }
    var logind: FakeLogind? { stage.logind }
    var memoryPressure: [FakeMemoryPressure] { stage.memoryPressure }
    var timers: [FakeTimer] { stage.timers }
    var logindUnavailable: SystemCallError? {
        get { stage.logindUnavailable }
        set { stage.logindUnavailable = newValue }
    }

    init(configuration: DaemonConfiguration = DaemonConfiguration(), inhibitDelayMax: Duration? = nil) {
        stage.inhibitDelayMax = inhibitDelayMax
        delegate = BackgroundWorkDelegate(timeline: stage.timeline)
        application = Application(delegate: delegate, logger: log.logger())
        let effects = stage.effects()
        events = SystemEvents(
            application: application,
            router: RequestRouter(
                application: application,
                jobControl: JobControl(application: application, effects: effects, logger: log.logger()),
                lameDuck: LameDuckStop(application: application, effects: effects, logger: log.logger()) {
                    (.zero, nil)
                } notify: { _ in },
                logger: log.logger()
            ),
            configuration: configuration,
            logger: log.logger(),
            effects: effects
        )
        host = HostForwarder(events: events)
        application.host = host
        application.trace.observe { [timeline = stage.timeline] event in
            timeline.append("\(event.target) \(event.event) \(event.cause)")
        }
    }

    /// Starts the sources, launches into the foreground and forgets the launch's lines.
    func launch() {
        events.start()
        application.launch(into: .active, options: LaunchOptions(reason: .test))
        application.runEndOfTurn()
        timeline.clear()
    }

    /// Delivers an announcement and ends the loop turn, as the daemon's loop does.
    func announce(_ event: Logind.Event) {
        stage.send?(event)
        application.runEndOfTurn()
    }
}

/// Forwards the background task changes as the daemon's host does.
@MainActor
final class HostForwarder: ApplicationHost {
    unowned let events: SystemEvents
    init(events: SystemEvents) { self.events = events }

    func application(_ application: Application, backgroundTasksDidChange tasks: [BackgroundTask]) {
        events.backgroundTasksDidChange(tasks)
    }
}

@MainActor
@Suite struct SystemEventsTests {
    static let background = [
        "root applicationWillResignActive logind:PrepareForSleep",
        "delegate applicationWillResignActive logind:PrepareForSleep",
        "root applicationDidEnterBackground logind:PrepareForSleep",
        "delegate applicationDidEnterBackground logind:PrepareForSleep",
    ]
    static let foreground = [
        "delegate applicationWillEnterForeground logind:PrepareForSleep",
        "root applicationWillEnterForeground logind:PrepareForSleep",
        "delegate applicationDidBecomeActive logind:PrepareForSleep",
        "root applicationDidBecomeActive logind:PrepareForSleep",
    ]

    @Test func startTakesTheInhibitorBeforeTheLaunch() {
        let harness = SystemEventsHarness()
        harness.events.start()
        #expect(harness.timeline.lines == ["logind take"])
        #expect(harness.events.holdsInhibitors)
        #expect(harness.events.phase == .awake)
    }

    @Test func withNoBackgroundWorkTheInhibitorIsReleasedRightAfterDidEnterBackground() {
        let harness = SystemEventsHarness()
        harness.launch()
        harness.announce(.prepareForSleep(true))
        #expect(harness.timeline.lines == Self.background + ["logind release"])
        #expect(harness.application.applicationState == .background)
        #expect(harness.events.phase == .released(.prepareForSleep(true)))
        #expect(harness.timers.isEmpty)
    }

    @Test func aBackgroundTaskHoldsTheInhibitorUntilItEnds() {
        let harness = SystemEventsHarness()
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.announce(.prepareForSleep(true))
        #expect(harness.timeline.lines == Self.background + ["task began"])
        #expect(harness.events.phase == .preparing(.prepareForSleep(true)))
        #expect(harness.events.holdsInhibitors)
        // Bounded by logind's default InhibitDelayMaxSec of 5 s, less the margin for expiration handlers.
        #expect(harness.timers.map(\.delay) == [.milliseconds(4500)])
        harness.timeline.clear()
        harness.delegate.endTask(harness.application)
        // The release waits for the end of the loop turn.
        #expect(harness.timeline.lines == ["task ended"])
        harness.application.runEndOfTurn()
        #expect(harness.timeline.lines == ["task ended", "logind release"])
        #expect(harness.timers.map(\.cancelled) == [true])
        #expect(harness.events.phase == .released(.prepareForSleep(true)))
    }

    @Test func aTaskEndedInsideTheTransitionReleasesOnlyAfterTheWholeTransition() {
        let harness = SystemEventsHarness()
        harness.launch()
        // The root controller is the first to hear didEnterBackground; a task it begins and ends there must not
        // release the inhibitor before the delegate's didEnterBackground ran.
        // Weak: the trace belongs to the application; a strong capture would keep both alive for ever.
        harness.application.trace.observe { [weak application = harness.application, timeline = harness.timeline] event in
            guard let application, event.event == TraceEventName.applicationDidEnterBackground, event.target == "root"
            else { return }
            let task = application.beginBackgroundTask(withName: "quick")
            application.endBackgroundTask(task)
            timeline.append("quick task done")
        }
        harness.announce(.prepareForSleep(true))
        #expect(
            harness.timeline.lines
                == Self.background.prefix(3) + ["quick task done", Self.background[3], "logind release"]
        )
    }

    @Test func tasksOutlivingLogindsDelayAreExpiredThenTheInhibitorIsReleased() {
        let harness = SystemEventsHarness(inhibitDelayMax: .seconds(2))
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.announce(.prepareForSleep(true))
        #expect(harness.timers.map(\.delay) == [.milliseconds(1800)])
        harness.timeline.clear()
        harness.timers[0].fire()
        // The expiration handler's call is in the trace (the delegate began the task), then the handler runs.
        #expect(harness.timeline.lines == ["delegate expirationHandler api", "task expired", "logind release"])
        #expect(harness.application.backgroundTasks.isEmpty)
        #expect(harness.log.messages(.warning).contains { $0.contains("outlived the sleep budget") })
    }

    @Test func resumeTakesANewInhibitorThenReturnsToTheForeground() {
        let harness = SystemEventsHarness()
        harness.launch()
        harness.announce(.prepareForSleep(true))
        harness.timeline.clear()
        harness.announce(.prepareForSleep(false))
        #expect(harness.timeline.lines == ["logind take"] + Self.foreground)
        #expect(harness.application.applicationState == .active)
        #expect(harness.events.phase == .awake)
        #expect(harness.events.holdsInhibitors)
    }

    @Test func anApplicationAlreadyInTheBackgroundStaysThereAcrossTheSleep() {
        let harness = SystemEventsHarness()
        harness.launch()
        harness.application.requestEnterBackground(cause: .signal(named: "SIGUSR1"))
        harness.timeline.clear()
        harness.announce(.prepareForSleep(true))
        harness.announce(.prepareForSleep(false))
        #expect(harness.timeline.lines == ["logind release", "logind take"])
        #expect(harness.application.applicationState == .background)
    }

    @Test func shutdownReleasesOnceInTheBackgroundAndLeavesTasksToTermination() {
        let harness = SystemEventsHarness()
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.announce(.prepareForShutdown(true))
        #expect(
            harness.timeline.lines
                == [
                    "root applicationWillResignActive logind:PrepareForShutdown",
                    "delegate applicationWillResignActive logind:PrepareForShutdown",
                    "root applicationDidEnterBackground logind:PrepareForShutdown",
                    "delegate applicationDidEnterBackground logind:PrepareForShutdown",
                    "task began",
                    "logind release",
                ]
        )
        #expect(harness.application.backgroundTasks.count == 1)
        #expect(harness.timers.isEmpty)
        #expect(harness.events.phase == .released(.prepareForShutdown(true)))
    }

    @Test func aCancelledShutdownIsLikeAResume() {
        let harness = SystemEventsHarness()
        harness.launch()
        harness.announce(.prepareForShutdown(true))
        harness.timeline.clear()
        harness.announce(.prepareForShutdown(false))
        #expect(harness.timeline.first == "logind take")
        #expect(harness.timeline.lines.dropFirst().allSatisfy { $0.hasSuffix("logind:PrepareForShutdown") })
        #expect(harness.application.applicationState == .active)
    }

    @Test func anAnnouncementWhileAnotherIsHandledIsIgnored() {
        let harness = SystemEventsHarness()
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.announce(.prepareForSleep(true))
        harness.timeline.clear()
        harness.announce(.prepareForShutdown(true))
        harness.announce(.prepareForShutdown(false))
        #expect(harness.timeline.lines == ["logind take"])
        #expect(harness.events.phase == .preparing(.prepareForSleep(true)))
    }

    @Test func aShutdownAnnouncedAfterTheSleepsReleaseFindsNoLockHeldAndIsNotHandledTwice() {
        // Both locks go at the sleep's release: logind must not wait InhibitDelayMaxSec for a shutdown lock that
        // nothing would release, since the shutdown's announcement is ignored while the sleep is handled.
        let harness = SystemEventsHarness()
        harness.launch()
        harness.announce(.prepareForSleep(true))
        #expect(!harness.events.holdsInhibitors)
        harness.timeline.clear()
        harness.announce(.prepareForShutdown(true))
        #expect(harness.timeline.lines.isEmpty)
        #expect(harness.events.phase == .released(.prepareForSleep(true)))
        #expect(
            harness.log.messages(.notice) == [
                "logind announced PrepareForShutdown(true) while still handling PrepareForSleep(true); ignored"
            ]
        )
    }

    @Test func aResumeWithoutItsAnnouncementOnlyMakesSureTheInhibitorsAreHeld() {
        let harness = SystemEventsHarness()
        harness.launch()
        harness.announce(.prepareForSleep(false))
        #expect(harness.timeline.lines == ["logind take"])
        #expect(harness.application.applicationState == .active)
    }

    @Test func memoryPressureIsAMemoryWarningWithCausePsi() throws {
        var configuration = DaemonConfiguration()
        configuration.memoryPressureThreshold = .milliseconds(100)
        configuration.memoryWarningMinimumInterval = .seconds(3)
        let harness = SystemEventsHarness(configuration: configuration)
        harness.launch()
        let watch = try #require(harness.memoryPressure.first)
        let trigger = MemoryPressureTrigger(kind: .some, threshold: .milliseconds(100), window: .seconds(2))
        #expect(watch.settings.trigger == trigger)
        #expect(watch.settings.minimumInterval == .seconds(3))
        watch.fire()
        #expect(
            harness.timeline.lines == [
                "root didReceiveMemoryWarning psi", "delegate applicationDidReceiveMemoryWarning psi",
            ]
        )
        #expect(harness.application.applicationState == .active)
    }

    @Test func noSystemBusIsOneWarningAndMemoryPressureIsStillWatched() throws {
        let harness = SystemEventsHarness()
        harness.logindUnavailable = SystemCallError(operation: "sd_bus_open_system", errno: .noSuchFileOrDirectory)
        harness.launch()
        let warnings = harness.log.messages(.warning)
        #expect(warnings.count == 1)
        let warning = try #require(warnings.first)
        #expect(warning.hasPrefix("logind is not watched: there is no system bus (sd_bus_open_system failed"))
        #expect(harness.memoryPressure.count == 1)
        #expect(!harness.events.holdsInhibitors)
    }

    @Test func switchedOffSourcesAreNeverStarted() {
        var configuration = DaemonConfiguration()
        configuration.watchLogind = false
        configuration.watchMemoryPressure = false
        let harness = SystemEventsHarness(configuration: configuration)
        harness.launch()
        #expect(harness.logind == nil)
        #expect(harness.memoryPressure.isEmpty)
        #expect(harness.log.messages(.warning).isEmpty)
    }

    /// Once termination began every request is dropped, a memory warning too: the trigger is let go at once (its
    /// close overlaps the rest of termination), the inhibitors are kept until the end.
    @Test func terminationLetsGoOfTheMemoryPressureWatchAtOnceAndKeepsTheInhibitors() throws {
        let harness = SystemEventsHarness()
        harness.launch()
        let watch = try #require(harness.memoryPressure.first)
        harness.events.terminationDidBegin()
        #expect(watch.stopped)
        #expect(!harness.events.isWatchingMemoryPressure)
        #expect(harness.events.holdsInhibitors)
        #expect(harness.log.messages(.debug).contains("memory pressure is no longer watched: termination began"))
        harness.events.stop()
        #expect(harness.timeline.lines.suffix(1) == ["logind close"])
        #expect(harness.memoryPressure.count == 1)
    }

    @Test func aReloadStartsStopsAndRetunesTheSources() {
        let harness = SystemEventsHarness()
        harness.launch()
        var configuration = DaemonConfiguration()
        configuration.memoryWarningMinimumInterval = .seconds(30)
        harness.events.apply(configuration: configuration)
        // A new interval takes effect on the running watch.
        #expect(harness.memoryPressure.count == 1)
        #expect(harness.memoryPressure[0].minimumInterval == .seconds(30))
        // A new trigger re-arms it.
        configuration.memoryPressureWindow = .seconds(4)
        harness.events.apply(configuration: configuration)
        #expect(harness.memoryPressure.count == 2)
        #expect(harness.memoryPressure[0].stopped)
        #expect(harness.memoryPressure[1].settings.trigger.window == .seconds(4))
        // Switching logind off closes the connection; on again connects anew and takes an inhibitor.
        configuration.watchLogind = false
        harness.events.apply(configuration: configuration)
        configuration.watchLogind = true
        harness.events.apply(configuration: configuration)
        #expect(harness.timeline.lines == ["logind close", "logind take"])
        #expect(harness.events.holdsInhibitors)
    }

    @Test func theSleepBudgetLeavesATenthOfLogindsDelayAtMostHalfASecond() {
        #expect(SystemEvents.sleepBudget(forInhibitDelay: .seconds(5)) == .milliseconds(4500))
        #expect(SystemEvents.sleepBudget(forInhibitDelay: .seconds(2)) == .milliseconds(1800))
        #expect(SystemEvents.sleepBudget(forInhibitDelay: .seconds(30)) == .milliseconds(29_500))
        #expect(SystemEvents.sleepBudget(forInhibitDelay: .zero) == .zero)
    }
}

extension Timeline {
    var first: String? { lines.first }
}
