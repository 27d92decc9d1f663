//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import Logging

/// Identifies a background task begun with ``Application/beginBackgroundTask(withName:expirationHandler:)``.
public struct BackgroundTaskIdentifier: Hashable, Sendable {
    /// The task's number, from 1.
    public let rawValue: Int

    /// Wraps a task number.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// No task.
    public static let invalid = BackgroundTaskIdentifier(rawValue: 0)
}

/// A running background task.
public struct BackgroundTask: Hashable, Sendable {
    /// Its identifier.
    public let identifier: BackgroundTaskIdentifier
    /// Its name, for logs.
    public let name: String
}

/// The background tasks that have begun and not ended, with their expiration handlers: a value, so the rules
/// (identifiers never reused, ending twice is harmless, oldest first) are tested without an application.
struct BackgroundTaskRegistry {
    /// The running tasks, oldest first.
    private(set) var tasks: [BackgroundTask] = []
    private var expirationHandlers: [BackgroundTaskIdentifier: @MainActor () -> Void] = [:]
    private var nextIdentifier = 1

    /// Records a new task and returns it.
    mutating func begin(name: String?, expirationHandler: (@MainActor () -> Void)?) -> BackgroundTask {
        let identifier = BackgroundTaskIdentifier(rawValue: nextIdentifier)
        nextIdentifier += 1
        let task = BackgroundTask(identifier: identifier, name: name ?? "task \(identifier.rawValue)")
        tasks.append(task)
        if let expirationHandler { expirationHandlers[identifier] = expirationHandler }
        return task
    }

    /// Forgets a task; returns it, or nil when it is unknown or already ended.
    mutating func end(_ identifier: BackgroundTaskIdentifier) -> BackgroundTask? {
        guard let index = tasks.firstIndex(where: { $0.identifier == identifier }) else { return nil }
        expirationHandlers[identifier] = nil
        return tasks.remove(at: index)
    }

    /// Whether the task is still running.
    func isRunning(_ identifier: BackgroundTaskIdentifier) -> Bool {
        tasks.contains { $0.identifier == identifier }
    }

    /// The task's expiration handler, if it has one.
    func expirationHandler(of identifier: BackgroundTaskIdentifier) -> (@MainActor () -> Void)? {
        expirationHandlers[identifier]
    }
}

/// The application's background tasks: who began each, the background time that bounds them once the application
/// is in the background (UIKit's), and their expiry (docs/lifecycle.md §1, "Background time").
///
/// ``Application`` forwards its background-task API here and tells it when the application reaches the background,
/// returns to the foreground and starts terminating; termination and a sleep bound the tasks with budgets of their
/// own (``TaskBudget``).
@MainActor
final class BackgroundTaskCoordinator {
    /// How long background tasks may run once the application is in the background.
    var backgroundTime = Duration.seconds(30)

    private unowned let application: Application
    private var registry = BackgroundTaskRegistry()
    /// Who began each task, for the trace of its expiration handler: a controller's path, or `delegate`.
    private var owners: [BackgroundTaskIdentifier: String] = [:]
    private lazy var backgroundBudget = TaskBudget(name: "background time", application: application) {
        [unowned application] delay, work in
        application.host?.application(application, schedule: work, after: delay)
    }
    /// Termination has begun: its own budget bounds the tasks from now on.
    private var isTerminating = false

    init(application: Application) {
        self.application = application
    }

    /// The running tasks, oldest first.
    var tasks: [BackgroundTask] { registry.tasks }

    /// What is left of the background time while it runs.
    var backgroundTimeRemaining: Duration? { backgroundBudget.isWaiting ? backgroundBudget.remaining : nil }

    /// Begins a task on behalf of `owner` (a controller's path; nil: the delegate).
    func begin(
        name: String?,
        owner: String?,
        expirationHandler: (@MainActor () -> Void)?
    ) -> BackgroundTaskIdentifier {
        let task = registry.begin(name: name, expirationHandler: expirationHandler)
        if let owner { owners[task.identifier] = owner }
        application.logger.info(
            "background task began",
            metadata: [LogKey.task: "\(task.name)", LogKey.taskID: "\(task.identifier.rawValue)"]
        )
        application.host?.application(application, backgroundTasksDidChange: registry.tasks)
        startBackgroundTimeIfNeeded()
        return task.identifier
    }

    /// Ends a task; unknown or already ended identifiers are ignored.
    func end(_ identifier: BackgroundTaskIdentifier) {
        guard let task = registry.end(identifier) else { return }
        owners[identifier] = nil
        application.logger.info(
            "background task ended",
            metadata: [LogKey.task: "\(task.name)", LogKey.taskID: "\(identifier.rawValue)"]
        )
        application.host?.application(application, backgroundTasksDidChange: registry.tasks)
        backgroundBudget.tasksDidChange()
    }

    /// The application reached the background: the background time starts if tasks run.
    func applicationDidEnterBackground() {
        startBackgroundTimeIfNeeded()
    }

    /// The application returns to the foreground: the background time stops.
    func applicationWillEnterForeground() {
        backgroundBudget.cancel()
    }

    /// Termination begins: its own budget replaces the background time.
    func terminationDidBegin() {
        isTerminating = true
        backgroundBudget.cancel()
    }

    /// Time is up: runs every running task's expiration handler, oldest first; a task its handler did not end is
    /// ended after it, with a warning.
    func expire() {
        for task in registry.tasks {
            application.logger.warning(
                "background task expired",
                metadata: [LogKey.task: "\(task.name)", LogKey.taskID: "\(task.identifier.rawValue)"]
            )
            let owner = owners[task.identifier]
            application.trace.record(
                event: TraceEventName.expirationHandler,
                isDelegate: owner == nil,
                target: .named(owner ?? "delegate"),
                state: application.applicationState,
                cause: application.currentCause,
                detail: task.name
            )
            registry.expirationHandler(of: task.identifier)?()
            if registry.isRunning(task.identifier) {
                application.logger.warning(
                    "background task not ended by its expiration handler; ending it",
                    metadata: [LogKey.task: "\(task.name)"]
                )
                end(task.identifier)
            }
        }
    }

    /// Starts the background time when the application is in the background with tasks running and none runs.
    private func startBackgroundTimeIfNeeded() {
        guard application.applicationState == .background, !isTerminating, !registry.tasks.isEmpty else { return }
        guard !backgroundBudget.isWaiting else { return }
        let budget = backgroundTime
        let logger = application.logger
        logger.debug("background time starts: \(registry.tasks.count) task(s), up to \(budget)")
        backgroundBudget.begin(budget) {
            logger.warning("the background time of \(budget) ran out; expiring background tasks")
        } onSettled: { _ in }
    }
}
