//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleServices
import Logging
import Vapor

/// The Vapor application, as a Vapor project's `configure(_:)` sets it up: middleware, routes, a lifecycle handler.
/// Called for every run of the server, on a new `Application`.
func configureHello(_ app: Vapor.Application, served: RequestCount, probes: HealthProbes?) {
    // Vapor's default middleware, with each request logged at debug rather than info: the journal keeps the
    // lifecycle, not a line per request.
    app.middleware = Middlewares()
    app.middleware.use(RouteLoggingMiddleware(logLevel: .debug))
    app.middleware.use(ErrorMiddleware.default(environment: app.environment))

    app.get { _ in
        served.add(1)
        return "hello"
    }
    // Answers after ?seconds=N (default 1): something to drain.
    app.get("slow") { request async throws -> String in
        try await Task.sleep(for: .seconds(request.query[Double.self, at: "seconds"] ?? 1))
        served.add(1)
        return "done"
    }
    app.get("count") { _ in "\(served.value)" }
    if let probes {
        // 200 when the LifecycleKit application says yes, 503 with the reason when it says no.
        for (path, probe) in [("readyz", HealthProbe.ready), ("livez", .live), ("startupz", .started)] {
            app.get(PathComponent(stringLiteral: path)) { _ async -> Vapor.Response in
                let check = await probes.check(probe)
                return Vapor.Response(
                    status: check.passed ? .ok : .serviceUnavailable,
                    headers: ["content-type": "text/plain; charset=utf-8"],
                    body: .init(string: check.reason + "\n")
                )
            }
        }
    }
    app.lifecycle.use(RunLog(served: served))
}

/// Says in the log when each run's application has booted and when it shuts down: the first before the server accepts
/// its first connection, the second after its last connection has closed.
struct RunLog: LifecycleHandler {
    let served: RequestCount

    func didBootAsync(_ application: Vapor.Application) async throws {
        application.logger.info("Vapor application booted; \(served.value) requests answered so far")
    }

    func shutdownAsync(_ application: Vapor.Application) async {
        application.logger.info("Vapor application shutting down; \(served.value) requests answered so far")
    }
}
