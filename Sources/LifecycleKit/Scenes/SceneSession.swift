//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The record of one scene that outlives it (UIKit's `UISceneSession`): its persistent identifier, its role, the
/// application's values for it, the scene while one is connected, and the saved state its scene is restored from when
/// it connects again — after a disconnection, a restart, a crash or an upgrade (docs/lifecycle.md, "Scenes").
///
/// Sessions are made by ``Application/requestSceneSessionActivation(_:role:persistentIdentifier:userInfo:inBackground:cause:completion:)``
/// and deleted by ``Application/requestSceneSessionDestruction(_:cause:completion:)``; the saved state keeps them across
/// launches.
@MainActor
public final class SceneSession: Hashable, CustomStringConvertible {
    /// What a session's scene is for; the application delegate picks a configuration by it.
    public struct Role: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The role's name, as the saved state and the trace keep it.
        public let rawValue: String

        /// A role of this name.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// A role written as a literal.
        public init(stringLiteral value: String) {
            self.rawValue = value
        }

        /// The role's name.
        public var description: String { rawValue }

        /// An instance of the application's interface (UIKit's `windowApplication`): the role of the scene connected at
        /// launch by default.
        public static let windowApplication = Role(rawValue: "application")
    }

    /// The identifier that names this session for good: in the trace (`scene:<identifier>/…`, `LIFECYCLE_SCENE=`), the
    /// saved state and the requests that drive it.
    public nonisolated let persistentIdentifier: String
    /// What its scene is for.
    public let role: Role
    /// The application's own values for this session, kept with it in the saved state.
    public var userInfo: [String: String]
    /// The scene connected to this session, or nil while none is.
    public internal(set) weak var scene: Scene?
    /// The configuration its scene was last connected with (the one the delegate returned); nil before its first
    /// connection in this process.
    public internal(set) var configuration: SceneConfiguration?
    /// The state its scene was saved in when it last disconnected (or was restored with from the saved state): the
    /// shape of its window's tree and the values its restorable controllers wrote. Its next connection restores it.
    public internal(set) var savedState: Archive?
    /// The name of the configuration its scene was last connected with, kept across launches.
    public internal(set) var configurationName: String?
    /// When the session was made, to list sessions in that order.
    let serial: Int

    init(persistentIdentifier: String, role: Role, userInfo: [String: String], serial: Int) {
        self.persistentIdentifier = persistentIdentifier
        self.role = role
        self.userInfo = userInfo
        self.serial = serial
    }

    /// `scene:<identifier>`, the session's name in the trace.
    public nonisolated var description: String { Scene.tracePrefix + persistentIdentifier }

    public nonisolated static func == (lhs: SceneSession, rhs: SceneSession) -> Bool { lhs === rhs }
    public nonisolated func hash(into hasher: inout Hasher) { hasher.combine(persistentIdentifier) }
}

/// What a scene is made with (UIKit's `UISceneConfiguration`): a name, the role, and how to make its delegate.
public struct SceneConfiguration: Sendable {
    /// The configuration's name, kept with the session across launches.
    public var name: String?
    /// The role of the sessions it is for.
    public var role: SceneSession.Role
    /// Makes the scene's delegate when the scene connects (UIKit instantiates `delegateClass`; a closure lets the
    /// delegate be given what it needs). Nil leaves the scene without a delegate.
    public var delegateFactory: (@MainActor @Sendable (Scene) -> any SceneDelegate)?

    /// A configuration named `name` for sessions of `sessionRole`.
    public init(
        name: String?,
        sessionRole: SceneSession.Role,
        delegateFactory: (@MainActor @Sendable (Scene) -> any SceneDelegate)? = nil
    ) {
        self.name = name
        self.role = sessionRole
        self.delegateFactory = delegateFactory
    }
}

