//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// Public: `SignalInfo`'s pid_t and uid_t resolve through CSystemd's headers, as glibc's types do for a module that
// imports them.
public import CSystemd
public import LifecyclePrimitives

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's event loop over sd-event: Unix signals, file descriptors, timers, the main dispatch queue and the
/// systemd watchdog, all dispatched on the main thread.
///
/// `MainLoop` is deliberately not `Sendable`: sd-event objects are not thread-safe, so a loop is made, fed and run
/// on the main thread only, and every handler runs there too. A handler that touches `@MainActor` state wraps it
/// in `MainActor.assumeIsolated { … }`, which holds because the loop owns the main thread (and, after
/// ``integrateMainDispatchQueue()``, drains the main queue, so `@MainActor` tasks run in the same turns).
///
/// Idle, the loop sleeps in epoll_wait and wakes for nothing except the watchdog, when enabled.
public final class MainLoop {
    /// The underlying `sd_event *`, e.g. for `sd_bus_attach_event`.
    public let eventPointer: OpaquePointer

    // The thread whose sd-event default loop this is; every call is checked against it.
    private let ownerThread: pid_t
    // Registered sources, retained here so their handlers live exactly as long as their registration.
    private var registered: [ObjectIdentifier: Source] = [:]
    private var turnEnd: Source?
    private var mainQueueSource: Source?

    /// Called on the loop after every handler it dispatched (a signal, a descriptor, a timer, the turn end): where
    /// the daemon writes the log lines the handler deferred and marks the main thread idle for its stall detector.
    public var afterDispatch: (() -> Void)?

    /// Takes the main thread's default sd-event loop; must be called on the main thread.
    public convenience init() throws(SystemCallError) {
        precondition(
            MainLoop.isMainThread,
            "MainLoop must be created on the main thread: it runs the main queue and @MainActor work there"
        )
        try self.init(onCurrentThread: ())
    }

    /// Takes the calling thread's default sd-event loop, on any thread.
    ///
    /// For tests only: a test process's main thread is parked by Dispatch, so loop tests run on their own thread,
    /// where no `@MainActor` work and no main-queue integration is possible.
    init(onCurrentThread: Void) throws(SystemCallError) {
        var event: OpaquePointer?
        try SystemCallError.check(sd_event_default(&event), "sd_event_default")
        self.eventPointer = event!
        self.ownerThread = csystemd_gettid()
    }

    deinit {
        // Sources hold references into the loop; release them before the loop itself.
        for source in registered.values {
            source.release()
        }
        sd_event_unref(eventPointer)
    }

    /// Whether the calling thread is the process's main thread.
    public static var isMainThread: Bool {
        csystemd_gettid() == getpid()
    }

    /// The kernel thread ID (gettid(2)) of the calling thread.
    static var threadID: pid_t {
        csystemd_gettid()
    }

    private func assertOwnerThread(_ function: StaticString = #function) {
        precondition(csystemd_gettid() == ownerThread, "MainLoop.\(function) called off the loop's thread")
    }

    // MARK: Signals

