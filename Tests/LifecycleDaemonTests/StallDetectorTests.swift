//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import LifecycleSystemd
import Logging
import Testing

@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) @testable import LifecycleKit

/// Log records with their levels and metadata, from any thread.
final class StallLog: Sendable {
    struct Record: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: [String: String]
    }

    private let records = ConditionLock<[Record]>([])

    var all: [Record] { records.withLock { $0 } }

    func logger() -> Logger {
        Logger(label: "stall") { _ in Handler(log: self) }
    }

    private struct Handler: LogHandler {
        let log: StallLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).mapValues { "\($0)" }
            log.records.withLock { $0.append(Record(level: event.level, message: "\(event.message)", metadata: fields)) }
        }
    }
}

/// Blocks the calling thread, as a hung callback does.
func block(for duration: Duration) {
    SystemThread.sleep(for: duration)
}

// On the main actor: the detector is told of callbacks by the thread that runs them (a daemon's main thread), and the
// tests that drive an application play that part.
@MainActor
@Suite("The stall detector")
struct StallDetectorTests {
    @Test func aCallbackRunningPastTheThresholdsIsNamedTwiceThenItsDurationWhenItReturns() throws {
        let log = StallLog()
        let detector = StallDetector(
            thresholds: .init(warning: .milliseconds(100), urgent: .milliseconds(250)),
            logger: log.logger()
        )
        try detector.start()
        defer { detector.stop() }
        detector.callbackWillStart(sequence: 41, event: "viewDidAppear", target: "root/modes/serving")
        block(for: .milliseconds(400))
        detector.dispatchDidEnd()
        let records = log.all
        #expect(records.map(\.level) == [.warning, .error, .notice])
        // 100 ms, or a little more when the detector's thread wakes late on a loaded machine.
        let prefix = "viewDidAppear root/modes/serving has run for "
        #expect(records[0].message.hasPrefix(prefix))
        let reported = Int(records[0].message.dropFirst(prefix.count).prefix { $0.isNumber }) ?? 0
        #expect(reported >= 100 && reported < 250, "\(records[0].message)")
        #expect(records[0].metadata["lifecycle.stall_target"] == "root/modes/serving")
        #expect(records[0].metadata["lifecycle.stall_event"] == "viewDidAppear")
        #expect(records[0].metadata["lifecycle.stall_seq"] == "41")
        #expect(records[1].message.contains("half the watchdog interval has passed"))
        #expect(records[2].message.hasPrefix("viewDidAppear root/modes/serving returned after"))
        let ran = Int(records[2].metadata["lifecycle.stall_ms"]!)!
        #expect(ran >= 400 && ran < 2000)
    }

    @Test func quickCallbacksAndAnIdleLoopLogNothing() throws {
        let log = StallLog()
        let detector = StallDetector(thresholds: .init(warning: .milliseconds(100), urgent: nil), logger: log.logger())
        try detector.start()
        defer { detector.stop() }
        for sequence in 1...200 {
            detector.callbackWillStart(sequence: sequence, event: "layoutSubviews", target: "root.view")
        }
        detector.dispatchDidEnd()
        block(for: .milliseconds(300))
        #expect(log.all.isEmpty)
    }

    @Test func theNextCallbackEndsTheOneBefore() throws {
        let log = StallLog()
        let detector = StallDetector(thresholds: .init(warning: .milliseconds(50), urgent: nil), logger: log.logger())
        try detector.start()
        defer { detector.stop() }
        detector.callbackWillStart(sequence: 1, event: "applicationDidEnterBackground", target: "delegate")
        block(for: .milliseconds(150))
        detector.callbackWillStart(sequence: 2, event: "viewWillDisappear", target: "root")
        detector.dispatchDidEnd()
        #expect(log.all.map(\.level) == [.warning, .notice])
        #expect(log.all.allSatisfy { $0.metadata["lifecycle.stall_target"] == "delegate" })
    }

    @Test func thresholdsFollowTheWatchdog() {
        let watched = StallDetector.Thresholds.forWatchdog(.seconds(10))
        #expect(watched == StallDetector.Thresholds(warning: .milliseconds(2500), urgent: .seconds(5)))
        let unwatched = StallDetector.Thresholds.forWatchdog(nil)
        #expect(unwatched == StallDetector.Thresholds(warning: .seconds(1), urgent: nil))
    }

    @MainActor
    @Test func aHungControllerCallbackIsNamedByItsTypeWhileNobodyObservesTheTraceAndByItsPathWhenTheTraceRecordsIt() throws {
        // Nothing observes the trace, so no path is built for it: the detector names the controller by its type. With
        // the trace logged (as under journald), by the path the trace built for the event.
        final class Hanging: ViewController {
            override func viewDidAppear(_ animated: Bool) { block(for: .milliseconds(200)) }
        }
        for logged in [false, true] {
            let log = StallLog()
            let detector = StallDetector(thresholds: .init(warning: .milliseconds(100), urgent: nil), logger: log.logger())
            try detector.start()
            defer { detector.stop() }
            let root = ViewController(identifier: "root")
            root.embed(Hanging(identifier: "hanging"))
            // Logged: every event at debug reaches a handler (a log of its own); not: nothing does.
            let appLogger = logged ? StallLog().logger() : Logger(label: "quiet", factory: { _ in SwiftLogNoOpLogHandler() })
            let app = Application(delegate: QuietDelegate(), logger: appLogger)
            app.trace.monitor = detector
            app.window = Window(rootViewController: root)
            app.launch()
            app.runEndOfTurn()
            detector.dispatchDidEnd()
            // Only the hung callback's records: on a loaded machine (a sanitizer run) the launch's own steps may be slow.
            let records = log.all.filter { $0.metadata["lifecycle.stall_event"] == "viewDidAppear" }
            let name = logged ? "root/hanging" : "<Hanging>"
            #expect(records.map(\.level) == [.warning, .notice])
            #expect(records.map { $0.metadata["lifecycle.stall_target"] } == [name, name])
            #expect(records.first?.message.hasPrefix("viewDidAppear \(name) has run for ") == true)
        }
    }

