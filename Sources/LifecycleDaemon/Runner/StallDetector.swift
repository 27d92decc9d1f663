//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) public import LifecycleKit
public import LifecyclePrimitives
import LifecycleSystemd
public import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Names a callback that hangs the main loop, before systemd's watchdog fires.
///
/// The main thread writes, just before every callback, which one it is — its sequence number, its event, its target
/// (values: the path when the trace built it, else the node's identity and type; see ``CallbackTarget``) and when it
/// started — into one slot under a lock, and clears the slot when the loop's dispatch returns. One thread — the only
/// one the daemon adds, besides the journal writer's, made only once journald falls behind (``JournalWriter``) —
/// watches the slot: when the same callback has run past ``Thresholds/warning`` it logs a warning naming the callback,
/// its target (and its scene, also as `LIFECYCLE_SCENE=`, in an application that uses scenes) and how long it has
/// run, and another at ``Thresholds/urgent`` (half the watchdog interval), so the journal names the stuck callback
/// before systemd's "Watchdog timeout". When a reported callback returns, the main thread logs a notice with its
/// duration. The watcher never touches a controller or a view: what it names is what
/// the main thread handed it.
///
/// Idle, the watcher is parked without a timeout: a daemon that does nothing wakes nobody. The first callback after
/// an idle period wakes it (one futex wake per busy period, not per callback).
///
/// A callback is what the trace calls one: "runs past" is measured from its start to the next callback or the end of
/// the dispatch, whichever comes first.
@_spi(Internal) public final class StallDetector: CallbackMonitor, Sendable {
    /// When to warn, measured from the start of the callback that still runs.
    @_spi(Internal) public struct Thresholds: Hashable, Sendable {
        /// The first warning.
        @_spi(Internal) public var warning: Duration
        /// The second, louder one; nil for none (no watchdog).
        @_spi(Internal) public var urgent: Duration?

        /// Thresholds for a watchdog interval: a quarter of it, then half of it; without a watchdog, one second.
        @_spi(Internal) public static func forWatchdog(_ interval: Duration?) -> Thresholds {
            guard let interval, interval > .zero else { return Thresholds(warning: .seconds(1), urgent: nil) }
            return Thresholds(warning: interval / 4, urgent: interval / 2)
        }

        /// Explicit thresholds.
        @_spi(Internal) public init(warning: Duration, urgent: Duration?) {
            self.warning = warning
            self.urgent = urgent
        }
    }

    private struct Slot: Sendable {
        var active = false
        var sequence = 0
        var event = ""
        var target: CallbackTarget = ""
        /// On the coarse monotonic clock (a tick late at most: thresholds are hundreds of milliseconds).
        var started: UInt64 = 0
        /// Warnings logged for this callback: 0, 1, 2.
        var warnings = 0
    }

    private struct State: Sendable {
        var slot = Slot()
        /// The watcher waits without a deadline: the next callback wakes it.
        var watcherParked = false
        var stopping = false
        var thread: pthread_t?
    }

    /// What the watcher does once it has looked at the slot.
    private enum Finding: Sendable {
        case report(Slot, running: UInt64, level: Logger.Level)
        case stop
    }

    /// Where the warnings go (a logger usable from any thread: the journal or stderr handler).
    @_spi(Internal) public let logger: Logger
    /// Runs on the watcher thread before each warning: the daemon writes the trace lines the stuck dispatch
    /// deferred, so the journal has every callback that completed before the stall (and the stuck one's).
    private let beforeWarning: @Sendable () -> Void
    private let thresholds: Thresholds
    private let lock = ConditionLock(State())

    /// A detector that warns at `thresholds`; ``start()`` starts the watcher thread.
    @_spi(Internal) public init(thresholds: Thresholds, logger: Logger, beforeWarning: @escaping @Sendable () -> Void = {}) {
        self.thresholds = thresholds
        self.logger = logger
        self.beforeWarning = beforeWarning
    }

    deinit {
        stop()
    }

    /// Starts the watcher thread. It inherits the caller's signal mask (start it after the mapped signals are
    /// blocked, so no signal is ever delivered to it).
    @_spi(Internal) public func start() throws(SystemCallError) {
        switch SystemThread.start(blockingSignals: false, { [self] in watch() }) {
        case .success(let created):
            lock.withLock { $0.thread = created }
        case .failure(let errno):
            throw SystemCallError(operation: "pthread_create(stall detector)", errno: errno)
        }
    }

    /// Stops and joins the watcher thread.
    @_spi(Internal) public func stop() {
        let thread = lock.withLock { state -> pthread_t? in
            state.stopping = true
            defer { state.thread = nil }
            return state.thread
        }
        guard let thread else { return }
        lock.notifyAll()
        pthread_join(thread, nil)
    }

