//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives

/// When a controller's lifecycle-bound work runs (``ViewController/task(_:while:restartPolicy:priority:operation:)``).
public enum LifecycleActivity: String, Sendable, Hashable, CaseIterable {
    /// While the controller is on screen (from `viewDidAppear` to `viewWillDisappear`) and the application is in
    /// the foreground (active or inactive): the default, what serving means.
    case visibleInForeground
    /// While the controller is on screen, in the foreground and in the background.
    case visible
}

/// Why a run of lifecycle-bound work is asked to stop.
public enum LifecycleStopReason: String, Sendable, Hashable {
    /// The application entered the background (or terminates: termination passes through the background).
    case background
    /// The controller is leaving the window (pushed over, popped, dismissed, torn down).
    case disappearance
    /// The task was cancelled (``LifecycleTask/cancel()``) or its controller went away.
    case cancellation
}

/// One run of lifecycle-bound work: the body to run, and how to ask it to end beyond Task cancellation.
public struct LifecycleRun: Sendable {
    /// The work; it returns (or throws) when it is done.
    public var body: @Sendable () async throws -> Void
    /// Asks the work to end gracefully (a server stops accepting and drains) and returns true, or returns false to
    /// have it cancelled instead; nil: always cancelled. Not called for ``LifecycleStopReason/cancellation``.
    public var stop: (@Sendable (LifecycleStopReason) -> Bool)?
    /// Runs instead of ``body`` when the run is stopped before its body began (it was waiting for the previous run
    /// to end): gives back what making the run took (a hosted server's listening sockets).
    package var abandon: (@Sendable () async -> Void)?

    /// Describes a run.
    public init(
        body: @escaping @Sendable () async throws -> Void,
        stop: (@Sendable (LifecycleStopReason) -> Bool)? = nil
    ) {
        self.body = body
        self.stop = stop
    }
}

/// Asynchronous work bound to a controller's lifecycle: it starts when its ``activity`` begins (the controller
/// appears, the application returns to the foreground) and is asked to stop when it ends (the controller
/// disappears, the application enters the background). It starts again the next time, once the previous run has
/// ended.
///
/// While a run is stopping, the application holds a background task for it, so termination (systemd's stop, with
/// `EXTEND_TIMEOUT_USEC=`) and a sleep (logind's delay inhibitor) wait for it to end, bounded by the background
/// time: when that runs out the run is cancelled and the background task ended.
///
/// A run that fails — throws while it should run — is reported to the controller
/// (``ViewController/lifecycleTask(_:didFailWithError:)``), to the delegate and in the trace, and the main loop
/// carries on; then the task's ``restartPolicy`` decides: start again after a delay while the work should run, or,
/// past its limit, escalate (``ViewController/lifecycleTask(_:didExhaustRestartsWithError:)``, then the delegate's
/// `application(_:lifecycleTask:didExhaustRestartsWithError:)`, which terminates the application by default). A
/// restart waiting for its delay is called off by a background or a disappearance, which is not a failure; a run
/// that returns is done and starts again at the next appearance or foreground.
///
/// Each step is in the trace on the controller's path, with the task's name in the detail: `taskDidStart`,
/// `taskWillStop`, then `taskDidEnd` or `lifecycleTask(_:didFailWithError:)`, then `taskWillRestart` (the delay and
/// the error) or `lifecycleTask(_:didExhaustRestartsWithError:)`.
@MainActor
public final class LifecycleTask {
    /// The name in the trace, logs and the background task.
    public let name: String
    /// When the work runs.
    public let activity: LifecycleActivity
    /// Whether a run is in progress, started or stopping.
    public var isRunning: Bool { current != nil || stopping != nil }
    /// Whether a run is in progress and has not been asked to stop.
    public var isActive: Bool { current != nil }
    /// How many runs have started.
    public private(set) var runCount = 0
    /// What happens when a run fails.
    public let restartPolicy: RestartPolicy
    /// How many runs have failed.
    public private(set) var failureCount = 0
    /// How many runs were started again by the ``restartPolicy`` after a failure.
    public private(set) var restartCount = 0
    /// Whether the last failure was past the policy's limit: no restart follows until the work's activity begins
    /// again (the next appearance or return to the foreground).
    public private(set) var hasExhaustedRestarts = false
    /// The error of the last failed run.
    public private(set) var lastError: (any Error)?

    // Weak: a run that is still stopping outlives a controller released meanwhile (a popped controller whose server
    // drains), and its last events are then traced under the controller's last path.
    private weak var controller: ViewController?
    private weak var application: Application?
    private var lastPath: String
    private let priority: TaskPriority?
    private let makeRun: @MainActor () -> LifecycleRun
    private var current: Active?
    private var stopping: Active?
    private var isCancelled = false
    private var restarts = RestartRecord()
    /// A restart waiting for its delay.
    private var pendingRestart: (any ScheduledWork)?
    /// The application that counts the run in progress (``Application/runsInProgress``), until it ends.
    private weak var countedBy: Application?

