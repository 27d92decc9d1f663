//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HelloSessions
import Hummingbird
import LifecycleHummingbird
import LifecycleKit
import LifecycleServices
import Logging
import ServiceLifecycle
import Synchronization

/// The server: a Hummingbird router served on the listener "http", while the controller is on screen and the
/// application in the foreground. It counts the requests it answers, and the count survives restarts and upgrades
/// as the controller's restorable state.
final class HelloController: ServiceController {
    /// The listener's name: hello.socket's `FileDescriptorName=`.
    static let listenerName = "http"

    /// The address and port to bind when no socket is passed.
    let address: String
    let port: Int
    /// The requests answered so far, across restarts and upgrades: the delegate's, shared by the controllers a reload
    /// makes, and counting on while the server drains after the tree is gone.
    let served: RequestCount
    /// The sessions' hub whose endpoint (`/ws`) the server upgrades to, when `[Hello] Sessions=` names a store.
    let sessions: SessionHub?

    init(
        address: String = "127.0.0.1",
        port: Int,
        listenerPolicy: ListenerPolicy = .pause,
        served: RequestCount = RequestCount(),
        sessions: SessionHub? = nil
    ) {
        self.address = address
        self.port = port
        self.served = served
        self.sessions = sessions
        // A server that fails (its port taken) is restarted after 100 ms, 200 ms, …
        super.init(
            identifier: "http",
            listeners: [.tcp(Self.listenerName, host: address, port: port)],
            listenerPolicy: listenerPolicy
        )
        restorationIdentifier = "http"
    }

    required init(coder: Coder) throws {
        served = RequestCount()
        address = coder.decodeString(forKey: "address") ?? "127.0.0.1"
        port = try coder.decodeInteger(forKey: "port") ?? 8080
        sessions = nil
        try super.init(coder: coder)
        restorationIdentifier = "http"
    }

    override func makeServices(on sockets: [ListeningSocket]) throws -> [any Service] {
        let router = Router()
        let served = served
        router.get("/") { _, _ in
            served.add(1)
            return "hello"
        }
        // Answers after ?seconds=N (default 1): something to drain.
        router.get("/slow") { request, _ in
            try await Task.sleep(for: .seconds(request.uri.queryParameters.get("seconds", as: Double.self) ?? 1))
            served.add(1)
            return "done"
        }
        router.get("/count") { _, _ in "\(served.value)" }
        if let sessions {
            // How many sessions are connected and waiting, and what became of them since the process started.
            router.get("/sessions") { _, _ in
                let counts = sessions.counts
                return "connected \(counts.connected) disconnected \(counts.disconnected) created \(counts.created) "
                    + "resumed \(counts.resumed) ended \(counts.ended) refused \(counts.refused)\n"
            }
        }
        if let application {
            // Kubernetes' httpGet probes: 200 when the application says yes, 503 with the reason when it says no.
            let probes = HealthProbes(application: application)
            for (path, probe) in [("/readyz", HealthProbe.ready), ("/livez", .live), ("/startupz", .started)] {
                router.get(RouterPath(path)) { _, _ in
                    let check = await probes.check(probe)
                    return Response(
                        status: check.passed ? .ok : .serviceUnavailable,
                        headers: [.contentType: "text/plain; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(string: check.reason + "\n"))
                    )
                }
            }
        }
        let logger = application?.logger ?? Logger(label: "hello-service")
        return [
            HTTPServer(router: router, descriptor: try sockets[0].duplicate(), webSocket: sessions?.endpoint, logger: logger)
        ]
    }

    /// Version 1 of the saved values keeps the count as `served`, version 2 as `requests`. The example writes version 1;
    /// with `HELLO_SERVICE_SCHEMA=2` in its environment it behaves as its next version would (a stand-in for a second
    /// build in the rollback test: docs/restoration.md, "Versioned state").
    override class var restorableStateVersion: Int { HelloService.schemaVersion }

    /// A version 1 count, in a version 2 process, is renamed.
    override func migrateRestorableState(with coder: StateCoder, fromVersion version: Int) {
        if version < 2, let served = coder.decodeInteger(forKey: "served") { coder.encode(served, forKey: "requests") }
    }

    override func encodeRestorableState(with coder: StateCoder) {
        coder.encode(served.value, forKey: Self.countKey)
        coder.encode(address, forKey: "address")
        coder.encode(port, forKey: "port")
    }

    override func decodeRestorableState(with coder: StateCoder) {
        served.add(Self.count(in: coder) ?? 0)
    }

    /// Where this version keeps the count.
    static var countKey: String { HelloService.schemaVersion >= 2 ? "requests" : "served" }

    /// The count in saved values of this version.
    static func count(in coder: StateCoder) -> Int? { coder.decodeInteger(forKey: countKey) }
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
