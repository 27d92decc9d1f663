//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@testable import LifecycleSystemd

@Suite struct NotifyAssignmentTests {
    @Test func eachAssignmentRendersAsTheProtocolLine() {
        #expect(NotifyAssignment.ready.line == "READY=1")
        #expect(NotifyAssignment.status("active").line == "STATUS=active")
        #expect(NotifyAssignment.stopping.line == "STOPPING=1")
        #expect(NotifyAssignment.watchdog.line == "WATCHDOG=1")
        #expect(NotifyAssignment.watchdogTrigger.line == "WATCHDOG=trigger")
        #expect(NotifyAssignment.errno(5).line == "ERRNO=5")
        #expect(NotifyAssignment.mainPID(4242).line == "MAINPID=4242")
    }

    @Test func extendTimeoutIsInMicrosecondsRoundedUp() {
        #expect(NotifyAssignment.extendTimeout(.seconds(5)).line == "EXTEND_TIMEOUT_USEC=5000000")
        #expect(NotifyAssignment.extendTimeout(.milliseconds(1500)).line == "EXTEND_TIMEOUT_USEC=1500000")
        #expect(NotifyAssignment.extendTimeout(.nanoseconds(1)).line == "EXTEND_TIMEOUT_USEC=1")
        #expect(NotifyAssignment.extendTimeout(.seconds(-3)).line == "EXTEND_TIMEOUT_USEC=0")
    }

    @Test func aStatusWithNewlinesStaysOnOneLine() {
        #expect(NotifyAssignment.status("two\nlines\r\nhere").line == "STATUS=two lines here")
    }

    @Test func aStatusCannotInjectAssignmentsCutTheDatagramOrReachTheTerminal() {
        // Every character that ends a line for someone: the assignment stays one line, READY=1 stays text.
        #expect(
            NotifyAssignment.status("ok\nREADY=1\u{0B}MAINPID=1\u{0C}x\u{85}y\u{2028}z\u{2029}").line
                == "STATUS=ok READY=1 MAINPID=1 x y z "
        )
        #expect(NotifyAssignment.status("a\u{0}b\u{1B}[31mred\u{7F}").line == #"STATUS=a\x00b\x1b[31mred\x7f"#)
        #expect(NotifyAssignment.status("c1\u{9B}31m \u{202E}txt").line == #"STATUS=c1\u{9b}31m \u{202e}txt"#)
    }

    @Test func aLongStatusIsCutSoThatTheDatagramStaysUnderSystemdsLimit() {
        let line = NotifyAssignment.status(String(repeating: "é", count: 5_000)).line
        #expect(line.utf8.count <= "STATUS=".utf8.count + NotifyAssignment.maximumStatusLength)
        #expect(line.hasSuffix("é…"))
    }

    @Test func reloadingCarriesTheMonotonicClockAtRendering() throws {
        let before = monotonicMicroseconds()
        let lines = NotifyAssignment.reloading.line.split(separator: "\n")
        let after = monotonicMicroseconds()
        #expect(lines.count == 2)
        #expect(lines.first == "RELOADING=1")
        let stamp = try #require(lines.last.flatMap { $0.split(separator: "=").last }.flatMap { UInt64($0) })
        #expect(lines.last?.hasPrefix("MONOTONIC_USEC=") == true)
        #expect(before <= stamp && stamp <= after)
    }
}
