//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@preconcurrency import Benchmark
import LifecycleBenchSupport
@_spi(Internal) import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import Logging

#if canImport(Glibc)
import Glibc
#endif

// Each lifecycle benchmark has a plain-Swift twin measured in the same run (PlainNode & co.); scripts/bench turns
// the pairs into the ratios of docs/benchmarks/results.md. Names carry the sizes the harness divides by:
// n = controllers (or views), events = events per iteration, cycles = push/pop cycles per iteration.
//
// Every measured region runs on the main actor (LifecycleKit's objects live there), between explicit
// startMeasurement/stopMeasurement calls, so the hop onto the main actor is not measured.

/// The fan-out sizes of the issue: 10, 1,000, 10,000 and 100,000 controllers, and 1,000,000 (the scaling
/// benchmark's largest tree, measured in the daemon by scripts/bench).
let fanOutSizes = [10, 1_000, 10_000, 100_000, 1_000_000]
/// Controller-events per iteration: small trees repeat the event so an iteration is long enough to time well.
func eventsPerIteration(_ size: Int) -> Int { max(1, 100_000 / size) }
let pushPopCycles = 100
let layoutViews = 10_000
let memoryControllers = 1_000

/// The push/pop benchmark's count of callbacks per cycle.
let callbacksMetric = BenchmarkMetric.custom("callbacks", polarity: .prefersSmaller, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    // scripts/bench --smoke: a few iterations each, to check that everything runs.
    let smoke = getenv("LIFECYCLE_BENCH_SMOKE") != nil
    let timing = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal],
        warmupIterations: smoke ? 1 : 3,
        maxDuration: smoke ? .milliseconds(20) : .seconds(2),
        maxIterations: smoke ? 2 : 200
    )
    let memory = Benchmark.Configuration(
        metrics: [.mallocCountTotal, .mallocBytesCount, .memoryLeakedBytes, .mallocFreeDelta],
        warmupIterations: 1,
        maxDuration: smoke ? .milliseconds(20) : .seconds(2),
        maxIterations: smoke ? 2 : 20
    )
    var pushPop = timing
    pushPop.metrics.append(callbacksMetric)

    // MARK: Fan-out: one application event (a memory warning) through a tree of n controllers, each with a view

    for size in fanOutSizes {
        let events = eventsPerIteration(size)
        Benchmark(
            "fanout lifecycle n=\(size) events=\(events)",
            configuration: timing,
            closure: { benchmark in
                await MainActor.run {
                    let application = Fixture.current!.application!
                    benchmark.startMeasurement()
                    for _ in 0..<events { application.requestMemoryWarning() }
                    benchmark.stopMeasurement()
                }
            },
            setup: { await MainActor.run { Fixture.current = Fixture(tree: size, logLevel: .info) } },
            teardown: { await MainActor.run { Fixture.current = nil } }
        )
        Benchmark(
            "fanout plain n=\(size) events=\(events)",
            configuration: timing,
            closure: { benchmark in
                await MainActor.run {
                    let nodes = Fixture.current!.plainList
                    benchmark.startMeasurement()
                    for _ in 0..<events {
                        for node in nodes { node.didReceiveMemoryWarning() }
                    }
                    benchmark.stopMeasurement()
                }
            },
            setup: { await MainActor.run { Fixture.current = Fixture(plainList: size) } },
            teardown: { await MainActor.run { Fixture.current = nil } }
        )
    }

    // Informative rows, not the figures: the same event with nothing logged at all (what the tree costs
    // without the delegate's trace line), and with every controller event rendered for the log, as the daemon
    // does under journald (its level there is debug).
    // The third: the event as the daemon delivers it, with its stall detector (a started `StallDetector`) told of
    // every callback, which reads each controller's path.
    for (variant, level, size, events, detector) in [("lifecycle-quiet", Logger.Level.notice, 10, 10_000, false),
                                                     ("lifecycle-traced", Logger.Level.debug, 1_000, 100, false),
                                                     ("lifecycle-detector", Logger.Level.info, 100_000, 1, true)] {
        Benchmark(
            "fanout \(variant) n=\(size) events=\(events)",
            configuration: timing,
            closure: { benchmark in
                await MainActor.run {
                    let application = Fixture.current!.application!
                    benchmark.startMeasurement()
                    for _ in 0..<events { application.requestMemoryWarning() }
                    benchmark.stopMeasurement()
                }
            },
            setup: {
                await MainActor.run {
                    Fixture.current = Fixture(tree: size, logLevel: level)
                    if detector { Fixture.current!.watchStalls() }
                }
            },
            teardown: { await MainActor.run { Fixture.current = nil } }
        )
    }

    // MARK: Push/pop on a visible navigation controller, each cycle ending its turns as the main loop does

    Benchmark(
        "pushpop lifecycle cycles=\(pushPopCycles)",
        configuration: pushPop,
        closure: { benchmark in
            await MainActor.run {
                let fixture = Fixture.current!
                let navigation = fixture.navigation!
                let application = fixture.application!
                let before = application.trace.sequence
                benchmark.startMeasurement()
                for _ in 0..<pushPopCycles {
                    navigation.pushViewController(CountingController(named: "pushed"), animated: false)
                    PackageInternals.runEndOfTurn(application)
                    navigation.popViewController(animated: false)
                    PackageInternals.runEndOfTurn(application)
                }
                benchmark.stopMeasurement()
                // The number of callbacks one cycle makes, which the plain twin makes too.
                benchmark.measurement(callbacksMetric, (application.trace.sequence - before) / pushPopCycles)
            }
        },
        setup: { await MainActor.run { Fixture.current = Fixture(navigation: ()) } },
        teardown: { await MainActor.run { Fixture.current = nil } }
    )
    Benchmark(
        "pushpop plain cycles=\(pushPopCycles)",
        configuration: timing,
        closure: { benchmark in
            await MainActor.run {
                let fixture = Fixture.current!
                let callbacks = fixture.callbacksPerPushPop
                let bottom = PlainLeaf()
                bottom.view = PlainView()
                var stack: [PlainLeaf] = [bottom]
                benchmark.startMeasurement()
                for _ in 0..<pushPopCycles {
                    // Allocate the pushed controller and its view, link them, make every callback, unlink, free.
                    let pushed = PlainLeaf()
                    let view = PlainView()
                    view.owner = pushed
                    pushed.view = view
                    pushed.parent = stack[0]
                    stack.append(pushed)
                    stack[0].view?.subviews.append(view)
                    let nodes: [PlainNode] = [stack[0], pushed]
                    for index in 0..<callbacks { nodes[index & 1].callback() }
                    stack[0].view?.subviews.removeAll()
                    stack.removeLast()
                }
                benchmark.stopMeasurement()
                blackHole(stack)
            }
        },
        setup: { await MainActor.run { Fixture.current = Fixture(navigation: ()) } },
        teardown: { await MainActor.run { Fixture.current = nil } }
    )

    // MARK: One layout pass over 10,000 views (all marked) under a visible controller

    Benchmark(
        "layout lifecycle n=\(layoutViews)",
        configuration: timing,
        closure: { benchmark in
            await MainActor.run {
                let fixture = Fixture.current!
                fixture.layoutTop!.setNeedsLayout()
                fixture.layoutRoot!.markSubtreeForLayout()
                benchmark.startMeasurement()
                PackageInternals.runEndOfTurn(fixture.application!)
                benchmark.stopMeasurement()
            }
        },
        setup: { await MainActor.run { Fixture.current = Fixture(layout: layoutViews) } },
        teardown: { await MainActor.run { Fixture.current = nil } }
    )
    Benchmark(
        "layout plain n=\(layoutViews)",
        configuration: timing,
        closure: { benchmark in
            await MainActor.run {
                let root = Fixture.current!.plainTree!
                root.markSubtree()
                benchmark.startMeasurement()
                root.layoutPass()
                benchmark.stopMeasurement()
            }
        },
        setup: { await MainActor.run { Fixture.current = Fixture(plainTree: layoutViews) } },
        teardown: { await MainActor.run { Fixture.current = nil } }
    )

    // MARK: Memory: bytes held per controller + view (net of what is freed within the region)

    // Built apart: the tree is never attached, so it holds what a detached node keeps until it joins an
    // application's tree (the trace events of its subtree, waiting for their path). A live tree never holds those.

    Benchmark(
        "memory lifecycle n=\(memoryControllers)",
        configuration: memory,
        closure: { benchmark in
            await MainActor.run {
                benchmark.startMeasurement()
                let tree = ControllerTree.make(count: memoryControllers)
                benchmark.stopMeasurement()
                withExtendedLifetime(tree) {}
            }
        },
        setup: { await MainActor.run { Fixture.current = Fixture(memory: ()) } },
        teardown: { await MainActor.run { Fixture.current = nil } }
    )
    // Attached: the steady state of a tree shown in a launched, active application's window. The region builds the
    // tree, makes it the window's root (it joins the application, appears, is laid out and displayed), ends the turn,
    // delivers one application event (the fan-out keeps its list from then on) and ends the turn again; what it still
    // holds at the end is what the live tree costs. `-detector`: the same with the daemon's stall detector told of
    // every callback, as in `lifecycled` (each controller's and view's path is then built and kept).
    for (variant, detector) in [("lifecycle-attached", false), ("lifecycle-attached-detector", true)] {
        Benchmark(
            "memory \(variant) n=\(memoryControllers)",
            configuration: memory,
            closure: { benchmark in
                await MainActor.run {
                    let application = Fixture.current!.application!
                    let window = application.window!
                    benchmark.startMeasurement()
                    window.rootViewController = ControllerTree.make(count: memoryControllers)
                    PackageInternals.runEndOfTurn(application)
                    application.requestMemoryWarning()
                    PackageInternals.runEndOfTurn(application)
                    benchmark.stopMeasurement()
                    // Not measured: the tree leaves the window and is released, so every iteration starts empty.
                    window.rootViewController = nil
                    PackageInternals.runEndOfTurn(application)
                }
            },
            setup: {
                await MainActor.run {
                    Fixture.current = Fixture(emptyWindow: ())
                    if detector { Fixture.current!.watchStalls() }
                }
            },
            teardown: { await MainActor.run { Fixture.current = nil } }
        )
    }
    Benchmark(
        "memory plain n=\(memoryControllers)",
        configuration: memory,
        closure: { benchmark in
            await MainActor.run {
                benchmark.startMeasurement()
                let tree = PlainTree.makeOwningTree(count: memoryControllers, fanOut: ControllerTree.fanOut)
                benchmark.stopMeasurement()
                withExtendedLifetime(tree) {}
            }
        }
    )
}

