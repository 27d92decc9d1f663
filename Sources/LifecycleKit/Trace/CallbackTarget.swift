//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// What a callback runs on, as a ``CallbackMonitor`` is told just before it runs: values only, so another thread may
/// keep and read them.
///
/// A fixed name (`delegate`, the path of a task whose controller is gone), or a controller or a view by its identity
/// and its type, with its path when the trace built it for the event (whenever the event is logged or observed).
/// Telling a monitor of a callback nobody observes costs no path: a node's path is built only when somebody reads it.
/// A callback of a scene names its scene: by its path (`scene:<identifier>/…`), or, when no path was built, by the
/// scene whose step was running (``scene``).
@_spi(Internal) public struct CallbackTarget: Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    enum Node: Sendable {
        case controller(ViewController.Type)
        case view(View.Type)
    }

    /// `delegate`, a fixed name, or the node's path when the trace built it for this callback; nil for a node whose
    /// path was not built.
    @_spi(Internal) public let path: String?
    /// The node's identity (never dereferenced: only compared), nil for a named target.
    @_spi(Internal) public let identity: ObjectIdentifier?
    let node: Node?
    /// The scene the trace said the callback belongs to, when the path cannot say it.
    let sceneIdentifier: String?

    /// A target known by its name alone.
    @_spi(Internal) public static func named(_ name: String) -> CallbackTarget {
        CallbackTarget(path: name, identity: nil, node: nil)
    }

    @_spi(Internal) public init(stringLiteral name: String) {
        self.init(path: name, identity: nil, node: nil)
    }

    init(path: String?, identity: ObjectIdentifier?, node: Node?, scene: String? = nil) {
        self.path = path
        self.identity = identity
        self.node = node
        self.sceneIdentifier = scene
    }

    /// A controller, with its path if the trace built it, in `scene` if its scene's step runs.
    @MainActor
    init(_ controller: ViewController, path: String?, scene: String? = nil) {
        self.init(path: path, identity: ObjectIdentifier(controller), node: .controller(type(of: controller)), scene: scene)
    }

    /// A view, with its path if the trace built it, in `scene` if its scene's step runs.
    @MainActor
    init(_ view: View, path: String?, scene: String? = nil) {
        self.init(path: path, identity: ObjectIdentifier(view), node: .view(type(of: view)), scene: scene)
    }

    /// The persistent identifier of the scene the callback belongs to: read from its path (`scene:<identifier>`,
    /// `scene:<identifier>/root/…`), else the scene whose step was running when it started; nil outside every scene.
    @_spi(Internal) public var scene: String? {
        if let path, let identifier = Scene.identifier(inTracePath: path) { return identifier }
        return sceneIdentifier
    }

    /// The node's type, nil for a named target.
    @_spi(Internal) public var nodeType: Any.Type? {
        switch node {
        case .controller(let type): type
        case .view(let type): type
        case nil: nil
        }
    }

    /// The path when known, else the node's type in angle brackets (`<ModeController>`), as `lifecyclectl tree` writes
    /// a node.
    @_spi(Internal) public var description: String {
        if let path { return path }
        return nodeType.map { "<\($0)>" } ?? "?"
    }
}

/// What the trace records a callback on, on the main actor: the node itself, whose path is read only when the event is
/// logged or observed, or a fixed name.
@MainActor
enum TraceTarget: ExpressibleByStringLiteral {
    case named(String)
    case controller(ViewController)
    case view(View)

    nonisolated init(stringLiteral name: String) {
        self = .named(name)
    }

    /// The target's path now (`delegate`, `root/child`, `root.view/label`).
    var path: String {
        switch self {
        case .named(let name): name
        case .controller(let controller): controller.path
        case .view(let view): view.path
        }
    }

    /// What a monitor is told; `path` is the path the trace built for the event, nil when it built none; `scene` the
    /// scene the event belongs to, when the trace knows it.
    func monitored(path: String?, scene: String?) -> CallbackTarget {
        switch self {
        case .named(let name): CallbackTarget(path: name, identity: nil, node: nil, scene: scene)
        case .controller(let controller): CallbackTarget(controller, path: path, scene: scene)
        case .view(let view): CallbackTarget(view, path: path, scene: scene)
        }
    }
}
