//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Testing) import LifecycleKit

#if canImport(Glibc)
import Glibc
#endif

/// One `KEY=VALUE` assignment of the sd_notify(3) protocol.
package enum NotifyAssignment: Hashable, Sendable {
    /// `READY=1`: start-up (or a reload) finished.
    case ready
    /// `STATUS=…`: a one-line status shown by `systemctl status`.
    case status(String)
    /// `RELOADING=1` plus `MONOTONIC_USEC=` (CLOCK_MONOTONIC when rendered), which systemd 253+ orders reloads by.
    case reloading
    /// `STOPPING=1`: shutdown began.
    case stopping
    /// `WATCHDOG=1`: keep-alive ping.
    case watchdog
    /// `WATCHDOG=trigger`: asks systemd to act as if the watchdog timed out.
    case watchdogTrigger
    /// `EXTEND_TIMEOUT_USEC=`: the current start, reload or stop needs this much more time from now.
    case extendTimeout(Duration)
    /// `ERRNO=`: the errno-style reason the service failed.
    case errno(Int32)
    /// `MAINPID=`: the main process of the service, when it is not the sender.
    case mainPID(Int32)

    /// The assignment as sent, e.g. `STATUS=active`; `.reloading` renders two lines.
    @_spi(Testing) public var line: String {
        switch self {
        case .ready:
            return "READY=1"
        case .status(let text):
            // A newline would end the assignment and start another one: keep the status on its line.
            let oneLine = String(text.map { $0.isNewline ? " " : $0 })
            return "STATUS=\(oneLine)"
        case .reloading:
            return "RELOADING=1\nMONOTONIC_USEC=\(monotonicMicroseconds())"
        case .stopping:
            return "STOPPING=1"
        case .watchdog:
            return "WATCHDOG=1"
        case .watchdogTrigger:
            return "WATCHDOG=trigger"
        case .extendTimeout(let duration):
            return "EXTEND_TIMEOUT_USEC=\(duration.microsecondsRoundedUp)"
        case .errno(let code):
            return "ERRNO=\(code)"
        case .mainPID(let pid):
            return "MAINPID=\(pid)"
        }
    }
}