    /// Blocks the signals in the calling thread, so that they queue for ``addSignal(_:handler:)`` instead of
    /// running their default action.
    ///
    /// Call it first thing in `main`, before any thread exists: threads inherit the mask of the thread that
    /// creates them, and a signal that some thread leaves unblocked is delivered there with its default action.
    /// (Dispatch's parked main thread in `dispatchMain()` or an `async` `main` waits in sigsuspend with an empty
    /// mask, which is why the loop must own the main thread instead.)
    public static func blockSignals(_ signals: [UnixSignal]) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals {
            precondition(!signal.isUncatchable, "\(signal) cannot be blocked")
            sigaddset(&set, signal.rawValue)
        }
        // pthread_sigmask fails only for an invalid `how`, which this call never passes.
        let result = pthread_sigmask(SIG_BLOCK, &set, nil)
        precondition(result == 0, "pthread_sigmask(SIG_BLOCK) failed with \(result)")
    }

    /// Unblocks the signals in the calling thread: their default action applies again (a signal the configuration
    /// left unmapped). Like ``blockSignals(_:)``, call it before any thread exists.
    public static func unblockSignals(_ signals: [UnixSignal]) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal.rawValue) }
        // pthread_sigmask fails only for an invalid `how`, which this call never passes.
        let result = pthread_sigmask(SIG_UNBLOCK, &set, nil)
        precondition(result == 0, "pthread_sigmask(SIG_UNBLOCK) failed with \(result)")
    }

    /// Calls the handler on the loop for every delivery of the signal, which must already be blocked
    /// (``blockSignals(_:)``); otherwise this throws `EBUSY`.
    ///
    /// Standard signals coalesce: several sent before the loop reads them arrive as one. Real-time signals queue,
    /// each with its own ``SignalInfo/value``. Only one handler per signal is possible.
    @discardableResult
    public func addSignal(_ signal: UnixSignal, handler: @escaping (SignalInfo) -> Void) throws(SystemCallError)
        -> Source
    {
        assertOwnerThread()
        let source = Source(loop: self, handler: .signal(handler))
        var pointer: OpaquePointer?
        let result = sd_event_add_signal(
            eventPointer,
            &pointer,
            signal.rawValue,
            { _, info, userdata in
                guard let info, let userdata else { return 0 }
                let source = Unmanaged<Source>.fromOpaque(userdata).takeUnretainedValue()
                source.dispatchSignal(SignalInfo(info.pointee))
                return 0
            },
            source.userdata
        )
        try SystemCallError.check(result, "sd_event_add_signal(\(signal))")
        register(source, pointer: pointer!)
        return source
    }

    // MARK: File descriptors and timers

    /// Calls the handler whenever the descriptor is ready for any of the events (level-triggered), with the events
    /// that occurred.
    ///
    /// The caller keeps owning the descriptor: cancel the source before closing it.
    @discardableResult
    public func addIO(fd: Int32, events: IOEvents, handler: @escaping (IOEvents) -> Void) throws(SystemCallError)
        -> Source
    {
        assertOwnerThread()
        let source = Source(loop: self, handler: .io(handler))
        var pointer: OpaquePointer?
        let result = sd_event_add_io(
            eventPointer,
            &pointer,
            fd,
            events.rawValue,
            { _, _, revents, userdata in
                guard let userdata else { return 0 }
                let source = Unmanaged<Source>.fromOpaque(userdata).takeUnretainedValue()
                source.dispatchIO(IOEvents(rawValue: revents))
                return 0
            },
            source.userdata
        )
        try SystemCallError.check(result, "sd_event_add_io(fd \(fd))")
        register(source, pointer: pointer!)
        return source
    }

    /// Calls the handler once, after the delay on CLOCK_MONOTONIC, then drops the source.
    ///
    /// The delay counts from the start of the current loop iteration (sd_event_now), and the loop may fire up to
    /// `accuracy` late to share its wake-up with other timers.
    @discardableResult
    public func addTimer(
        after delay: Duration,
        accuracy: Duration = .milliseconds(1),
        handler: @escaping () -> Void
    ) throws(SystemCallError) -> Source {
        assertOwnerThread()
        let source = Source(loop: self, handler: .timer(handler))
        var pointer: OpaquePointer?
        let result = sd_event_add_time_relative(
            eventPointer,
            &pointer,
            CLOCK_MONOTONIC,
            delay.microsecondsRoundedUp,
            // 0 would mean sd-event's default of 250 ms; 1 µs is its finest.
            max(1, accuracy.microsecondsRoundedUp),
            { _, _, userdata in
                guard let userdata else { return 0 }
                let source = Unmanaged<Source>.fromOpaque(userdata).takeUnretainedValue()
                source.dispatchTimer()
                return 0
            },
            source.userdata
        )
        try SystemCallError.check(result, "sd_event_add_time_relative(\(delay))")
        register(source, pointer: pointer!)
        return source
    }

    // MARK: Turn end

    /// Runs the body at the end of every turn of the loop in which anything was dispatched: after the last pending
    /// source, just before the loop sleeps again. Several sources ready at once make one turn and one call;
    /// an idle loop never calls it. A later call replaces the body.
    ///
    /// This is where layout and display passes belong: everything that happened in the turn is already applied.
    public func setTurnEndHandler(_ body: @escaping () -> Void) throws(SystemCallError) {
        assertOwnerThread()
        if let turnEnd {
            turnEnd.handler = .turnEnd(body)
            return
        }
        let source = Source(loop: self, handler: .turnEnd(body))
        var pointer: OpaquePointer?
        let result = sd_event_add_post(
            eventPointer,
            &pointer,
            { _, userdata in
                guard let userdata else { return 0 }
                let source = Unmanaged<Source>.fromOpaque(userdata).takeUnretainedValue()
                source.dispatchTurnEnd()
                return 0
            },
            source.userdata
        )
        try SystemCallError.check(result, "sd_event_add_post")
        register(source, pointer: pointer!)
        // sd-event dispatches one source per iteration and marks post sources pending after each non-post one;
        // at the idle priority the post source waits until no other source is pending, so it closes the turn.
        try SystemCallError.check(
            sd_event_source_set_priority(pointer, Int64(SD_EVENT_PRIORITY_IDLE)),
            "sd_event_source_set_priority(post, idle)"
        )
        turnEnd = source
    }

    // MARK: Dispatch main queue

    /// Drains Dispatch's main queue on this loop, so `DispatchQueue.main.async` blocks and `@MainActor` tasks run
    /// here, in the loop's turns. Idempotent; main thread only.
    public func integrateMainDispatchQueue() throws(SystemCallError) {
        assertOwnerThread()
        precondition(MainLoop.isMainThread, "only the main thread can drain Dispatch's main queue")
        guard mainQueueSource == nil else { return }
        let wakeup = MainDispatchQueue.wakeupDescriptor
        mainQueueSource = try addIO(fd: wakeup, events: .readable) { _ in
            MainDispatchQueue.acknowledgeWakeup(wakeup)
            MainDispatchQueue.drain()
        }
    }

    // MARK: Watchdog

    /// Makes the loop itself send `WATCHDOG=1` at half of `$WATCHDOG_USEC`, first at once; returns whether systemd
    /// asked for a watchdog at all.
    ///
    /// The pings come from the loop's iterations, so a handler that blocks the loop stops them and systemd
    /// acts on the hang.
    public func enableWatchdog() throws(SystemCallError) -> Bool {
        assertOwnerThread()
        return try SystemCallError.check(sd_event_set_watchdog(eventPointer, 1), "sd_event_set_watchdog") > 0
    }

    /// Stops the loop's `WATCHDOG=1` pings: the process is no longer the service's main process (an upgrade handed
    /// over), and systemd takes notifications from the main process only.
    public func disableWatchdog() {
        assertOwnerThread()
        _ = sd_event_set_watchdog(eventPointer, 0)
    }

    // MARK: Running

    /// Runs the loop until ``exit(code:)`` and returns that code; a loop runs once.
    public func run() throws(SystemCallError) -> Int32 {
        assertOwnerThread()
        return try SystemCallError.check(sd_event_loop(eventPointer), "sd_event_loop")
    }

    /// Runs one iteration: waits up to the timeout (nil: forever) and dispatches at most one source; returns
    /// whether one was dispatched.
    @discardableResult
    public func runOnce(timeout: Duration?) throws(SystemCallError) -> Bool {
        assertOwnerThread()
        let usec = timeout.map(\.microsecondsRoundedUp) ?? .max
        return try SystemCallError.check(sd_event_run(eventPointer, usec), "sd_event_run") > 0
    }

    /// Asks the loop to stop after the current handler; ``run()`` then returns the code (0–255).
    ///
    /// Sources still pending, including the turn-end handler of the current turn, are not dispatched.
    public func exit(code: Int32) {
        assertOwnerThread()
        precondition(code >= 0, "exit codes are 0…255; \(code) would read as an error from sd_event_loop")
        // Fails only when the loop already finished, which makes a second request moot.
        _ = sd_event_exit(eventPointer, code)
    }

    // MARK: Sources

    private func register(_ source: Source, pointer: OpaquePointer) {
        source.pointer = pointer
        registered[ObjectIdentifier(source)] = source
    }

    fileprivate func unregister(_ source: Source) {
        assertOwnerThread()
        registered[ObjectIdentifier(source)] = nil
        if turnEnd === source { turnEnd = nil }
        if mainQueueSource === source { mainQueueSource = nil }
    }

    /// An event source registered on a ``MainLoop``; the loop keeps it and its handler alive until it is cancelled
    /// (or, for a timer, has fired).
    public final class Source {
        fileprivate enum Handler {
            case signal((SignalInfo) -> Void)
            case io((IOEvents) -> Void)
            case timer(() -> Void)
            case turnEnd(() -> Void)
        }

        fileprivate var handler: Handler
        fileprivate var pointer: OpaquePointer?
        private weak var loop: MainLoop?

        fileprivate init(loop: MainLoop, handler: Handler) {
            self.loop = loop
            self.handler = handler
        }

        // The C callbacks get this object back unretained: the loop's registry holds the reference.
        fileprivate var userdata: UnsafeMutableRawPointer {
            Unmanaged.passUnretained(self).toOpaque()
        }

        /// Whether the source is still registered.
        public var isActive: Bool { pointer != nil }

        /// The priority among sources ready at once: lower runs first; 0 (sd-event's normal) by default. Sources that
        /// serve peers (a control socket) take a higher number so that signals and the watchdog go first.
        public func setPriority(_ priority: Int64) throws(SystemCallError) {
            guard let pointer else { return }
            try SystemCallError.check(sd_event_source_set_priority(pointer, priority), "sd_event_source_set_priority")
        }

        /// Changes the events an io source waits for (e.g. adds ``IOEvents/writable`` while output is pending).
        public func setIOEvents(_ events: IOEvents) throws(SystemCallError) {
            guard let pointer else { return }
            try SystemCallError.check(sd_event_source_set_io_events(pointer, events.rawValue), "sd_event_source_set_io_events")
        }

        /// Stops and drops the source; safe to call twice, after a timer fired, or from its own handler.
        public func cancel() {
            guard pointer != nil else { return }
            // Unregistering may drop the last reference to self while the caller still uses it.
            withExtendedLifetime(self) {
                loop?.unregister(self)
                release()
            }
        }

        fileprivate func release() {
            guard let pointer else { return }
            // Inside its own dispatch sd-event defers freeing the source, so this is safe from the handler too.
            sd_event_source_disable_unref(pointer)
            self.pointer = nil
        }

        fileprivate func dispatchSignal(_ info: SignalInfo) {
            guard case .signal(let body) = handler else { preconditionFailure("signal callback on \(handler)") }
            withExtendedLifetime(self) { body(info) }
            loop?.afterDispatch?()
        }

        fileprivate func dispatchIO(_ events: IOEvents) {
            guard case .io(let body) = handler else { preconditionFailure("io callback on \(handler)") }
            withExtendedLifetime(self) { body(events) }
            loop?.afterDispatch?()
        }

        fileprivate func dispatchTimer() {
            guard case .timer(let body) = handler else { preconditionFailure("timer callback on \(handler)") }
            withExtendedLifetime(self) {
                body()
                // sd-event already turned the one-shot timer off; drop it so it does not pile up in the registry.
                cancel()
            }
            loop?.afterDispatch?()
        }

        fileprivate func dispatchTurnEnd() {
            guard case .turnEnd(let body) = handler else { preconditionFailure("post callback on \(handler)") }
            withExtendedLifetime(self) { body() }
            loop?.afterDispatch?()
        }
    }
}

