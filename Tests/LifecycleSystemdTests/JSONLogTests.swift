//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecyclePrimitives
import Logging
import Testing

@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// A line of `JSONLogLine` as text, for a record at info of `lifecycled` at a fixed time.
private func line(
    _ message: String,
    label: String = "lifecycled",
    metadata: Logger.Metadata = [:],
    level: Logger.Level = .info
) -> String {
    String(
        decoding: JSONLogLine.line(
            timestamp: "2026-11-23T12:50:51.476839Z",
            level: level,
            program: "lifecycled",
            label: label,
            message: message,
            metadata: metadata
        ).bytes,
        as: UTF8.self
    )
}

/// The line read back by the control socket's parser (which refuses a duplicate key), without its newline.
private func parsed(_ line: String) throws -> JSONObject {
    #expect(line.hasSuffix("\n"))
    let value = try JSONValue.parse(String(line.dropLast()))
    return try #require(value.objectValue)
}

@Suite("JSON log lines")
struct JSONLogLineTests {
    @Test func aTraceRecordIsTheRecordsOwnKeysThenTheJournalsFieldsSortedWithTheSequenceANumber() {
        let metadata: Logger.Metadata = [
            "lifecycle.event": "applicationDidEnterBackground",
            "lifecycle.target": "delegate",
            "lifecycle.state": "background",
            "lifecycle.seq": "133",
            "lifecycle.cause": "signal:SIGUSR1",
        ]
        #expect(
            line("applicationDidEnterBackground", metadata: metadata)
                == #"{"timestamp":"2026-11-23T12:50:51.476839Z","level":"info","program":"lifecycled","#
                + #""message":"applicationDidEnterBackground","LIFECYCLE_CAUSE":"signal:SIGUSR1","#
                + #""LIFECYCLE_EVENT":"applicationDidEnterBackground","LIFECYCLE_SEQ":133,"#
                + #""LIFECYCLE_STATE":"background","LIFECYCLE_TARGET":"delegate"}"# + "\n"
        )
    }

    @Test func theLabelIsWrittenOnlyWhereItDiffersFromTheProgram() throws {
        #expect(try parsed(line("m")).keys == ["timestamp", "level", "program", "message"])
        let other = try parsed(line("m", label: "com.example.feed", level: .warning))
        #expect(other.keys == ["timestamp", "level", "program", "label", "message"])
        #expect(other["label"] == "com.example.feed")
        #expect(other["level"] == "warning")
    }

    @Test func metadataKeysAreTheJournalsFieldNamesSoNoneIsEverARecordKey() throws {
        let object = try parsed(line("m", metadata: ["message": "not the message", "level": "x", "timestamp": "y", "pid": "7"]))
        #expect(object.keys == ["timestamp", "level", "program", "message", "LEVEL", "MESSAGE", "PID", "TIMESTAMP"])
        #expect(object["message"] == "m")
        #expect(object["MESSAGE"] == "not the message")
        #expect(object["PID"] == "7")
    }

    @Test func keysThatMakeOneFieldNameBecomeOneArrayInTheOrderOfTheKeys() throws {
        let object = try parsed(line("m", metadata: ["a.b": "dot", "a_b": "underscore", "A-B": "dash"]))
        #expect(object.keys == ["timestamp", "level", "program", "message", "A_B"])
        #expect(object["A_B"] == ["dash", "dot", "underscore"])
    }

    @Test func onlyAWholeNumberSequenceIsANumber() throws {
        #expect(try parsed(line("m", metadata: ["lifecycle.seq": .stringConvertible(42)]))["LIFECYCLE_SEQ"] == 42)
        for text in ["", "007", "+1", "1e3", "99999999999999999999", "12 ", "one"] {
            #expect(try parsed(line("m", metadata: ["lifecycle.seq": .string(text)]))["LIFECYCLE_SEQ"] == .string(text))
        }
        // Other numbers stay strings, as the journal has every field.
        #expect(try parsed(line("m", metadata: ["pid": .stringConvertible(7)]))["PID"] == "7")
    }

    @Test func arraysAndDictionariesStayStructured() throws {
        let object = try parsed(line("m", metadata: [
            "list": .array(["a", .stringConvertible(2), .array(["nested"])]),
            "map": .dictionary(["b": "2", "a": .dictionary(["key with \"quotes\"": "v"])]),
        ]))
        #expect(object["LIST"] == ["a", "2", ["nested"]])
        #expect(object["MAP"] == ["a": ["key with \"quotes\"": "v"], "b": "2"])
        #expect(line("m", metadata: ["map": .dictionary(["b": "2", "a": "1"])]).contains(#""MAP":{"a":"1","b":"2"}"#))
    }

    @Test func hostileValuesStayOnOneLineAndReadBackTheSame() throws {
        let hostile = [
            "two\nlines", "carriage\rreturn", "crlf\r\n{\"level\":\"critical\"}", "nul\u{0}byte", "escape \u{1B}[31mred",
            "bell\u{7}", "del\u{7F}", "next line\u{85}", "c1 csi\u{9B}2J", "line\u{2028}separator",
            "paragraph\u{2029}separator", "quote \" and backslash \\", "\\\"", "tab\there", "\u{8}\u{C}", "é😀",
        ]
        for value in hostile {
            let text = line(value, metadata: ["value": .string(value), "lifecycle.seq": .string(value)])
            #expect(text.utf8.filter { $0 == 0x0A }.count == 1 && text.hasSuffix("\n"), "\(text.debugDescription)")
            // No raw control character, DEL, C1 control or line separator: each is an escape.
            #expect(!text.dropLast().unicodeScalars.contains {
                $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" || $0 == "\u{2029}"
            }, "\(text.debugDescription)")
            let object = try parsed(text)
            #expect(object["message"] == .string(value))
            #expect(object["VALUE"] == .string(value))
            #expect(object["LIFECYCLE_SEQ"] == .string(value))
        }
        #expect(line("\u{1B}\u{85}\u{2028}\u{2029}\u{7F}\u{0}").contains(#""message":"\u001b\u0085\u2028\u2029\u007f\u0000""#))
    }

    @Test func bytesThatAreNotUTF8AreReplacementCharactersInTheLine() throws {
        // Text from outside becomes a String as a file is read: each invalid sequence one U+FFFD.
        let value = String(decoding: [0x61, 0xFF, 0x62, 0xC3, 0x28, 0xED, 0xA0, 0x80, 0x63] as [UInt8], as: UTF8.self)
        let text = line(value, metadata: ["v": .string(value)])
        #expect(String(validating: Array(text.utf8), as: UTF8.self) != nil)
        let object = try parsed(text)
        #expect(object["message"]?.stringValue?.hasPrefix("a\u{FFFD}b\u{FFFD}(") == true)
        #expect(object["message"]?.stringValue?.unicodeScalars.filter { $0 == "\u{FFFD}" }.count == value.unicodeScalars.filter { $0 == "\u{FFFD}" }.count)
        #expect(object["V"] == object["message"])
    }

    @Test func aValueLongerThanTheBoundIsCutAtACharacterBoundaryAndSaysHowMuchWasCut() throws {
        let limit = JSONLogLine.maximumValueBytes
        #expect(JSONLogLine.cut(String(repeating: "a", count: limit)) == String(repeating: "a", count: limit))
        #expect(
            JSONLogLine.cut(String(repeating: "a", count: limit + 5))
                == String(repeating: "a", count: limit) + JSONLogLine.cutMarker(5)
        )
        // A four-byte character across the bound is left out whole.
        let value = String(repeating: "a", count: limit - 2) + "😀" + "tail"
        let cut = JSONLogLine.cut(value)
        #expect(cut == String(repeating: "a", count: limit - 2) + JSONLogLine.cutMarker(8))
        #expect(JSONLogLine.cutMarker(8) == "…[8 bytes cut]")
    }

    /// Found by reading the encoder: the cut bounded a value's UTF-8, not what it takes in the line. 8 KiB of control
    /// characters became 48 KiB of escapes, and two values of 8 KiB made a line past the 16 KiB at which containerd
    /// and Docker split it.
    @Test func noRecordMakesALineLongerThanARuntimeKeepsWhole() throws {
        let limit = JSONLogLine.maximumValueBytes
        let controls = String(repeating: "\u{1}", count: limit)
        let ordinary = String(repeating: "a", count: limit)
        let huge = String(repeating: "\n", count: 1 << 20)
        for (message, metadata) in [
            (controls, [:]),
            (ordinary, ["v": Logger.MetadataValue.string(ordinary)]),
            (huge, ["v": .string(huge)]),
            (ordinary, ["a": .array([.string(controls), .string(controls)]), "d": .dictionary(["k": .string(huge)])]),
        ] as [(String, Logger.Metadata)] {
            let (bytes, valueLimit) = JSONLogLine.line(
                timestamp: "2026-11-23T12:50:51.476839Z", level: .info, program: "lifecycled", label: "lifecycled",
                message: message, metadata: metadata
            )
            #expect(bytes.count <= JSONLogLine.maximumLineBytes)
            #expect(valueLimit < limit && valueLimit >= JSONLogLine.minimumValueBytes)
            // Each value is cut as one cut at the line's limit would: whole characters, then what was left out.
            let object = try #require(try JSONValue.parse(Array(bytes.dropLast())).objectValue)
            #expect(object["message"] == .string(JSONLogLine.cut(message, limit: valueLimit)))
        }
        // A line that fits keeps its values cut at the bound only.
        let (fits, fitsLimit) = JSONLogLine.line(
            timestamp: "t", level: .info, program: "p", label: "p", message: ordinary + "tail", metadata: [:]
        )
        #expect(fitsLimit == limit)
        #expect(try JSONValue.parse(Array(fits.dropLast())).objectValue?["message"] == .string(ordinary + JSONLogLine.cutMarker(4)))
    }
}