/// What one benchmark works on, built in its setup hook (not measured) and dropped in its teardown.
@MainActor
final class Fixture {
    static var current: Fixture?

    private(set) var application: Application?
    private(set) var navigation: NavigationController?
    private(set) var layoutRoot: CountingView?
    private(set) var layoutTop: View?
    private(set) var plainList: [PlainNode] = []
    private(set) var plainTree: PlainNode?
    private(set) var callbacksPerPushPop = 0
    private var stallDetector: StallDetector?

    /// A launched, active application showing a tree of `size` controllers.
    init(tree size: Int, logLevel: Logger.Level) {
        application = Self.launch(root: ControllerTree.make(count: size), logLevel: logLevel)
    }

    /// `size` plain instances.
    init(plainList size: Int) {
        plainList = PlainTree.makeList(count: size)
    }

    /// A plain tree of `size` nodes.
    init(plainTree size: Int) {
        plainTree = PlainTree.makeTree(count: size, fanOut: ControllerTree.fanOut)
    }

    /// A launched application showing a navigation controller with one controller on its stack; also counts the
    /// callbacks of one push/pop cycle, for the plain twin.
    init(navigation: Void) {
        let bottom = CountingController(named: "bottom")
        let navigation = NavigationController(rootViewController: bottom, identifier: "nav")
        let application = Self.launch(root: navigation, logLevel: .info)
        let before = application.trace.sequence
        navigation.pushViewController(CountingController(named: "pushed"), animated: false)
        PackageInternals.runEndOfTurn(application)
        navigation.popViewController(animated: false)
        PackageInternals.runEndOfTurn(application)
        callbacksPerPushPop = application.trace.sequence - before
        self.navigation = navigation
        self.application = application
    }

