//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives

#if canImport(Glibc)
import Glibc
#endif

/// One `KEY=VALUE` assignment of the sd_notify(3) protocol.
public enum NotifyAssignment: Hashable, Sendable {
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

    /// The most bytes of status text sent. systemd 252 drops a whole notification datagram over 4 KiB, with every
    /// assignment in it (a `READY=1` next to a long status would be lost, and the start time out).
    public static let maximumStatusLength = 1024

    /// Status text as one safe line: a newline would end the assignment and start another one (`READY=1`, `MAINPID=`,
    /// from whoever wrote the text), a NUL would cut the datagram short, and other control characters reach the
    /// terminal of `systemctl status`. Line breaks become spaces, other control characters `\xHH` or `\u{H…}`, and
    /// the text is cut (with `…`) to ``maximumStatusLength`` bytes.
    static func statusLine(_ text: String) -> String {
        var line = ""
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            defer { previous = scalar }
            switch scalar.value {
            case 0x0A where previous == "\r":
                // CR LF is one line break.
                continue
            case 0x0A, 0x0D, 0x0B, 0x0C, 0x85, 0x2028, 0x2029:
                line.unicodeScalars.append(" ")
            case 0x00..<0x20, 0x7F:
                line += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            case 0x80..<0xA0, 0x202A...0x202E, 0x2066...0x2069:
                line += "\\u{" + String(scalar.value, radix: 16) + "}"
            default:
                line.unicodeScalars.append(scalar)
            }
        }
        guard line.utf8.count > maximumStatusLength else { return line }
        var cut = ""
        for character in line {
            guard cut.utf8.count + character.utf8.count <= maximumStatusLength - 3 else { break }
            cut.append(character)
        }
        return cut + "…"
    }

    /// The assignment as sent, e.g. `STATUS=active`; `.reloading` renders two lines.
    public var line: String {
        switch self {
        case .ready:
            return "READY=1"
        case .status(let text):
            return "STATUS=\(Self.statusLine(text))"
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
