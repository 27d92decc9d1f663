//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import LifecycleDaemon
import LifecycleKit
import LifecycleServices

/// Says hello on 127.0.0.1 (or on the socket hello.socket passes). In the background it finishes its requests and
/// stops accepting, while connections wait in the listening socket's backlog; back in the foreground it serves them.
@main
final class HelloService: ApplicationMain {
    static let commandConfiguration = CommandConfiguration(
        commandName: "hello-service",
        abstract: "Says hello over HTTP, with the iOS application lifecycle (a LifecycleKit example).",
        version: "1.1.0"
    )

    struct Options: ParsableArguments {
        @Option(help: "The port to listen on (127.0.0.1) when no socket is passed; overrides [Hello] Port=.")
        var port: Int?
    }

    /// `[Hello] Port=`, read again on reload.
    struct Settings: ConfigurationSection {
        static let name = "Hello"
        static let keys: [ConfigurationKey<Self>] = [.integer("Port", \.port, in: 1...65535)]
        var port = 8080
    }

    /// The port configured.
    var port = 8080

    func configure(options: Options, settings: Settings) {
        port = options.port ?? settings.port
    }

    // The window is built before restoration, so the saved state (the requests served) restores into it.
    func application(_ application: LifecycleKit.Application, willFinishLaunchingWithOptions _: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: HelloController(port: port))
        return true
    }

    func application(_ application: LifecycleKit.Application, shouldSaveApplicationState _: StateCoder) -> Bool {
        true
    }

    func application(_ application: LifecycleKit.Application, shouldRestoreApplicationState _: Archive) -> Bool {
        true
    }

    // A reload that moves the server to a port it cannot listen on is refused, with the reason, and changes nothing;
    // so is one under hello.socket, whose ListenStream= decides the port.
    func application(_ application: LifecycleKit.Application, validateReload proposal: ReloadProposal) throws {
        guard let new = proposal.settings(as: Settings.self)?.port, new != port else { return }
        if let socket = application.listener(named: HelloController.listenerName), socket.origin == .socketUnit {
            throw PortProbe.Unavailable(
                port: new,
                reason: "the socket unit passes \(socket.address): change its ListenStream="
            )
        }
        try PortProbe.check(new)
    }

    // configure(…) ran: serve on the new port.
    func applicationDidReload(_ application: LifecycleKit.Application) {
        guard let current = application.window?.rootViewController as? HelloController, current.port != port else {
            return
        }
        let next = HelloController(port: port)
        next.served.add(current.served.value)
        application.window?.rootViewController = next
    }
}
