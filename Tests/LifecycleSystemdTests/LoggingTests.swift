//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import Logging
import Testing

@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

@Suite struct JournalFieldNameTests {
    @Test func metadataKeysBecomeUppercaseJournalFieldNames() {
        #expect(JournalLogHandler.fieldName(forMetadataKey: "lifecycle.event") == "LIFECYCLE_EVENT")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "LIFECYCLE_SEQ") == "LIFECYCLE_SEQ")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "request-id") == "REQUEST_ID")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "path/to thing") == "PATH_TO_THING")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "größe") == "GR__E")
    }

    @Test func namesNeverStartWithAnUnderscoreOrADigit() {
        #expect(JournalLogHandler.fieldName(forMetadataKey: "_PID") == "PID")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "__trusted") == "TRUSTED")
        #expect(JournalLogHandler.fieldName(forMetadataKey: ".hidden") == "HIDDEN")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "2fa") == "FIELD_2FA")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "") == "FIELD")
        #expect(JournalLogHandler.fieldName(forMetadataKey: "___") == "FIELD")
    }

    @Test func namesAreCutToSixtyFourCharacters() {
        let name = JournalLogHandler.fieldName(forMetadataKey: String(repeating: "ab", count: 50))
        #expect(name.count == JournalLogHandler.maximumFieldNameLength)
        #expect(name == String(repeating: "AB", count: 32))
    }

    @Test func everyNameIsOneJournaldAccepts() {
        let keys = [
            "lifecycle.event", "_x", "9", "ä", "a b", "MiXeD.case-key", "_1", String(repeating: "z", count: 200),
            "🙂", "SYSLOG_IDENTIFIER", "-", "a\nb",
        ]
        for key in keys {
            let name = JournalLogHandler.fieldName(forMetadataKey: key)
            // journald's journal_field_valid(): 1…64 of [A-Z0-9_], not starting with a digit or `_`.
            let valid = !name.isEmpty && name.utf8.count <= 64
                && name.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
                && !("0"..."9").contains(name.unicodeScalars.first!) && name.first != "_"
            #expect(valid, "\(key.debugDescription) → \(name)")
        }
    }
}

@Suite struct JournalLogHandlerTests {
    @Test func swiftLogLevelsMapToSyslogPriorities() {
        let expected: [(Logger.Level, Int)] = [
            (.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2),
        ]
        for (level, priority) in expected {
            #expect(JournalLogHandler.syslogPriority(for: level) == priority, "\(level)")
        }
    }

