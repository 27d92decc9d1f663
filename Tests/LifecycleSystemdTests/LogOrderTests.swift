//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import Logging
import Testing

@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// A controller and a delegate that log from their `applicationDidEnterBackground`, as the demo's do.
@MainActor
private final class Pausing: ViewController {
    let logger: Logger
    init(identifier: String, logger: Logger) {
        self.logger = logger
        super.init(identifier: identifier)
    }
    required init(coder: Coder) throws { fatalError("not decoded") }
    override func applicationDidEnterBackground() { logger.info("\(identifier) paused") }
}

@MainActor
private final class PausingDelegate: ApplicationDelegate {
    let root: ViewController
    let logger: Logger
    init(root: ViewController, logger: Logger) {
        self.root = root
        self.logger = logger
    }
    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: root)
        return true
    }
    func applicationDidEnterBackground(_ application: Application) { logger.info("in the background") }
}

// The process's handlers order records after the trace lines that wait (LoggingBackend.recordsFollow), a setting of
// the whole process: these tests set it one at a time, and put it back.
@MainActor
@Suite("One ordered log", .serialized)
struct LogOrderTests {
    /// Runs `body` with the trace's lines as the ones the process's records follow, as the daemon runs.
    private func withRecordsFollowing(_ trace: Trace, _ body: () throws -> Void) rethrows {
        trace.defersLogLines = true
        LoggingBackend.recordsFollow = trace.lineBuffer
        defer { LoggingBackend.recordsFollow = nil }
        try body()
    }

    /// The background transition as every stream must read it: "before", each callback's line (numbered, the last
    /// one `last`) before what that callback logs, then "after".
    private static func background(endingAt last: Int) -> [String] {
        let first = last - 5
        return [
            "before",
            "#\(first) applicationWillResignActive root/worker",
            "#\(first + 1) applicationWillResignActive root",
            "#\(first + 2) applicationWillResignActive delegate",
            "#\(first + 3) applicationDidEnterBackground root/worker",
            "worker paused",
            "#\(first + 4) applicationDidEnterBackground root",
            "#\(first + 5) applicationDidEnterBackground delegate",
            "in the background",
            "after",
        ]
    }

    /// An application whose trace and callbacks log through `handler`, every event at debug (as under journald).
    private func application(logging handler: @escaping @Sendable (String) -> any LogHandler) -> (Application, Logger) {
        var logger = Logger(label: "order", factory: handler)
        logger.logLevel = .debug
        let root = ViewController(identifier: "root")
        root.embed(Pausing(identifier: "worker", logger: logger))
        let app = Application(delegate: PausingDelegate(root: root, logger: logger), logger: logger)
        return (app, logger)
    }

    /// An application whose trace and callbacks log to `pipe`'s write end in `format`.
    private func application(writingTo pipe: Pipe, format: StderrLogHandler.Format = .text) -> (Application, Logger) {
        let descriptor = pipe.writeEnd
        return application { label in
            StderrLogHandler(
                label: label, identifier: "order", logLevel: .debug, metadataProvider: nil, fileDescriptor: descriptor,
                format: format
            )
        }
    }

    @Test func onStderrACallbacksTraceLineComesBeforeWhatItLogsAndAfterWhatWasLoggedBeforeIt() throws {
        let pipe = try Pipe()
        let (app, logger) = application(writingTo: pipe)
        withRecordsFollowing(app.trace) {
            app.launch()
            app.runEndOfTurn()
            app.trace.flush()
            _ = pipe.readAvailable()
            logger.info("before")
            app.requestEnterBackground()
            // Written while the transition ran: every trace line of a callback before what the callback logged.
            app.trace.flush()
            logger.info("after")
        }
        let lines = pipe.readAvailable().split(separator: "\n").map { line -> String in
            if let seq = line.firstRange(of: "lifecycle.seq=") {
                let number = line[seq.upperBound...].prefix { $0.isNumber }
                let event = line.split(separator: ": ", maxSplits: 1).last!.split(separator: " ").prefix(2).joined(separator: " ")
                return "#\(number) \(event)"
            }
            return String(line.split(separator: ": ", maxSplits: 1).last!)
        }
        #expect(lines == Self.background(endingAt: app.trace.sequence))
    }

    @Test func inJSONLinesACallbacksRecordComesBeforeWhatItLogsAndAfterWhatWasLoggedBeforeIt() throws {
        let pipe = try Pipe()
        let (app, logger) = application(writingTo: pipe, format: .json)
        withRecordsFollowing(app.trace) {
            app.launch()
            app.runEndOfTurn()
            app.trace.flush()
            _ = pipe.readAvailable()
            logger.info("before")
            app.requestEnterBackground()
            app.trace.flush()
            logger.info("after")
        }
        let lines = try pipe.readAvailable().split(separator: "\n").map { line -> String in
            let record = try #require(try JSONValue.parse(String(line)).objectValue)
            if let seq = record["LIFECYCLE_SEQ"]?.integerValue {
                return "#\(seq) \(record["LIFECYCLE_EVENT"]?.stringValue ?? "?") \(record["LIFECYCLE_TARGET"]?.stringValue ?? "?")"
            }
            return record["message"]?.stringValue ?? "?"
        }
        #expect(lines == Self.background(endingAt: app.trace.sequence))
    }

