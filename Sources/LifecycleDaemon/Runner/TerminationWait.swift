//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

/// Termination's wait for background tasks (the lifecycle's §5): from `STOPPING=1` on, while tasks run, systemd hears
/// every second that the stop takes longer (`EXTEND_TIMEOUT_USEC=`), so its stop timeout never fires while the
/// budget lasts; when the budget runs out the tasks expire. The process exits once the tree is torn down and no
/// task runs — and, when the budget ran out, once the runs of lifecycle-bound work its expiration cancelled have
/// ended, for at most ``cancellationGrace``: a cancelled hosted server still closes its socket and logs that it
/// stopped, and none of that may come after the last line (docs/lifecycle.md §7).
@MainActor
final class TerminationWait {
    private let application: Application
    private let effects: DaemonEffects
    private let logger: Logger
    private let notify: @MainActor ([NotifyAssignment]) -> Void
    private let wait: TaskBudget
    private var deadline: ContinuousClock.Instant?
    private var budget = Duration.zero
    private var extensionTimer: (any ScheduledWork)?
    private var isTornDown = false
    /// The wait for cancelled runs to end, once it has begun; nil before.
    private var cancelledRuns: (any ScheduledWork)?
    private var cancellationGraceIsOver = false
    /// How long the exit waits for the runs that the background time's end cancelled: cancellation is cooperative,
    /// and a server that heard it closes its connections and its socket within milliseconds. Taken from the second
    /// the drain budget leaves for the teardown and the exit (``LameDuckStop/drainBudget(configured:)``).
    static let cancellationGrace = Duration.milliseconds(500)
    /// The termination ended cleanly (the tree torn down, no background task left) and the loop was told to exit 0.
    private(set) var hasExited = false

    init(
        application: Application,
        effects: DaemonEffects,
        logger: Logger,
        notify: @escaping @MainActor ([NotifyAssignment]) -> Void
    ) {
        self.application = application
        self.effects = effects
        self.logger = logger
        self.notify = notify
        self.wait = TaskBudget(name: "termination", application: application, schedule: effects.schedule, now: effects.now)
    }

    /// What is left of the budget while termination waits for background tasks (for status reports).
    var remaining: Duration? { wait.isWaiting ? wait.remaining : nil }

    /// Termination started (`STOPPING=1`): background tasks have `budget` from now.
    func begin(budget: Duration) {
        guard deadline == nil else { return }
        self.budget = budget
        deadline = effects.now() + budget
        waitIfNeeded()
    }

    /// The tree is torn down: exit as soon as no background task runs.
    func treeTornDown() {
        isTornDown = true
        exitIfDone()
    }

    /// The set of background tasks changed.
    func tasksDidChange() {
        wait.tasksDidChange()
        waitIfNeeded()
        exitIfDone()
    }

    /// A run of lifecycle-bound work ended.
    func runsDidChange() {
        exitIfDone()
    }

    private func waitIfNeeded() {
        guard let deadline, !wait.isWaiting, !application.backgroundTasks.isEmpty else { return }
        let remaining = max(.zero, deadline - effects.now())
        let tasks = application.backgroundTasks
        logger.info(
            "waiting for \(tasks.count) background task(s) before exit, up to \(remaining.formattedForLog)",
            metadata: [LogKey.tasks: .string(tasks.map(\.name).joined(separator: ","))]
        )
        let budget = self.budget
        wait.begin(remaining) { [logger] in
            logger.warning("background task budget of \(budget) used up; expiring tasks")
        } onSettled: { [unowned self] _ in
            extensionTimer?.cancel()
            extensionTimer = nil
            exitIfDone()
        }
        extendStopTimeout()
    }

    /// No background task is left, but runs whose background task ended when the budget ran out are still ending
    /// (their cancellation is under way): the exit waits for them, within ``cancellationGrace``.
    private func waitForCancelledRuns() {
        guard cancelledRuns == nil else { return }
        let runs = application.runsInProgress
        logger.info(
            "waiting up to \(Self.cancellationGrace.formattedForLog) for \(runs.count) cancelled run(s) to end",
            metadata: [LogKey.tasks: .string(runs.joined(separator: ","))]
        )
        notify([.extendTimeout(Self.cancellationGrace + .seconds(2))])
        cancelledRuns = effects.schedule(Self.cancellationGrace) { [weak self] in self?.cancellationGraceDidEnd() }
        if cancelledRuns == nil { cancellationGraceDidEnd() }
    }

    private func cancellationGraceDidEnd() {
        cancellationGraceIsOver = true
        let runs = application.runsInProgress
        if !runs.isEmpty {
            logger.warning(
                """
                \(runs.count) cancelled run(s) did not end within \(Self.cancellationGrace.formattedForLog) \
                (\(runs.joined(separator: ", "))): exiting without them; what they log now is lost or follows this line
                """
            )
        }
        exitIfDone()
    }

    /// Tells systemd the stop takes longer, a second at a time, while the wait lasts.
    private func extendStopTimeout() {
        guard wait.isWaiting, let remaining = wait.remaining, remaining > .zero else { return }
        notify([.extendTimeout(min(remaining, .seconds(1)) + .seconds(2))])
        extensionTimer = effects.schedule(.seconds(1)) { [weak self] in self?.extendStopTimeout() }
    }

    private func exitIfDone() {
        guard isTornDown, !hasExited, application.backgroundTasks.isEmpty else { return }
        guard application.runsInProgress.isEmpty || cancellationGraceIsOver else {
            waitForCancelledRuns()
            return
        }
        hasExited = true
        cancelledRuns?.cancel()
        cancelledRuns = nil
        extensionTimer?.cancel()
        extensionTimer = nil
        wait.cancel()
        // The last line ("terminated cleanly", or "terminated as a failure") is the daemon's, once the loop has returned
        // and everything is let go. A failure (restarts exhausted) exits with a status systemd's Restart=on-failure
        // acts on, not 64 or 78, which the unit's RestartPreventExitStatus= keeps from restarting.
        effects.exit(application.terminationFailure == nil ? 0 : ExitStatus.temporaryFailure.rawValue)
    }
}
