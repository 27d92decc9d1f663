//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Testing) import LifecycleKit
@_spi(Testing) import LifecycleSystemd
@_spi(Testing) import LifecycleIPC

/// What the control socket needs from the trace: the application delegate's last events, kept for `Trace` (a ring
/// of `TraceBacklog=` events), the events of requests in flight for their replies, and the live events for
/// followers.
///
/// The backlog observes the delegate's events alone, a cost per transition whatever the size of the tree (keeping
/// every event cost 30 to 60 % more per controller in an application event's fan-out at 1,000,000 controllers, for a
/// ring that then held the last 256 controllers' callbacks of one event). The whole trace is observed only while a
/// follower or a request in flight needs it; with `TraceBacklog=0`, no follower and no request, nothing is.
/// Followers get their events in one reply per loop dispatch, once the dispatch's trace lines are written, never from
/// inside a callback.
@MainActor
final class ControlTraceHub {
    /// A `Trace` call made with `more`.
    private final class Follower {
        let request: any ControlCall
        /// Events up to this number were sent already.
        var sentThrough: Int

        init(request: any ControlCall, sentThrough: Int) {
            self.request = request
            self.sentThrough = sentThrough
        }
    }

    private let trace: Trace
    private var capacity: Int
    /// The kept events, oldest first once rotated at `ringStart`.
    private var ring: [TraceEvent] = []
    private var ringStart = 0
    /// The delegate's events, for the backlog (while `capacity` > 0).
    private var backlogObservation: Trace.Observation?
    /// Every event, while a follower or a request in flight needs them.
    private var liveObservation: Trace.Observation?
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
    func follow(_ request: any ControlCall, backlog: Int) {
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
    ///
    /// The events are encoded once for every follower that gets the same ones (all but one that joined during the
    /// dispatch), in replies of at most ``ControlInterface/maximumEventsPerReply`` events: the cost of a batch does
    /// not grow with the number of followers, and no reply grows with the size of the tree.
    func flush() {
        guard !pending.isEmpty else { return }
        let events = pending
        pending.removeAll(keepingCapacity: true)
        var shared: [Int: [SharedReply]] = [:]
        for follower in followers where follower.request.isConnected {
            // Events are in sequence order: the first one this follower has not had.
            guard let start = events.firstIndex(where: { $0.sequence > follower.sentThrough }) else { continue }
            follower.sentThrough = events[events.count - 1].sequence
            let replies = shared[start] ?? Self.replies(events[start...])
            shared[start] = replies
            for reply in replies {
                follower.request.send(reply)
            }
        }
    }

    private static func replies(_ events: ArraySlice<TraceEvent>) -> [SharedReply] {
        stride(from: events.startIndex, to: events.endIndex, by: ControlInterface.maximumEventsPerReply).map { first in
            let chunk = events[first..<min(first + ControlInterface.maximumEventsPerReply, events.endIndex)]
            return SharedReply(["events": .array(chunk.map(ControlInterface.json))])
        }
    }

    /// The trace ends (the daemon stops): every follower gets its last reply.
    func stop() {
        flush()
        let ending = followers
        followers.removeAll()
        for follower in ending { follower.request.reply(["events": []]) }
        backlogObservation?.cancel()
        backlogObservation = nil
        liveObservation?.cancel()
        liveObservation = nil
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
        // Weak: a hub whose server never started (or stopped) is released without a word to the trace.
        if capacity > 0, backlogObservation == nil {
            backlogObservation = trace.observeDelegateEvents { [weak self] event in self?.keep(event) }
        } else if capacity == 0, let current = backlogObservation {
            current.cancel()
            backlogObservation = nil
        }
        let live = !followers.isEmpty || requestsInFlight > 0
        if live, liveObservation == nil {
            liveObservation = trace.observe { [weak self] event in self?.record(event) }
        } else if !live, let current = liveObservation {
            current.cancel()
            liveObservation = nil
        }
    }

    /// A delegate event, for the backlog.
    private func keep(_ event: TraceEvent) {
        if ring.count < capacity {
            ring.append(event)
        } else {
            ring[ringStart] = event
            ringStart = (ringStart + 1) % capacity
        }
    }

    /// Any event, while a follower or a request in flight needs it.
    private func record(_ event: TraceEvent) {
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
