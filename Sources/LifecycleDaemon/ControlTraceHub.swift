import LifecycleKit
import LifecycleSystemd

/// What the control socket needs from the trace: the last events kept for `Trace` (a ring of `TraceBacklog=`
/// events), the events of requests in flight for their replies, and the live events for followers.
///
/// It observes the trace only while one of those needs it: with `TraceBacklog=0`, no follower and no request in
/// flight, the trace costs the daemon nothing more than before. Followers get their events in one reply per loop
/// dispatch, once the dispatch's trace lines are written, never from inside a callback.
@MainActor
final class ControlTraceHub {
    /// A `Trace` call made with `more`.
    private final class Follower {
        let request: ControlCall
        /// Events up to this number were sent already.
        var sentThrough: Int

        init(request: ControlCall, sentThrough: Int) {
            self.request = request
            self.sentThrough = sentThrough
        }
    }

    private let trace: Trace
    private var capacity: Int
    /// The kept events, oldest first once rotated at `ringStart`.
    private var ring: [TraceEvent] = []
    private var ringStart = 0
    private var observation: Trace.Observation?
    private var followers: [Follower] = []
    /// Events since the last flush, for the followers.
    private var pending: [TraceEvent] = []
    /// Requests in flight; while any is, events with the `control` cause are collected for their replies.
    private var requestsInFlight = 0
    private var collected: [TraceEvent] = []

    init(trace: Trace, capacity: Int) {
        self.trace = trace
        self.capacity = capacity
        updateObservation()
    }

    /// Keeps this many events from now on (a reload changed `TraceBacklog=`).
    func setCapacity(_ newCapacity: Int) {
        guard newCapacity != capacity else { return }
        let kept = recent(newCapacity)
        capacity = newCapacity
        ring = kept
        ringStart = 0
        updateObservation()
    }

    /// The last `count` kept events, oldest first.
    func recent(_ count: Int) -> [TraceEvent] {
        let ordered = Array(ring[ringStart...] + ring[..<ringStart])
        return Array(ordered.suffix(max(0, count)))
    }

    // MARK: Followers

    /// Sends the last `backlog` kept events, then every event as it happens, until the peer goes or ``stop()``.
    func follow(_ request: ControlCall, backlog: Int) {
        let replay = recent(backlog)
        if !replay.isEmpty { request.send(["events": .array(replay.map(ControlInterface.json))]) }
        let follower = Follower(request: request, sentThrough: trace.sequence)
        followers.append(follower)
        request.onDisconnect = { [weak self, weak follower] in
            MainActor.assumeIsolated {
                guard let self, let follower else { return }
                self.followers.removeAll { $0 === follower }
                self.updateObservation()
            }
        }
        updateObservation()
    }

    /// Sends the followers what happened since the last flush; the daemon calls it when a dispatch ends, after the
    /// trace lines are written.
    func flush() {
        guard !pending.isEmpty else { return }
        let events = pending
        pending.removeAll(keepingCapacity: true)
        for follower in followers where follower.request.isConnected {
            let fresh = events.filter { $0.sequence > follower.sentThrough }
            guard let last = fresh.last else { continue }
            follower.sentThrough = last.sequence
            follower.request.send(["events": .array(fresh.map(ControlInterface.json))])
        }
    }

    /// The trace ends (the daemon stops): every follower gets its last reply.
    func stop() {
        flush()
        let ending = followers
        followers.removeAll()
        for follower in ending { follower.request.reply(["events": []]) }
        observation?.cancel()
        observation = nil
    }

    // MARK: Requests

    /// A request is about to be submitted: collect its events until ``requestFinished(range:)``.
    func requestStarted() {
        requestsInFlight += 1
        updateObservation()
    }

    /// A request finished: the collected events with the `control` cause numbered in `range` (at most
    /// ``ControlInterface/maximumEventsPerReply``), and how many more there were.
    func requestFinished(range: Range<Int>?) -> (events: [TraceEvent], omitted: Int) {
        let limit = ControlInterface.maximumEventsPerReply
        var events: [TraceEvent] = []
        var omitted = 0
        if let range {
            let matching = collected.filter { range.contains($0.sequence) && $0.cause == RequestSource.control.cause }
            events = Array(matching.prefix(limit))
            // Past the collection's bound only the numbers are known: every event in the range is the request's.
            if matching.count >= limit { omitted = max(matching.count, range.count) - limit }
        }
        requestsInFlight -= 1
        if requestsInFlight == 0 { collected.removeAll() }
        updateObservation()
        return (events, omitted)
    }

    // MARK: Observing

    private func updateObservation() {
        let needed = capacity > 0 || !followers.isEmpty || requestsInFlight > 0
        if needed, observation == nil {
            // Weak: a hub whose server never started (or stopped) is released without a word to the trace.
            observation = trace.observe { [weak self] event in self?.record(event) }
        } else if !needed, let observation {
            observation.cancel()
            self.observation = nil
        }
    }

    private func record(_ event: TraceEvent) {
        if capacity > 0 {
            if ring.count < capacity {
                ring.append(event)
            } else {
                ring[ringStart] = event
                ringStart = (ringStart + 1) % capacity
            }
        }
        if !followers.isEmpty { pending.append(event) }
        // Bounded: a request's reply lists at most maximumEventsPerReply events; the count of the rest is kept by
        // sequence numbers alone.
        if requestsInFlight > 0, event.cause == RequestSource.control.cause,
            collected.count < ControlInterface.maximumEventsPerReply * 4
        {
            collected.append(event)
        }
    }
}
