//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CBenchSupport
import LifecycleBenchSupport
@_spi(Internal) import LifecycleKit

#if canImport(Glibc)
import Glibc
#endif

/// The scenes benchmark (docs/benchmarks.md, section 11), one measurement per run, its figures as one line of JSON on
/// stdout; Benchmarks/harness/lifecyclebench/scenes.py runs it and takes the medians:
///
///     lifecycle-bench-scenes connect SCENES ROUNDS    connect SCENES new sessions one request and turn each (as a
///                                                     server does per client), then disconnect each; per scene
///     lifecycle-bench-scenes memory SESSIONS          heap bytes per connected session, then per disconnected one
///     lifecycle-bench-scenes fanout SCENES EVENTS     a memory warning, and a background + foreground round trip,
///                                                     through SCENES connected scenes; per scene
///     lifecycle-bench-scenes plain MODE N COUNT       the plain-Swift twin of connect (N scenes, COUNT rounds),
///                                                     memory (N units) or fanout (N scenes, COUNT events), each making
///                                                     the callbacks its lifecycle run counted (CALLBACKS in the
///                                                     environment) on plain class instances
///
/// Every scene has the scene service's tree (Tests/SceneService): a root controller with one child, each with its
/// view, the root's holding a label. The application traces as the daemon does on a terminal: the delegates' events
/// (the scene delegates' among them) rendered at info, the trees' counted only. A benchmark measures; it asserts no
/// time.
@main
enum BenchScenes {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        MainActor.assumeIsolated {
            switch (arguments.first, arguments.dropFirst().compactMap { Int($0) }) {
            case ("connect", let numbers) where numbers.count == 2 && arguments.count == 3:
                connect(scenes: numbers[0], rounds: numbers[1])
            case ("memory", let numbers) where numbers.count == 1 && arguments.count == 2:
                memory(sessions: numbers[0])
            case ("fanout", let numbers) where numbers.count == 2 && arguments.count == 3:
                fanOut(scenes: numbers[0], events: numbers[1])
            case ("plain", let numbers) where numbers.count == 2 && arguments.count == 4:
                plain(mode: arguments[1], count: numbers[0], repeats: numbers[1])
            default:
                usage()
            }
        }
    }

    static func usage() -> Never {
        let text = "usage: lifecycle-bench-scenes connect SCENES ROUNDS | memory SESSIONS | fanout SCENES EVENTS"
            + " | plain connect|memory|fanout N COUNT\n"
        _ = Array(text.utf8).withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        exit(64)
    }

    // MARK: LifecycleKit

    /// A launched application that uses scenes, active, with no scene yet.
    @MainActor
    static func launch() -> Application {
        let application = Application(delegate: BenchSceneDelegate(), logger: droppingLogger(level: .info))
        application.launch()
        PackageInternals.runEndOfTurn(application)
        precondition(
            application.applicationState == .background,
            "a scene-based application launches in the background"
        )
        return application
    }

    /// Connects a new session into the foreground and ends the turn, as a server does when a client connects.
    @MainActor
    static func connect(_ identifier: String, in application: Application) {
        try! application.requestSceneSessionActivation(role: "client", persistentIdentifier: identifier)
        PackageInternals.runEndOfTurn(application)
    }

    @MainActor
    static func connect(scenes: Int, rounds: Int) {
        let application = launch()
        // Warm-up: one connection and disconnection, so the first measured one pays no first-use costs.
        connect("warm", in: application)
        try! application.submitScene(.discard("warm"), cause: "bench")
        PackageInternals.runEndOfTurn(application)
        var connecting = Duration.zero
        var disconnecting = Duration.zero
        var callbacks = (connect: 0, disconnect: 0)
        let clock = ContinuousClock()
        for round in 0..<rounds {
            let identifiers = (0..<scenes).map { "r\(round)-\($0)" }
            let before = application.trace.sequence
            connecting += clock.measure {
                for identifier in identifiers { connect(identifier, in: application) }
            }
            let connected = application.trace.sequence
            disconnecting += clock.measure {
                for identifier in identifiers {
                    try! application.submitScene(.disconnect(identifier), cause: "bench")
                    PackageInternals.runEndOfTurn(application)
                }
            }
            callbacks.connect += connected - before
            callbacks.disconnect += application.trace.sequence - connected
            // Not measured: the sessions go, so every round starts from the same table.
            for identifier in identifiers { try! application.submitScene(.discard(identifier), cause: "bench") }
            PackageInternals.runEndOfTurn(application)
        }
        let count = Double(scenes * rounds)
        report([
            "connectNs": nanoseconds(connecting) / count,
            "disconnectNs": nanoseconds(disconnecting) / count,
            "connectCallbacks": Double(callbacks.connect) / count,
            "disconnectCallbacks": Double(callbacks.disconnect) / count,
        ])
    }

    @MainActor
    static func memory(sessions: Int) {
        let application = launch()
        connect("warm", in: application)
        try! application.submitScene(.discard("warm"), cause: "bench")
        PackageInternals.runEndOfTurn(application)
        let identifiers = (0..<sessions).map { "client-\($0)" }
        let before = Heap.inUse()
        let rssBefore = Heap.residentBytes()
        for identifier in identifiers { connect(identifier, in: application) }
        let connected = Heap.inUse()
        let rssConnected = Heap.residentBytes()
        for identifier in identifiers {
            try! application.submitScene(.disconnect(identifier), cause: "bench")
            PackageInternals.runEndOfTurn(application)
        }
        let disconnected = Heap.inUse()
        precondition(application.connectedScenes.isEmpty && application.sceneSessions.count == sessions)
        let count = Double(sessions)
        report([
            "connectedBytes": Double(connected - before) / count,
            "disconnectedBytes": Double(disconnected - before) / count,
            "releasedBytes": Double(connected - disconnected) / count,
            "connectedRssBytes": Double(rssConnected - rssBefore) / count,
        ])
    }

    @MainActor
    static func fanOut(scenes: Int, events: Int) {
        let application = launch()
        for index in 0..<scenes { connect("client-\(index)", in: application) }
        precondition(application.applicationState == .active && application.connectedScenes.count == scenes)
        let clock = ContinuousClock()
        // One of each first: the fan-out's lists are taken, the first-use costs paid.
        application.requestMemoryWarning()
        var before = application.trace.sequence
        let warnings = clock.measure {
            for _ in 0..<events { application.requestMemoryWarning() }
        }
        let warningCallbacks = application.trace.sequence - before
        application.requestEnterBackground()
        application.requestBecomeActive()
        PackageInternals.runEndOfTurn(application)
        before = application.trace.sequence
        let roundTrips = clock.measure {
            for _ in 0..<events {
                application.requestEnterBackground()
                application.requestBecomeActive()
                PackageInternals.runEndOfTurn(application)
            }
        }
        let roundTripCallbacks = application.trace.sequence - before
        precondition(application.connectedScenes.allSatisfy { $0.activationState == .foregroundActive })
        let perScene = Double(scenes * events)
        report([
            "memoryWarningNs": nanoseconds(warnings) / perScene,
            "memoryWarningCallbacks": Double(warningCallbacks) / perScene,
            "roundTripNs": nanoseconds(roundTrips) / perScene,
            "roundTripCallbacks": Double(roundTripCallbacks) / perScene,
        ])
    }

    // MARK: The plain-Swift twins

    @MainActor
    static func plain(mode: String, count: Int, repeats: Int) {
        let callbacks = getenv("CALLBACKS").flatMap { Double(String(cString: $0)) } ?? 0
        let clock = ContinuousClock()
        switch mode {
        case "connect":
            // Per scene: a session record and a scene in dictionaries, a root and a child node each with its view,
            // linked, and as many calls as the lifecycle's connection made; then unlinked and released with as many
            // calls as its disconnection made (CALLBACKS="CONNECT,DISCONNECT").
            let text = getenv("CALLBACKS").map { String(cString: $0) } ?? ""
            let parts = text.split(separator: ",").compactMap { Double($0) }
            let (connectCalls, disconnectCalls) = (Int(parts.first ?? 0), Int(parts.last ?? 0))
            var sessions: [String: PlainSession] = [:]
            var units: [String: PlainSceneUnit] = [:]
            var connecting = Duration.zero
            var disconnecting = Duration.zero
            var calls = 0
            for round in 0..<repeats {
                let identifiers = (0..<count).map { "r\(round)-\($0)" }
                connecting += clock.measure {
                    for identifier in identifiers {
                        sessions[identifier] = PlainSession(identifier: identifier)
                        let unit = PlainSceneUnit()
                        units[identifier] = unit
                        calls &+= unit.call(connectCalls)
                    }
                }
                disconnecting += clock.measure {
                    for identifier in identifiers {
                        let unit = units.removeValue(forKey: identifier)!
                        calls &+= unit.call(disconnectCalls)
                        sessions[identifier]!.saved = unit.encode()
                    }
                }
                sessions.removeAll(keepingCapacity: true)
            }
            let total = Double(count * repeats)
            report([
                "connectNs": nanoseconds(connecting) / total,
                "disconnectNs": nanoseconds(disconnecting) / total,
                "calls": Double(calls),
            ])
        case "memory":
            let before = Heap.inUse()
            var units: [String: PlainSceneUnit] = [:]
            var sessions: [String: PlainSession] = [:]
            for index in 0..<count {
                let identifier = "client-\(index)"
                sessions[identifier] = PlainSession(identifier: identifier)
                units[identifier] = PlainSceneUnit()
            }
            let connected = Heap.inUse()
            for (identifier, unit) in units { sessions[identifier]!.saved = unit.encode() }
            units.removeAll()
            let disconnected = Heap.inUse()
            withExtendedLifetime((units, sessions)) {}
            report([
                "connectedBytes": Double(connected - before) / Double(count),
                "disconnectedBytes": Double(disconnected - before) / Double(count),
            ])
        case "fanout":
            // The same number of callbacks per scene as the lifecycle's event made, on the scenes' nodes in a loop.
            let units = (0..<count).map { _ in PlainSceneUnit() }
            let perScene = Int(callbacks.rounded())
            var calls = 0
            let elapsed = clock.measure {
                for _ in 0..<repeats {
                    for unit in units.reversed() { calls &+= unit.call(perScene) }
                }
            }
            report(["ns": nanoseconds(elapsed) / Double(count * repeats), "calls": Double(calls)])
        default:
            usage()
        }
    }

    static func nanoseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }

    /// One line of JSON: the figures by name.
    static func report(_ figures: [String: Double]) {
        let members = figures.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }
        let text = "{" + members.joined(separator: ", ") + "}\n"
        _ = Array(text.utf8).withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }
}