    private struct Active {
        let generation: Int
        let task: Task<Void, Never>
        let stop: (@Sendable (LifecycleStopReason) -> Bool)?
        var backgroundTask: BackgroundTaskIdentifier = .invalid
    }

    init(
        name: String,
        activity: LifecycleActivity,
        restartPolicy: RestartPolicy,
        priority: TaskPriority?,
        controller: ViewController,
        makeRun: @escaping @MainActor () -> LifecycleRun
    ) {
        self.name = name
        self.activity = activity
        self.restartPolicy = restartPolicy
        self.priority = priority
        self.controller = controller
        self.lastPath = controller.identifier
        self.makeRun = makeRun
    }

    /// Stops the task for good: the current run is asked to stop and no run starts again.
    public func cancel() {
        isCancelled = true
        cancelPendingRestart()
        stop(reason: .cancellation)
    }

    /// Starts or stops the work as the controller's visibility and the application's foreground say.
    func update(visible: Bool, foreground: Bool, reason: LifecycleStopReason) {
        let wanted: Bool
        switch activity {
        case .visibleInForeground: wanted = visible && foreground
        case .visible: wanted = visible
        }
        // An exhausted task may run again once its activity begins anew (the next appearance or foreground).
        if wanted, !self.wanted { hasExhaustedRestarts = false }
        self.wanted = wanted
        if wanted, !isCancelled, current == nil, pendingRestart == nil, !hasExhaustedRestarts {
            start()
        } else if !wanted {
            // A restart waiting for its delay is called off, which is not a failure.
            cancelPendingRestart()
            if current != nil { stop(reason: reason) }
        }
    }

    /// Whether the work should run now (its activity lasts), as the last update said.
    private var wanted = false

    /// The controller is going away: stop for good, without reaching back to it.
    func controllerWillDeinitialize(path: String) {
        lastPath = path
        controller = nil
        cancel()
    }

    private func start() {
        runCount += 1
        let generation = runCount
        let run = makeRun()
        // A run starts once the previous one has ended: a server binds its port again only after the old listener
        // closed.
        let previous = stopping?.task
        let body = run.body
        let abandon = run.abandon
        // The task holds this object until the run has ended and is accounted for.
        let task = Task(priority: priority) {
            await previous?.value
            var failure: (any Error)?
            if !Task.isCancelled {
                do {
                    try await body()
                } catch is CancellationError {
                    // Asked to stop by cancellation: not a failure.
                } catch {
                    failure = error
                }
            } else {
                await abandon?()
            }
            self.runDidEnd(generation: generation, failure: failure)
        }
        current = Active(generation: generation, task: task, stop: run.stop)
        trace(TraceEventName.taskDidStart)
        if countedBy == nil, let application = controller?.application ?? application {
            countedBy = application
            application.lifecycleRunDidStart(self, named: "\(lastPath): \(name)")
        }
    }

    private func stop(reason: LifecycleStopReason) {
        guard var run = current else { return }
        current = nil
        trace(TraceEventName.taskWillStop)
        if stopping != nil {
            // The previous run has not ended, so this one is still waiting for it and never started its body:
            // cancel it. The previous one keeps its background task until it ends.
            run.task.cancel()
            return
        }
        if let application = controller?.application ?? application {
            let task = run.task
            run.backgroundTask = application.beginBackgroundTask(withName: "\(lastPath): \(name)", owner: lastPath) {
                // The background time ran out: stop waiting, and stop the work the hard way.
                task.cancel()
            }
        }
        if reason == .cancellation || run.stop?(reason) != true {
            run.task.cancel()
        }
        stopping = run
    }

    private func runDidEnd(generation: Int, failure: (any Error)?) {
        // Ended by itself while it should run (not asked to stop): a failure is the restart policy's to handle.
        let endedWhileWanted = current?.generation == generation
        if let failure {
            failureCount += 1
            lastError = failure
            trace(TraceEventName.lifecycleTaskDidFail, detail: "\(name): \(failure)")
            controller?.lifecycleTask(self, didFailWithError: failure)
            (controller?.application ?? application)?.reportFailure(of: self, error: failure)
        } else {
            trace(TraceEventName.taskDidEnd)
        }
        if endedWhileWanted {
            // The work ended by itself while it should run: a failure follows the restart policy; a return is done,
            // and the work starts again at the next appearance or foreground.
            current = nil
            if let failure, !isCancelled { superviseFailure(failure) }
        }
        let ended = stopping?.generation == generation ? stopping : nil
        if ended != nil { stopping = nil }
        // One entry while any run of the task is in progress (a run waiting for the previous one is part of it),
        // gone before the run's background task ends: whoever waits for both sees them end together.
        if current == nil, stopping == nil, let counted = countedBy {
            countedBy = nil
            counted.lifecycleRunDidEnd(self)
        }
        if let ended, ended.backgroundTask != .invalid {
            (controller?.application ?? application)?.endBackgroundTask(ended.backgroundTask)
        }
    }