    /// A launched application whose root controller's view holds `size` views in all.
    init(layout size: Int) {
        let root = CountingController(named: "root")
        let views = ControllerTree.makeViews(count: size - 1)
        root.view.addSubview(views)
        application = Self.launch(root: root, logLevel: .info)
        layoutRoot = views
        // The controller's root view is marked with the others, so a pass covers all `size` views.
        layoutTop = root.view
    }

    /// An application that traces like the daemon's (so tree building pays what it pays there), no window.
    init(memory: Void) {
        application = Application(delegate: TreeDelegate(root: nil), logger: droppingLogger(level: .info))
    }

    /// A launched, active application whose window is empty.
    init(emptyWindow: Void) {
        let application = Application(delegate: TreeDelegate(root: nil), logger: droppingLogger(level: .info))
        application.launch()
        PackageInternals.runEndOfTurn(application)
        precondition(application.applicationState == .active, "the fixture's application did not become active")
        self.application = application
    }

    /// Tells a started stall detector of every callback, as the daemon does (its default thresholds: 1 s, no
    /// watchdog).
    func watchStalls() {
        let detector = StallDetector(thresholds: .forWatchdog(nil), logger: droppingLogger(level: .info))
        try! detector.start()
        application!.trace.monitor = detector
        stallDetector = detector
    }

    isolated deinit {
        stallDetector?.stop()
    }

    private static func launch(root: ViewController, logLevel: Logger.Level) -> Application {
        let application = Application(delegate: TreeDelegate(root: root), logger: droppingLogger(level: logLevel))
        application.launch()
        PackageInternals.runEndOfTurn(application)
        precondition(application.applicationState == .active, "the fixture's application did not become active")
        return application
    }
}
