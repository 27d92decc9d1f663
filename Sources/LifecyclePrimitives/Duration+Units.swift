//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// Durations in the units the kernel, systemd and logs speak, for every module of the package (not public API:
// extensions of the standard library's types stay inside the package). One place, so rounding is settled once.
extension Duration {
    /// Whole microseconds, rounded up so that a deadline is never early; negative durations are zero.
    package var microsecondsRoundedUp: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, !(seconds == 0 && attoseconds <= 0) else { return 0 }
        let attosecondsPerMicrosecond: Int64 = 1_000_000_000_000
        let (wholeMicros, remainder) = attoseconds.quotientAndRemainder(dividingBy: attosecondsPerMicrosecond)
        let micros = UInt64(wholeMicros) + (remainder > 0 ? 1 : 0)
        let (total, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return .max }
        return total.addingReportingOverflow(micros).overflow ? .max : total + micros
    }

    /// Whole milliseconds, truncated (for log fields).
    package var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Whole nanoseconds, truncated.
    package var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// A short human form for logs: `200 ms`, `2 s`, `1.5 s`.
    package var formattedForLog: String {
        let micro = microsecondsRoundedUp
        if micro % 1_000_000 == 0 { return "\(micro / 1_000_000) s" }
        if micro >= 1_000_000 {
            let tenths = (micro + 50_000) / 100_000
            return "\(tenths / 10).\(tenths % 10) s"
        }
        if micro % 1000 == 0 { return "\(micro / 1000) ms" }
        return "\(micro) µs"
    }
}
