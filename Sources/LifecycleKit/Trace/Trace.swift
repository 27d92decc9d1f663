//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
package import Logging
import Synchronization

/// One callback, as it appears in the trace: journald's `LIFECYCLE_*` fields, or one line on stderr.
public struct TraceEvent: Sendable, Hashable, CustomStringConvertible {
    /// The callback's name, such as `applicationDidEnterBackground` or `viewWillAppear`.
    public var event: String
    /// `delegate`, or the object's path in the tree, such as `root/modes/serving` or `root/worker.view/progress`.
    public var target: String
    /// The application state when the callback fired.
    public var state: ApplicationState
    /// A counter, +1 per event, from 1 at launch.
    public var sequence: Int
    /// What asked for the transition this callback belongs to.
    public var cause: Cause
    /// The callback's argument where it matters, such as `nil` for `willMove(toWindow:)` on removal.
    public var detail: String?
    /// The persistent identifier of the scene the event belongs to (its delegate's, its tree's, or the application
    /// delegate's callback about it); nil outside every scene. The journal's `LIFECYCLE_SCENE`.
    public var scene: String? = nil

    public var description: String {
        var line = "#\(sequence) \(target) \(event)"
        if let detail { line += "(\(detail))" }
        line += " [\(state), \(cause)]"
        return line
    }
}

/// Watches which callback runs now, from outside the main thread: the daemon's stall detector.
///
/// ``callbackWillStart(sequence:event:target:)`` runs on the main actor just before every callback, traced or not;
/// the monitor must be quick (it runs on the hot path). What it is told are values (a number, a name, a
/// ``CallbackTarget``), which it may hand to another thread.
@_spi(Internal) public protocol CallbackMonitor: AnyObject, Sendable {
    /// A callback is about to run: its sequence number, its event name and its target (`delegate`, a named target, or
    /// a controller or a view: its identity, its type, and its path when the trace built it).
    func callbackWillStart(sequence: Int, event: String, target: CallbackTarget)
}

/// Trace lines that wait to be written (``Trace/defersLogLines``), in order: written by the main thread when the
/// loop's dispatch returns, or by any other thread that must get them out first.
///
/// It is also what keeps a process's log in the order things happened: a log handler that writes a record through
/// ``writeInOrder(_:)`` writes the lines that wait first, under the same lock, so a callback's trace line comes before
/// everything the callback logs, and every record after the lines of the callbacks that ran before it was logged
/// (the daemon's handlers do; docs/lifecycle.md §7).
package final class TraceLineBuffer: OrderedLog {
    private struct Pending: Sendable {
        var logger: Logger
        /// Each line with the moment its callback fired: what its timestamp says, however late it is written.
        var lines: [(Logger.Level, TraceEvent, WallTime)] = []
    }

    private let pending: Mutex<Pending>


    init(logger: Logger) {
        pending = Mutex(Pending(logger: logger))
    }

    /// Whether lines wait.
    package var isEmpty: Bool { pending.withLock { $0.lines.isEmpty } }

    func append(_ event: TraceEvent, at level: Logger.Level) {
        // The time is read under the lock that orders every record after the lines before it (writeInOrder), so a
        // record written meanwhile, stamped when it is written, is never stamped later than a line that follows it.
        pending.withLock { $0.lines.append((level, event, WallClock.now())) }
    }

    func setLogger(_ logger: Logger) {
        pending.withLock { $0.logger = logger }
    }

    /// Writes every waiting line, in order; safe from any thread.
    package func flush() {
        pending.withLock { pending in Self.write(&pending) }
    }

    /// Writes every waiting line, then runs `body` (a handler writing one record), under one lock: whatever thread
    /// logs, its record comes after the lines recorded before it and before any line recorded after it.
    package func writeInOrder(_ body: () -> Void) {
        pending.withLock { pending in
            Self.write(&pending)
            body()
        }
    }

    private static func write(_ pending: inout Pending) {
        guard !pending.lines.isEmpty else { return }
        let logger = pending.logger
        let lines = pending.lines
        OrderedLogContext.$isWritingLines.withValue(true) {
            for (level, event, time) in lines {
                OrderedLogContext.$eventTime.withValue(time) { Trace.write(event, at: level, to: logger) }
            }
        }
        pending.lines.removeAll(keepingCapacity: true)
    }
}