/// The application's adoption of the scene-based life cycle (UIKit's `UIApplicationSceneManifest` in Info.plist),
/// read once when the application is made: with it, the scene delegates hear the foreground and background
/// transitions and the application delegate does not (docs/lifecycle.md, "Scenes").
public struct SceneManifest: Sendable, Hashable {
    /// The role of the new session connected at launch when no saved session is reconnected, as iOS connects a scene
    /// for whoever opens the application; nil connects none, and the application connects its scenes itself.
    public var launchSceneRole: SceneSession.Role?
    /// Whether the sessions whose scenes were connected when the state was saved are connected again at launch, each
    /// into the state it was in (as iOS brings back the scenes that were open).
    public var reconnectsScenesAtLaunch: Bool
    /// How many scenes may stay connected in the background after a memory warning the application does not answer;
    /// the least recently used ones beyond it are disconnected. Nil (the default) disconnects none.
    public var maximumBackgroundScenes: Int?

    /// A manifest; by default one scene of role ``SceneSession/Role/windowApplication`` is connected at launch, the
    /// saved connected sessions are reconnected, and memory warnings disconnect nothing.
    public init(
        launchSceneRole: SceneSession.Role? = .windowApplication,
        reconnectsScenesAtLaunch: Bool = true,
        maximumBackgroundScenes: Int? = nil
    ) {
        self.launchSceneRole = launchSceneRole
        self.reconnectsScenesAtLaunch = reconnectsScenesAtLaunch
        self.maximumBackgroundScenes = maximumBackgroundScenes.map { max(0, $0) }
    }
}

/// A scene request that cannot be made: the caller's mistake, named by its kind.
public struct SceneError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public enum Code: String, Sendable, Hashable {
        /// The application delegate has no ``ApplicationDelegate/sceneManifest``: it did not adopt scenes.
        case scenesNotAdopted
        /// The persistent identifier is empty, too long, or holds `/`, a space or a control character.
        case invalidIdentifier
        /// No session has this persistent identifier (it was never made, or it was discarded).
        case unknownSession
        /// A session with this persistent identifier exists already.
        case duplicateIdentifier
    }

    /// What is wrong.
    public var code: Code
    /// The persistent identifier the request named.
    public var identifier: String

    /// An error of `code` about `identifier`.
    public init(_ code: Code, identifier: String) {
        self.code = code
        self.identifier = identifier
    }

    /// The error as a sentence.
    public var description: String {
        switch code {
        case .scenesNotAdopted:
            "The application does not use scenes (its delegate has no sceneManifest), so it cannot drive scene \(identifier)."
        case .invalidIdentifier:
            "\(identifier.debugDescription) is not a scene identifier: use 1 to 128 characters, without /, spaces or control characters."
        case .unknownSession:
            "No scene session is named \(identifier.debugDescription)."
        case .duplicateIdentifier:
            "A scene session named \(identifier.debugDescription) exists already."
        }
    }

    /// The longest persistent identifier accepted.
    package static let maximumIdentifierLength = 128

    /// Whether `identifier` can name a session: it is one part of a trace path and one journal field value.
    package static func isValid(_ identifier: String) -> Bool {
        guard !identifier.isEmpty, identifier.count <= maximumIdentifierLength else { return false }
        return !identifier.unicodeScalars.contains { scalar in
            scalar == "/" || scalar.properties.isWhitespace || NodeName.isForbidden(scalar)
        }
    }
}

/// A request about one scene session, by its persistent identifier: what an operator asks for
/// (`lifecyclectl scene foreground|background|disconnect|discard ID`) and the application's own code may submit
/// (``Application/submitScene(_:cause:completion:)``).
public enum SceneRequest: Hashable, Sendable, CustomStringConvertible {
    /// Bring the session's scene to the foreground (active while the application is): connect it first when it is
    /// not connected.
    case foreground(String)
    /// Send the session's scene to the background: connect it into the background when it is not connected.
    case background(String)
    /// Disconnect the session's scene, keeping the session and its saved state.
    case disconnect(String)
    /// Delete the session: its scene disconnects first, and the application delegate hears
    /// `application(_:didDiscardSceneSessions:)`.
    case discard(String)

    /// The persistent identifier of the session the request is about.
    public var persistentIdentifier: String {
        switch self {
        case .foreground(let id), .background(let id), .disconnect(let id), .discard(let id): id
        }
    }

    /// The request as the command line names it: `foreground client-7`.
    public var description: String {
        switch self {
        case .foreground(let id): "foreground \(id)"
        case .background(let id): "background \(id)"
        case .disconnect(let id): "disconnect \(id)"
        case .discard(let id): "discard \(id)"
        }
    }
}
