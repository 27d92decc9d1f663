//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// How the daemon reaches the world — the clock, the loop's timers, systemd's notification socket, the terminal,
/// logind and memory pressure — in one seam, so its policy (signals, termination, sleep) is tested with stand-ins
/// and a manual clock.
@MainActor
struct DaemonEffects {
    /// Now, on the clock every budget counts with.
    var now: @MainActor () -> ContinuousClock.Instant
    /// Runs work after a delay (the loop's timers).
    var schedule: WorkScheduler
    /// Sends sd_notify assignments; throws when the socket refuses them.
    var notify: @MainActor ([NotifyAssignment]) throws -> Void
    /// Waits (at most the duration) until systemd has processed the notifications sent so far (`BARRIER=1`).
    var notifyBarrier: @MainActor (Duration) throws -> Void = { _ in }
    /// What the terminal the daemon was started from says.
    var terminal: TerminalProbe
    /// Stops the process as job control does (SIGSTOP); `fg` continues it.
    var stopProcess: @MainActor () -> Void
    /// Ends the main loop with an exit code.
    var exit: @MainActor (Int32) -> Void
    /// Connects to logind on the system bus, calling back with each announcement.
    ///
    /// Both watches throw a concrete error type: the warning that names an `any Error` had the runtime look up
    /// how to print it, two scans of every protocol conformance in the binary at a start without a system bus.
    var connectLogind:
        @MainActor (_ onEvent: @escaping @MainActor (Logind.Event) -> Void) throws(SystemCallError)
            -> any LogindConnection
    /// Starts watching memory pressure, calling back on each (rate-limited) warning.
    var watchMemoryPressure:
        @MainActor (MemoryPressureMonitor.Settings, _ onPressure: @escaping @MainActor () -> Void)
            throws(MemoryPressureError) -> any MemoryPressureWatching
    /// Where the PSI trigger is kept across processes of the service (the live effects' only).
    var triggerKeepingSlot: TriggerKeepingSlot?
    /// The process environment, read once when the daemon starts: nothing else in the daemon reads it.
    var environment: [String: String] = [:]
    /// Whether systemd runs the process (`INVOCATION_ID` or `NOTIFY_SOCKET`), as read at start.
    var underSystemd = false
    /// systemd's watchdog interval for this process (`WATCHDOG_USEC`), as read at start; nil without a watchdog.
    var watchdogInterval: Duration?
    /// The descriptors systemd (or an upgrade's predecessor) passed (`LISTEN_FDS`), with their names: read once, at
    /// start; the daemon hands each part its own.
    var passedDescriptors: @MainActor () -> [SocketActivation.Socket] = { [] }
    /// systemd's notification socket as read at start (`$NOTIFY_SOCKET`): what the file descriptor store and the
    /// state store send through. Disabled for stand-ins.
    var notifier = SystemdNotifier.disabled
    /// Whether the process is PID 1 of its namespace (``ProcessEnvironment/isContainerInit``), as read at start.
    var isContainerInit = false
    /// Lets journald take the log records written so far, within the journal writer's budget: before systemd or a
    /// control client hears of what they record, and at the end of each dispatch
    /// (``JournalWriter/waitForDelivery()``).
    var deliverLogs: @MainActor () -> Void = {}
    /// Bounds one ``deliverLogs`` wait (``JournalWriter/deliveryBudget``).
    var setLogDeliveryBudget: @MainActor (Duration) -> Void = { _ in }
}

/// Where the daemon was started from, for job control and hangups.
struct TerminalProbe {
    /// Run by hand from a terminal (stdin a tty) outside systemd: job control and hangups apply.
    var startedOnTerminal: Bool
    /// Whether stdin is (still) a terminal.
    var stdinIsTerminal: @MainActor () -> Bool
    /// Whether the terminal has hung up (closed): a hung-up terminal answers every query with EIO.
    var hasHungUp: @MainActor () -> Bool
    /// Whether a stop the process sends itself stops it: not as the init (PID 1) of a PID namespace, whose own
    /// signals of default action the kernel drops (a container run with a terminal, `unshare --pid --fork`).
    var canStopItself = true

    /// The process's own terminal.
    static var live: TerminalProbe {
        TerminalProbe(
            startedOnTerminal: !SystemdNotifier.isUnderSystemd && isatty(STDIN_FILENO) == 1,
            stdinIsTerminal: { isatty(STDIN_FILENO) == 1 },
            hasHungUp: { tcgetpgrp(STDIN_FILENO) < 0 && errno == EIO },
            canStopItself: !ProcessEnvironment.isContainerInit
        )
    }
}

/// What the daemon needs from a logind client; ``Logind`` is the real one.
@MainActor
protocol LogindConnection: AnyObject {
    var holdsInhibitors: Bool { get }
    /// The delay locks held now (for status reports).
    var heldLocks: Set<Logind.LockType> { get }
    var inhibitDelayMax: Duration? { get }
    func takeInhibitors()
    func releaseInhibitors()
    func close()
    /// What the client still waits for before announcements reach it and its inhibitors are answered (launch waits
    /// for it before `READY=1`); empty when nothing is missing or waiting could not help.
    var awaiting: [String] { get }
    /// Calls `progress` whenever something ``awaiting`` lists may have arrived.
    func observeSetup(_ progress: @escaping @MainActor () -> Void)
}