/// The ordered stream of every lifecycle callback; the ground truth that ordering tests read back.
///
/// Observers are called synchronously, in registration order, as each callback fires. Every event is also a log
/// record (docs/lifecycle.md §7): under the daemon, a journal entry with `LIFECYCLE_*` fields.
@MainActor
public final class Trace {
    /// A handle that keeps an observer registered; call ``cancel()`` to remove it.
    @MainActor
    public final class Observation {
        fileprivate weak var trace: Trace?
        fileprivate let id: Int

        fileprivate init(trace: Trace, id: Int) {
            self.trace = trace
            self.id = id
        }

        /// Stops delivering events to the observer.
        public func cancel() {
            trace?.observers.removeAll { $0.id == id }
            trace?.delegateObservers.removeAll { $0.id == id }
        }
    }

    // Read before every traced callback (isObserved): no dynamic exclusivity checks on these (main actor only, no
    // access held across a call). The one place in LifecycleKit that opts out, as measured (callgrind,
    // lifecycle-bench-profile, docs/benchmarks.md): with the checks, a layout pass costs 31 % more instructions per
    // view and a push + pop 26 % more; the tree types' own opt-outs saved 5 % and were removed.
    @exclusivity(unchecked) private var observers: [(id: Int, body: @MainActor (TraceEvent) -> Void)] = []
    /// Observers of the delegate's events only: they cost nothing per controller.
    @exclusivity(unchecked) private var delegateObservers: [(id: Int, body: @MainActor (TraceEvent) -> Void)] = []
    private var nextObserverID = 0
    @exclusivity(unchecked) private var continuations: [Int: AsyncStream<TraceEvent>.Continuation] = [:]

    /// The number of events recorded so far; the next event gets `sequence + 1`.
    // Incremented for every controller of every event: no dynamic exclusivity check (main actor only, never held
    // across a call).
    @exclusivity(unchecked) public private(set) var sequence = 0

    /// The logger every event is written to: delegate events at info, others at debug (see ``logsEverythingAtInfo``).
    @exclusivity(unchecked) package var logger: Logger {
        didSet { lineBuffer.setLogger(logger) }
    }

    /// When true, controller and view events are logged at info too (`--trace`, `LIFECYCLE_TRACE=all`).
    @exclusivity(unchecked) package var logsEverythingAtInfo = false

    /// When true, log lines wait for ``flush()`` instead of being written before each callback.
    @exclusivity(unchecked) package var defersLogLines = false {
        didSet { if !defersLogLines { flush() } }
    }

    /// Told of every callback just before it runs (the daemon's stall detector).
    @exclusivity(unchecked) @_spi(Internal) public var monitor: (any CallbackMonitor)?

    /// The lines that wait for ``flush()`` (``defersLogLines``); another thread may write them too.
    package let lineBuffer: TraceLineBuffer

    /// Creates a trace writing to `logger`.
    package init(logger: Logger = Logger(label: "lifecycle")) {
        self.logger = logger
        self.lineBuffer = TraceLineBuffer(logger: logger)
    }

    isolated deinit {
        // A stream ends with the trace it reads (its application is gone): `for await` loops finish.
        for continuation in continuations.values { continuation.finish() }
    }

    /// Calls `body` with every event from now on, in order, until the returned observation is cancelled.
    @discardableResult
    public func observe(_ body: @escaping @MainActor (TraceEvent) -> Void) -> Observation {
        nextObserverID += 1
        observers.append((nextObserverID, body))
        return Observation(trace: self, id: nextObserverID)
    }

    /// Calls `body` with every event of the application delegate from now on (the events whose target is
    /// `delegate`, and those of the scene delegates, `scene:<identifier>`), in order, until the returned observation is
    /// cancelled. The tree's events are neither built nor passed for it: an observer of this kind adds a cost per
    /// transition, not per controller.
    @discardableResult
    public func observeDelegateEvents(_ body: @escaping @MainActor (TraceEvent) -> Void) -> Observation {
        nextObserverID += 1
        delegateObservers.append((nextObserverID, body))
        return Observation(trace: self, id: nextObserverID)
    }

    /// Every event from now on, as an asynchronous sequence that ends when the trace (its application) goes.
    public func events() -> AsyncStream<TraceEvent> {
        let (stream, continuation) = AsyncStream<TraceEvent>.makeStream(bufferingPolicy: .unbounded)
        nextObserverID += 1
        let id = nextObserverID
        continuations[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { @MainActor in self?.continuations[id] = nil }
        }
        return stream
    }

