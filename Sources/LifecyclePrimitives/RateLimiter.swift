//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// At most one event per interval: the first event passes, the next only once the interval has passed since it.
package struct RateLimiter: Hashable, Sendable {
    /// The shortest time between two admitted events.
    package var minimumInterval: Duration
    /// When the last admitted event happened, on the caller's clock.
    package private(set) var lastAdmitted: Duration?
    /// Events refused since the last one admitted.
    package private(set) var refusedSinceAdmitted = 0

    /// Creates a limiter that has admitted nothing yet.
    package init(minimumInterval: Duration) {
        self.minimumInterval = minimumInterval
    }

    /// Whether an event at `now` (time since any fixed origin) passes; if it does, it becomes the last admitted.
    package mutating func admit(at now: Duration) -> Bool {
        admitCountingRefused(at: now) != nil
    }

    /// ``admit(at:)`` for a log that says how much it held back: nil when the event at `now` is refused; when it
    /// passes, how many were refused since the one admitted before it.
    package mutating func admitCountingRefused(at now: Duration) -> Int? {
        if let lastAdmitted, now - lastAdmitted < minimumInterval {
            refusedSinceAdmitted += 1
            return nil
        }
        lastAdmitted = now
        defer { refusedSinceAdmitted = 0 }
        return refusedSinceAdmitted
    }

    /// How long after `now` the next event would pass (zero if it would pass now).
    package func wait(at now: Duration) -> Duration {
        guard let lastAdmitted else { return .zero }
        return max(.zero, lastAdmitted + minimumInterval - now)
    }
}