    // MARK: The main thread's side

    @_spi(Internal) public func callbackWillStart(sequence: Int, event: String, target: CallbackTarget) {
        let now = MonotonicClock.coarseNow()
        let (late, wake) = lock.withLock { state -> (Slot?, Bool) in
            // The one before returned late: its notice goes out now.
            let late = state.slot.warnings > 0 ? state.slot : nil
            state.slot.active = true
            state.slot.sequence = sequence
            state.slot.event = event
            state.slot.target = target
            state.slot.started = now
            state.slot.warnings = 0
            let wake = state.watcherParked
            state.watcherParked = false
            return (late, wake)
        }
        if wake { lock.notifyAll() }
        if let late { returnedLate(late, at: MonotonicClock.now()) }
    }

    /// The loop's dispatch returned: no callback runs any more.
    @_spi(Internal) public func dispatchDidEnd() {
        let late = lock.withLock { state -> Slot? in
            guard state.slot.active else { return nil }
            let late = state.slot.warnings > 0 ? state.slot : nil
            state.slot.active = false
            state.slot.warnings = 0
            return late
        }
        if let late { returnedLate(late, at: MonotonicClock.now()) }
    }

    private func returnedLate(_ late: Slot, at now: UInt64) {
        let ran = Duration.nanoseconds(Int64(now &- late.started))
        logger.notice(
            "\(late.event) \(Self.named(late.target)) returned after \(Self.rounded(ran)): the main loop was blocked that long",
            metadata: Self.metadata(late, running: ran)
        )
    }

    // MARK: The watcher thread

    private func watch() {
        let warningAt = UInt64(thresholds.warning.wholeNanoseconds)
        let urgentAt = thresholds.urgent.map { UInt64($0.wholeNanoseconds) }
        while true {
            let step = lock.withLock { (state: inout State) -> ConditionLock<State>.Step<Finding> in
                if state.stopping { return .done(.stop) }
                guard state.slot.active else {
                    state.watcherParked = true
                    return .wait(until: nil)
                }
                let running = MonotonicClock.now() &- state.slot.started
                if state.slot.warnings == 0, running >= warningAt {
                    state.slot.warnings = 1
                    return .done(.report(state.slot, running: running, level: .warning))
                }
                if state.slot.warnings == 1, let urgentAt, running >= urgentAt {
                    state.slot.warnings = 2
                    return .done(.report(state.slot, running: running, level: .error))
                }
                // Sleep until the next threshold of this callback, or until the slot changes.
                switch state.slot.warnings {
                case 0:
                    return .wait(until: state.slot.started &+ warningAt)
                case 1 where urgentAt != nil:
                    return .wait(until: state.slot.started &+ urgentAt!)
                default:
                    state.watcherParked = true
                    return .wait(until: nil)
                }
            }
            switch step {
            case .stop:
                return
            case .report(let slot, let running, let level):
                stalled(slot, running: running, level: level)
            }
        }
    }

    private func stalled(_ stuck: Slot, running nanoseconds: UInt64, level: Logger.Level) {
        beforeWarning()
        let ran = Duration.nanoseconds(Int64(nanoseconds))
        let consequence = level == .error ? "half the watchdog interval has passed" : "the main loop is blocked"
        logger.log(
            level: level,
            "\(stuck.event) \(Self.named(stuck.target)) has run for \(Self.rounded(ran)) and has not returned: \(consequence)",
            metadata: Self.metadata(stuck, running: ran)
        )
    }

    private static func metadata(_ slot: Slot, running: Duration) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            LogKey.stallEvent: .string(slot.event),
            LogKey.stallTarget: .string(slot.target.description),
            LogKey.stallSequence: .stringConvertible(slot.sequence),
            LogKey.stallMilliseconds: .stringConvertible(running.wholeMilliseconds),
        ]
        // `journalctl LIFECYCLE_SCENE=client-7` finds the stall among the scene's events.
        if let scene = slot.target.scene { metadata[LogKey.scene] = .string(scene) }
        return metadata
    }

    /// The target as a warning names it: its path (`scene:client-7/root/feed`), or its type with the scene it runs in
    /// when its path was not built (`<FeedController> in scene client-7`).
    static func named(_ target: CallbackTarget) -> String {
        guard let scene = target.scene, target.path.flatMap(Scene.identifier(inTracePath:)) == nil else {
            return target.description
        }
        return "\(target) in scene \(scene)"
    }

    /// `100 ms` under a second, `2.3 s` from there: how long a person reads a stall.
    static func rounded(_ duration: Duration) -> String {
        let milliseconds = duration.wholeMilliseconds
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        let tenths = (milliseconds + 50) / 100
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
