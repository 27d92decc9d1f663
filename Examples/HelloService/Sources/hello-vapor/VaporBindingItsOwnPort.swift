//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleVapor
import Logging
import NIOPosix
import ServiceLifecycle
import Vapor

/// For comparison (`--vapor-binds`): the same application run as Vapor runs on its own — its `HTTPServer` binds the
/// address and port when the run starts and closes them when it ends, as `vapor serve` does — hosted by the same
/// controller. Nothing keeps the port between runs, so a restart, the background and an upgrade refuse connections.
struct VaporBindingItsOwnPort: Service {
    let host: String
    let port: Int
    let logger: Logger
    let configure: VaporServer.Configure

    func run() async throws {
        let app = try await Vapor.Application.make(
            .production,
            .shared(MultiThreadedEventLoopGroup.singleton),
            logger: logger
        )
        do {
            try await configure(app)
            app.http.server.configuration.hostname = host
            app.http.server.configuration.port = port
            // What `serve` does: boot, then start the server (which binds).
            try await app.asyncBoot()
            try await app.server.start(address: nil)
        } catch {
            try? await app.asyncShutdown()
            throw error
        }
        // Serve until the controller shuts the run down (a cancelled wait ends it too).
        try? await gracefulShutdown()
        await app.server.shutdown()
        try await app.asyncShutdown()
    }
}
