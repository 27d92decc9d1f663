//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleServices
import LifecycleVapor
import Logging
import ServiceLifecycle
import Synchronization
import Vapor

/// The server: a Vapor application (``configureHello(_:served:probes:)``) served on the listener "http", while the
/// controller is on screen and the application in the foreground — a new Vapor `Application` for every run. It counts
/// the requests it answers, and the count survives restarts and upgrades as the controller's restorable state.
final class HelloVaporController: ServiceController {
    /// The listener's name: hello-vapor.socket's `FileDescriptorName=`.
    static let listenerName = "http"

    /// The address and port to bind when no socket is passed.
    let address: String
    let port: Int
    /// Whether Vapor binds the address itself instead (for comparison).
    let vaporBinds: Bool
    /// The requests answered so far, across restarts and upgrades: it outlives each run's Vapor application.
    let served = RequestCount()

    init(address: String, port: Int, vaporBinds: Bool) {
        self.address = address
        self.port = port
        self.vaporBinds = vaporBinds
        // Vapor binding its own port declares no listener: there is nothing to keep between runs.
        let listeners: [Listener] = vaporBinds ? [] : [.tcp(Self.listenerName, host: address, port: port)]
        super.init(identifier: "http", listeners: listeners)
        restorationIdentifier = "http"
    }

    required init(coder: Coder) throws {
        address = coder.decodeString(forKey: "address") ?? "127.0.0.1"
        port = try coder.decodeInteger(forKey: "port") ?? 8081
        vaporBinds = try coder.decodeBool(forKey: "vaporBinds") ?? false
        try super.init(coder: coder)
        restorationIdentifier = "http"
    }

    override func makeServices(on sockets: [ListeningSocket]) throws -> [any Service] {
        let logger = application?.logger ?? Logger(label: "hello-vapor")
        let served = served
        // Kubernetes' httpGet probes ask the LifecycleKit application, which outlives every Vapor one.
        let probes = application.map { HealthProbes(application: $0) }
        let configure: VaporServer.Configure = { app in configureHello(app, served: served, probes: probes) }
        if vaporBinds {
            return [VaporBindingItsOwnPort(host: address, port: port, logger: logger, configure: configure)]
        }
        return [VaporServer(descriptor: try sockets[0].duplicate(), logger: logger, configure: configure)]
    }

    override func encodeRestorableState(with coder: StateCoder) {
        coder.encode(served.value, forKey: "served")
        coder.encode(address, forKey: "address")
        coder.encode(port, forKey: "port")
        coder.encode(vaporBinds, forKey: "vaporBinds")
    }

    override func decodeRestorableState(with coder: StateCoder) {
        served.add(coder.decodeInteger(forKey: "served") ?? 0)
    }
}

/// A count the server's threads add to and the main actor reads.
final class RequestCount: Sendable {
    private let count = Atomic(0)

    /// The count now.
    var value: Int { count.load(ordering: .relaxed) }

    /// Adds `amount`.
    func add(_ amount: Int) {
        count.add(amount, ordering: .relaxed)
    }
}
