//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HTTPServerTestSupport
import Hummingbird
import LifecycleHummingbird

extension Serving {
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
