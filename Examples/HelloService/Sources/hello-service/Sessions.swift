//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HelloSessions
import LifecycleKit
import LifecycleServices
import Logging
import PostgresNIO
import ServiceLifecycle

/// Where `[Hello] Sessions=` keeps the WebSocket endpoint's sessions: nowhere (no endpoint), in the state directory,
/// or in PostgreSQL.
enum SessionStoreKind: String, CaseIterable, Sendable {
    /// No `/ws` endpoint; the application keeps its one window (no scenes).
    case off
    /// `$STATE_DIRECTORY/sessions`: one machine (restarts, SIGKILLs, upgrades).
    case local
    /// `[Hello] SessionsDatabase=`: several replicas.
    case postgresql
}

/// The scene roles of a sessions application.
enum SessionRoles {
    /// The server's scene: the HTTP routes and the endpoint (connected at launch, persistent identifier `server`).
    static let server = SceneSession.Role.windowApplication
    /// A WebSocket client's scene.
    static let client = SceneSession.Role(rawValue: "client")
    /// The server scene's persistent identifier.
    static let serverIdentifier = "server"
}

/// The root of the server's scene: the HTTP server and, beside it, the controller that hosts the sessions' hub, which
/// keeps running in the background (its connections stay open) and stops only when the scene goes.
final class ServerRootController: ViewController {
    init(http: HelloController, sessions: SessionsController) {
        super.init(identifier: "server")
        restorationIdentifier = "server"
        for child in [http, sessions] as [ViewController] {
            addChild(child)
            child.didMove(toParent: self)
        }
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        for child in children where child.viewIfLoaded?.superview !== view { view.addSubview(child.view) }
    }

    /// The HTTP server.
    var http: HelloController? { children.lazy.compactMap { $0 as? HelloController }.first }
}

/// Hosts the hub: it runs while the server's scene is connected, in the foreground and the background alike; when the
/// scene goes (the process ends), its graceful shutdown closes every session's connection over the close window.
final class SessionsController: ServiceController {
    let hub: SessionHub

    init(hub: SessionHub, closeWindow: Duration) {
        self.hub = hub
        // The close window, the close handshake's timeout and the final write fit in the shutdown's bound.
        super.init(
            identifier: "sessions",
            backgroundPolicy: .keepRunning,
            shutdownTimeout: closeWindow + .seconds(8)
        ) { [hub] in [hub] }
    }

    required init(coder: Coder) throws {
        preconditionFailure("SessionsController is built by the server scene's delegate, never decoded")
    }
}

/// A WebSocket client's scene: active while its client is connected and the application active; the hub pushes to it
/// only then.
final class ClientSceneDelegate: SceneDelegate {
    private let hub: SessionHub

    init(hub: SessionHub) {
        self.hub = hub
    }

    func sceneDidBecomeActive(_ scene: Scene) {
        hub.setSceneActive(scene.session.persistentIdentifier, true)
    }

    func sceneWillResignActive(_ scene: Scene) {
        hub.setSceneActive(scene.session.persistentIdentifier, false)
    }

    func sceneDidDisconnect(_ scene: Scene) {
        hub.setSceneActive(scene.session.persistentIdentifier, false)
    }
}

/// The server's scene: its tree is the HTTP server and the hub's controller.
final class ServerSceneDelegate: SceneDelegate {
    private let makeRoot: @MainActor () -> ViewController

    init(makeRoot: @escaping @MainActor () -> ViewController) {
        self.makeRoot = makeRoot
    }

    func scene(_ scene: Scene, willConnectTo session: SceneSession, options: Scene.ConnectionOptions) {
        scene.window.rootViewController = makeRoot()
    }
}

/// Drives the clients' scenes from the hub's events, in their order, on the main actor.
@MainActor
enum SessionScenes {
    /// Follows `hub`'s events for `application` until the hub finishes.
    static func follow(_ hub: SessionHub, in application: Application) {
        Task { @MainActor [weak application] in
            for await event in hub.events {
                guard let application else { return }
                apply(event, in: application)
            }
        }
    }

    private static func apply(_ event: SessionEvent, in application: Application) {
        do {
            switch event {
            case .connected(let id):
                if let session = application.sceneSession(withPersistentIdentifier: id) {
                    try application.requestSceneSessionActivation(session, cause: "session:connected")
                } else {
                    try application.requestSceneSessionActivation(
                        role: SessionRoles.client,
                        persistentIdentifier: id,
                        cause: "session:connected"
                    )
                }
            case .disconnected(let id):
                guard let session = application.sceneSession(withPersistentIdentifier: id) else { return }
                try application.requestSceneDisconnection(session, cause: "session:disconnected")
            case .ended(let ids):
                for id in ids {
                    guard let session = application.sceneSession(withPersistentIdentifier: id) else { continue }
                    try application.requestSceneSessionDestruction(session, cause: "session:ended")
                }
            }
        } catch {
            application.logger.warning("sessions: the scene of \(event) cannot follow it: \(error)")
        }
    }
}

/// The store `[Hello] Sessions=` names.
enum SessionStores {
    static func make(
        _ kind: SessionStoreKind,
        database: String?,
        stateDirectory: String,
        logger: Logger
    ) -> (any SessionStore)? {
        switch kind {
        case .off:
            return nil
        case .local:
            return DirectorySessionStore(directory: stateDirectory + "/sessions")
        case .postgresql:
            guard let database, case .success(let configuration) = PostgresClient.Configuration.parse(url: database)
            else { return nil }
            let shown = database.replacingPassword()
            return PostgresSessionStore(configuration: configuration, description: shown, logger: logger)
        }
    }
}

extension String {
    /// A database URL as the log shows it: its password replaced.
    func replacingPassword() -> String {
        guard let at = firstIndex(of: "@"), let scheme = range(of: "://"), scheme.upperBound < at else { return self }
        let credentials = self[scheme.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return self }
        return String(self[..<colon]) + ":***" + String(self[at...])
    }
}
