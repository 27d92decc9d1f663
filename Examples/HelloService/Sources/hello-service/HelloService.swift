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
    struct Options: ParsableArguments { @Option(help: "The port to listen on (127.0.0.1); overrides [Hello] Port=.") var port: Int? }
    struct Settings: ConfigurationSection {  // [Hello] Port=, re-read on reload
        static let name = "Hello"
        static let keys: [ConfigurationKey<Self>] = [.integer("Port", \.port, in: 1...65535)]
        var port = 8080
    }
    var port = 8080, serving = 0  // the port configured, the port the server was made for
    func configure(options: Options, settings: Settings) { port = options.port ?? settings.port }
    func application(_ application: LifecycleKit.Application, didFinishLaunchingWithOptions _: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: server(on: port))
        return true
    }
    // A reload that moves the server to a port it cannot listen on is refused, with the reason, and changes nothing.
    func application(_ application: LifecycleKit.Application, validateReload proposal: ReloadProposal) throws {
        guard let new = proposal.settings(as: Settings.self)?.port, new != port else { return }
        try PortProbe.check(new)
    }
    func applicationDidReload(_ application: LifecycleKit.Application) {  // configure(…) ran: serve on the new port
        if port != serving { application.window?.rootViewController = server(on: port) }
    }
    func server(on port: Int) -> ServiceController {
        serving = port
        let router = Router()
        router.get("/") { _, _ in "hello" }
        router.get("/slow") { request, _ in  // answers after ?seconds=N (default 1): something to drain
            try await Task.sleep(for: .seconds(request.uri.queryParameters.get("seconds", as: Double.self) ?? 1))
            return "done"
        }
        return ServiceController(identifier: "http") {  // a server that fails (its port taken) is restarted after 100 ms, 200 ms, …
            [Hummingbird.Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))]
        }
    }
}