/// The application delegate: scenes, each with the benchmark's scene delegate; nothing saved.
@MainActor
final class BenchSceneDelegate: ApplicationDelegate {
    var sceneManifest: SceneManifest? { SceneManifest(launchSceneRole: nil) }

    func application(
        _ application: Application,
        configurationForConnecting session: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        SceneConfiguration(name: "Client", sessionRole: session.role) { _ in BenchSceneTreeBuilder() }
    }
}

/// Builds a scene's tree: a root with a label, and one child.
@MainActor
final class BenchSceneTreeBuilder: SceneDelegate {
    func scene(_ scene: Scene, willConnectTo session: SceneSession, options: Scene.ConnectionOptions) {
        scene.window.rootViewController = BenchSceneRoot()
    }
}

/// A scene's root: it counts its application events (like the fan-out benchmark's controllers) and keeps a value its
/// session preserves, as the scene service's root does.
@MainActor
final class BenchSceneRoot: ViewController {
    private(set) var events = 0

    init() {
        super.init(identifier: "root")
        restorationIdentifier = "root"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        view.addSubview(View(name: "summary"))
        embed(CountingController(named: "feed"))
    }

    override func didReceiveMemoryWarning() { events &+= 1 }
    override func applicationDidBecomeActive() { events &+= 1 }
    override func encodeRestorableState(with coder: StateCoder) { coder.encode(events, forKey: "events") }
}

/// A session record of the plain twin: what a server keeps for a client without a framework.
final class PlainSession {
    let identifier: String
    var userInfo: [String: String] = [:]
    var saved: [String: Int]?

    init(identifier: String) {
        self.identifier = identifier
    }
}

/// A scene of the plain twin: two linked nodes, each with its view, the root's view with a subview.
final class PlainSceneUnit {
    let root = PlainLeaf()
    let child = PlainLeaf()

    init() {
        root.view = PlainView()
        child.view = PlainView()
        root.view!.subviews = [PlainView(), child.view!]
        root.children = [child]
        child.parent = root
    }

    /// `count` callbacks, alternating between the two nodes; returns how many were made.
    func call(_ count: Int) -> Int {
        for index in 0..<count { (index & 1 == 0 ? root : child).callback() }
        return count
    }

    /// The values a disconnection keeps.
    func encode() -> [String: Int] {
        ["events": root.events]
    }
}

/// What the process holds: the C heap's bytes in use (glibc's mallinfo2, every Swift object included) and the
/// resident set.
enum Heap {
    static func inUse() -> Int {
        Int(bench_heap_in_use())
    }

    static func residentBytes() -> Int {
        Int(bench_resident_bytes())
    }
}
