//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Dispatch
public import LifecycleKit
public import Logging
public import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The whole application as a swift-service-lifecycle `Service`, for a program that already runs a
/// `ServiceGroup`: the group's graceful shutdown is the application's termination.
///
/// `run()` launches the application on the main actor and returns once it has terminated: the group's graceful
/// shutdown (SIGTERM, by the group's own signals) requests termination, which walks the usual path
/// (`applicationWillResignActive`, `applicationDidEnterBackground`, `applicationWillTerminate`, the tree torn
/// down) and then waits for background tasks, up to ``backgroundTaskBudget``. Cancellation of `run()` terminates
/// the same way without waiting for background tasks.
///
/// The other lifecycle signals are mapped with Dispatch signal sources (no signalfd here: the main thread belongs
/// to the concurrency runtime): by default `SIGUSR1` background, `SIGUSR2` and `SIGCONT` foreground, `SIGHUP`
/// reload, `SIGRTMIN+2` memory warning, `SIGRTMIN+3` inactive. End-of-turn work (layout, display, did-callbacks)
/// runs in a main-actor job after each turn that needs it. Readiness, the watchdog and journald belong to the
/// daemon runner (`LifecycleDaemon`); under a `ServiceGroup` they are the program's own business.
///
/// ```swift
/// let group = ServiceGroup(
///     services: [ApplicationService { AppDelegate() }, otherService],
///     gracefulShutdownSignals: [.sigterm],
///     logger: logger
/// )
/// try await group.run()
/// ```
public final class ApplicationService: Service, CustomStringConvertible {
    /// The daemon's default signal map (docs/lifecycle.md §6) by signal number (`SIGRTMIN + 2` for the memory
    /// warning), without termination, which the group owns (its graceful-shutdown signals), and without `SIGTSTP`,
    /// which keeps stopping the process (the job control that follows the background is the daemon runner's).
    public static var defaultSignals: [Int32: LifecycleRequest] {
        var signals: [Int32: LifecycleRequest] = [:]
        for (name, request) in standardSignalRequests where request != .terminate && name != "SIGTSTP" {
            signals[signalNumber(named: name)] = request
        }
        return signals
    }

    /// The number of a signal the default map names: `SIGRTMIN+n` counts from the C library's first real-time signal.
    // Only the names of the core's table (standardSignalRequests; the tests check each): the daemon reads any name
    // through LifecycleSystemd's UnixSignal, which this module does not link.
    private static func signalNumber(named name: String) -> Int32 {
        let realTime = "SIGRTMIN+"
        if name.hasPrefix(realTime), let offset = Int32(name.dropFirst(realTime.count)) {
            return Int32(__libc_current_sigrtmin()) + offset
        }
        switch name {
        case "SIGUSR1": return SIGUSR1
        case "SIGUSR2": return SIGUSR2
        case "SIGCONT": return SIGCONT
        case "SIGHUP": return SIGHUP
        default: preconditionFailure("\(name), in the default signal map, has no number in signalNumber(named:)")
        }
    }

    /// How long termination waits for background tasks before their expiration handlers run.
    public let backgroundTaskBudget: Duration
    private let makeDelegate: @MainActor @Sendable () -> any ApplicationDelegate
    private let signals: [Int32: LifecycleRequest]
    private let logger: Logger

    public var description: String { "ApplicationService" }

    /// An application whose delegate `makeDelegate` makes, on the main actor, when the service runs; `signals` maps
    /// signal numbers to what each asks for.
    public init(
        signals: [Int32: LifecycleRequest] = ApplicationService.defaultSignals,
        backgroundTaskBudget: Duration = .seconds(30),
        logger: Logger = Logger(label: "lifecycle"),
        makeDelegate: @escaping @MainActor @Sendable () -> any ApplicationDelegate
    ) {
        self.signals = signals
        self.backgroundTaskBudget = backgroundTaskBudget
        self.logger = logger
        self.makeDelegate = makeDelegate
    }

