//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import LifecycleKit
import LifecyclePrimitives
package import LifecycleSystemd
import Logging

/// Turns the system's notifications other than signals into application requests (docs/lifecycle.md §6):
///
/// - logind `PrepareForSleep(true)`: enter the background, holding the delay inhibitors until
///   `applicationDidEnterBackground` has returned and every background task has ended; tasks still running shortly
///   before logind's `InhibitDelayMaxSec` runs out are expired. `PrepareForSleep(false)`: take new inhibitors and
///   return to the foreground, if the sleep took the application out of it.
/// - logind `PrepareForShutdown(true)`: enter the background and release the inhibitors once
///   `applicationDidEnterBackground` has returned; background tasks are then covered by termination (systemd's
///   `SIGTERM` follows), which waits for them. `PrepareForShutdown(false)` (cancelled): as a resume.
///
/// Two delay inhibitors are held, one on sleep and one on shutdown (logind grants them separately), and they are
/// taken and released together. Only the one of the announced type delays the system (logind waits for every delay
/// lock of that type), but once the application is in the background with its work done, the other protects
/// nothing either: a shutdown announced during a sleep (or a sleep during a shutdown) is not handled a second time,
/// so a lock kept for it would only make logind wait its whole `InhibitDelayMaxSec` for nothing.
/// - memory pressure (a PSI trigger, rate-limited): a memory warning with cause `psi`.
///
/// A missing peer (no system bus, no logind, no PSI) costs one warning; everything else keeps working.
@MainActor
package final class SystemEvents {
    /// What logind asked for and how far the application got.
    package enum Phase: Hashable, Sendable {
        /// Nothing announced: the inhibitors are held (or being asked for).
        case awake
        /// A sleep or shutdown was announced; the inhibitors are held until the application is done.
        case preparing(Logind.Event)
        /// The inhibitors were released; waiting for the resume (or the cancellation).
        case released(Logind.Event)
    }

    /// Where the last sleep or shutdown announcement stands.
    package var phase: Phase {
        guard let preparation else { return .awake }
        return preparation.lockHeld ? .preparing(preparation.event) : .released(preparation.event)
    }

    /// Whether both logind delay inhibitors, sleep and shutdown, are held now.
    package var holdsInhibitors: Bool { logind?.holdsInhibitors ?? false }

    /// How long the sleep waits for background tasks when logind's `InhibitDelayMaxUSec` cannot be read
    /// (logind's own default).
    package static let defaultInhibitDelay = Duration.seconds(5)

    /// How long `READY=1` waits at launch for logind's subscriptions and delay inhibitors.
    static let readinessBudget = Duration.seconds(3)

    private let application: Application
    private let router: RequestRouter
    private let logger: Logger
    private let effects: DaemonEffects
    private var configuration: DaemonConfiguration
    private var logind: (any LogindConnection)?
    private var memoryPressure: (any MemoryPressureWatching)?
    private var preparation: Preparation?
    private var releaseCheckScheduled = false
    /// Waits for logind's set-up before `READY=1` (``whenReadyForAnnouncements(within:_:)``).
    private var readiness: (ready: @MainActor ([String]) -> Void, timer: (any ScheduledWork)?)?
    /// The sleep's wait for background tasks, bounded by logind's own wait.
    private let sleepWait: TaskBudget

    private struct Preparation {
        let event: Logind.Event
        let returnsToForeground: Bool
        let announced: ContinuousClock.Instant
        var lockHeld = true
    }

    init(
        application: Application,
        router: RequestRouter,
        configuration: DaemonConfiguration,
        logger: Logger,
        effects: DaemonEffects
    ) {
        self.application = application
        self.router = router
        self.configuration = configuration
        self.logger = logger
        self.effects = effects
        self.sleepWait = TaskBudget(name: "sleep", application: application, schedule: effects.schedule, now: effects.now)
    }

    // MARK: Starting and stopping

    /// Connects to logind (taking the delay inhibitors) and arms the memory pressure trigger, as configured. Call it
    /// before the application launches, so that a stall during launch already counts.
    package func start() {
        if configuration.watchLogind { startLogind() }
        if configuration.watchMemoryPressure { startMemoryPressure() }
    }

    /// Releases the inhibitors and stops watching.
    package func stop() {
        stopLogind()
        stopMemoryPressure()
    }

    /// Termination began: every later request is dropped ("terminate is final", docs/lifecycle.md §1), so a memory
    /// warning has nowhere to go. The trigger is let go at once: its close (an RCU grace period, on a thread of its
    /// own) then overlaps the rest of termination instead of following it, and the process exits that much sooner.
    /// logind stays until ``stop()``: the inhibitors are released last.
    package func terminationDidBegin() {
        guard memoryPressure != nil else { return }
        // A trigger kept in the file descriptor store stays there for the next process: this close is not the last.
        memoryPressure?.stop(keepingTheStoredTrigger: true)
        memoryPressure = nil
        logger.debug("memory pressure is no longer watched: termination began")
    }

    /// Applies a reloaded configuration: starts or stops logind and memory pressure watching, re-arms the trigger
    /// when its threshold or window changed, and takes a new minimum interval at once.
    package func apply(configuration fresh: DaemonConfiguration) {
        let old = configuration
        configuration = fresh
        if old.watchLogind != fresh.watchLogind {
            if fresh.watchLogind {
                startLogind()
            } else {
                stopLogind()
                logger.info("logind is no longer watched (Logind Watch=no)")
            }
        }
        let oldSettings = Self.memorySettings(old)
        let newSettings = Self.memorySettings(fresh)
        if old.watchMemoryPressure != fresh.watchMemoryPressure || oldSettings.trigger != newSettings.trigger {
            stopMemoryPressure()
            if fresh.watchMemoryPressure {
                startMemoryPressure()
            } else {
                logger.info("memory pressure is no longer watched (MemoryPressure Watch=no)")
            }
        } else if oldSettings.minimumInterval != newSettings.minimumInterval, let memoryPressure {
            memoryPressure.minimumInterval = newSettings.minimumInterval
            logger.info("memory warnings from pressure: at most one per \(newSettings.minimumInterval)")
        }
    }

    private func startLogind() {
        guard logind == nil else { return }
        do {
            let connection = try effects.connectLogind { [weak self] event in self?.handle(event) }
            logind = connection
            connection.takeInhibitors()
        } catch {
            logger.warning(
                """
                logind is not watched: there is no system bus (\(error)) Sleep and shutdown are not announced to \
                the application.
                """
            )
        }
    }

    /// Calls `ready` once logind's announcements are sure to reach the application and its delay inhibitors are
    /// answered (granted or refused): at once when logind is not watched or nothing is missing, else when the last of
    /// them arrives, or after `budget` with what is still missing. A sleep announced before then would be missed,
    /// or would not wait for the application, so the launch tells systemd it is ready only after it.
    func whenReadyForAnnouncements(within budget: Duration, _ ready: @escaping @MainActor (_ missing: [String]) -> Void) {
        guard let logind, !logind.awaiting.isEmpty else {
            ready([])
            return
        }
        readiness = (ready, nil)
        logind.observeSetup { [weak self] in self?.readinessProgressed(timedOut: false) }
        readiness?.timer = effects.schedule(budget) { [weak self] in self?.readinessProgressed(timedOut: true) }
    }

    private func readinessProgressed(timedOut: Bool) {
        guard let (ready, timer) = readiness else { return }
        let missing = logind?.awaiting ?? []
        guard timedOut || missing.isEmpty else { return }
        readiness = nil
        timer?.cancel()
        logind?.observeSetup {}
        ready(missing)
    }

    private func stopLogind() {
        sleepWait.cancel()
        preparation = nil
        logind?.close()
        logind = nil
    }

    private func startMemoryPressure() {
        guard memoryPressure == nil else { return }
        do {
            memoryPressure = try effects.watchMemoryPressure(Self.memorySettings(configuration)) { [weak self] in
                self?.memoryPressureFired()
            }
        } catch {
            logger.warning("\(error) Memory warnings come from signals only.")
        }
    }

    private func stopMemoryPressure() {
        memoryPressure?.stop()
        memoryPressure = nil
    }

    static func memorySettings(_ configuration: DaemonConfiguration) -> MemoryPressureMonitor.Settings {
        MemoryPressureMonitor.Settings(
            trigger: MemoryPressureTrigger(
                kind: .some,
                threshold: configuration.memoryPressureThreshold,
                window: configuration.memoryPressureWindow
            ),
            minimumInterval: configuration.memoryWarningMinimumInterval
        )
    }

    // MARK: logind

    /// Handles one announcement from logind (the client already dropped those from other senders).
    func handle(_ event: Logind.Event) {
        let source = RequestSource.logind(member: event.member)
        if event.isStarting {
            guard preparation == nil else {
                logger.notice("logind announced \(event) while still handling \(preparation!.event); ignored")
                return
            }
            let state = application.applicationState
            preparation = Preparation(
                event: event,
                returnsToForeground: state == .active || state == .inactive,
                announced: effects.now()
            )
            logger.info(
                "logind: the system prepares to \(Self.verb(event)); entering the background",
                metadata: [LogKey.logind: "\(event)"]
            )
            router.route(.enterBackground, from: source)
            // The transition has run by now, unless it was queued behind a running one: look again at the end of
            // the turn, when queued transitions are done too.
            releaseIfDone()
            scheduleReleaseCheck()
            if case .prepareForSleep = event, preparation?.lockHeld == true { armSleepBudget() }
            return
        }
        guard let finished = preparation, finished.event.member == event.member else {
            // A resume whose announcement this process never saw (it started in between): just hold the locks.
            logger.debug("logind announced \(event) without a matching announcement before it")
            logind?.takeInhibitors()
            return
        }
        sleepWait.cancel()
        preparation = nil
        logger.info(
            "logind: \(Self.aftermath(event)); taking new delay inhibitors",
            metadata: [LogKey.logind: "\(event)"]
        )
        // A lock still held (tasks outran logind's wait) carries over as the next one.
        logind?.takeInhibitors()
        if finished.returnsToForeground { router.route(.becomeActive, from: source) }
    }

    /// The application's set of background tasks changed (the daemon forwards its host callback).
    ///
    /// The inhibitors are released at the end of the loop turn at the earliest: a task can end inside a callback
    /// (even inside `applicationDidEnterBackground` itself), and the release must follow the whole transition.
    package func backgroundTasksDidChange(_ tasks: [BackgroundTask]) {
        scheduleReleaseCheck()
    }

    /// The sleep's wait for background tasks, while one is in progress (for status reports).
    package var sleepDeadline: ContinuousClock.Instant? { sleepWait.deadline }

    /// The logind delay locks held now (for status reports).
    package var heldLocks: Set<Logind.LockType> { logind?.heldLocks ?? [] }

    /// Whether logind's announcements are followed (connected to the system bus).
    package var isWatchingLogind: Bool { logind != nil }

    /// The file memory pressure is read from, while it is watched (for status reports).
    package var memoryPressureSource: MemoryPressureSource? { memoryPressure?.source }

    /// Whether memory pressure is watched.
    package var isWatchingMemoryPressure: Bool { memoryPressure != nil }

    private func scheduleReleaseCheck() {
        guard preparation?.lockHeld == true, !releaseCheckScheduled else { return }
        releaseCheckScheduled = true
        application.scheduleTurnEndWork { [weak self] in
            guard let self else { return }
            releaseCheckScheduled = false
            releaseIfDone()
        }
    }

    /// Releases the inhibitors once the application is in the background (or gone) and, for a sleep, no background
    /// task runs.
    private func releaseIfDone() {
        guard let preparation, preparation.lockHeld else { return }
        switch application.applicationState {
        case .background, .terminated, .notRunning:
            break
        case .active, .inactive:
            return
        }
        if case .prepareForSleep = preparation.event, !application.backgroundTasks.isEmpty { return }
        release(reason: "the application is in the background and no background task runs")
    }

    private func armSleepBudget() {
        let delay = logind?.inhibitDelayMax ?? Self.defaultInhibitDelay
        let budget = Self.sleepBudget(forInhibitDelay: delay)
        let tasks = application.backgroundTasks
        logger.info(
            """
            logind: holding the sleep for \(tasks.count) background task(s), up to \(budget) \
            (InhibitDelayMaxSec \(delay))
            """,
            metadata: [LogKey.tasks: "\(tasks.map(\.name).joined(separator: ","))"]
        )
        // Settling when the tasks end is the release check's job (at the end of the turn); expiry is this wait's.
        sleepWait.begin(budget) { [logger] in
            logger.warning("logind: background tasks outlived the sleep budget of \(budget); expiring them")
        } onSettled: { [weak self] outcome in
            guard let self, outcome == .expired, preparation?.lockHeld == true else { return }
            release(reason: "the sleep budget is used up")
        }
    }

    private func release(reason: String) {
        guard var current = preparation, current.lockHeld else { return }
        sleepWait.cancel()
        current.lockHeld = false
        preparation = current
        logind?.releaseInhibitors()
        let held = effects.now() - current.announced
        logger.info(
            "logind: released the delay inhibitors \(held.wholeMilliseconds) ms after \(current.event): \(reason)",
            metadata: [LogKey.inhibitHeldMilliseconds: "\(held.wholeMilliseconds)"]
        )
    }

    /// The part of logind's wait that background tasks may use: the rest lets their expiration handlers run and
    /// the lock be released before logind stops waiting.
    static func sleepBudget(forInhibitDelay delay: Duration) -> Duration {
        let margin = min(delay / 10, .milliseconds(500))
        return delay - margin
    }

    private static func verb(_ event: Logind.Event) -> String {
        switch event {
        case .prepareForSleep: "sleep"
        case .prepareForShutdown: "shut down"
        }
    }

    private static func aftermath(_ event: Logind.Event) -> String {
        switch event {
        case .prepareForSleep: "the system resumed"
        case .prepareForShutdown: "the shutdown was cancelled"
        }
    }

    // MARK: Memory pressure

    private func memoryPressureFired() {
        router.route(.memoryWarning, from: .memoryPressure)
    }
}
