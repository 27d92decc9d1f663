//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
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

    /// Runs of lifecycle-bound work that have started and not ended, by name (`root/http: services`), oldest first:
    /// whether asked to stop or not. Termination's exit waits for the ones cancelled when the background time ran out
    /// (their background task is ended then, but their work is still finishing), so nothing they log comes after the
    /// last line (docs/lifecycle.md §7).
    package var runsInProgress: [String] { runningTasks.map(\.name) }

    /// A run of `task` started (``runsInProgress``).
    func lifecycleRunDidStart(_ task: LifecycleTask, named name: String) {
        runningTasks.append((ObjectIdentifier(task), name))
    }

    /// A run of `task` ended; the host hears it (``ApplicationHost/applicationRunsDidChange(_:)``).
    func lifecycleRunDidEnd(_ task: LifecycleTask) {
        guard let index = runningTasks.firstIndex(where: { $0.task == ObjectIdentifier(task) }) else { return }
        runningTasks.remove(at: index)
        host?.applicationRunsDidChange(self)
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
