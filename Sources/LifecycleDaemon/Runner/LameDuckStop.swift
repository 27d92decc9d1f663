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

/// The lame-duck stop (docs/operations.md, "Containers and Kubernetes"): with `[Termination] LameDuckSec=` above 0,
/// a termination request first makes the application not ready (the `ready` probe fails, `STATUS=` says so) while it
/// serves on for the delay — the time an orchestrator takes to stop routing to it — and only then terminates as
/// always (drain, teardown). A second termination request during the delay terminates at once. The delay and the
/// drain stay inside `[Termination] StopTimeoutSec=` when it is set: what the delay used is taken from the drain's
/// budget.
@MainActor
final class LameDuckStop {
    private let application: Application
    private let effects: DaemonEffects
    private let logger: Logger
    private let notify: @MainActor ([NotifyAssignment]) -> Void
    /// The delay and the stop budget in force (a reload changes them for the next stop).
    private let settings: @MainActor () -> (delay: Duration, stopTimeout: Duration?)
    private var timer: (any ScheduledWork)?
    /// When the first termination request came: the stop budget counts from it.
    private(set) var requestedAt: ContinuousClock.Instant?
    private var deadline: ContinuousClock.Instant?
    private var waiting: [(cause: Cause, completion: RequestCompletion?)] = []
    /// Runs when the delay begins (the daemon calls off an upgrade under way: the new process would never hear of the
    /// termination).
    var delayDidBegin: (@MainActor () -> Void)?

    init(
        application: Application,
        effects: DaemonEffects,
        logger: Logger,
        settings: @escaping @MainActor () -> (delay: Duration, stopTimeout: Duration?),
        notify: @escaping @MainActor ([NotifyAssignment]) -> Void
    ) {
        self.application = application
        self.effects = effects
        self.logger = logger
        self.settings = settings
        self.notify = notify
    }

    /// Whether the delay runs: a termination was requested and is waiting for it.
    var isDelaying: Bool { timer != nil }

    /// What is left of the delay while it runs.
    var remaining: Duration? { deadline.map { max(.zero, $0 - effects.now()) } }

    /// A termination request: the delay begins (without one, or once termination has begun, it goes straight to the
    /// application); during the delay, it ends it.
    func terminate(cause: Cause, completion: RequestCompletion?) {
        if requestedAt == nil { requestedAt = effects.now() }
        let delay = settings().delay
        guard delay > .zero, !application.isTerminating, application.applicationState != .notRunning else {
            application.submit(.terminate, cause: cause, completion: completion)
            return
        }
        if timer != nil {
            logger.notice("a second termination request (\(cause)) during the lame-duck delay: terminating now")
            waiting.append((cause, completion))
            finish(cause: cause)
            return
        }
        waiting.append((cause, completion))
        deadline = effects.now() + delay
        application.stoppingReason = "stopping (lame duck, not ready)"
        logger.notice(
            "termination requested (\(cause)): not ready, serving on for \(delay.formattedForLog) before terminating",
            metadata: [LogKey.lameDuck: .string(delay.formattedForLog)]
        )
        notify([.stopping, .status(application.statusText)])
        timer = effects.schedule(delay) { [weak self] in self?.finish(cause: nil) }
        if timer == nil {
            finish(cause: nil)
        } else {
            delayDidBegin?()
        }
    }

    /// The delay is over (or cut short): terminate, with the first request's cause, unless `cause` cut it short.
    private func finish(cause: Cause?) {
        timer?.cancel()
        timer = nil
        deadline = nil
        let requests = waiting
        waiting = []
        guard let first = requests.first else { return }
        if cause == nil {
            logger.info("lame-duck delay over: terminating")
        }
        application.submit(.terminate, cause: cause ?? first.cause) { outcome in
            for request in requests { request.completion?(outcome) }
        }
    }

    /// The budget termination's wait for background tasks (the drain) gets: `configured`, less what the delay used of
    /// the stop budget, less a second for the teardown and the exit; the whole of `configured` without a stop budget.
    func drainBudget(configured: Duration) -> Duration {
        guard let stopTimeout = settings().stopTimeout else { return configured }
        let used = requestedAt.map { effects.now() - $0 } ?? .zero
        let reserve = min(.seconds(1), stopTimeout / 10)
        return max(.zero, min(configured, stopTimeout - used - reserve))
    }

    /// The warning at start (and at a reload) when the delay and the drain cannot fit the stop budget.
    static func fitWarning(delay: Duration, drain: Duration, stopTimeout: Duration?) -> String? {
        guard let stopTimeout, delay + drain > stopTimeout else { return nil }
        let reserve = min(.seconds(1), stopTimeout / 10)
        let left = max(.zero, stopTimeout - delay - reserve)
        return """
            [Termination] LameDuckSec=\(delay.formattedForLog) and [BackgroundTasks] BudgetSec=\(drain.formattedForLog) \
            exceed [Termination] StopTimeoutSec=\(stopTimeout.formattedForLog) (Kubernetes' terminationGracePeriodSeconds, \
            systemd's TimeoutStopSec=): a stop drains for at most \(left.formattedForLog) before its background tasks expire
            """
    }
}