@Suite("The JSON log format on stderr")
struct JSONLogHandlerTests {
    @Test func everyRecordIsOneJSONLineWithItsMetadataAndError() throws {
        struct Failure: Error, CustomStringConvertible {
            var description: String { "broken\npipe" }
        }
        let pipe = try Pipe()
        var handler = StderrLogHandler(
            label: "l", identifier: "lifecycled", logLevel: .info, metadataProvider: nil, fileDescriptor: pipe.writeEnd,
            format: .json
        )
        handler[metadataKey: "pid"] = "1"
        var logger = Logger(label: "l") { _ in handler }
        logger.logLevel = .info
        logger.info("ready", metadata: ["state": "active"])
        logger.debug("filtered out by the level")
        logger.log(level: .error, "boom\n{\"forged\":true}", error: Failure())
        let lines = pipe.readAvailable().split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines[2].isEmpty)
        let first = try #require(try JSONValue.parse(String(lines[0])).objectValue)
        #expect(first.keys == ["timestamp", "level", "program", "label", "message", "PID", "STATE"])
        #expect(first["message"] == "ready" && first["program"] == "lifecycled" && first["label"] == "l")
        let stamp = try #require(first["timestamp"]?.stringValue)
        #expect(stamp.count == "2026-05-20T10:11:12.345678Z".count && stamp.hasSuffix("Z"))
        let second = try #require(try JSONValue.parse(String(lines[1])).objectValue)
        #expect(second["level"] == "error")
        #expect(second["message"] == "boom\n{\"forged\":true}")
        #expect(second["ERROR"] == "broken\npipe")
    }

    @Test func aJSONHandlerNeverWritesTheHumanTraceFormatEvenOnATerminal() throws {
        let pipe = try Pipe()
        let terminal = SharedTraceFormatter(style: TerminalStyle(colour: false))
        var logger = Logger(label: "lifecycled") { label in
            StderrLogHandler(
                label: label, identifier: "lifecycled", logLevel: .info, metadataProvider: nil,
                fileDescriptor: pipe.writeEnd, format: .json, terminalTrace: terminal
            )
        }
        logger.logLevel = .info
        logger.info("applicationDidBecomeActive", metadata: [
            "lifecycle.event": "applicationDidBecomeActive", "lifecycle.target": "delegate",
            "lifecycle.state": "active", "lifecycle.seq": "3", "lifecycle.cause": "launch",
        ])
        let text = pipe.readAvailable()
        let object = try #require(try JSONValue.parse(String(text.dropLast())).objectValue)
        #expect(object["LIFECYCLE_SEQ"] == 3 && object["LIFECYCLE_EVENT"] == "applicationDidBecomeActive")
    }
}
