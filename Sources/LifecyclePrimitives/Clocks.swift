//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// Public, in a module only _LifecycleInternals (no adopter's product) names: inlined into the modules that read a
// clock on a hot path (see ConditionLock).
public import CLifecyclePrimitives

/// `CLOCK_MONOTONIC` in nanoseconds, as the daemon's threads measure time (no wall-clock change stretches it).
public enum MonotonicClock {
    /// Now.
    @inlinable
    public static func now() -> UInt64 {
        read(CLOCK_MONOTONIC)
    }

    /// As of the last tick (4 ms with HZ=250): a quarter of the cost of ``now()``, for a time read on a hot path (the
    /// stall detector reads it per callback, from another module: inlined).
    /// Never ahead of ``now()``, so a duration measured from it is at most a tick long.
    @inlinable @inline(__always)
    public static func coarseNow() -> UInt64 {
        read(CLOCK_MONOTONIC_COARSE)
    }

    /// The time on ``now()`` `duration` from now, for ``ConditionLock/withLock(waiting:)``: now for a duration of zero
    /// or less, the end of time for one past it.
    package static func deadline(after duration: Duration) -> UInt64 {
        let start = now()
        guard duration > .zero else { return start }
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let (span, tooLong) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        let (deadline, late) = start.addingReportingOverflow(span)
        return overflow || tooLong || late ? .max : deadline
    }

    @inlinable @inline(__always)
    static func read(_ clock: clockid_t) -> UInt64 {
        var now = timespec()
        clock_gettime(clock, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

/// `CLOCK_REALTIME`, the wall clock: for a time a person reads (a log line's timestamp, a file name), never for
/// measuring how long something takes (a change of the wall clock moves it).
package enum WallClock {
    /// Now, as seconds and nanoseconds since the Unix epoch.
    package static func now() -> WallTime {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return WallTime(seconds: now.tv_sec, nanoseconds: now.tv_nsec)
    }
}

/// A moment on the wall clock: what a log line's timestamp says.
package struct WallTime: Sendable, Hashable, Comparable {
    /// Seconds since the Unix epoch.
    package var seconds: Int
    /// Nanoseconds past ``seconds``.
    package var nanoseconds: Int

    /// A moment, as seconds and nanoseconds since the Unix epoch.
    package init(seconds: Int, nanoseconds: Int) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    package static func < (lhs: WallTime, rhs: WallTime) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }
}
