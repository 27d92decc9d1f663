//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Testing) public import LifecycleKit
public import Logging
@_spi(Testing) import LifecycleSystemd
@_spi(Testing) public import LifecycleIPC

#if canImport(Glibc)
import Glibc
#endif

/// Names a callback that hangs the main loop, before systemd's watchdog fires.
///
/// The main thread writes, just before every callback, which one it is (sequence, event, target, start) into one slot,
/// and clears the slot when the loop's dispatch returns. The target is the node itself, unretained: its path string is
/// not touched per callback (the node keeps it, built at its first callback in a position), only read, through
/// ``RunningCallback``, when a warning or a late notice names it. One thread — the only one the daemon adds, besides the journal
/// writer's, made only once journald falls behind (``JournalWriter``) — watches the slot:
/// when the same callback has run past ``Thresholds/warning`` it logs a warning naming the callback, its target and
/// how long it has run, and another at ``Thresholds/urgent`` (half the watchdog interval), so the journal names the
/// stuck callback before systemd's "Watchdog timeout". When a reported callback returns, the main thread logs a
/// notice with its duration.
///
/// Idle, the watcher is parked without a timeout: a daemon that does nothing wakes nobody. The first callback after
/// an idle period wakes it (one futex wake per busy period, not per callback).
///
/// A callback is what the trace calls one: "runs past" is measured from its start to the next callback or the end of
/// the dispatch, whichever comes first.
@_spi(Testing) public final class StallDetector: CallbackMonitor, @unchecked Sendable {
    // @unchecked Sendable: every mutable field below is guarded by RunningCallback.mutex, taken by the main thread
    // (per callback, briefly) and by the watcher thread.

    /// When to warn, measured from the start of the callback that still runs.
    @_spi(Testing) public struct Thresholds: Hashable, Sendable {
        /// The first warning.
        @_spi(Testing) public var warning: Duration
        /// The second, louder one; nil for none (no watchdog).
        @_spi(Testing) public var urgent: Duration?

        /// Thresholds for a watchdog interval: a quarter of it, then half of it; without a watchdog, one second.
        @_spi(Testing) public static func forWatchdog(_ interval: Duration?) -> Thresholds {
            guard let interval, interval > .zero else { return Thresholds(warning: .seconds(1), urgent: nil) }
            return Thresholds(warning: interval / 4, urgent: interval / 2)
        }

        /// Explicit thresholds.
        @_spi(Testing) public init(warning: Duration, urgent: Duration?) {
            self.warning = warning
            self.urgent = urgent
        }
    }

    private struct Slot {
        var active = false
        var sequence = 0
        var event = ""
        var target: CallbackTarget = ""
        /// The target's publication (``RunningCallback/publish(_:)``): its path can be read while it is the latest.
        var publication: UInt64 = 0
        /// On the coarse monotonic clock (a tick late at most: thresholds are hundreds of milliseconds).
        var started: UInt64 = 0
        /// Warnings logged for this callback: 0, 1, 2.
        var warnings = 0
    }

    /// Where the warnings go (a logger usable from any thread: the journal or stderr handler).
    @_spi(Testing) public let logger: Logger
    /// Runs on the watcher thread before each warning: the daemon writes the trace lines the stuck dispatch
    /// deferred, so the journal has every callback that completed before the stall (and the stuck one's).
    private let beforeWarning: @Sendable () -> Void
    private let thresholds: Thresholds
    // The lock is RunningCallback's, which also guards the paths of the nodes a warning names; the condition lives at
    // an address of its own (never a class property passed inout, which the compiler may check for exclusivity at run
    // time, or move). The fields they guard are read and written per callback without dynamic exclusivity checks,
    // which cost more than the lock itself (the mutex is what keeps them exclusive).
    private var mutex: UnsafeMutablePointer<pthread_mutex_t> { RunningCallback.mutex }
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    @exclusivity(unchecked) private var slot = Slot()
    @exclusivity(unchecked) private var watcherParked = false
    @exclusivity(unchecked) private var stopping = false
    @exclusivity(unchecked) private var thread: pthread_t?

