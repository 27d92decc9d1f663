import LifecycleKit
import LifecycleSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Runs a LifecycleKit application as a daemon: the main thread's sd-event loop reads the mapped signals and
/// delivers them as requests, drains the main queue, ends every turn with the layout and display passes, feeds the
/// watchdog, and tells systemd what happens (`READY=1`, `STATUS=`, `RELOADING=1`, `STOPPING=1`).
@MainActor
public final class Daemon: ApplicationHost {
    /// The configuration in force (replaced by a valid reload).
    public private(set) var configuration: DaemonConfiguration
    /// The options it was started with (a reload re-reads the file and re-applies them).
    public let options: DaemonOptions
    /// The application it runs.
    public let application: Application
    /// The loop that owns the main thread.
    public let loop: MainLoop

    private let notifier: SystemdNotifier
    private let logger: Logger
    /// The application's own configuration section, read again on every reload.
    private let applicationSection: (any ConfigurationSection.Type)?
    /// Hands a configuration (the first one, then each valid reload's) to the application.
    private let configure: @MainActor (DaemonConfiguration) -> Void
    private var signalSources: [MainLoop.Source] = []
    private var systemEvents: SystemEvents?
    private var terminationTimers: [MainLoop.Source] = []
    private var terminationDeadline: ContinuousClock.Instant?
    private var hasTerminated = false
    private var notifyFailureLogged = false
    /// Run by hand from a terminal (stdin a tty) outside systemd: job control and hangups apply.
    private let startedOnTerminal = !SystemdNotifier.isUnderSystemd && isatty(STDIN_FILENO) == 1

    /// Creates a daemon around an application whose delegate is already made.
    ///
    /// `configure` receives every configuration that takes effect: the first one before launch, then each one a
    /// reload read (between `applicationWillReload` and `applicationDidReload`).
    public init(
        configuration: DaemonConfiguration,
        options: DaemonOptions,
        application: Application,
        applicationSection: (any ConfigurationSection.Type)? = nil,
        notifier: SystemdNotifier,
        logger: Logger,
        configure: @escaping @MainActor (DaemonConfiguration) -> Void = { _ in }
    ) throws(SystemdError) {
        self.configuration = configuration
        self.options = options
        self.application = application
        self.applicationSection = applicationSection
        self.configure = configure
        self.notifier = notifier
        self.logger = logger
        self.loop = try MainLoop()
        application.host = self
        application.trace.logsEverythingAtInfo = configuration.traceAll
    }

    // MARK: Entry point

    /// The signals blocked first thing in `main`, before any thread exists: every signal the default map names.
    public static var signalsToBlockAtStart: [UnixSignal] { SignalMap.standard.signals }

    /// Runs a daemon whose application delegate `makeDelegate` builds, and returns the process exit code (sysexits).
    ///
    /// Call it on the main thread with ``signalsToBlockAtStart`` already blocked (``ApplicationMain`` does both);
    /// it blocks the rest of the configured map before it starts any thread. `configure` hands the delegate each
    /// configuration that takes effect (the first before launch, then every valid reload's).
    public static func run<Delegate: ApplicationDelegate>(
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
            return SysExit.configuration.rawValue
        }
        // Still single-threaded: make the mask match the configured map before Dispatch or logging start threads.
        adjustSignalMask(to: configuration.signalMap)

