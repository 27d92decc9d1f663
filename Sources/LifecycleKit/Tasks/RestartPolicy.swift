//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// What happens when lifecycle-bound work (``ViewController/task(_:while:restartPolicy:priority:operation:)``, a
/// hosted service) fails while it should run: Erlang/OTP's supervisor rule (restart intensity and period, then
/// escalation), with the delay between restarts of systemd's `Restart=`.
public enum RestartPolicy: Sendable, Hashable {
    /// A failure is reported and the work starts again only at the next appearance or return to the foreground.
    case never
    /// A failure is reported and the work starts again after a delay (``Backoff``), while it should run. More than
    /// `maxRestarts` failures within `within` escalate instead: the controller's and then the delegate's
    /// `didExhaustRestartsWithError` callbacks, whose default terminates the application with a failure exit status
    /// (75, `EX_TEMPFAIL`), so that systemd's own `Restart=` takes over.
    case onFailure(maxRestarts: Int, within: Duration, backoff: Backoff)

    /// The delay before each restart.
    public enum Backoff: Sendable, Hashable {
        /// `initial` before the first restart of a series, twice as long before each next one, at most `maximum`.
        case exponential(initial: Duration, maximum: Duration)

        /// The delay before the restart that follows `failures` failures within the period (1: the first).
        func delay(afterFailures failures: Int) -> Duration {
            switch self {
            case .exponential(let initial, let maximum):
                var delay = initial
                for _ in 1..<max(1, failures) {
                    // Doubling stops at the maximum, so a long series never overflows.
                    guard delay < maximum else { break }
                    delay = delay * 2
                }
                return min(delay, maximum)
            }
        }
    }

    /// The default of `task(_:while:)` and `ServiceController`: up to 5 restarts within 60 s, 100 ms before the
    /// first, doubling up to 10 s (100, 200, 400, 800 ms, 1.6 s); a sixth failure within the minute escalates.
    public static let standard = RestartPolicy.onFailure(
        maxRestarts: 5,
        within: .seconds(60),
        backoff: .exponential(initial: .milliseconds(100), maximum: .seconds(10))
    )
}

/// Failures of one task within its policy's period: decides whether the next one restarts (after which delay) or
/// escalates. A value, tested on its own.
struct RestartRecord: Sendable, Hashable {
    /// What the record decides for a failure.
    enum Decision: Hashable, Sendable {
        /// Start again after `delay`; `restart` counts from 1 within the period, of at most `limit`.
        case restart(after: Duration, restart: Int, limit: Int)
        /// The policy allows no restart: wait for the next appearance or foreground.
        case wait
        /// Too many failures within the period.
        case escalate(failures: Int, within: Duration)
    }

    /// When the failures within the current period happened, oldest first.
    private(set) var failures: [ContinuousClock.Instant] = []

    /// Records a failure at `now` and decides what follows it under `policy`.
    mutating func failure(at now: ContinuousClock.Instant, policy: RestartPolicy) -> Decision {
        guard case .onFailure(let maxRestarts, let within, let backoff) = policy else { return .wait }
        failures.removeAll { now - $0 >= within }
        failures.append(now)
        guard failures.count <= maxRestarts else { return .escalate(failures: failures.count, within: within) }
        return .restart(after: backoff.delay(afterFailures: failures.count), restart: failures.count, limit: maxRestarts)
    }
}