    @MainActor
    @Test func aHungCallbackInASceneNamesItsSceneByItsPathOrWhileNoPathIsBuiltByTheScenesStep() throws {
        final class Hanging: ViewController {
            override func applicationDidEnterBackground() { block(for: .milliseconds(200)) }
        }
        final class Delegate: ApplicationDelegate {
            var sceneManifest: SceneManifest? { SceneManifest(launchSceneRole: nil) }
            func application(_ application: Application, configurationForConnecting session: SceneSession, options: Scene.ConnectionOptions) -> SceneConfiguration {
                SceneConfiguration(name: nil, sessionRole: session.role) { _ in Builder() }
            }
        }
        final class Builder: SceneDelegate {
            func scene(_ scene: Scene, willConnectTo session: SceneSession, options: Scene.ConnectionOptions) {
                scene.window.rootViewController = Hanging(identifier: "root")
            }
        }
        for logged in [false, true] {
            let log = StallLog()
            let detector = StallDetector(thresholds: .init(warning: .milliseconds(100), urgent: nil), logger: log.logger())
            try detector.start()
            defer { detector.stop() }
            let appLogger = logged ? StallLog().logger() : Logger(label: "quiet", factory: { _ in SwiftLogNoOpLogHandler() })
            let app = Application(delegate: Delegate(), logger: appLogger)
            app.trace.monitor = detector
            app.launch()
            try app.requestSceneSessionActivation(persistentIdentifier: "client-7")
            app.runEndOfTurn()
            try app.submitScene(.background("client-7"), cause: "test")
            detector.dispatchDidEnd()
            let records = log.all.filter { $0.metadata["lifecycle.stall_event"] == "applicationDidEnterBackground" }
            let name = logged ? "scene:client-7/root" : "<Hanging> in scene client-7"
            #expect(records.map(\.level) == [.warning, .notice])
            #expect(records.map { $0.metadata["lifecycle.scene"] } == ["client-7", "client-7"])
            #expect(records.first?.message.hasPrefix("applicationDidEnterBackground \(name) has run for ") == true, "\(records)")
            #expect(records.last?.message.hasPrefix("applicationDidEnterBackground \(name) returned after ") == true)
        }
    }

    @MainActor
    @Test func aNodeReleasedAfterItsCallbackStartedIsNamedByWhatTheDetectorWasTold() throws {
        // The callback returned and its node went while the main loop is still blocked: the detector names it by the
        // values it was handed (a path the trace built, or the node's type), never by reading the node.
        let log = StallLog()
        let detector = StallDetector(thresholds: .init(warning: .milliseconds(50), urgent: nil), logger: log.logger())
        try detector.start()
        defer { detector.stop() }
        var controller: ViewController? = ViewController(identifier: "gone")
        detector.callbackWillStart(sequence: 7, event: "viewDidDisappear", target: CallbackTarget(controller!, path: "root/gone"))
        controller = nil
        block(for: .milliseconds(150))
        var view: View? = View(name: "label")
        detector.callbackWillStart(sequence: 8, event: "layoutSubviews", target: CallbackTarget(view!, path: nil))
        view = nil
        block(for: .milliseconds(150))
        detector.dispatchDidEnd()
        let records = log.all
        #expect(records.map(\.level) == [.warning, .notice, .warning, .notice])
        #expect(records.map { $0.metadata["lifecycle.stall_target"] } == ["root/gone", "root/gone", "<View>", "<View>"])
        #expect(records.map { $0.metadata["lifecycle.stall_seq"] } == ["7", "7", "8", "8"])
    }

    @MainActor
    @Test func theTraceTellsTheMonitorOfEveryCallbackTracedOrNotWithThePathOnlyWhenItBuiltOne() {
        final class Recording: CallbackMonitor, @unchecked Sendable {
            // @unchecked: only the main actor (the trace) touches it in this test.
            var seen: [String] = []
            var identities: Set<ObjectIdentifier> = []
            func callbackWillStart(sequence: Int, event: String, target: CallbackTarget) {
                seen.append("\(sequence) \(target) \(event)")
                if let identity = target.identity { identities.insert(identity) }
            }
        }
        let monitor = Recording()
        let app = Application(delegate: QuietDelegate(), logger: Logger(label: "quiet", factory: { _ in SwiftLogNoOpLogHandler() }))
        app.trace.monitor = monitor
        let root = ViewController(identifier: "root")
        app.window = Window(rootViewController: root)
        app.launch()
        app.requestEnterBackground()
        #expect(monitor.seen.suffix(2) == ["\(app.trace.sequence - 1) <ViewController> applicationDidEnterBackground", "\(app.trace.sequence) delegate applicationDidEnterBackground"])
        #expect(monitor.seen.count == app.trace.sequence)
        #expect(monitor.identities.contains(ObjectIdentifier(root)))
        // Observed, the trace builds each event's path, and the monitor is told it.
        let observation = app.trace.observe { _ in }
        app.requestBecomeActive()
        #expect(monitor.seen.suffix(2) == [
            "\(app.trace.sequence - 1) delegate applicationDidBecomeActive", "\(app.trace.sequence) root applicationDidBecomeActive",
        ])
        observation.cancel()
    }
}