        let backend = LoggingBackend.bootstrap(identifier: options.programName, level: .debug)
        var logger = Logger(label: options.programName)
        // Under journald every event is stored (debug events at PRIORITY=7); on a terminal, debug lines only with
        // --trace, which raises them to info anyway.
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
            return try daemon.start()
        } catch {
            logger.critical("\(options.programName) cannot run its main loop: \(error)")
            return SysExit.osError.rawValue
        }
    }

    /// Blocks the signals of the map and unblocks default-map signals the configuration left unmapped.
    static func adjustSignalMask(to map: SignalMap) {
        MainLoop.blockSignals(map.signals)
        let unmapped = SignalMap.standard.signals.filter { map.actions[$0] == nil }
        var set = sigset_t()
        sigemptyset(&set)
        for signal in unmapped { sigaddset(&set, signal.rawValue) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Sets up the loop, launches the application and runs until it terminates; returns the exit code.
    public func start() throws(SystemdError) -> Int32 {
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
        let watchdog = try loop.enableWatchdog()
        if let hang = configuration.hangIn { installHang(in: hang) }
        logger.info(
            "\(options.programName) starting",
            metadata: [
                "signals": .string(
                    configuration.signalMap.signals.map { "\($0.name)=\(configuration.signalMap.actions[$0]!.rawValue)" }
                        .joined(separator: " ")
                ),
                "watchdog": .string(watchdog ? "on" : "off"),
            ]
        )
        // logind and memory pressure; started before the launch so that a stall while launching already counts.
        let events = SystemEvents(loop: loop, application: application, configuration: configuration, logger: logger)
        events.start()
        systemEvents = events
        configure(configuration)
        application.launch(into: configuration.launchInto, options: launchOptions())
        application.runEndOfTurn()
        return try loop.run()
    }

    private func launchOptions() -> LaunchOptions {
        let env = ProcessEnvironment.all()
        let underSystemd = SystemdNotifier.isUnderSystemd
        var facts: [String: String] = ["underSystemd": underSystemd ? "yes" : "no"]
        if let invocation = env["INVOCATION_ID"] { facts["invocationID"] = invocation }
        if let state = env["STATE_DIRECTORY"] { facts["stateDirectory"] = state }
        return LaunchOptions(reason: underSystemd ? .serviceManager : .user, environment: facts)
    }

    // MARK: Signals

    /// Whether SIGTSTP should stop the process after backgrounding: in a terminal, outside systemd.
    var stopsOnTerminalStop: Bool {
        startedOnTerminal && isatty(STDIN_FILENO) == 1
    }

    /// Whether a SIGHUP means the terminal went away rather than "reload": started by hand from a terminal, outside
    /// systemd, and the terminal has hung up (a hung-up terminal answers every query with EIO).
    var terminalHungUp: Bool {
        guard startedOnTerminal else { return false }
        return tcgetpgrp(STDIN_FILENO) < 0 && errno == EIO
    }

    private func handle(_ signal: UnixSignal) {
        guard let action = configuration.signalMap.actions[signal] else { return }
        let cause = Cause.signal(named: signal.name)
        switch action {
        case .background:
            application.requestEnterBackground(cause: cause)
            if signal == .terminalStop, stopsOnTerminalStop, application.applicationState == .background {
                // Job control: the shell's Ctrl-Z. The background callbacks have run; stop like any job, and `fg`
                // (SIGCONT) brings the application back to the foreground.
                application.runEndOfTurn()
                logger.info("stopped by SIGTSTP; `fg` or SIGCONT resumes")
                raise(SIGSTOP)
            }
        case .foreground:
            application.requestBecomeActive(cause: cause)
        case .reload:
            if signal == .hangup, terminalHungUp {
                // The shell's terminal closed: nobody is left to see the daemon or stop it, so end it cleanly
                // instead of reloading forever without a terminal. `kill -HUP` on a live terminal still reloads.
                logger.notice("the terminal hung up: terminating")
                application.requestTermination(cause: cause)
            } else {
                application.requestReload(cause: cause)
            }
        case .terminate:
            application.requestTermination(cause: cause)
        case .memoryWarning:
            application.requestMemoryWarning(cause: cause)
        case .inactive:
            application.requestResignActive(cause: cause)
        case .default:
            break
        }
    }

    // MARK: ApplicationHost

    public func applicationDidFinishLaunching(_ application: Application) {
        notify([.ready, .status(application.statusText)])
    }

    public func application(_ application: Application, didChangeStatus status: String) {
        notify([.status(status)])
    }

    public func applicationWillBeginReload(_ application: Application) {
        notify([.reloading])
    }

    public func applicationReloadConfiguration(_ application: Application) {
        do {
            let fresh = try options.resolveConfiguration(applicationSection: applicationSection)
            if fresh.signalMap != configuration.signalMap {
                logger.warning("the signal map changed; signal changes take effect when \(options.programName) restarts")
            }
            var applied = fresh
            applied.signalMap = configuration.signalMap
            configuration = applied
            systemEvents?.apply(configuration: applied)
            application.trace.logsEverythingAtInfo = applied.traceAll
            configure(applied)
            logger.info("configuration reloaded")
        } catch {
            logger.error("reload: \(error); keeping the previous configuration")
        }
    }

    public func applicationDidFinishReload(_ application: Application) {
        notify([.ready, .status(application.statusText)])
    }

    public func applicationWillBeginTermination(_ application: Application) {
        notify([.stopping])
    }

    public func applicationDidTerminate(_ application: Application) {
        hasTerminated = true
        finishTerminationIfPossible()
    }

    public func application(_ application: Application, backgroundTasksDidChange tasks: [BackgroundTask]) {
        systemEvents?.backgroundTasksDidChange(tasks)
        if hasTerminated { finishTerminationIfPossible() }
    }

    // MARK: Termination

    /// Exits once no background task runs; until then extends systemd's stop timeout, up to the budget, after
    /// which the tasks' expiration handlers run.
    private func finishTerminationIfPossible() {
        let tasks = application.backgroundTasks
        if tasks.isEmpty {
            for timer in terminationTimers { timer.cancel() }
            terminationTimers.removeAll()
            logger.info("terminated cleanly")
            loop.exit(code: 0)
            return
        }
        guard terminationDeadline == nil else { return }
        let budget = configuration.backgroundTaskBudget
        terminationDeadline = .now + budget
        logger.info(
            "waiting for \(tasks.count) background task(s) before exit, up to \(budget)",
            metadata: ["lifecycle.tasks": .string(tasks.map(\.name).joined(separator: ","))]
        )
        extendStopTimeout()
        do {
            terminationTimers.append(
                try loop.addTimer(after: budget) { [unowned self] in
                    MainActor.assumeIsolated {
                        logger.warning("background task budget of \(budget) used up; expiring tasks")
                        application.expireBackgroundTasks()
                    }
                }
            )
        } catch {
            logger.error("cannot arm the background task budget: \(error); expiring tasks now")
            application.expireBackgroundTasks()
        }
    }

    /// Tells systemd the stop takes longer, a second at a time, while background tasks run.
    private func extendStopTimeout() {
        guard let deadline = terminationDeadline, !application.backgroundTasks.isEmpty else { return }
        let remaining = deadline - .now
        guard remaining > .zero else { return }
        notify([.extendTimeout(min(remaining, .seconds(1)) + .seconds(2))])
        do {
            terminationTimers.append(
                try loop.addTimer(after: .seconds(1)) { [unowned self] in
                    MainActor.assumeIsolated { extendStopTimeout() }
                }
            )
        } catch {
            logger.error("cannot schedule the next stop timeout extension: \(error)")
        }
    }

    // MARK: Debug

    /// The watchdog test's switch: when the named callback fires, the main thread blocks forever, so the loop stops
    /// feeding the watchdog.
    private func installHang(in callback: String) {
        logger.warning("debug: the main thread will hang in \(callback)")
        application.trace.observe { [logger] event in
            guard event.event == callback else { return }
            logger.critical("debug: hanging in \(callback) (\(event.target)) on purpose")
            while true { sleep(3600) }
        }
    }

    // MARK: Helpers

    private func notify(_ assignments: [NotifyAssignment]) {
        do {
            try notifier.notify(assignments)
        } catch {
            if !notifyFailureLogged {
                notifyFailureLogged = true
                logger.warning("sd_notify failed: \(error)")
            }
        }
    }

    static func writeError(_ text: String) {
        let line = Array((text + "\n").utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
