//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@_spi(Testing) @testable import LifecycleSystemd

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
