//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Hummingbird
import LifecycleHummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// A logger that drops everything: the tests read the wire, not the log.
let quietLogger = Logger(label: "LifecycleHummingbirdTests") { _ in SwiftLogNoOpLogHandler() }

/// Services running in a `ServiceGroup` in a task of their own, which the test shuts down or cancels.
final class Serving: Sendable {
    private final class Flag: Sendable {
        let value = Atomic(false)
    }

    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    private let returned: Flag

    /// Starts `services`.
    init(_ services: [any Service]) {
        let group = ServiceGroup(services: services, logger: quietLogger)
        let returned = Flag()
        self.group = group
        self.returned = returned
        task = Task {
            defer { returned.value.store(true, ordering: .sequentiallyConsistent) }
            try await group.run()
        }
    }

    /// Starts an `HTTPServer` for `router` on `descriptor`.
    convenience init(
        _ router: Router<BasicRequestContext>,
        on descriptor: Int32,
        idleGrace: Duration = .milliseconds(250),
        firstRequestGrace: Duration = .seconds(2)
    ) {
        self.init([
            HTTPServer(
                router: router,
                descriptor: descriptor,
                idleGrace: idleGrace,
                firstRequestGrace: firstRequestGrace,
                logger: quietLogger
            )
        ])
    }

    /// Whether the group's run has returned (every service's `run()` has).
    var hasReturned: Bool { returned.value.load(ordering: .sequentiallyConsistent) }

    /// Starts a graceful shutdown, as `ServiceGroup` does on SIGTERM.
    func shutDownGracefully() async {
        await group.triggerGracefulShutdown()
    }

    /// Cancels the group's run.
    func cancel() {
        task.cancel()
    }

    /// Waits until the group's run returns; throws what it threw.
    func finished() async throws {
        try await task.value
    }

    /// Whether the group's run returns (or throws, as a cancelled run may) within `limit`: a run that never returns
    /// fails the test instead of hanging it.
    func returns(within limit: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while !hasReturned, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return hasReturned
    }
}

/// The routes the tests call.
func testRouter(slowStarted: AsyncStream<Void>.Continuation? = nil) -> Router<BasicRequestContext> {
    struct Unrecognised: Error {}
    let router = Router()
    router.get("/") { _, _ in "hello" }
    // Answers after ?ms=N milliseconds; says when it started.
    router.get("/slow") { request, _ in
        slowStarted?.yield()
        try await Task.sleep(for: .milliseconds(request.uri.queryParameters.get("ms", as: Int.self) ?? 300))
        return "done"
    }
    router.get("/fails") { _, _ -> String in throw Unrecognised() }
    router.get("/forbidden") { _, _ -> String in throw HTTPError(.forbidden, message: "not for you") }
    router.post("/echo") { request, _ in
        String(buffer: try await request.body.collect(upTo: 1024))
    }
    return router
}