    @Test func aRecordCarriesMessagePriorityCodeLocationIdentifierAndMetadataFields() {
        var handler = JournalLogHandler(label: "lifecycle.trace", identifier: "lifecycled", logLevel: .debug)
        handler[metadataKey: "component"] = "daemon"
        handler.metadataProvider = Logger.MetadataProvider { ["lifecycle.cause": "signal:SIGUSR1"] }
        let event = LogEvent(
            level: .info,
            message: "applicationDidEnterBackground",
            metadata: ["lifecycle.event": "applicationDidEnterBackground", "lifecycle.seq": "7", "component": "app"],
            source: nil,
            file: "LifecycleKit/Application.swift",
            function: "enterBackground()",
            line: 42
        )
        #expect(handler.journalFields(for: event) == [
            "MESSAGE=applicationDidEnterBackground",
            "PRIORITY=6",
            "CODE_FILE=LifecycleKit/Application.swift",
            "CODE_LINE=42",
            "CODE_FUNC=enterBackground()",
            "SYSLOG_IDENTIFIER=lifecycled",
            "SWIFT_LOG_LABEL=lifecycle.trace",
            "COMPONENT=app",
            "LIFECYCLE_CAUSE=signal:SIGUSR1",
            "LIFECYCLE_EVENT=applicationDidEnterBackground",
            "LIFECYCLE_SEQ=7",
        ])
    }

    @Test func anAttachedErrorBecomesTheErrorField() {
        let handler = JournalLogHandler(label: "l", identifier: "lifecycled")
        let event = LogEvent(
            level: .error, message: "failed", error: TestFailure("disk on fire"), metadata: nil, source: nil,
            file: "f", function: "g", line: 1
        )
        #expect(handler.journalFields(for: event).contains("ERROR=disk on fire"))
    }

    @Test func journalStreamMatchesOnlyTheDescriptorsOwnDeviceAndInode() throws {
        let pipe = try Pipe()
        var status = stat()
        #expect(fstat(pipe.writeEnd, &status) == 0)
        let matching = "\(status.st_dev):\(status.st_ino)"
        #expect(JournalLogHandler.isJournalStream(environmentValue: matching, fileDescriptor: pipe.writeEnd))
        #expect(!JournalLogHandler.isJournalStream(environmentValue: nil, fileDescriptor: pipe.writeEnd))
        #expect(!JournalLogHandler.isJournalStream(
            environmentValue: "\(status.st_dev):\(status.st_ino + 1)", fileDescriptor: pipe.writeEnd))
        #expect(!JournalLogHandler.isJournalStream(environmentValue: "garbage", fileDescriptor: pipe.writeEnd))
        #expect(!JournalLogHandler.isJournalStream(environmentValue: "1:2:3", fileDescriptor: pipe.writeEnd))
        let other = try Pipe()
        #expect(!JournalLogHandler.isJournalStream(environmentValue: matching, fileDescriptor: other.writeEnd))
    }

    @Test func theDetectedBackendMakesTheMatchingHandler() {
        #expect(LoggingBackend.journal.makeHandler(label: "l", identifier: "i", level: .notice) is JournalLogHandler)
        let text = LoggingBackend.text.makeHandler(label: "l", identifier: "i", level: .notice)
        #expect((text as? StderrLogHandler)?.format == .text)
        #expect(text.logLevel == .notice)
        let json = LoggingBackend.json.makeHandler(label: "l", identifier: "i", level: .notice)
        #expect((json as? StderrLogHandler)?.format == .json)
        #expect(json.logLevel == .notice)
    }

    @Test func autoMeansTheJournalUnderJournaldTextOnATerminalAndJSONAnywhereElse() {
        #expect(LoggingBackend.automatic(stderrIsJournal: true, stderrIsTerminal: false) == .journal)
        // A terminal that is also the journal stream cannot happen; the journal's test comes first anyway.
        #expect(LoggingBackend.automatic(stderrIsJournal: true, stderrIsTerminal: true) == .journal)
        #expect(LoggingBackend.automatic(stderrIsJournal: false, stderrIsTerminal: true) == .text)
        #expect(LoggingBackend.automatic(stderrIsJournal: false, stderrIsTerminal: false) == .json)
    }

    @Test func autoTrustsNoJournalStreamThatNamesAnotherDescriptorThanStderr() throws {
        let pipe = try Pipe()
        var status = stat()
        #expect(fstat(pipe.writeEnd, &status) == 0)
        // The test's own stderr is a pipe or a terminal (wherever `swift test` runs), never this pipe.
        let expected: LoggingBackend = isatty(STDERR_FILENO) == 1 ? .text : .json
        withEnvironment(["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino)"]) {
            #expect(LoggingBackend.detect() == expected)
        }
    }

    @Test func theLevelOverrideReplacesTheLevelOfTheBackendsHandlersOnly() {
        // The override itself is process-wide (SetLogLevel sets it; the end-to-end tests check that): here, the rule.
        #expect(LoggingBackend.effectiveLevel(.info, followsOverride: true, override: .debug) == .debug)
        #expect(LoggingBackend.effectiveLevel(.info, followsOverride: true, override: nil) == .info)
        #expect(LoggingBackend.effectiveLevel(.info, followsOverride: false, override: .debug) == .info)
        #expect((LoggingBackend.text.makeHandler(label: "t", identifier: "x", level: .info) as? StderrLogHandler)?
            .followsLevelOverride == true)
        #expect(!StderrLogHandler(label: "t", identifier: "x", logLevel: .info).followsLevelOverride)
        #expect(LoggingBackend.level(syslogPriority: 7) == .debug)
        #expect(LoggingBackend.level(syslogPriority: 5) == .notice)
        #expect(LoggingBackend.level(syslogPriority: 8) == nil)
    }
}

@Suite struct StderrLogHandlerTests {
    @Test func aRecordComesFromTheLogMetadataOfATraceEventOnly() {
        let metadata: Logger.Metadata = [
            "lifecycle.event": "draw", "lifecycle.target": "root.view", "lifecycle.state": "active",
            "lifecycle.seq": "12", "lifecycle.cause": "api", "lifecycle.detail": "nil",
        ]
        let fromLog = TraceRecord(metadata: metadata)
        #expect(fromLog == TraceRecord(sequence: 12, event: "draw", target: "root.view", state: "active", cause: "api", detail: "nil"))
        #expect(TraceRecord(metadata: ["pid": "1"]) == nil)
    }

