//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Logging

extension Application {
    /// Asks for termination as a failure: the same path as ``requestTermination(cause:)``, and the daemon then exits
    /// with status 75 (`EX_TEMPFAIL`) rather than 0, naming `reason`, so that systemd's `Restart=` brings the service
    /// back with its own backoff. The first reason given is kept.
    public func requestTermination(cause: Cause = .api, failing reason: String) {
        if terminationFailure == nil, applicationState != .terminated {
            terminationFailure = reason
            logger.error("terminating as a failure: \(reason)", metadata: [LogKey.cause: "\(cause)"])
        }
        requestTermination(cause: cause)
    }

    /// A controller's task exhausted its restarts: the delegate hears it (traced as a delegate event).
    func reportExhaustedRestarts(of task: LifecycleTask, error: any Error) {
        traceDelegateEvent(
            TraceEventName.applicationLifecycleTaskDidExhaustRestarts,
            detail: "\(task.name): \(error)"
        )
        delegate.application(self, lifecycleTask: task, didExhaustRestartsWithError: error)
    }

    /// The time now on the host's clock (what restart periods are measured on).
    package var now: ContinuousClock.Instant {
        host?.currentTime(of: self) ?? .now
    }

    /// Runs `work` on the main actor after `delay`, on the host's timers; without a host that has timers, on a task
    /// that sleeps.
    package func schedule(after delay: Duration, _ work: @escaping @MainActor () -> Void) -> any ScheduledWork {
        if let scheduled = host?.application(self, schedule: work, after: delay) { return scheduled }
        return SleepingWork(after: delay, work)
    }
}

/// Work run on the main actor after a delay by a task that sleeps (for hosts without timers); cancelling it cancels
/// the task.
@MainActor
package final class SleepingWork: ScheduledWork {
    private var task: Task<Void, Never>?

    package init(after delay: Duration, _ work: @escaping @MainActor () -> Void) {
        task = Task { @MainActor in
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled else { return }
            work()
        }
    }

    package func cancel() {
        task?.cancel()
        task = nil
    }
}
