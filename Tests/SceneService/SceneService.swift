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
import Logging

/// scene-service, the end-to-end tests' service that uses scenes (Tests/EndToEnd/test_scenes.py): one scene per
/// connected client (role `client`) and per tenant (role `tenant`), each with its own tree, state and saved state.
///
/// Its first start connects the clients and tenants its command line names, as a hosted server connects a scene when
/// a client connects; later starts (a restart, a crash, an upgrade) bring back the sessions its saved state holds and
/// connect nobody new. From then on the operator drives the scenes (`lifecyclectl scene …`) and the signals drive
/// them all.
@main
final class SceneService: ApplicationMain {
    typealias Options = SceneServiceOptions

    nonisolated static var commandConfiguration: CommandConfiguration {
        CommandConfiguration(
            commandName: "scene-service",
            abstract: "A LifecycleKit daemon with one scene per client and per tenant (the end-to-end tests').",
            version: "0.2.0"
        )
    }

    private let logger = Logger(label: "scene-service")
    private var options = SceneServiceOptions()
    /// Whether this launch restored a saved state: it then connects nobody new.
    private var restored = false

    /// Every scene delegate hears the foreground and the background; the saved connected sessions connect again at
    /// launch; the service connects its first ones itself.
    var sceneManifest: SceneManifest? {
        SceneManifest(launchSceneRole: nil, reconnectsScenesAtLaunch: true)
    }

    func configure(options: SceneServiceOptions, settings: NoSettings) {
        self.options = options
    }

    func registerArchiveClasses(in registry: inout ArchiveClassRegistry) {
        registry.register(SessionController.self)
        registry.register(FeedController.self)
    }

    func application(_ application: Application, shouldSaveApplicationState coder: StateCoder) -> Bool { true }

    func application(_ application: Application, shouldRestoreApplicationState archive: Archive) -> Bool {
        restored = true
        return true
    }

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        guard !restored else { return true }
        let clients = (0..<self.options.clients).map { index in
            ("client-\(index + 1)", SceneSession.Role.client, ["seat": "\(index + 1)"])
        }
        let sessions = clients + self.options.tenants.map { ("tenant-\($0)", SceneSession.Role.tenant, ["tenant": $0]) }
        for (identifier, role, userInfo) in sessions {
            do {
                try application.requestSceneSessionActivation(
                    role: role,
                    persistentIdentifier: identifier,
                    userInfo: userInfo
                )
            } catch {
                logger.error("cannot connect \(identifier): \(error)")
            }
        }
        return true
    }

    func application(
        _ application: Application,
        configurationForConnecting session: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        SceneConfiguration(name: session.role == .tenant ? "Tenant" : "Client", sessionRole: session.role) { _ in
            SessionSceneDelegate()
        }
    }

    func application(_ application: Application, didDiscardSceneSessions sessions: Set<SceneSession>) {
        logger.info("discarded \(sessions.map(\.persistentIdentifier).sorted().joined(separator: ", "))")
    }
}

/// The service's own command line.
struct SceneServiceOptions: ParsableArguments {
    @Option(
        name: .customLong("clients"),
        help: "Connect this many clients at the first start (client-1, client-2, …)."
    )
    var clients = 0

    @Option(name: .customLong("tenant"), help: "Connect this tenant at the first start (tenant-NAME). Repeatable.")
    var tenants: [String] = []

    func validate() throws {
        guard clients >= 0, clients <= 100_000 else {
            throw ValidationError("--clients needs a count from 0 to 100000, not \(clients)")
        }
    }
}

extension SceneSession.Role {
    /// A connected client's session.
    static let client: Self = "client"
    /// A tenant's session.
    static let tenant: Self = "tenant"
}