    @Test func aSceneEventsRecordCarriesItsSceneFromTheMetadata() {
        let metadata: Logger.Metadata = [
            "lifecycle.event": "sceneDidBecomeActive", "lifecycle.target": "scene:client-7", "lifecycle.state": "active",
            "lifecycle.seq": "40", "lifecycle.cause": "control", "lifecycle.scene": "client-7",
        ]
        #expect(TraceRecord(metadata: metadata) == TraceRecord(
            sequence: 40, event: "sceneDidBecomeActive", target: "scene:client-7", state: "active", cause: "control",
            scene: "client-7"
        ))
    }

    @Test func aLineHasTimestampLevelIdentifierMessageAndSortedMetadata() {
        let line = StderrLogHandler.line(
            timestamp: "2026-05-20T10:11:12.345678Z",
            level: .info,
            identifier: "lifecycled",
            message: "applicationDidBecomeActive",
            metadata: ["lifecycle.seq": "3", "lifecycle.event": "applicationDidBecomeActive"]
        )
        #expect(line == "2026-05-20T10:11:12.345678Z info lifecycled: applicationDidBecomeActive "
            + "lifecycle.event=applicationDidBecomeActive lifecycle.seq=3\n")
    }

    @Test func valuesThatWouldSplitAreQuotedAndNewlinesEscaped() {
        let line = StderrLogHandler.line(
            timestamp: "T", level: .warning, identifier: "x", message: "two\nlines",
            metadata: ["status": "active: serving", "empty": "", "eq": "a=b"]
        )
        #expect(line == "T warning x: two\\nlines empty=\"\" eq=\"a=b\" status=\"active: serving\"\n")
    }

    @Test func terminalControlsSeparatorsAndOverridesInAMessageOrAValueAreWrittenVisibly() {
        // A path or a name read from a file: an escape sequence would clear the terminal, a C1 control or a line
        // separator start a line of its own, an override reverse what follows, as the JSON and trace formats prevent.
        let line = StderrLogHandler.line(
            timestamp: "T", level: .info, identifier: "x",
            message: "cannot read /srv/\u{1B}[2Jfile\u{85}x\u{2028}y\u{202E}z\r\u{7F}",
            metadata: ["path": "/srv/a\u{1B}]0;title\u{07}", "name": "a b\u{2029}\u{9B}"]
        )
        #expect(
            line == "T info x: cannot read /srv/\\x1b[2Jfile\\u{85}x\\u{2028}y\\u{202e}z\\r\\x7f "
                + "name=\"a b\\u{2029}\\u{9b}\" path=/srv/a\\x1b]0;title\\x07\n"
        )
        #expect(!line.dropLast().unicodeScalars.contains(where: VisibleText.isUnsafe))
        // Text without any of them is written as it is: the fast path.
        let plain = StderrLogHandler.line(
            timestamp: "T", level: .info, identifier: "x", message: "caf\u{E9} \u{2192} ok", metadata: [:]
        )
        #expect(plain == "T info x: caf\u{E9} \u{2192} ok\n")
    }

    @Test func timestampsAreUTCWithMicroseconds() {
        #expect(StderrLogHandler.timestamp(seconds: 0, nanoseconds: 0) == "1970-01-01T00:00:00.000000Z")
        #expect(StderrLogHandler.timestamp(seconds: 1_779_271_872, nanoseconds: 345_678_999)
            == "2026-05-20T10:11:12.345678Z")
    }

    @Test func logWritesOneCompleteLinePerRecord() throws {
        let pipe = try Pipe()
        var handler = StderrLogHandler(
            label: "l", identifier: "lifecycled", logLevel: .info, metadataProvider: nil, fileDescriptor: pipe.writeEnd
        )
        handler[metadataKey: "pid"] = "1"
        var logger = Logger(label: "l") { _ in handler }
        logger.logLevel = .info
        logger.info("ready", metadata: ["state": "active"])
        logger.debug("filtered out by the level")
        logger.error("boom")
        let lines = pipe.readAvailable().split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3)
        #expect(lines[0].hasSuffix(" info lifecycled: ready pid=1 state=active"))
        #expect(lines[1].hasSuffix(" error lifecycled: boom pid=1"))
        #expect(lines[2].isEmpty)
        let stamp = try #require(lines[0].split(separator: " ").first)
        #expect(stamp.count == "2026-05-20T10:11:12.345678Z".count && stamp.hasSuffix("Z"))
    }

    @Test func onATerminalTheStderrHandlerWritesTraceEventsInTheHumanFormatAndFoldsRepeats() throws {
        let pipe = try Pipe()
        let shared = SharedTraceFormatter(style: TerminalStyle(colour: false))
        let handler = StderrLogHandler(
            label: "t", identifier: "lifecycled", logLevel: .info, metadataProvider: nil, fileDescriptor: pipe.writeEnd,
            terminalTrace: shared
        )
        let logger = Logger(label: "t") { _ in handler }
        for sequence in 1...3 {
            logger.info(
                "draw root.view",
                metadata: [
                    "lifecycle.event": "draw", "lifecycle.target": "root.view", "lifecycle.state": "active",
                    "lifecycle.seq": "\(sequence)", "lifecycle.cause": "api",
                ]
            )
        }
        logger.info("worker paused after 3 jobs")
        let lines = pipe.readAvailable().split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0] == "     1 active     api                 root.view draw")
        #expect(lines[1].hasSuffix("⋯ root.view draw 2 times more (#2–#3)"))
        #expect(lines[2].hasSuffix(" info lifecycled: worker paused after 3 jobs"))
    }
}
