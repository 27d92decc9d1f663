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
/// task runs.
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

    /// Tells systemd the stop takes longer, a second at a time, while the wait lasts.
    private func extendStopTimeout() {
        guard wait.isWaiting, let remaining = wait.remaining, remaining > .zero else { return }
        notify([.extendTimeout(min(remaining, .seconds(1)) + .seconds(2))])
        extensionTimer = effects.schedule(.seconds(1)) { [weak self] in self?.extendStopTimeout() }
    }

    private func exitIfDone() {
        guard isTornDown, !hasExited, application.backgroundTasks.isEmpty else { return }
        hasExited = true
        extensionTimer?.cancel()
        extensionTimer = nil
        wait.cancel()
        // The last line ("terminated cleanly", or "terminated as a failure") is the daemon's, once the loop has returned
        // and everything is let go. A failure (restarts exhausted) exits with a status systemd's Restart=on-failure
        // acts on, not 64 or 78, which the unit's RestartPreventExitStatus= keeps from restarting.
        effects.exit(application.terminationFailure == nil ? 0 : ExitStatus.temporaryFailure.rawValue)
    }
}
