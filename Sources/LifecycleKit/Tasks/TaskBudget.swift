//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Work scheduled for later on the main actor that can be called off: a main-loop timer, a test's manual clock.
@MainActor
package protocol ScheduledWork: AnyObject {
    /// Calls the work off; harmless after it ran or was cancelled.
    func cancel()
}

/// Runs work on the main actor after a delay; nil when the host has no timers (nothing then expires).
package typealias WorkScheduler = @MainActor (Duration, @escaping @MainActor () -> Void) -> (any ScheduledWork)?

/// A budget of time for the application's background tasks.
///
/// ``begin(_:onSettled:)`` starts the wait; it settles when no background task is left, or when the budget runs out:
/// then the tasks still running expire (their expiration handlers run, oldest first) and it settles as expired.
/// Termination, a sleep and the background time all wait for background tasks this way, each with its own budget.
@MainActor
package final class TaskBudget {
    /// How a wait ended.
    package enum Outcome: Sendable, Hashable {
        /// Every background task ended in time (or none was running).
        case tasksEnded
        /// The budget ran out; the tasks still running were expired.
        case expired
    }

    /// What is waiting, for logs: `termination`, `sleep`, `background time`.
    package let name: String
    /// When the budget runs out, while waiting.
    package private(set) var deadline: ContinuousClock.Instant?
    /// Whether a wait is in progress.
    package var isWaiting: Bool { onSettled != nil }

    private weak var application: Application?
    private let schedule: WorkScheduler
    private let now: @MainActor () -> ContinuousClock.Instant
    private var timer: (any ScheduledWork)?
    private var onSettled: (@MainActor (Outcome) -> Void)?
    private var willExpire: (@MainActor () -> Void)?
    private var isExpiring = false

    /// A budget for `application`'s background tasks, timed by `schedule`.
    package init(
        name: String,
        application: Application,
        schedule: @escaping WorkScheduler,
        now: @escaping @MainActor () -> ContinuousClock.Instant = { .now }
    ) {
        self.name = name
        self.application = application
        self.schedule = schedule
        self.now = now
    }

    /// How much of the budget is left, while waiting.
    package var remaining: Duration? {
        deadline.map { max(.zero, $0 - now()) }
    }

    /// Starts waiting for the running background tasks, for at most `budget`; settles at once when none runs.
    /// `willExpire` runs when the budget is used up, before the tasks expire. A wait already in progress keeps its
    /// deadline and its handlers.
    package func begin(
        _ budget: Duration,
        willExpire: (@MainActor () -> Void)? = nil,
        onSettled: @escaping @MainActor (Outcome) -> Void
    ) {
        guard !isWaiting, let application else { return }
        guard !application.backgroundTasks.isEmpty else {
            onSettled(.tasksEnded)
            return
        }
        deadline = now() + budget
        self.onSettled = onSettled
        self.willExpire = willExpire
        timer = schedule(budget) { [weak self] in self?.expire() }
    }

    /// The set of background tasks changed: settles once none is left.
    package func tasksDidChange() {
        guard isWaiting, !isExpiring, application?.backgroundTasks.isEmpty ?? true else { return }
        settle(.tasksEnded)
    }

    /// Stops waiting without settling (the wait no longer matters).
    package func cancel() {
        timer?.cancel()
        timer = nil
        deadline = nil
        onSettled = nil
        willExpire = nil
    }

    private func expire() {
        timer = nil
        guard isWaiting else { return }
        isExpiring = true
        willExpire?()
        application?.expireBackgroundTasks()
        isExpiring = false
        settle(.expired)
    }

    private func settle(_ outcome: Outcome) {
        let handler = onSettled
        cancel()
        handler?(outcome)
    }
}