    @Test func jsonLinesCarryTheMomentOfTheirEventSoTheirTimesNeverGoBackwards() throws {
        let pipe = try Pipe()
        let (app, logger) = application(writingTo: pipe, format: .json)
        withRecordsFollowing(app.trace) {
            app.launch()
            app.runEndOfTurn()
            app.trace.flush()
            _ = pipe.readAvailable()
            logger.info("before")
            // The callbacks' lines wait while the transition runs; those that log write them first.
            app.requestEnterBackground()
            // No callback of the return logs: its lines are written well after they fired, and each still says when
            // its callback fired.
            app.requestBecomeActive()
            usleep(20_000)
            app.trace.flush()
            logger.info("after")
        }
        let records = try pipe.readAvailable().split(separator: "\n").map { line in
            try #require(try JSONValue.parse(String(line)).objectValue)
        }
        let times = try records.map { try #require($0["timestamp"]?.stringValue) }
        #expect(records.last?["message"]?.stringValue == "after")
        #expect(records.contains { $0["LIFECYCLE_EVENT"]?.stringValue == "applicationDidBecomeActive" })
        // RFC 3339 with microseconds, all in one day: the text sorts as the times do.
        #expect(times == times.sorted(), "the lines' times go backwards: \(times)")
        let lastEvent = try #require(records.lastIndex { $0["LIFECYCLE_SEQ"] != nil })
        let last = try #require(records.last)
        #expect(try Self.microseconds(times[records.count - 1]) - Self.microseconds(times[lastEvent]) >= 20_000,
                "the last event's line was stamped when it was written, not when it fired: \(last)")
    }

    /// Microseconds of the day of an RFC 3339 timestamp `…THH:MM:SS.ffffffZ`.
    private static func microseconds(_ timestamp: String) throws -> Int {
        let time = try #require(timestamp.split(separator: "T").last?.dropLast())
        let parts = time.split(separator: ":")
        let seconds = try #require(Double(parts[2]))
        return (try #require(Int(parts[0])) * 3600 + (try #require(Int(parts[1]))) * 60) * 1_000_000
            + Int((seconds * 1_000_000).rounded())
    }

    @Test func inTheJournalACallbacksEntryComesBeforeWhatItLogsAndAfterWhatWasLoggedBeforeIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journald = try FakeJournald(path: directory.path + "/journal")
        let writer = JournalWriter(socketPath: journald.path)
        defer { writer.stop() }
        let (app, logger) = application { label in
            JournalLogHandler(label: label, identifier: "order", logLevel: .debug, writer: writer)
        }
        /// What journald receives until the record `last`: trace entries as `#seq event target`, records by message.
        func receive(until last: String) -> [String] {
            var received: [String] = []
            while received.last != last, let fields = journald.receiveFields() {
                let entry = fields["LIFECYCLE_SEQ"].map { "#\($0) \(fields["LIFECYCLE_EVENT"]!) \(fields["LIFECYCLE_TARGET"]!)" }
                received.append(entry ?? fields["MESSAGE"]!)
            }
            return received
        }
        var received: [String] = []
        withRecordsFollowing(app.trace) {
            app.launch()
            app.runEndOfTurn()
            logger.info("launched")
            // journald's queue is small on some hosts: what it does not take at once waits in the writer, in order.
            _ = receive(until: "launched")
            logger.info("before")
            app.requestEnterBackground()
            app.trace.flush()
            logger.info("after")
            received = receive(until: "after")
        }
        #expect(received == Self.background(endingAt: app.trace.sequence))
    }

    @Test func aRecordFromAnotherThreadComesAfterTheLinesRecordedBeforeItAndTheTapSeesRecordsInThatOrder() async throws {
        let pipe = try Pipe()
        let descriptor = pipe.writeEnd
        let (app, _) = application(writingTo: pipe)
        let tapped = ConditionLock<[String]>([])
        LoggingBackend.recordTap = { record in
            // Other suites log too: only this test's records.
            if record.message.hasPrefix("elsewhere") { tapped.withLock { $0.append(record.message) } }
        }
        defer { LoggingBackend.recordTap = nil }
        try await withRecordsFollowing(app.trace) {
            app.launch()
            app.runEndOfTurn()
            // The launch's lines wait: a record logged by another thread now is written after them.
            #expect(!app.trace.lineBuffer.isEmpty)
            try await onDedicatedThread {
                var logger = Logger(label: "elsewhere") { label in
                    StderrLogHandler(label: label, identifier: "order", logLevel: .debug, metadataProvider: nil, fileDescriptor: descriptor)
                }
                logger.logLevel = .info
                logger.info("elsewhere, after the launch")
            }
            #expect(app.trace.lineBuffer.isEmpty)
        }
        let lines = pipe.readAvailable().split(separator: "\n")
        #expect(lines.count == app.trace.sequence + 1)
        #expect(lines.last?.hasSuffix("order: elsewhere, after the launch") == true)
        #expect(lines.dropLast().allSatisfy { $0.contains("lifecycle.seq=") })
        #expect(tapped.withLock { $0 } == ["elsewhere, after the launch"])
    }
}

extension LogOrderTests {
    /// `withRecordsFollowing` for an asynchronous body.
    private func withRecordsFollowing(_ trace: Trace, _ body: () async throws -> Void) async rethrows {
        trace.defersLogLines = true
        LoggingBackend.recordsFollow = trace.lineBuffer
        defer { LoggingBackend.recordsFollow = nil }
        try await body()
    }
}