/// A running memory pressure watch; ``MemoryPressureMonitor`` is the real one.
@MainActor
protocol MemoryPressureWatching: AnyObject {
    var minimumInterval: Duration { get set }
    /// The file the trigger is armed on (for status reports).
    var source: MemoryPressureSource? { get }
    func stop()
    /// Stops watching as the process exits: a trigger kept in the file descriptor store stays there.
    func stop(keepingTheStoredTrigger: Bool)
}

extension MemoryPressureWatching {
    func stop(keepingTheStoredTrigger: Bool) { stop() }
}

/// Where the daemon puts the file descriptor store's keeping of the PSI trigger (``TriggerKeeping``) before the watch
/// starts: the live effects' monitor takes it from here.
@MainActor
final class TriggerKeepingSlot {
    var keeping: TriggerKeeping?
}

extension LogindConnection {
    var heldLocks: Set<Logind.LockType> { holdsInhibitors ? Set(Logind.LockType.allCases) : [] }
    var awaiting: [String] { [] }
    func observeSetup(_ progress: @escaping @MainActor () -> Void) {}
}

extension MemoryPressureWatching {
    var source: MemoryPressureSource? { nil }
}

extension Logind: LogindConnection {
    func observeSetup(_ progress: @escaping @MainActor () -> Void) {
        // Bus callbacks run on the loop, which owns the main thread.
        onSetupProgress = { MainActor.assumeIsolated { progress() } }
    }
}

extension MemoryPressureMonitor: MemoryPressureWatching {
    var minimumInterval: Duration {
        get { settings.minimumInterval }
        set { settings.minimumInterval = newValue }
    }
}

extension MainLoop.Source: ScheduledWork {}

extension DaemonEffects {
    /// The daemon's: the loop's timers and exit, systemd's socket, the process's terminal, logind on the system bus,
    /// PSI polled by the loop.
    static func live(loop: MainLoop, notifier: SystemdNotifier, programName: String, logger: Logger) -> DaemonEffects {
        let triggerSlot = TriggerKeepingSlot()
        var effects = DaemonEffects(
            now: { .now },
            schedule: { delay, work in
                do {
                    return try loop.addTimer(after: delay) { MainActor.assumeIsolated { work() } }
                } catch {
                    logger.error("cannot arm a timer of \(delay): \(error)")
                    return nil
                }
            },
            notify: { assignments in try notifier.notify(assignments) },
            notifyBarrier: { timeout in try notifier.barrier(timeout: timeout) },
            terminal: .live,
            stopProcess: { raise(SIGSTOP) },
            exit: { code in loop.exit(code: code) },
            connectLogind: { onEvent throws(SystemCallError) in
                let logind = Logind(
                    loop: loop,
                    who: programName,
                    why: "The application enters the background before the system sleeps or shuts down",
                    logger: logger
                )
                // Every bus callback runs on the loop, which owns the main thread.
                logind.onEvent = { event in MainActor.assumeIsolated { onEvent(event) } }
                try logind.connect()
                return logind
            },
            watchMemoryPressure: { settings, onPressure throws(MemoryPressureError) in
                let monitor = MemoryPressureMonitor(loop: loop, settings: settings, logger: logger)
                monitor.keeping = triggerSlot.keeping
                triggerSlot.keeping?.kept = nil
                let source = try monitor.start { MainActor.assumeIsolated { onPressure() } }
                if let source {
                    var metadata: Logger.Metadata = [LogKey.psiSource: "\(source.origin.rawValue)"]
                    if !monitor.skipped.isEmpty {
                        let skipped = monitor.skipped.map(\.description).joined(separator: "; ")
                        metadata[LogKey.psiSkipped] = "\(skipped)"
                    }
                    // With $MEMORY_PRESSURE_WATCH, the trigger (if any) is the one systemd passed.
                    let trigger =
                        source.origin != .environment
                        ? "\(settings.trigger)"
                        : source.write.isEmpty
                            ? "any data"
                            : "\"\(source.writtenText)\" from MEMORY_PRESSURE_WRITE"
                    logger.info(
                        """
                        watching memory pressure: \(trigger) on \(source.path), at most one warning per \
                        \(settings.minimumInterval)
                        """,
                        metadata: metadata
                    )
                }
                return monitor
            },
            environment: ProcessEnvironment.all(),
            underSystemd: SystemdNotifier.isUnderSystemd,
            watchdogInterval: notifier.watchdogInterval(),
            passedDescriptors: { SocketActivation.passed() },
            notifier: notifier,
            isContainerInit: ProcessEnvironment.isContainerInit,
            deliverLogs: { JournalWriter.shared.waitForDelivery() },
            setLogDeliveryBudget: { budget in JournalWriter.shared.deliveryBudget = budget }
        )
        effects.triggerKeepingSlot = triggerSlot
        return effects
    }
}