    // MARK: Supervision

    /// A run failed while it should run: restart it after the policy's delay, or escalate past its limit.
    private func superviseFailure(_ failure: any Error) {
        guard let application = controller?.application ?? application else { return }
        switch restarts.failure(at: application.now, policy: restartPolicy) {
        case .wait:
            break
        case .restart(let delay, let restart, let limit):
            trace(
                TraceEventName.taskWillRestart,
                detail: "\(name) in \(delay.formattedForLog) (restart \(restart) of \(limit)): \(failure)"
            )
            pendingRestart = application.schedule(after: delay) { [weak self] in self?.restartAfterDelay() }
        case .escalate(let failures, let within):
            hasExhaustedRestarts = true
            trace(
                TraceEventName.lifecycleTaskDidExhaustRestarts,
                detail: "\(name): \(failures) failures within \(within.formattedForLog): \(failure)"
            )
            controller?.lifecycleTask(self, didExhaustRestartsWithError: failure)
            application.reportExhaustedRestarts(of: self, error: failure)
        }
    }

    private func restartAfterDelay() {
        pendingRestart = nil
        // Only while the work should still run: a background or a disappearance during the delay called it off.
        guard wanted, !isCancelled, current == nil else { return }
        restartCount += 1
        start()
    }

    /// Where the task is, for the control socket: `running`, `stopping`, `restarting` (waiting for its backoff),
    /// `exhausted`, `cancelled` or `stopped`.
    package var supervisionState: String {
        if current != nil { return "running" }
        if stopping != nil { return "stopping" }
        if pendingRestart != nil { return "restarting" }
        if hasExhaustedRestarts { return "exhausted" }
        return isCancelled ? "cancelled" : "stopped"
    }

    /// The path of the controller the task belongs to (the last it had, once released).
    package var controllerPath: String { controller?.path ?? lastPath }

    private func cancelPendingRestart() {
        pendingRestart?.cancel()
        pendingRestart = nil
    }

    private func trace(_ event: String, detail: String? = nil) {
        if let controller {
            lastPath = controller.path
            application = controller.application
            controller.trace(event, detail: detail ?? name)
        } else {
            application?.traceEvent(event, target: .named(lastPath), detail: detail ?? name)
        }
    }
}

extension ViewController {
    /// Runs `operation` while the controller's `activity` lasts: started when the controller appears (and the
    /// application is in the foreground, by default), cancelled when it disappears or the application enters the
    /// background, started again when both hold again. The hand-written pattern of starting work in
    /// `viewDidAppear` and cancelling it in `viewWillDisappear` and `applicationDidEnterBackground`, in one call.
    ///
    /// Call it once, typically in `viewDidLoad` or `init`; it returns the task, which ``LifecycleTask/cancel()``
    /// stops for good.
    ///
    /// A run that throws is restarted as `restartPolicy` says (``RestartPolicy/standard`` by default: up to five
    /// restarts a minute, then the application terminates with a failure status for systemd to restart it).
    @discardableResult
    public func task(
        _ name: String? = nil,
        while activity: LifecycleActivity = .visibleInForeground,
        restartPolicy: RestartPolicy = .standard,
        priority: TaskPriority? = nil,
        operation: @escaping @Sendable () async throws -> Void
    ) -> LifecycleTask {
        task(name, while: activity, restartPolicy: restartPolicy, priority: priority) { LifecycleRun(body: operation) }
    }

    /// The general form of ``task(_:while:restartPolicy:priority:operation:)``: `makeRun` describes each run,
    /// including how to ask it to stop (a graceful shutdown rather than cancellation).
    @discardableResult
    public func task(
        _ name: String?,
        while activity: LifecycleActivity = .visibleInForeground,
        restartPolicy: RestartPolicy = .standard,
        priority: TaskPriority? = nil,
        makeRun: @escaping @MainActor () -> LifecycleRun
    ) -> LifecycleTask {
        let task = LifecycleTask(
            name: name ?? "task\(lifecycleTasks.count + 1)",
            activity: activity,
            restartPolicy: restartPolicy,
            priority: priority,
            controller: self,
            makeRun: makeRun
        )
        lifecycleTasks.append(task)
        task.update(visible: isVisible, foreground: isInForeground, reason: .cancellation)
        return task
    }

    /// Whether the application is in the foreground now (as lifecycle-bound work sees it).
    var isInForeground: Bool {
        switch application?.applicationState {
        case .active?, .inactive?: true
        default: false
        }
    }

    /// Re-evaluates every lifecycle-bound task after a change of visibility or of the application's state.
    func updateLifecycleTasks(foreground: Bool? = nil, reason: LifecycleStopReason) {
        guard !lifecycleTasks.isEmpty else { return }
        let visible = appearance == .appeared
        let inForeground = foreground ?? isInForeground
        for task in lifecycleTasks {
            task.update(visible: visible, foreground: inForeground, reason: reason)
        }
    }
}
