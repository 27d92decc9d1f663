//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import Glibc
import LifecycleDaemon
import LifecycleKit
import LifecycleServices

/// Says hello on 127.0.0.1 (another address with `--address`, or the socket hello.socket passes). In the background it
/// finishes its requests and stops accepting, while connections wait in the listening socket's backlog; back in the
/// foreground it serves them.
@main
final class HelloService: ApplicationMain {
    static let commandConfiguration = CommandConfiguration(
        commandName: "hello-service",
        abstract: "Says hello over HTTP, with the iOS application lifecycle (a LifecycleKit example).",
        version: schemaVersion >= 2 ? "1.2.0" : "1.1.0"
    )

    /// The version of the values HelloController saves: 1; 2 with `HELLO_SERVICE_SCHEMA=2`, the test's stand-in for
    /// the next build (docs/restoration.md, "Versioned state").
    nonisolated static let schemaVersion: Int = getenv("HELLO_SERVICE_SCHEMA").flatMap { Int(String(cString: $0)) } ?? 1

    struct Options: ParsableArguments {
        @Option(
            help: ArgumentHelp(
                "The address to listen on when no socket is passed: a numeric IPv4 or IPv6 address (default "
                    + "127.0.0.1; 0.0.0.0 or :: for every address, as in a container); overrides [Hello] Address=.",
                valueName: "address"
            )
        )
        var address: String?

        @Option(help: "The port to listen on when no socket is passed; overrides [Hello] Port=.")
        var port: Int?

        func validate() throws {
            if let address, !PortProbe.isNumericAddress(address) {
                throw ValidationError("--address \(address) is not \(PortProbe.numericAddress)")
            }
        }
    }

    /// `[Hello] Address=` and `Port=`, read again on reload.
    struct Settings: ConfigurationSection {
        static let name = "Hello"
        static let keys: [ConfigurationKey<Self>] = [
            ConfigurationKey("Address") { settings, value throws(ConfigurationValueError) in
                guard PortProbe.isNumericAddress(value) else {
                    throw ConfigurationValueError("Address=\(value) is not \(PortProbe.numericAddress)")
                }
                settings.address = value
            },
            .integer("Port", \.port, in: 1...65535),
            // What the listening socket does in the background: pause (connections wait, the default) or close
            // (refused at once, for a server behind a load balancer).
            ConfigurationKey("InBackground") { settings, value throws(ConfigurationValueError) in
                guard let policy = ListenerPolicy(rawValue: value) else {
                    throw ConfigurationValueError("InBackground=\(value) is not pause or close")
                }
                settings.listenerPolicy = policy
            },
        ]
        var address = "127.0.0.1"
        var port = 8080
        var listenerPolicy = ListenerPolicy.pause
    }

    /// The requests answered, across restarts and upgrades (HelloController saves it).
    let served = RequestCount()
    /// The address, the port and the background policy configured.
    var address = "127.0.0.1"
    var port = 8080
    var listenerPolicy = ListenerPolicy.pause
    /// What `--address` and `--port` said: they win over the file at start and at every reload.
    private var overrides: (address: String?, port: Int?) = (nil, nil)

    func configure(options: Options, settings: Settings) {
        overrides = (options.address, options.port)
        address = options.address ?? settings.address
        port = options.port ?? settings.port
        listenerPolicy = settings.listenerPolicy
    }

    // The window is built before restoration, so the saved state (the requests served) restores into it.
    func application(_ application: LifecycleKit.Application, willFinishLaunchingWithOptions _: LaunchOptions) -> Bool {
        application.window = Window(
            rootViewController: HelloController(address: address, port: port, listenerPolicy: listenerPolicy, served: served)
        )
        return true
    }

    func application(_ application: LifecycleKit.Application, shouldSaveApplicationState _: StateCoder) -> Bool {
        true
    }

    func application(_ application: LifecycleKit.Application, shouldRestoreApplicationState _: Archive) -> Bool {
        true
    }

    // The saved state may name HelloController: a rollback checks the version of its values against it.
    func registerArchiveClasses(in registry: inout ArchiveClassRegistry) {
        registry.register(HelloController.self)
    }

    // An upgrade's old process, once drained: its count now, requests answered during the drain included.
    func application(_ application: LifecycleKit.Application, willHandOverFinalStateWith coder: StateCoder) {
        coder.encode(served.value, forKey: "served")
    }

    // After an upgrade: the requests the old process answered after it handed its state over are added.
    func application(_ application: LifecycleKit.Application, didReceiveFinalStateOf predecessor: PredecessorState) {
        guard let final = predecessor.finalApplicationValues.decodeInteger(forKey: "served"),
            let handedOver = predecessor.handedOverValues(atRestorationPath: "http").flatMap(HelloController.count(in:))
        else { return }
        served.add(max(0, final - handedOver))
    }

    // A reload that moves the server to an address or port it cannot listen on is refused, with the reason, and
    // changes nothing; so is one under hello.socket, whose ListenStream= decides where it listens.
    func application(_ application: LifecycleKit.Application, validateReload proposal: ReloadProposal) throws {
        guard let file = proposal.settings(as: Settings.self) else { return }
        // Where configure(…) would put the server: a file that says nothing of what the command line sets (a
        // Kubernetes manifest's --address 0.0.0.0 --port 8080) moves nothing.
        let newAddress = overrides.address ?? file.address
        let newPort = overrides.port ?? file.port
        guard newAddress != address || newPort != port else { return }
        if let socket = application.listener(named: HelloController.listenerName), socket.origin == .socketUnit {
            throw PortProbe.Unavailable(
                address: newAddress,
                port: newPort,
                reason: "the socket unit passes \(socket.address): change its ListenStream="
            )
        }
        try PortProbe.check(address: newAddress, port: newPort)
    }

    // configure(…) ran: serve on the new address or port.
    func applicationDidReload(_ application: LifecycleKit.Application) {
        guard let current = application.window?.rootViewController as? HelloController,
            current.address != address || current.port != port || current.listenerPolicy != listenerPolicy
        else { return }
        let next = HelloController(address: address, port: port, listenerPolicy: listenerPolicy, served: served)
        application.window?.rootViewController = next
    }
}
