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

#if canImport(Glibc)
import Glibc
#endif

/// HelloService as a Vapor application: says hello on 127.0.0.1:8081 (another address with `--address`, or the socket
/// hello-vapor.socket passes). In the background it finishes its requests and stops accepting, while connections wait
/// in the listening socket's backlog; back in the foreground a new Vapor application serves them.
@main
final class HelloVapor: ApplicationMain {
    static let commandConfiguration = CommandConfiguration(
        commandName: "hello-vapor",
        abstract: "Says hello over HTTP from a Vapor application, with the iOS application lifecycle (a LifecycleKit "
            + "example).",
        version: "1.0.0"
    )

    struct Options: ParsableArguments {
        @Option(
            help: ArgumentHelp(
                "The address to listen on when no socket is passed: a numeric IPv4 or IPv6 address (0.0.0.0 or :: for "
                    + "every address, as in a container).",
                valueName: "address"
            )
        )
        var address = "127.0.0.1"

        @Option(help: "The port to listen on when no socket is passed.")
        var port = 8081

        @Flag(
            help: ArgumentHelp(
                "For comparison: no listener of LifecycleKit's; Vapor's own HTTPServer binds the address and port "
                    + "each time the server starts, as a Vapor application does on its own (connections are refused "
                    + "while it restarts, in the background and during an upgrade)."
            )
        )
        var vaporBinds = false

        func validate() throws {
            var bytes = in6_addr()
            guard inet_pton(AF_INET, address, &bytes) == 1 || inet_pton(AF_INET6, address, &bytes) == 1 else {
                throw ValidationError("--address \(address) is not a numeric IPv4 or IPv6 address (127.0.0.1, ::1)")
            }
            guard (1...65535).contains(port) else { throw ValidationError("--port \(port) is not in 1...65535") }
        }
    }

    private var options = Options()

    func configure(options: Options, settings _: NoSettings) {
        self.options = options
    }

    // The window is built before restoration, so the saved state (the requests served) restores into it.
    func application(_ application: LifecycleKit.Application, willFinishLaunchingWithOptions _: LaunchOptions) -> Bool {
        let controller = HelloVaporController(
            address: options.address,
            port: options.port,
            vaporBinds: options.vaporBinds
        )
        application.window = Window(rootViewController: controller)
        return true
    }

    func application(_ application: LifecycleKit.Application, shouldSaveApplicationState _: StateCoder) -> Bool {
        true
    }

    func application(_ application: LifecycleKit.Application, shouldRestoreApplicationState _: Archive) -> Bool {
        true
    }
}