    /// A detector that warns at `thresholds`; ``start()`` starts the watcher thread.
    @_spi(Testing) public init(thresholds: Thresholds, logger: Logger, beforeWarning: @escaping @Sendable () -> Void = {}) {
        self.thresholds = thresholds
        self.logger = logger
        self.beforeWarning = beforeWarning
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Timed waits on the monotonic clock, which a change of the wall clock cannot stretch.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        stop()
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Starts the watcher thread. It inherits the caller's signal mask (start it after the mapped signals are
    /// blocked, so no signal is ever delivered to it).
    @_spi(Testing) public func start() throws(SystemCallError) {
        switch SystemThread.start(blockingSignals: false, { [self] in watch() }) {
        case .success(let created):
            thread = created
        case .failure(let errno):
            throw SystemCallError(operation: "pthread_create(stall detector)", errno: errno)
        }
    }

    /// Stops and joins the watcher thread.
    @_spi(Testing) public func stop() {
        guard let thread else { return }
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
        pthread_join(thread, nil)
        self.thread = nil
    }

    // MARK: The main thread's side

    @_spi(Testing) public func callbackWillStart(sequence: Int, event: String, target: CallbackTarget) {
        let now = Self.coarseMonotonicNanoseconds()
        pthread_mutex_lock(mutex)
        // The one before returned late: named now, while its publication is still the latest.
        let late = slot.warnings > 0 ? (slot, path: Self.path(of: slot)) : nil
        slot.active = true
        slot.sequence = sequence
        slot.event = event
        slot.target = target
        slot.publication = RunningCallback.publish(target)
        slot.started = now
        slot.warnings = 0
        if watcherParked { pthread_cond_signal(condition) }
        pthread_mutex_unlock(mutex)
        if let late { returnedLate(late.0, path: late.path, at: Self.monotonicNanoseconds()) }
    }

    /// The loop's dispatch returned: no callback runs any more.
    @_spi(Testing) public func dispatchDidEnd() {
        pthread_mutex_lock(mutex)
        guard slot.active else {
            pthread_mutex_unlock(mutex)
            return
        }
        let late = slot.warnings > 0 ? (slot, path: Self.path(of: slot)) : nil
        slot.active = false
        slot.warnings = 0
        pthread_mutex_unlock(mutex)
        if let late { returnedLate(late.0, path: late.path, at: Self.monotonicNanoseconds()) }
    }

    private func returnedLate(_ late: Slot, path: String, at now: UInt64) {
        let ran = Duration.nanoseconds(Int64(now &- late.started))
        logger.notice(
            "\(late.event) \(path) returned after \(Self.rounded(ran)): the main loop was blocked that long",
            metadata: Self.metadata(late, path: path, running: ran)
        )
    }

    /// The path of the slot's target, with the mutex held (a node released since its callback started left its path
    /// behind); only its kind when another monitor of this process published a callback since.
    private static func path(of slot: Slot) -> String {
        RunningCallback.path(of: slot.target, publication: slot.publication) ?? "(\(slot.target))"
    }

    // MARK: The watcher thread

    private func watch() {
        pthread_mutex_lock(mutex)
        while !stopping {
            guard slot.active else {
                watcherParked = true
                pthread_cond_wait(condition, mutex)
                watcherParked = false
                continue
            }
            let now = Self.monotonicNanoseconds()
            let running = now &- slot.started
            let warningAt = UInt64(thresholds.warning.wholeNanoseconds)
            let urgentAt = thresholds.urgent.map { UInt64($0.wholeNanoseconds) }
            var report: (Slot, path: String, level: Logger.Level)?
            if slot.warnings == 0, running >= warningAt {
                slot.warnings = 1
                report = (slot, Self.path(of: slot), .warning)
            } else if slot.warnings == 1, let urgentAt, running >= urgentAt {
                slot.warnings = 2
                report = (slot, Self.path(of: slot), .error)
            }
            if let report {
                pthread_mutex_unlock(mutex)
                stalled(report.0, path: report.path, running: running, level: report.level)
                pthread_mutex_lock(mutex)
                continue
            }
            // Sleep until the next threshold of this callback, or until the slot changes.
            let next: UInt64? =
                slot.warnings == 0 ? slot.started &+ warningAt : slot.warnings == 1 ? urgentAt.map { slot.started &+ $0 } : nil
            if let next {
                var deadline = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
                pthread_cond_timedwait(condition, mutex, &deadline)
            } else {
                watcherParked = true
                pthread_cond_wait(condition, mutex)
                watcherParked = false
            }
        }
        pthread_mutex_unlock(mutex)
    }

    private func stalled(_ stuck: Slot, path: String, running nanoseconds: UInt64, level: Logger.Level) {
        beforeWarning()
        let ran = Duration.nanoseconds(Int64(nanoseconds))
        let consequence = level == .error ? "half the watchdog interval has passed" : "the main loop is blocked"
        logger.log(
            level: level,
            "\(stuck.event) \(path) has run for \(Self.rounded(ran)) and has not returned: \(consequence)",
            metadata: Self.metadata(stuck, path: path, running: ran)
        )
    }

    private static func metadata(_ slot: Slot, path: String, running: Duration) -> Logger.Metadata {
        [
            "lifecycle.stall_event": .string(slot.event),
            "lifecycle.stall_target": .string(path),
            "lifecycle.stall_seq": .stringConvertible(slot.sequence),
            "lifecycle.stall_ms": .stringConvertible(running.wholeMilliseconds),
        ]
    }

    /// `100 ms` under a second, `2.3 s` from there: how long a person reads a stall.
    static func rounded(_ duration: Duration) -> String {
        let milliseconds = duration.wholeMilliseconds
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        let tenths = (milliseconds + 50) / 100
        return "\(tenths / 10).\(tenths % 10) s"
    }

    private static func monotonicNanoseconds() -> UInt64 {
        nanoseconds(CLOCK_MONOTONIC)
    }

    /// `CLOCK_MONOTONIC` as of the last tick (4 ms with HZ=250): a quarter of the cost of the precise clock, read
    /// per callback. Never ahead of ``monotonicNanoseconds()``, so a duration measured from it is at most a tick long.
    private static func coarseMonotonicNanoseconds() -> UInt64 {
        nanoseconds(CLOCK_MONOTONIC_COARSE)
    }

    private static func nanoseconds(_ clock: clockid_t) -> UInt64 {
        var now = timespec()
        clock_gettime(clock, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
