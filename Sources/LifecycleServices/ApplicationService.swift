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
    /// What a mapped signal asks the application for.
    public enum SignalRequest: Sendable, Hashable {
        /// Enter the background.
        case background
        /// Return to the foreground (active).
        case foreground
        /// Become inactive (an interruption).
        case inactive
        /// Reload.
        case reload
        /// Deliver a memory warning.
        case memoryWarning
    }

    /// The default signal map without termination (the group owns SIGTERM and SIGINT).
    public static var defaultSignals: [Int32: SignalRequest] {
        let realTimeMin = Int32(__libc_current_sigrtmin())
        return [
            SIGUSR1: .background, SIGUSR2: .foreground, SIGCONT: .foreground, SIGHUP: .reload,
            realTimeMin + 2: .memoryWarning, realTimeMin + 3: .inactive,
        ]
    }

    /// How long termination waits for background tasks before their expiration handlers run.
    public let backgroundTaskBudget: Duration
    private let makeDelegate: @MainActor @Sendable () -> any ApplicationDelegate
    private let signals: [Int32: SignalRequest]
    private let logger: Logger

    public var description: String { "ApplicationService" }

    /// An application whose delegate `makeDelegate` makes, on the main actor, when the service runs.
    public init(
        signals: [Int32: SignalRequest] = ApplicationService.defaultSignals,
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
    }

    // Made outside any actor: a handler closure formed in a main-actor context would be main-actor isolated, and
    // Dispatch calls it on its own queue.
    private nonisolated static func installSignalSources(
        _ signals: [Int32: SignalRequest],
        deliver: @escaping @Sendable (SignalRequest) -> Void
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
    private var waitsForTasks = true
    private var budgetTask: Task<Void, Never>?

    init(delegate: any ApplicationDelegate, budget: Duration, logger: Logger) {
        application = Application(delegate: delegate, logger: logger)
        self.budget = budget
        application.host = self
    }

    func runUntilTerminated() async {
        application.launch(options: LaunchOptions(reason: .serviceManager))
        application.runEndOfTurn()
        if hasTerminated, application.backgroundTasks.isEmpty { return }
        await withCheckedContinuation { terminated = $0 }
    }

    func handle(_ request: ApplicationService.SignalRequest) {
        let cause = Cause(rawValue: "signal")
        switch request {
        case .background: application.requestEnterBackground(cause: cause)
        case .foreground: application.requestBecomeActive(cause: cause)
        case .inactive: application.requestResignActive(cause: cause)
        case .reload: application.requestReload(cause: cause)
        case .memoryWarning: application.requestMemoryWarning(cause: cause)
        }
        application.runEndOfTurn()
    }

    func terminate(cause: String, waitForTasks: Bool) {
        waitsForTasks = waitsForTasks && waitForTasks
        application.requestTermination(cause: Cause(rawValue: cause))
        application.runEndOfTurn()
        finishIfDone()
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
        if !application.backgroundTasks.isEmpty, waitsForTasks {
            let budget = self.budget
            budgetTask = Task { @MainActor [weak self] in
                try? await Task.sleep(for: budget)
                guard !Task.isCancelled else { return }
                self?.application.expireBackgroundTasks()
            }
        }
        finishIfDone()
    }

    func application(_ application: Application, backgroundTasksDidChange tasks: [BackgroundTask]) {
        finishIfDone()
    }

    private func finishIfDone() {
        guard hasTerminated else { return }
        if waitsForTasks, !application.backgroundTasks.isEmpty { return }
        budgetTask?.cancel()
        terminated?.resume()
        terminated = nil
    }
}
