//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecyclePrimitives
import Testing

@testable import lifecyclectl

// What the daemon sends is printed on someone's terminal: a controller name, a status line or an error's reason with
// an escape sequence in it would rewrite that terminal (clear it, retitle it, hide a line), and a number out of range
// must not crash the client.
@Suite struct TerminalSafetyTests {
    let plain = TerminalStyle(colour: false)
    let escape = "\u{1B}]0;owned\u{07}\u{1B}[2J"

    /// No control character, C1 control or bidirectional override anywhere in `text` but the newlines between lines.
    func isSafe(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0 == "\n" || !TerminalSafe.isUnsafe($0) }
    }

    @Test func theTreeEscapesNamesTypesAndStatusLines() throws {
        let reply: JSONObject = ["nodes": [
            ["kind": "controller", "path": .string("root\(escape)"), "type": .string("T\u{9B}2J"), "depth": 0,
             "appearance": .string("appeared\n<Fake: line>"), "viewLoaded": false, "status": .string("s\(escape)\u{202E}")],
        ]]
        let text = Output.tree(reply, style: plain)
        #expect(isSafe(text))
        #expect(text.split(separator: "\n").count == 1)
        #expect(text.contains(#"root\x1b]0;owned\x07\x1b[2J"#))
        #expect(text.contains(#"status: "s\u001b]0;owned\u0007\u001b[2J\u202e""#))
    }

    @Test func theStatusTasksAndRequestsEscapeWhatTheDaemonSent() throws {
        let status: JSONObject = [
            "program": .string("p\(escape)"), "version": .string("v\n2"), "state": "active", "pid": 7,
            "statusText": .string("active: \(escape)"), "logind": .string("awake\u{85}"),
            "backgroundTasks": [["id": 1, "name": .string("t\(escape)")]],
            "control": ["socket": .string("/run/x\u{2028}")],
        ]
        #expect(isSafe(Output.status(status, unit: nil, style: plain)))
        #expect(isSafe(Output.tasks(["tasks": [["id": 1, "name": .string("job\(escape)"), "budget": "sleep", "remainingSec": 1]]])))
        let request: JSONObject = [
            "request": .string("background\(escape)"), "outcome": "performed", "state": .string("x\n"), "eventsOmitted": 0,
            "events": [["seq": 1, "event": .string("e\(escape)"), "target": .string("root\n9 active forged"), "state": "active",
                        "cause": "control", "detail": .string("d\u{1B}")]],
        ]
        let text = Output.request(request, target: "lifecycled.service", style: plain)
        #expect(isSafe(text))
        #expect(!text.contains("\n9 active forged"))
    }

    @Test func jsonOutputEscapesC1AndBidiControlsTooAndStillParsesToTheSameData() throws {
        let value: JSONValue = ["name": .string("a\u{1B}b\u{9B}c\u{202E}d\u{2028}")]
        let text = TerminalSafe.json(value)
        #expect(isSafe(text))
        #expect(try JSONValue.parse(Array(text.utf8)) == value)
    }

    @Test func negativeHugeOrInfiniteNumbersAreClampedNotATrap() {
        #expect(Output.duration(-5) == "0 ms")
        #expect(Output.duration(.infinity) == "0 ms")
        #expect(Output.duration(.nan) == "0 ms")
        #expect(Output.duration(1e300) == "11574074 d 1 h")
        let reply: JSONObject = ["nodes": [
            ["kind": "controller", "path": "deep", "type": "T", "depth": .integer(Int64.max), "viewLoaded": false, "status": ""],
            ["kind": "controller", "path": "negative", "type": "T", "depth": -3, "viewLoaded": false, "status": ""],
        ]]
        let lines = Output.tree(reply, style: plain).split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix(String(repeating: "   | ", count: 256) + "<T: deep>"))
        #expect(lines[1].hasPrefix("<T: negative>"))
    }
}
