//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import Logging
public import ServiceLifecycle
import Synchronization

/// A logger that drops everything: the tests read the wire, not the log.
public let quietLogger = Logger(label: "HTTPServerTests") { _ in SwiftLogNoOpLogHandler() }

/// Services running in a `ServiceGroup` in a task of their own, which the test shuts down or cancels.
public final class Serving: Sendable {
    private final class Flag: Sendable {
        let value = Atomic(false)
    }

    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    private let returned: Flag

    /// Starts `services`.
    public init(_ services: [any Service]) {
        let group = ServiceGroup(services: services, logger: quietLogger)
        let returned = Flag()
        self.group = group
        self.returned = returned
        task = Task {
            defer { returned.value.store(true, ordering: .sequentiallyConsistent) }
            try await group.run()
        }
    }

    /// Whether the group's run has returned (every service's `run()` has).
    public var hasReturned: Bool { returned.value.load(ordering: .sequentiallyConsistent) }

    /// Starts a graceful shutdown, as `ServiceGroup` does on SIGTERM.
    public func shutDownGracefully() async {
        await group.triggerGracefulShutdown()
    }

    /// Cancels the group's run.
    public func cancel() {
        task.cancel()
    }

    /// Waits until the group's run returns; throws what it threw.
    public func finished() async throws {
        try await task.value
    }

    /// Whether the group's run returns (or throws, as a cancelled run may) within `limit`: a run that never returns
    /// fails the test instead of hanging it.
    public func returns(within limit: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while !hasReturned, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return hasReturned
    }
}
