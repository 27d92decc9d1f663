import Logging

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

    /// Creates an event.
    public init(
        event: String,
        target: String,
        state: ApplicationState,
        sequence: Int,
        cause: Cause,
        detail: String? = nil
    ) {
        self.event = event
        self.target = target
        self.state = state
        self.sequence = sequence
        self.cause = cause
        self.detail = detail
    }

    public var description: String {
        var line = "#\(sequence) \(target) \(event)"
        if let detail { line += "(\(detail))" }
        line += " [\(state), \(cause)]"
        return line
    }
}

/// The ordered stream of every lifecycle callback; the ground truth that ordering tests read back.
///
/// Observers are called synchronously, in registration order, as each callback fires.
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
        }
    }

    // Read before every traced callback (isObserved): no dynamic exclusivity checks on these (main actor only, no
    // access held across a call).
    @exclusivity(unchecked) private var observers: [(id: Int, body: @MainActor (TraceEvent) -> Void)] = []
    private var nextObserverID = 0
    @exclusivity(unchecked) private var continuations: [Int: AsyncStream<TraceEvent>.Continuation] = [:]

    /// The number of events recorded so far; the next event gets `sequence + 1`.
    // Incremented for every controller of every event: no dynamic exclusivity check (main actor only, never held
    // across a call).
    @exclusivity(unchecked) public private(set) var sequence = 0

    /// The logger every event is written to: delegate events at info, others at debug (see ``logsEverythingAtInfo``).
    @exclusivity(unchecked) public var logger: Logger

    /// When true, controller and view events are logged at info too (`--trace`, `LIFECYCLE_TRACE=all`).
    @exclusivity(unchecked) public var logsEverythingAtInfo = false

    /// Creates a trace writing to `logger`.
    public init(logger: Logger = Logger(label: "lifecycle")) {
        self.logger = logger
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
        if !observers.isEmpty || !continuations.isEmpty { return true }
        let level: Logger.Level = delegateEvent || logsEverythingAtInfo ? .info : .debug
        return logger.logLevel <= level
    }

    /// Numbers an event that nobody observes (see ``isObserved(delegateEvent:)``), so sequence numbers stay dense.
    func skipUnobservedEvent() {
        sequence += 1
    }

    /// Records one callback.
    ///
    /// The target path is only built when somebody will see the event, so an unobserved trace costs a counter.
    func record(
        event: String,
        isDelegate: Bool = false,
        target: @autoclosure () -> String,
        state: ApplicationState,
        cause: Cause,
        detail: String? = nil
    ) {
        sequence += 1
        guard isObserved(delegateEvent: isDelegate) else { return }
        let isDelegateEvent = isDelegate
        let traced = TraceEvent(
            event: event,
            target: isDelegate ? "delegate" : target(),
            state: state,
            sequence: sequence,
            cause: cause,
            detail: detail
        )
        let level: Logger.Level = isDelegateEvent || logsEverythingAtInfo ? .info : .debug
        if logger.logLevel <= level {
            var metadata: Logger.Metadata = [
                "lifecycle.event": .string(traced.event),
                "lifecycle.target": .string(traced.target),
                "lifecycle.state": .string(traced.state.rawValue),
                "lifecycle.seq": .stringConvertible(traced.sequence),
                "lifecycle.cause": .string(traced.cause.rawValue),
            ]
            if let detail { metadata["lifecycle.detail"] = .string(detail) }
            logger.log(level: level, "\(traced.event) \(traced.target)", metadata: metadata)
        }
        for observer in observers {
            observer.body(traced)
        }
        for continuation in continuations.values {
            continuation.yield(traced)
        }
    }
}
