//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import Glibc
import HelloSessions
import LifecycleDaemon
import LifecycleKit
import LifecycleServices
import PostgresNIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

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
            // The WebSocket endpoint whose clients are scenes (README.md, "Sessions"): off (the default), local
            // ($STATE_DIRECTORY/sessions) or postgresql (SessionsDatabase=). Read at start only.
            .choice("Sessions", \.sessions, what: "where sessions are kept"),
            ConfigurationKey("SessionsDatabase") { settings, value throws(ConfigurationValueError) in
                if case .failure(let error) = PostgresClient.Configuration.parse(url: value) {
                    throw ConfigurationValueError("SessionsDatabase=\(value.replacingPassword()): \(error.message)")
                }
                settings.sessionsDatabase = value
            },
            .duration("SessionCheckpointSec", \.sessionSettings.checkpointInterval),
            .duration("SessionExpirySec", \.sessionSettings.expiry),
            .duration("SessionCloseWindowSec", \.sessionSettings.closeWindow),
            .integer("MaxSessions", \.sessionSettings.maximumSessions, in: 1...1_000_000),
        ]
        var address = "127.0.0.1"
        var port = 8080
        var listenerPolicy = ListenerPolicy.pause
        var sessions = SessionStoreKind.off
        var sessionsDatabase: String?
        var sessionSettings = SessionSettings()

        func validate() throws(ConfigurationValueError) {
            if sessions == .postgresql, sessionsDatabase == nil {
                throw ConfigurationValueError(
                    "Sessions=postgresql needs SessionsDatabase=postgresql://user@host:port/database"
                )
            }
            if sessionSettings.checkpointInterval <= .zero || sessionSettings.expiry <= sessionSettings.checkpointInterval {
                throw ConfigurationValueError(
                    "SessionCheckpointSec= must be above 0 and below SessionExpirySec= (now \(sessionSettings.checkpointInterval), \(sessionSettings.expiry))"
                )
            }
        }
    }

    /// The requests answered, across restarts and upgrades (HelloController saves it).
    let served = RequestCount()
    /// The address, the port and the background policy configured.
    var address = "127.0.0.1"
    var port = 8080
    var listenerPolicy = ListenerPolicy.pause
    /// What `--address` and `--port` said: they win over the file at start and at every reload.
    private var overrides: (address: String?, port: Int?) = (nil, nil)
    /// The sessions' store and settings, as the first configuration said (a reload cannot change them), and the hub.
    private var sessionsAtStart: (kind: SessionStoreKind, database: String?, settings: SessionSettings)?
    private var hub: SessionHub?
    /// The close code the hub sends when the process ends, chosen on the main actor as termination begins.
    private let closeCode = CloseCodeChoice()

    func configure(options: Options, settings: Settings) {
        overrides = (options.address, options.port)
        address = options.address ?? settings.address
        port = options.port ?? settings.port
        listenerPolicy = settings.listenerPolicy
        if sessionsAtStart == nil {
            sessionsAtStart = (settings.sessions, settings.sessionsDatabase, settings.sessionSettings)
        }
    }

    /// With sessions, the application uses scenes: the server's, connected at launch, and one per WebSocket client.
    var sceneManifest: SceneManifest? {
        guard let sessionsAtStart, sessionsAtStart.kind != .off else { return nil }
        // No scene is connected again at launch but the server's: a client's scene connects when its client does.
        return SceneManifest(launchSceneRole: nil, reconnectsScenesAtLaunch: false)
    }

    // The window is built before restoration, so the saved state (the requests served) restores into it. With
    // sessions the server's tree is its scene's, built when the scene connects (at the end of launch).
    func application(_ application: LifecycleKit.Application, willFinishLaunchingWithOptions _: LaunchOptions) -> Bool {
        guard application.usesScenes else {
            application.window = Window(
                rootViewController: HelloController(address: address, port: port, listenerPolicy: listenerPolicy, served: served)
            )
            return true
        }
        return startSessions(in: application)
    }

    func application(_ application: LifecycleKit.Application, didFinishLaunchingWithOptions _: LaunchOptions) -> Bool {
        guard application.usesScenes else { return true }
        do {
            if let server = application.sceneSession(withPersistentIdentifier: SessionRoles.serverIdentifier) {
                try application.requestSceneSessionActivation(server)
            } else {
                try application.requestSceneSessionActivation(
                    role: SessionRoles.server,
                    persistentIdentifier: SessionRoles.serverIdentifier
                )
            }
        } catch {
            application.logger.critical("the server's scene cannot connect: \(error)")
            return false
        }
        return true
    }

    // The hub and its store; false (the launch fails) when the store cannot be made.
    private func startSessions(in application: LifecycleKit.Application) -> Bool {
        guard let (kind, database, settings) = sessionsAtStart else { return true }
        let directory = ProcessInfoEnvironment.stateDirectory ?? "."
        guard let store = SessionStores.make(kind, database: database, stateDirectory: directory, logger: application.logger)
        else {
            application.logger.critical("Sessions=\(kind.rawValue): no store can be made (SessionsDatabase=?)")
            return false
        }
        let closeCode = self.closeCode
        let hub = SessionHub(store: store, settings: settings, logger: application.logger) { closeCode.code }
        self.hub = hub
        SessionScenes.follow(hub, in: application)
        return true
    }

    func application(
        _ application: LifecycleKit.Application,
        configurationForConnecting session: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        if session.role == SessionRoles.client, let hub {
            return SceneConfiguration(name: "Session", sessionRole: SessionRoles.client) { _ in
                ClientSceneDelegate(hub: hub)
            }
        }
        let (address, port, listenerPolicy, hub, served) = (self.address, self.port, self.listenerPolicy, self.hub, self.served)
        let window = sessionsAtStart?.settings.closeWindow ?? .seconds(2)
        return SceneConfiguration(name: "Server", sessionRole: session.role) { _ in
            ServerSceneDelegate {
                let http = HelloController(
                    address: address, port: port, listenerPolicy: listenerPolicy, served: served, sessions: hub
                )
                guard let hub else { return http }
                return ServerRootController(http: http, sessions: SessionsController(hub: hub, closeWindow: window))
            }
        }
    }

    // The operator discarded a client's session (`lifecyclectl scene discard ID`), or the hub ended it: its connection
    // closes and its record goes.
    func application(_ application: LifecycleKit.Application, didDiscardSceneSessions sessions: Set<SceneSession>) {
        guard let hub else { return }
        for session in sessions where session.role == SessionRoles.client {
            let id = session.persistentIdentifier
            Task { await hub.discard(id) }
        }
    }

    // The clients are told whether to come back: 1012 when the service does (its socket outlives this process — the
    // socket unit, the file descriptor store — or another replica serves the sessions from PostgreSQL), else 1001.
    func applicationWillTerminate(_ application: LifecycleKit.Application) {
        guard let sessionsAtStart, sessionsAtStart.kind != .off else { return }
        let origin = application.listener(named: HelloController.listenerName)?.origin
        let comesBack = sessionsAtStart.kind == .postgresql || origin == .socketUnit || origin == .fileDescriptorStore
        closeCode.code = comesBack ? .serviceRestart : .goingAway
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
        if let sessionsAtStart, file.sessions != sessionsAtStart.kind || file.sessionsDatabase != sessionsAtStart.database {
            throw SessionsChangeRefused(running: sessionsAtStart.kind, proposed: file.sessions)
        }
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
        if application.usesScenes {
            // The server's scene: its HTTP server moves, the hub beside it (and its connections) stays.
            guard
                let root = application.sceneSession(withPersistentIdentifier: SessionRoles.serverIdentifier)?.scene?
                    .window.rootViewController as? ServerRootController,
                let current = root.http,
                current.address != address || current.port != port || current.listenerPolicy != listenerPolicy
            else { return }
            // The count is the delegate's, shared with the next controller.
            let next = HelloController(
                address: address, port: port, listenerPolicy: listenerPolicy, served: served, sessions: hub
            )
            current.willMove(toParent: nil)
            current.view.removeFromSuperview()
            current.removeFromParent()
            root.addChild(next)
            root.view.addSubview(next.view)
            next.didMove(toParent: root)
            return
        }
        guard let current = application.window?.rootViewController as? HelloController,
            current.address != address || current.port != port || current.listenerPolicy != listenerPolicy
        else { return }
        let next = HelloController(address: address, port: port, listenerPolicy: listenerPolicy, served: served)
        application.window?.rootViewController = next
    }
}

/// A reload that would move the sessions to another store: refused, they are chosen at start.
struct SessionsChangeRefused: Error, CustomStringConvertible {
    let running: SessionStoreKind
    let proposed: SessionStoreKind
    var description: String {
        "Sessions= and SessionsDatabase= are read at start only (running with Sessions=\(running.rawValue)); restart the service to change them"
    }
}

/// The close code the hub sends when the process ends: the main actor chooses it as termination begins, the hub reads
/// it when it closes its connections.
final class CloseCodeChoice: Sendable {
    private let value = Mutex(SessionCloseCode.goingAway)
    var code: SessionCloseCode {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// The service's state directory: systemd's `StateDirectory=` (`$STATE_DIRECTORY`, the first of a list).
enum ProcessInfoEnvironment {
    static var stateDirectory: String? {
        guard let value = getenv("STATE_DIRECTORY") else { return nil }
        return String(cString: value).split(separator: ":").first.map(String.init)
    }
}