    public func run() async throws {
        let host = await MainActor.run { ServiceHost(delegate: makeDelegate(), budget: backgroundTaskBudget, logger: logger) }
        let sources = Self.installSignalSources(signals) { request in
            Task { @MainActor in host.handle(request) }
        }
        defer { for source in sources { source.cancel() } }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await host.runUntilTerminated()
            } onGracefulShutdown: {
                Task { @MainActor in host.terminate(cause: "service-lifecycle:gracefulShutdown", waitForTasks: true) }
            }
        } onCancel: {
            Task { @MainActor in host.terminate(cause: "service-lifecycle:cancellation", waitForTasks: false) }
        }
        // Terminated as a failure (a task's restarts exhausted): the group hears an error, as from any failed service.
        if let failure = await MainActor.run(body: { host.application.terminationFailure }) {
            throw TerminationFailure(reason: failure)
        }
    }

    /// The application terminated as a failure (`Application.requestTermination(cause:failing:)`): what `run()`
    /// throws, so that its `ServiceGroup` ends as after any failed service.
    public struct TerminationFailure: Error, CustomStringConvertible {
        /// Why the application terminated.
        public let reason: String

        public var description: String { "the application terminated as a failure: \(reason)" }
    }

    // Made outside any actor: a handler closure formed in a main-actor context would be main-actor isolated, and
    // Dispatch calls it on its own queue.
    private nonisolated static func installSignalSources(
        _ signals: [Int32: LifecycleRequest],
        deliver: @escaping @Sendable (LifecycleRequest) -> Void
    ) -> [any DispatchSourceSignal] {
        let queue = DispatchQueue(label: "lifecycle.signals")
        return signals.map { signal, request in
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler { deliver(request) }
            source.resume()
            return source
        }
    }
}

/// Hosts the application on the main actor for ``ApplicationService``: ends turns, and resumes `run()` once the
/// application has terminated and its background tasks are done.
@MainActor
final class ServiceHost: ApplicationHost {
    let application: Application
    private let budget: Duration
    private var endOfTurnScheduled = false
    private var terminated: CheckedContinuation<Void, Never>?
    private var hasTerminated = false
    /// Terminated, and its background tasks are done (or no longer waited for): `run()` may return.
    private var isFinished = false
    private var waitsForTasks = true
    /// Termination's wait for background tasks: the core's budget, timed by Swift concurrency's clock.
    private lazy var terminationBudget = TaskBudget(name: "termination", application: application) {
        [unowned self] delay, work in
        self.application(self.application, schedule: work, after: delay)
    }

    init(delegate: any ApplicationDelegate, budget: Duration, logger: Logger) {
        application = Application(delegate: delegate, logger: logger)
        self.budget = budget
        application.host = self
    }

    func runUntilTerminated() async {
        application.launch(options: LaunchOptions(reason: .serviceManager))
        application.runEndOfTurn()
        if isFinished { return }
        await withCheckedContinuation { terminated = $0 }
    }

    func handle(_ request: LifecycleRequest) {
        guard request != .terminate else {
            terminate(cause: "signal", waitForTasks: true)
            return
        }
        application.submit(request, cause: Cause(rawValue: "signal"))
        application.runEndOfTurn()
    }

    func terminate(cause: String, waitForTasks: Bool) {
        waitsForTasks = waitsForTasks && waitForTasks
        application.requestTermination(cause: Cause(rawValue: cause))
        application.runEndOfTurn()
        // Cancelled while termination waited for its tasks: it waits no longer.
        if hasTerminated, !waitsForTasks { finish() }
    }

    func applicationNeedsEndOfTurn(_ application: Application) {
        guard !endOfTurnScheduled else { return }
        endOfTurnScheduled = true
        Task { @MainActor in
            self.endOfTurnScheduled = false
            self.application.runEndOfTurn()
        }
    }

    func applicationDidTerminate(_ application: Application) {
        hasTerminated = true
        guard waitsForTasks else { return finish() }
        // Settles at once when no task runs; otherwise when the last one ends, or (their expiration handlers run
        // first) when the budget runs out.
        terminationBudget.begin(budget) { [weak self] _ in self?.finish() }
    }

    func application(_ application: Application, backgroundTasksDidChange tasks: [BackgroundTask]) {
        terminationBudget.tasksDidChange()
    }

    func application(
        _ application: Application,
        schedule work: @escaping @MainActor () -> Void,
        after delay: Duration
    ) -> (any ScheduledWork)? {
        SleepingWork(after: delay, work)
    }

    private func finish() {
        isFinished = true
        terminationBudget.cancel()
        terminated?.resume()
        terminated = nil
    }
}