    /// Whether recording an event at this level would reach anybody; lets hot paths skip building paths.
    func isObserved(delegateEvent: Bool) -> Bool {
        if !observers.isEmpty || !continuations.isEmpty || (delegateEvent && !delegateObservers.isEmpty) { return true }
        let level: Logger.Level = delegateEvent || logsEverythingAtInfo ? .info : .debug
        return logger.logLevel <= level
    }

    /// Numbers an event that nobody observes (see ``isObserved(delegateEvent:)``), so sequence numbers stay dense.
    /// `monitor` is ``monitor``, read once by the caller for many events.
    @inline(__always)
    func skipUnobservedEvent(_ event: String, controller: ViewController, monitor: (any CallbackMonitor)?) {
        sequence += 1
        if let monitor { tell(monitor, sequence: sequence, event: event, controller: controller) }
    }

    // Out of line: the fan-out's loop stays small enough for each event's callback to be inlined into it.
    @inline(never)
    private func tell(_ monitor: any CallbackMonitor, sequence: Int, event: String, controller: ViewController) {
        monitor.callbackWillStart(
            sequence: sequence,
            event: event,
            target: CallbackTarget(controller, path: nil, scene: runningScene)
        )
    }

    /// Writes the log lines that wait (``defersLogLines``), in order.
    package func flush() {
        lineBuffer.flush()
    }

    /// Whether the events of nodes in scenes carry their scene's identifier, read from their paths (`scene:<id>/…`):
    /// set for an application that uses scenes, whose paths are all in scenes.
    var tracesScenes = false

    /// The persistent identifier of the scene whose step runs now (set by the application around each), or nil. Every
    /// event of the step is the scene's: one whose target is not in the scene (the application delegate's restoration
    /// callbacks for its tree) carries it too, and a monitor is told it with every callback whose path was not built,
    /// so the stall detector names the scene of a callback it knows only by its type.
    @exclusivity(unchecked) var runningScene: String?

    /// Records one callback.
    ///
    /// The target path is only built when somebody will see the event, so an unobserved trace costs a counter (and,
    /// with a ``monitor``, telling it of the node by its identity). A delegate's event names its target itself
    /// (`delegate`, or a scene's `scene:<id>`).
    func record(
        event: String,
        isDelegate: Bool = false,
        target: @autoclosure () -> TraceTarget,
        state: ApplicationState,
        cause: Cause,
        detail: String? = nil,
        scene: String? = nil
    ) {
        sequence += 1
        guard isObserved(delegateEvent: isDelegate) else {
            monitor?.callbackWillStart(
                sequence: sequence,
                event: event,
                target: target().monitored(path: nil, scene: scene ?? runningScene)
            )
            return
        }
        let subject: TraceTarget = target()
        let path = subject.path
        let traced = TraceEvent(
            event: event,
            target: path,
            state: state,
            sequence: sequence,
            cause: cause,
            detail: detail,
            // In an application that uses scenes, a node's path names its scene; an event that fires during one
            // scene's step (the application delegate's restoration callbacks for the scene's tree) is that scene's.
            scene: scene ?? (tracesScenes ? Scene.identifier(inTracePath: path) ?? runningScene : nil)
        )
        monitor?.callbackWillStart(
            sequence: sequence,
            event: event,
            target: subject.monitored(path: path, scene: traced.scene)
        )
        let level: Logger.Level = isDelegate || logsEverythingAtInfo ? .info : .debug
        if logger.logLevel <= level {
            if defersLogLines {
                lineBuffer.append(traced, at: level)
            } else {
                Self.write(traced, at: level, to: logger)
            }
        }
        for observer in observers {
            observer.body(traced)
        }
        if isDelegate {
            for observer in delegateObservers {
                observer.body(traced)
            }
        }
        for continuation in continuations.values {
            continuation.yield(traced)
        }
    }

    nonisolated static func write(_ traced: TraceEvent, at level: Logger.Level, to logger: Logger) {
        var metadata: Logger.Metadata = [
            LogKey.event: .string(traced.event),
            LogKey.target: .string(traced.target),
            LogKey.state: .string(traced.state.rawValue),
            LogKey.sequence: .stringConvertible(traced.sequence),
            LogKey.cause: .string(traced.cause.rawValue),
        ]
        if let detail = traced.detail { metadata[LogKey.detail] = .string(detail) }
        if let scene = traced.scene { metadata[LogKey.scene] = .string(scene) }
        logger.log(level: level, "\(traced.event) \(traced.target)", metadata: metadata)
    }
}