/// What the kernel told about one delivery of a signal (from signalfd_siginfo).
public struct SignalInfo: Hashable, Sendable {
    /// The signal delivered.
    public let signal: UnixSignal
    /// The sender's PID (0 when the kernel sent it).
    public let senderPID: pid_t
    /// The sender's real UID.
    public let senderUID: uid_t
    /// The integer sent with sigqueue(3) (`si_value.sival_int`); 0 for kill(2).
    public let value: Int32
    /// Whether the signal was sent with sigqueue(3), i.e. carries a ``value``.
    public let isQueued: Bool

    /// Describes a delivery.
    public init(signal: UnixSignal, senderPID: pid_t, senderUID: uid_t, value: Int32, isQueued: Bool) {
        self.signal = signal
        self.senderPID = senderPID
        self.senderUID = senderUID
        self.value = value
        self.isQueued = isQueued
    }

    init(_ info: signalfd_siginfo) {
        self.init(
            signal: UnixSignal(rawValue: Int32(bitPattern: info.ssi_signo)),
            senderPID: pid_t(bitPattern: info.ssi_pid),
            senderUID: info.ssi_uid,
            value: info.ssi_int,
            isQueued: info.ssi_code == SI_QUEUE
        )
    }
}

// The varlink server runs on any loop that gives it io and timer sources; this one is the daemon's.
extension MainLoop: EventLoop {
    public func addIOSource(fd: Int32, events: IOEvents, handler: @escaping (IOEvents) -> Void) throws(SystemCallError)
        -> any EventLoopSource
    {
        try addIO(fd: fd, events: events, handler: handler)
    }

    public func addTimerSource(after delay: Duration, accuracy: Duration, handler: @escaping () -> Void) throws(SystemCallError)
        -> any EventLoopSource
    {
        try addTimer(after: delay, accuracy: accuracy, handler: handler)
    }
}

extension MainLoop.Source: EventLoopSource {}
