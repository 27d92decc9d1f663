//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleBenchSupport
@_spi(Internal) import LifecycleDaemon
@_spi(Internal) import LifecycleKit

#if canImport(Glibc)
import Glibc
#endif

/// The in-process benchmarks' loops without the benchmark tool, for a profiler (docs/benchmarks.md, "Profiling"):
///
///     lifecycle-bench-profile fanout CONTROLLERS EVENTS    memory warnings through a tree of CONTROLLERS
///     lifecycle-bench-profile fanout-detector CONTROLLERS EVENTS
///                                                          the same with the daemon's stall detector watching
///     lifecycle-bench-profile fanout-plain COUNT EVENTS    the plain-Swift baseline of the same
///     lifecycle-bench-profile pushpop CYCLES               push + pop on a visible navigation controller
///     lifecycle-bench-profile layout VIEWS PASSES          layout passes over VIEWS marked views
///
/// The application traces like the daemon on a terminal (info level; the record is rendered, not written).
@main
enum BenchProfile {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let numbers = arguments.dropFirst().compactMap { Int($0) }
        guard let mode = arguments.first, numbers.count == arguments.count - 1, numbers.allSatisfy({ $0 > 0 }) else {
            usage()
        }
        MainActor.assumeIsolated {
            switch (mode, numbers.count) {
            case ("fanout", 2): fanOut(controllers: numbers[0], events: numbers[1])
            case ("fanout-detector", 2): fanOut(controllers: numbers[0], events: numbers[1], detector: true)
            case ("fanout-plain", 2): fanOutPlain(count: numbers[0], events: numbers[1])
            case ("pushpop", 1): pushPop(cycles: numbers[0])
            case ("layout", 2): layout(views: numbers[0], passes: numbers[1])
            default: usage()
            }
        }
    }

    static func usage() -> Never {
        let text = "usage: lifecycle-bench-profile fanout N EVENTS | fanout-detector N EVENTS | fanout-plain N EVENTS"
            + " | pushpop CYCLES"
            + " | layout VIEWS PASSES\n"
        _ = Array(text.utf8).withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        exit(64)
    }

    @MainActor
    static func launch(root: ViewController) -> Application {
        let application = Application(delegate: TreeDelegate(root: root), logger: droppingLogger(level: .info))
        application.launch()
        PackageInternals.runEndOfTurn(application)
        return application
    }

    @MainActor
    static func fanOut(controllers: Int, events: Int, detector: Bool = false) {
        let root = ControllerTree.make(count: controllers)
        let application = launch(root: root)
        var stallDetector: StallDetector?
        if detector {
            // As the daemon does: a started detector (default thresholds: 1 s, no watchdog) told of every callback.
            let watching = StallDetector(thresholds: .forWatchdog(nil), logger: droppingLogger(level: .info))
            try! watching.start()
            application.trace.monitor = watching
            stallDetector = watching
        }
        for _ in 0..<events { application.requestMemoryWarning() }
        stallDetector?.stop()
        report("events delivered to the root", root.events)
    }

    @MainActor
    static func fanOutPlain(count: Int, events: Int) {
        let nodes = PlainTree.makeList(count: count)
        for _ in 0..<events {
            for node in nodes { node.didReceiveMemoryWarning() }
        }
        report("events delivered to the first node", (nodes[0] as! PlainLeaf).events)
    }

    @MainActor
    static func pushPop(cycles: Int) {
        let bottom = CountingController(named: "bottom")
        let navigation = NavigationController(rootViewController: bottom, identifier: "nav")
        let application = launch(root: navigation)
        for _ in 0..<cycles {
            navigation.pushViewController(CountingController(named: "pushed"), animated: false)
            PackageInternals.runEndOfTurn(application)
            navigation.popViewController(animated: false)
            PackageInternals.runEndOfTurn(application)
        }
        report("callbacks", application.trace.sequence)
    }

    @MainActor
    static func layout(views: Int, passes: Int) {
        let root = CountingController(named: "root")
        let tree = ControllerTree.makeViews(count: max(1, views - 1))
        root.view.addSubview(tree)
        let application = launch(root: root)
        for _ in 0..<passes {
            root.view.setNeedsLayout()
            tree.markSubtreeForLayout()
            PackageInternals.runEndOfTurn(application)
        }
        report("layouts of the top view", tree.layouts)
    }

    static func report(_ what: String, _ value: Int) {
        let text = "\(what): \(value)\n"
        _ = Array(text.utf8).withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }
}
