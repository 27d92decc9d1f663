//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import Hummingbird
import LifecycleDaemon
import LifecycleKit
import LifecycleServices

/// Says hello on 127.0.0.1 in the foreground; in the background it finishes its requests and stops listening.
@main final class HelloService: ApplicationMain {
    struct Options: ParsableArguments { @Option(help: "The port to listen on (127.0.0.1).") var port = 8080 }
    var port = 8080
    func configure(options: Options, settings: NoSettings) { port = options.port }
    func application(_ application: LifecycleKit.Application, didFinishLaunchingWithOptions _: LaunchOptions) -> Bool {
        let router = Router()
        router.get("/") { _, _ in "hello" }
        router.get("/slow") { request, _ in  // answers after ?seconds=N (default 1): something to drain
            try await Task.sleep(for: .seconds(request.uri.queryParameters.get("seconds", as: Double.self) ?? 1))
            return "done"
        }
        let server = ServiceController(identifier: "http") { [port] in
            [Hummingbird.Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))]
        }
        application.window = Window(rootViewController: server)
        return true
    }
}
