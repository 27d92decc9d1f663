//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// One instance of the application's interface (UIKit's `UIWindowScene`): a window and its root controller, with a
/// foreground, background and active state of its own, driven by its ``SceneDelegate`` (docs/lifecycle.md, "Scenes").
///
/// The application makes a scene when it connects a session, and lets go of it when the scene disconnects: its
/// window's tree disappears and is released then, and what it preserved stays with the ``session``.
@MainActor
public final class Scene: CustomStringConvertible {
    /// Where a scene is in its life, as UIKit names it (`UIScene.ActivationState`).
    public enum ActivationState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Not connected: before `scene(_:willConnectTo:options:)` has made it, or after `sceneDidDisconnect`.
        case unattached
        /// In the foreground, not receiving events (between background and active, or interrupted).
        case foregroundInactive
        /// In the foreground and serving.
        case foregroundActive
        /// In the background: its work is paused.
        case background

        /// The state's name.
        public var description: String { rawValue }
    }

    /// Why a scene is being connected (UIKit's `UIScene.ConnectionOptions`).
    public struct ConnectionOptions: Sendable, Hashable {
        /// What the request that connects it carried (a client's address, a tenant's name).
        public var userInfo: [String: String]
        /// What asked for the connection: `api`, `control`, `launch`, a memory warning's cause…
        public var cause: Cause

        /// Options carrying `userInfo`, for a connection asked for by `cause`.
        public init(userInfo: [String: String] = [:], cause: Cause = .api) {
            self.userInfo = userInfo
            self.cause = cause
        }
    }

    /// The session this scene belongs to.
    public let session: SceneSession
    /// The scene's delegate, made by its configuration; held strongly, as UIKit holds it.
    public internal(set) var delegate: (any SceneDelegate)?
    /// The scene's window: its delegate sets the window's root controller in `scene(_:willConnectTo:options:)`.
    public let window: Window
    /// Where the scene is in its life; during a callback, the state that callback fires in.
    public internal(set) var activationState: ActivationState = .unattached
    /// The application the scene belongs to.
    public private(set) weak var application: Application?
    /// The options the scene was connected with.
    public let connectionOptions: ConnectionOptions
    /// Its place in the connection order.
    var serial = 0

    /// The prefix of every trace path in a scene (`scene:<identifier>`), and the trace target of its delegate.
    nonisolated static let tracePrefix = "scene:"

    init(session: SceneSession, application: Application, options: ConnectionOptions) {
        self.session = session
        self.application = application
        self.connectionOptions = options
        self.window = Window(pathPrefix: Self.tracePrefix + session.persistentIdentifier + "/")
        window.windowScene = self
        window.attach(to: application)
    }

    /// `scene:<identifier>`, the scene's name in the trace.
    public nonisolated var description: String { session.description }

    /// The persistent identifier of the scene named by a trace path (`scene:client-7/root/list` → `client-7`), or nil
    /// for a path outside every scene: the daemon's stall detector reads it from the path of the callback it names.
    package nonisolated static func identifier(inTracePath path: String) -> String? {
        guard path.hasPrefix(tracePrefix) else { return nil }
        let rest = path.dropFirst(tracePrefix.count)
        let end = rest.firstIndex(of: "/") ?? rest.endIndex
        return rest.startIndex < end ? String(rest[..<end]) : nil
    }
}

/// The callbacks of one scene's life (UIKit's `UISceneDelegate`), each with an empty default.
///
/// Entering events reach the scene delegate before the scene's tree; leaving events reach it after the tree, as the
/// application delegate's do (docs/lifecycle.md §2).
@MainActor
public protocol SceneDelegate: AnyObject {
    /// The scene is being connected to `session`: build its window's tree here (`scene.window.rootViewController = …`).
    /// A session with a saved state has it restored into that tree right after this returns.
    func scene(_ scene: Scene, willConnectTo session: SceneSession, options: Scene.ConnectionOptions)
    /// The scene was disconnected: release what it held. Its tree disappears and is released after this returns; its
    /// session stays unless it was discarded.
    func sceneDidDisconnect(_ scene: Scene)
    /// The scene is about to enter the foreground (from the background, or being connected into it).
    func sceneWillEnterForeground(_ scene: Scene)
    /// The scene became active: serve.
    func sceneDidBecomeActive(_ scene: Scene)
    /// The scene is about to stop being active.
    func sceneWillResignActive(_ scene: Scene)
    /// The scene entered the background: pause its work.
    func sceneDidEnterBackground(_ scene: Scene)
}

extension SceneDelegate {
    public func scene(_ scene: Scene, willConnectTo session: SceneSession, options: Scene.ConnectionOptions) {}
    public func sceneDidDisconnect(_ scene: Scene) {}
    public func sceneWillEnterForeground(_ scene: Scene) {}
    public func sceneDidBecomeActive(_ scene: Scene) {}
    public func sceneWillResignActive(_ scene: Scene) {}
    public func sceneDidEnterBackground(_ scene: Scene) {}
}
