//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleKit
import Logging
import Synchronization

/// A controller that counts the application events it receives, so no call can be optimised away.
@MainActor
public final class CountingController: ViewController {
    /// Application events received.
    public private(set) var events = 0

    /// Creates a controller named `identifier` (explicit, so no type name is formatted per controller).
    public init(named identifier: String) {
        super.init(identifier: identifier)
    }

    public required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    public override func didReceiveMemoryWarning() { events &+= 1 }
    public override func applicationWillResignActive() { events &+= 1 }
    public override func applicationDidEnterBackground() { events &+= 1 }
    public override func applicationWillEnterForeground() { events &+= 1 }
    public override func applicationDidBecomeActive() { events &+= 1 }
}

/// Builds controller trees of a given size, each controller with its root view loaded and embedded in its parent's.
@MainActor
public enum ControllerTree {
    /// Children per controller: 100,000 controllers make a tree six levels deep.
    public static let fanOut = 10

    /// A tree of exactly `count` controllers (at least one), breadth first, `fanOut` children each; every child is
    /// embedded (`addChild`, its view under the parent's view, `didMove(toParent:)`).
    public static func make(count: Int) -> CountingController {
        let root = CountingController(named: "root")
        root.loadViewIfNeeded()
        return breadthFirstTree(count: count, fanOut: fanOut, root: root) { parent, index in
            let child = CountingController(named: "c\(index)")
            parent.embed(child)
            return child
        }
    }

    /// A view tree of exactly `count` views (at least one) under one root view, `fanOut` subviews each.
    public static func makeViews(count: Int) -> CountingView {
        let root = CountingView(name: "root")
        _ = breadthFirstTree(count: count, fanOut: fanOut, root: root as View) { parent, index in
            let child = CountingView(name: "v\(index)")
            parent.addSubview(child)
            return child
        }
        return root
    }
}

/// Grows a tree of exactly `count` nodes (at least one) from `root`, breadth first, `fanOut` children per node:
/// `attach(parent, index)` makes the node numbered `index` and links it under `parent`. Every tree the benchmarks
/// compare (controllers, views, and the plain-Swift baselines) is grown by this one function, so all have one shape.
public func breadthFirstTree<Node>(
    count: Int,
    fanOut: Int,
    root: Node,
    attach: (Node, Int) -> Node
) -> Node {
    precondition(count >= 1, "a tree has at least its root")
    var frontier: [Node] = [root]
    var next: [Node] = []
    var made = 1
    while made < count {
        for parent in frontier {
            for _ in 0..<fanOut where made < count {
                next.append(attach(parent, made))
                made += 1
            }
            if made == count { break }
        }
        swap(&frontier, &next)
        next.removeAll(keepingCapacity: true)
    }
    return root
}

/// A view that counts its layout passes.
@MainActor
public final class CountingView: View {
    /// `layoutSubviews` calls received.
    public private(set) var layouts = 0

    public override func layoutSubviews() { layouts &+= 1 }

    /// Marks this view and every view below it for layout.
    public func markSubtreeForLayout() {
        setNeedsLayout()
        for subview in subviews { (subview as? CountingView)?.markSubtreeForLayout() }
    }
}

/// A delegate that sets up a window with the given root controller (nil: an empty window).
@MainActor
public final class TreeDelegate: ApplicationDelegate {
    /// The root controller to show, made before launch.
    public var root: ViewController?

    /// Creates the delegate.
    public init(root: ViewController?) {
        self.root = root
    }

    public func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: root)
        return true
    }
}

/// A log handler that accepts records at `logLevel` and drops them: the level checks and the record's formatting
/// happen as in the daemon, the write does not.
public struct DroppingLogHandler: LogHandler {
    /// The handler's level (the daemon's is info on a terminal, debug under journald).
    public var logLevel: Logger.Level
    /// Metadata attached to every record.
    public var metadata: Logger.Metadata = [:]

    /// Creates a handler at a level.
    public init(logLevel: Logger.Level) {
        self.logLevel = logLevel
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        // Render the record the way a line-writing handler would, then drop it; the atomic store keeps the work.
        var line = "\(event.level) \(event.message)"
        for (key, value) in event.metadata ?? [:] { line += " \(key)=\(value)" }
        renderedBytes.add(line.utf8.count, ordering: .relaxed)
    }
}

private let renderedBytes = Atomic<Int>(0)

/// A logger whose handler drops records at and above `level` after rendering them.
public func droppingLogger(level: Logger.Level) -> Logger {
    Logger(label: "bench") { _ in DroppingLogHandler(logLevel: level) }
}
