//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

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
