//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
@_spi(Internal) package import LifecycleKit
package import LifecyclePrimitives
package import LifecycleSystemd
package import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Runs a LifecycleKit application as a daemon: the main thread's sd-event loop reads the mapped signals and
/// delivers them as requests, drains the main queue, ends every turn with the layout and display passes, feeds the
/// watchdog, and tells systemd what happens (`READY=1`, `STATUS=`, `RELOADING=1`, `STOPPING=1`).
@MainActor
package final class Daemon: ApplicationHost {
    /// The configuration in force (replaced by a valid reload).
    package private(set) var configuration: DaemonConfiguration
    /// The options it was started with (a reload re-reads the file and re-applies them).
    package let options: DaemonOptions
    /// The application it runs.
    package let application: Application
    /// The loop that owns the main thread; nil for a daemon whose effects are all stand-ins (tests).
    let loop: MainLoop?

    let logger: Logger
    let effects: DaemonEffects
    /// From any source to an application request.
    let router: RequestRouter
    /// Ctrl-Z's stop in a terminal, once the background work is done.
    let jobControl: JobControl
    let termination: TerminationWait
    /// The lame-duck delay before a termination (`[Termination] LameDuckSec=`).
    let lameDuck: LameDuckStop
    /// The application's own configuration section, read again on every reload.
    private let applicationSection: (any ConfigurationSection.Type)?
    /// Hands a configuration (the first one, then each valid reload's) to the application.
    private let configure: @MainActor (DaemonConfiguration) -> Void
    private var signalSources: [MainLoop.Source] = []
    private(set) var systemEvents: SystemEvents?
    private var stallDetector: StallDetector?
    let notifications: Notifications
    /// Where the saved state is kept (DaemonRestoration.swift).
    var stateStore: StateStore?
    /// The storyboard the tree was loaded from, to apply a change of it on reload.
    var loadedStoryboard: Archive?
    /// A reload's storyboard, read and planned when the reload was offered, performed when it applies.
    var preparedStoryboard: (Archive, PreparedStoryboardChange)?
    /// A reload's configuration, read and validated when the reload was offered, applied when everybody accepted.
    private var preparedConfiguration: DaemonConfiguration?
    /// The control socket (docs/control.md), while it is served.
    var control: ControlServer?
    /// The part this process plays for its service (main, an upgrade's predecessor or successor, handed over): what
    /// the notifications, the state store, the listeners' file descriptor store and the control socket read.
    var role = ProcessRole.main
    /// How an upgrade reaches the system and systemd; nil for a daemon without a loop (tests that do not upgrade).
    let upgradeEffects: UpgradeEffects?
    /// The upgrade this process started, until it is over (a failed one until its successor is reaped).
    var upgrade: UpgradeToSuccessor?
    /// The upgrade that started this process, until its predecessor has drained and exited.
    var incoming: UpgradeFromPredecessor?
    /// The background task that holds a stop while the predecessor drains, once this process is the main one.
    var predecessorDrain = BackgroundTaskIdentifier.invalid
    /// The listeners this service bound, in systemd's file descriptor store.
    var listenerStore: ListenerStore?
    /// As PID 1, what reaps the orphans re-parented to the process.
    private var reaper: ChildReaper?

    /// Creates a daemon around an application whose delegate is already made.
    ///
    /// `configure` receives every configuration that takes effect: the first one before launch, then each one a
    /// reload read (between `applicationWillReload` and `applicationDidReload`).
    package convenience init(
        configuration: DaemonConfiguration,
        options: DaemonOptions,
        application: Application,
        applicationSection: (any ConfigurationSection.Type)? = nil,
        notifier: SystemdNotifier,
        logger: Logger,
        configure: @escaping @MainActor (DaemonConfiguration) -> Void = { _ in }
    ) throws(SystemCallError) {
        let loop = try MainLoop()
        try self.init(
            configuration: configuration,
            options: options,
            application: application,
            applicationSection: applicationSection,
            loop: loop,
            effects: .live(loop: loop, notifier: notifier, programName: options.programName, logger: logger),
            logger: logger,
            configure: configure
        )
    }

    /// The upgrade effects for a daemon on `loop` with `effects`.
    static func upgradeEffects(loop: MainLoop?, effects: DaemonEffects) -> UpgradeEffects? {
        loop.map { UpgradeEffects.live(loop: $0, effects: effects) }
    }

    /// Creates a daemon whose every effect goes through `effects` (tests pass stand-ins and a manual clock).
    init(
        configuration: DaemonConfiguration,
        options: DaemonOptions,
        application: Application,
        applicationSection: (any ConfigurationSection.Type)?,
        loop: MainLoop?,
        effects: DaemonEffects,
        upgradeEffects: UpgradeEffects? = nil,
        logger: Logger,
        configure: @escaping @MainActor (DaemonConfiguration) -> Void
    ) throws(SystemCallError) {
        self.configuration = configuration
        self.upgradeEffects = upgradeEffects ?? Self.upgradeEffects(loop: loop, effects: effects)
        self.options = options
        self.application = application
        self.applicationSection = applicationSection
        self.configure = configure
        self.logger = logger
        self.loop = loop
        self.effects = effects
        self.jobControl = JobControl(application: application, effects: effects, logger: logger)
        var isMain: (@MainActor () -> Bool)?
        let notifications = Notifications(effects: effects, logger: logger) { isMain?() ?? true }
        self.notifications = notifications
        var settingsSource: (@MainActor () -> (delay: Duration, stopTimeout: Duration?))?
        let lameDuck = LameDuckStop(application: application, effects: effects, logger: logger) {
            settingsSource?() ?? (.zero, nil)
        } notify: { assignments in
            notifications.send(assignments)
        }
        self.lameDuck = lameDuck
        self.router = RequestRouter(application: application, jobControl: jobControl, lameDuck: lameDuck, logger: logger)
        self.termination = TerminationWait(application: application, effects: effects, logger: logger) { assignments in
            notifications.send(assignments)
        }
        application.host = self
        application.trace.logsEverythingAtInfo = configuration.traceAll
        application.backgroundTime = configuration.backgroundTime
        settingsSource = { [unowned self] in (self.configuration.lameDuck, self.configuration.stopTimeout) }
        isMain = { [unowned self] in role.isMain }
        lameDuck.delayDidBegin = { [unowned self] in upgrade?.cancel(.lameDuckBegan) }
    }

    // MARK: Entry point

    /// The signals blocked first thing in `main`, before any thread exists: every signal the default map names.
    package static var signalsToBlockAtStart: [UnixSignal] {
        // As PID 1 (a container's first process) it also reaps the children re-parented to it, told by SIGCHLD, which
        // no thread may take first.
        SignalMap.standard.signals + (ProcessEnvironment.isContainerInit ? [ChildReaper.signal] : [])
    }

    /// Runs a daemon whose application delegate `makeDelegate` builds, and returns the process exit code (sysexits).
    ///
    /// Call it on the main thread with ``signalsToBlockAtStart`` already blocked (``ApplicationMain`` does both);
    /// it blocks the rest of the configured map before it starts any thread. `configure` hands the delegate each
    /// configuration that takes effect (the first before launch, then every valid reload's).
    package static func run<Delegate: ApplicationDelegate>(
        options: DaemonOptions,
        applicationSection: (any ConfigurationSection.Type)? = nil,
        makeDelegate: @MainActor () -> Delegate,
        configure: @escaping @MainActor (Delegate, DaemonConfiguration) -> Void = { _, _ in }
    ) -> Int32 {
        let configuration: DaemonConfiguration
        do {
            configuration = try options.resolveConfiguration(applicationSection: applicationSection)
        } catch {
            writeError("\(options.programName): \(error)")
            return ExitStatus.configuration.rawValue
        }
        // Still single-threaded: make the mask match the configured map before Dispatch or logging start threads.
        adjustSignalMask(to: configuration.signalMap)

        let backend = LoggingBackend.bootstrap(
            identifier: options.programName,
            level: .debug,
            backend: configuration.logFormat.backend
        )
        var logger = Logger(label: options.programName)
        // Under journald every event is stored (debug events at PRIORITY=7); on stderr (a terminal, text or JSON
        // lines), debug lines only with --trace, which raises them to info anyway.
        logger.logLevel = backend == .journal ? .debug : .info
        let delegate = makeDelegate()
        let application = Application(delegate: delegate, logger: logger)
        do {
            let daemon = try Daemon(
                configuration: configuration,
                options: options,
                application: application,
                applicationSection: applicationSection,
                notifier: .fromEnvironment(),
                logger: logger
            ) { configuration in configure(delegate, configuration) }
            let code = try daemon.start()
            // Lines still waiting for journald (it fell behind) are lost when the process exits: give it a moment.
            JournalWriter.shared.flush()
            return code
        } catch {
            logger.critical("\(options.programName) cannot run its main loop: \(error)")
            JournalWriter.shared.flush()
            return ExitStatus.osError.rawValue
        }
    }

    /// Blocks the signals of the map and unblocks default-map signals the configuration left unmapped.
    static func adjustSignalMask(to map: SignalMap) {
        MainLoop.blockSignals(map.signals)
        MainLoop.unblockSignals(SignalMap.standard.signals.filter { map.requests[$0] == nil })
    }

    /// Sets up the loop, launches the application and runs until it terminates; returns the exit code.
    package func start() throws(SystemCallError) -> Int32 {
        guard let loop else { preconditionFailure("a daemon made without a main loop cannot start") }
        if let problem = options.scenesProblem(in: configuration, usesScenes: application.usesScenes) {
            logger.error("\(problem)")
            return ExitStatus.configuration.rawValue
        }
        try loop.integrateMainDispatchQueue()
        for signal in configuration.signalMap.signals {
            let source = try loop.addSignal(signal) { [unowned self] info in
                MainActor.assumeIsolated { self.handle(info.signal) }
            }
            signalSources.append(source)
        }
        try loop.setTurnEndHandler { [unowned self] in
            MainActor.assumeIsolated { self.application.runEndOfTurn() }
        }
        // Everything systemd (or an upgrade's predecessor) passed, read once: the upgrade's channel, the saved state's
        // memfds, the control socket and the listeners each go to their owner.
        var passed = effects.passedDescriptors()
        // Started by an upgrade: systemd hears nothing from this process (its watchdog pings included) until the
        // predecessor has made it the main process.
        let incoming = UpgradeFromPredecessor(environment: effects.environment, passed: &passed)
        if let incoming { role = .successor(of: incoming.previousPID) }
        self.incoming = incoming
        let storedState = passed.filter { $0.name.hasPrefix(StateStore.storePrefix) }
        let sockets = passed.filter { !$0.name.hasPrefix(StateStore.storePrefix) && SocketCalls.isStreamSocket($0.descriptor) }
        let watchdog = incoming == nil ? try loop.enableWatchdog() : effects.watchdogInterval != nil
        // Trace lines are written once the dispatch that fired them returns, off the callbacks' path, or as soon as
        // anything else is logged, before it: every record of the process's handlers follows the lines recorded before
        // it, so the log reads in the order things happened (docs/lifecycle.md §7). A callback that hangs is named by
        // the stall detector.
        application.trace.defersLogLines = true
        LoggingBackend.recordsFollow = application.trace.lineBuffer
        // A wait for journald never costs a watchdog ping (sd-event pings at half the interval).
        if let interval = effects.watchdogInterval {
            effects.setLogDeliveryBudget(min(JournalWriter.defaultDeliveryBudget, interval / 8))
        }
        if configuration.watchStalls { try startStallDetector() }
        warnIfTheStopCannotFit(configuration)
        loop.afterDispatch = { [unowned self] in MainActor.assumeIsolated { dispatchDidEnd() } }
        if let hang = configuration.hangIn { installHang(in: hang) }
        logger.info(
            "\(options.programName) starting",
            metadata: [
                "signals": .string(
                    configuration.signalMap.signals.map { "\($0.name)=\(configuration.signalMap.requests[$0]!.rawValue)" }
                        .joined(separator: " ")
                ),
                "watchdog": .string(watchdog ? "on" : "off"),
            ]
        )
        // logind and memory pressure; started before the launch so that a stall while launching already counts.
        let events = SystemEvents(
            application: application,
            router: router,
            configuration: configuration,
            logger: logger,
            effects: effects
        )
        events.start()
        systemEvents = events
        if effects.isContainerInit { reaper = try ChildReaper.start(loop: loop, logger: logger) }
        let store = FileDescriptorStore(notifier: effects.notifier)
        if store.isAvailable, configuration.restoration.fileDescriptorStore != .no {
            listenerStore = ListenerStore(
                store: store,
                table: application.listeners,
                isMain: { [unowned self] in role.isMain },
                logger: logger
            ) { [notifications] error in notifications.reportFailure(error) }
        }
        let controlSocket = takePassedSockets(sockets, upgrade: incoming)
        // Before the launch, so that the trace it keeps starts with the launch's events.
        if configuration.control.isEnabled {
            control = ControlServer.start(
                daemon: self,
                loop: loop,
                inherited: controlSocket,
                upgradedPath: incoming?.controlPath,
                accepting: incoming == nil
            )
        }
        if let incoming { try followUpgrade(incoming) }
        configure(configuration)
        var options = launchOptions()
        switch prepareLaunch(storedState: storedState) {
        case .launch(let restoring):
            options.restoredState = restoring
        case .exit(let code):
            dispatchDidEnd()
            stallDetector?.stop()
            return code
        }
        application.launch(into: incoming?.launchTarget ?? configuration.launchInto, options: options)
        application.runEndOfTurn()
        dispatchDidEnd()
        if configuration.releaseStartupMemory {
            let released = StartupMemory.release()
            logger.debug("released the pages of \(released.mappings) read-only file mappings touched at start")
        }
        let code = try loop.run()
        dispatchDidEnd()
        control?.stop()
        stateStore?.finishWrites(within: .seconds(10))
        systemEvents?.stop()
        stallDetector?.stop()
        // The last line of an exit, after everything it reports: the teardown's trace, the inhibitors let go.
        if termination.hasExited {
            if let failure = application.terminationFailure {
                logger.error("terminated as a failure (exit status \(ExitStatus.temporaryFailure.rawValue)): \(failure)")
            } else if code == 0, case .handedOver(let successor) = role {
                logger.info(
                    "terminated cleanly: upgraded to pid \(successor)",
                    metadata: [LogKey.upgrade: "done"]
                )
            } else if code == 0 {
                logger.info("terminated cleanly")
            }
        }
        return code
    }

    /// The loop's dispatch (or the launch) returned: write the trace lines it deferred, and let journald take them
    /// (unless it has stalled: see ``JournalWriter/waitForDelivery()``); no callback runs now.
    private func dispatchDidEnd() {
        application.trace.flush()
        control?.dispatchDidEnd()
        effects.deliverLogs()
        stallDetector?.dispatchDidEnd()
    }

    private func startStallDetector() throws(SystemCallError) {
        var thresholds = StallDetector.Thresholds.forWatchdog(effects.watchdogInterval)
        if let warning = configuration.stallWarning { thresholds.warning = warning }
        let lines = application.trace.lineBuffer
        let detector = StallDetector(thresholds: thresholds, logger: logger) { lines.flush() }
        try detector.start()
        application.trace.monitor = detector
        stallDetector = detector
        let urgent = thresholds.urgent.map { ", another after \($0.formattedForLog)" } ?? ""
        logger.debug("stall detector: a warning after \(thresholds.warning.formattedForLog)\(urgent)")
    }

    private func launchOptions() -> LaunchOptions {
        let env = effects.environment
        let underSystemd = effects.underSystemd
        var facts: [String: String] = ["underSystemd": underSystemd ? "yes" : "no"]
        if let invocation = env["INVOCATION_ID"] { facts["invocationID"] = invocation }
        if let state = env["STATE_DIRECTORY"] { facts["stateDirectory"] = state }
        return LaunchOptions(reason: underSystemd ? .serviceManager : .user, environment: facts)
    }

    /// One warning when the lame-duck delay and the drain cannot fit the operator's stop budget.
    private func warnIfTheStopCannotFit(_ configuration: DaemonConfiguration) {
        if let warning = LameDuckStop.fitWarning(
            delay: configuration.lameDuck,
            drain: configuration.backgroundTaskBudget,
            stopTimeout: configuration.stopTimeout
        ) {
            logger.warning("\(warning)")
        }
    }

    // MARK: Signals

    /// Routes what a mapped signal asks for.
    func handle(_ signal: UnixSignal) {
        guard let request = configuration.signalMap.requests[signal] else { return }
        router.route(request, from: .signal(signal))
    }

    // MARK: ApplicationHost

    package func applicationDidFinishLaunching(_ application: Application) {
        warnAboutUnclaimedListeners()
        if case .successor = role, let incoming {
            // An upgrade's successor: the predecessor hears it serves; systemd hears it once it is the main process.
            reportReadyWhenServing(incoming)
            return
        }
        // READY=1 once a sleep announced from now on reaches the application and waits for it.
        guard let events = systemEvents else {
            notify([.ready, .status(application.statusText)])
            return
        }
        let budget = SystemEvents.readinessBudget
        events.whenReadyForAnnouncements(within: budget) { [unowned self] missing in
            // Termination began meanwhile (STOPPING=1 went out): no READY=1 after it.
            guard application.applicationState != .terminated, termination.remaining == nil else { return }
            if !missing.isEmpty {
                logger.warning(
                    """
                    ready without \(missing.joined(separator: ", ")) after \(budget.formattedForLog): a sleep or shutdown \
                    announced before they arrive may not reach the application or wait for it
                    """
                )
            }
            notify([.ready, .status(application.statusText)])
        }
    }

    package func application(_ application: Application, didChangeStatus status: String) {
        notify([.status(status)])
    }

    package func applicationWillBeginReload(_ application: Application) {
        notify([.reloading])
    }

    /// A reload's offer phase: the file (with the application's section) and the storyboard are read and validated,
    /// nothing is applied yet; what is wrong with them refuses the reload.
    package func applicationPrepareReload(_ application: Application) -> ReloadPreparation {
        preparedConfiguration = nil
        if case .predecessor = role {
            // The successor read the file when it started; what this one applied now would be lost at the hand-over.
            return .refused(
                "an upgrade is under way, and its new process read the file when it started: reload once it has taken over"
            )
        }
        let fresh: DaemonConfiguration
        do {
            fresh = try options.resolveConfiguration(applicationSection: applicationSection)
        } catch {
            return .refused("\(error)")
        }
        if let problem = options.scenesProblem(in: fresh, usesScenes: application.usesScenes) {
            return .refused("\(problem)")
        }
        if let problem = prepareStoryboard(for: fresh) { return .refused(problem) }
        preparedConfiguration = fresh
        return .ready(ReloadProposal(settings: fresh.applicationSettings))
    }

    /// A reload's apply phase, once every participant accepted: the configuration read when it was offered takes
    /// effect, then the storyboard's change.
    package func applicationReloadConfiguration(_ application: Application) {
        guard let fresh = preparedConfiguration else { return }
        preparedConfiguration = nil
        if fresh.signalMap != configuration.signalMap {
            logger.warning("the signal map changed; signal changes take effect when \(options.programName) restarts")
        }
        if fresh.logFormat != configuration.logFormat {
            logger.warning("the log format changed; it takes effect when \(options.programName) restarts")
        }
        var applied = fresh
        applied.signalMap = configuration.signalMap
        applied.logFormat = configuration.logFormat
        let previous = configuration
        configuration = applied
        systemEvents?.apply(configuration: applied)
        warnIfTheStopCannotFit(applied)
        application.trace.logsEverythingAtInfo = applied.traceAll
        application.backgroundTime = applied.backgroundTime
        control?.apply(applied, previous: previous)
        configure(applied)
        logger.info("configuration reloaded")
        applyPreparedStoryboard()
    }

    package func applicationDidFinishReload(_ application: Application) {
        preparedConfiguration = nil
        preparedStoryboard = nil
        if let refusal = application.reloadRefusal {
            // Still ready, on the configuration it had: the operator who asked (`systemctl reload`, through
            // ExecReload's lifecyclectl) is told it failed, and why; the status says so until a reload is accepted.
            logger.error("reload refused by \(refusal); keeping the previous configuration")
        }
        notify([.ready, .status(application.statusText)])
    }

    package func applicationWillBeginTermination(_ application: Application) {
        // First: the memory pressure trigger's close, the slowest step of an exit, overlaps everything after it.
        systemEvents?.terminationDidBegin()
        // Stopped while an upgrade was under way: the successor is not the service's yet; it is stopped with it.
        upgrade?.cancel(.terminationRequested)
        jobControl.terminationDidBegin()
        notify([.stopping])
        termination.begin(budget: lameDuck.drainBudget(configured: configuration.backgroundTaskBudget))
    }

    package func applicationDidTerminate(_ application: Application) {
        termination.treeTornDown()
    }

    package func application(_ application: Application, backgroundTasksDidChange tasks: [BackgroundTask]) {
        systemEvents?.backgroundTasksDidChange(tasks)
        termination.tasksDidChange()
        jobControl.tasksDidChange()
    }

    package func applicationRunsDidChange(_ application: Application) {
        termination.runsDidChange()
    }

    package func application(
        _ application: Application,
        schedule work: @escaping @MainActor () -> Void,
        after delay: Duration
    ) -> (any ScheduledWork)? {
        effects.schedule(delay, work)
    }

    // MARK: Helpers

    /// Tells systemd; the trace lines of the callbacks that led here go out first, so nobody learns of a state
    /// before the journal has its callbacks.
    private func notify(_ assignments: [NotifyAssignment]) {
        deliverTraceLines()
        notifications.send(assignments)
    }

    /// Writes the trace lines that wait and lets journald take them, before somebody outside hears of what they
    /// record (systemd, a control client); while journald takes nothing, no one waits for it
    /// (``JournalWriter/waitForDelivery()``).
    func deliverTraceLines() {
        application.trace.flush()
        effects.deliverLogs()
    }

    static func writeError(_ text: String) {
        let line = Array((text + "\n").utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
