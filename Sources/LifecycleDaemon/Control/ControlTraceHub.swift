//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd

/// What the control socket needs from the trace: the application delegate's last events, kept for `Trace` (a ring
/// of `TraceBacklog=` events), the events of requests in flight for their replies, and the live events for
/// followers.
///
/// The backlog observes the delegate's events alone, a cost per transition whatever the size of the tree (keeping
/// every event cost 30 to 60 % more per controller in an application event's fan-out at 1,000,000 controllers, for a
/// ring that then held the last 256 controllers' callbacks of one event). The whole trace is observed only while a
/// follower or a request in flight needs it; with `TraceBacklog=0`, no follower and no request, nothing is.
/// Followers get their events in one reply per loop dispatch, once the dispatch's trace lines are written, never from
/// inside a callback; with them, in their places, the records the daemon's log handlers wrote meanwhile (from any
/// thread), so a follower reads the log in the order things happened, as the journal has it.
@MainActor
final class ControlTraceHub {
    /// A `Trace` call made with `more`.
    private final class Follower {
        let request: any ControlCall
        /// Entries up to this number were sent already (or came before the call).
        var sentThrough: Int

        init(request: any ControlCall, sentThrough: Int) {
            self.request = request
            self.sentThrough = sentThrough
        }
    }

    /// What followers get next, in the order it happened: trace events (observed on the main thread) and the records
    /// the log handlers write (on the thread that logs), each numbered.
    final class Entries: Sendable {
        enum Entry: Sendable {
            case event(TraceEvent)
            /// A record, after the event numbered `after`.
            case record(WrittenRecord, after: Int)
        }

        private struct State: Sendable {
            var entries: [(number: Int, entry: Entry)] = []
            var lastNumber = 0
            var lastSequence = 0
        }

        private let state = ConditionLock(State())

        /// The number the next entry will have minus one, and the sequence of the last event.
        var last: (number: Int, sequence: Int) { state.withLock { ($0.lastNumber, $0.lastSequence) } }

        func append(_ event: TraceEvent) {
            state.withLock { state in
                state.lastNumber += 1
                state.lastSequence = event.sequence
                state.entries.append((state.lastNumber, .event(event)))
            }
        }

        func append(_ record: WrittenRecord) {
            state.withLock { state in
                state.lastNumber += 1
                state.entries.append((state.lastNumber, .record(record, after: state.lastSequence)))
            }
        }

        /// The trace's sequence when the entries start to be kept.
        func start(at sequence: Int) {
            state.withLock { $0.lastSequence = sequence }
        }

        func take() -> [(number: Int, entry: Entry)] {
            state.withLock { state in
                defer { state.entries.removeAll(keepingCapacity: true) }
                return state.entries
            }
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
    /// Events and records since the last flush, for the followers.
    private let pending = Entries()
    /// Whether the log handlers hand their records to `pending`.
    private var tapsRecords = false
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
        if followers.isEmpty { pending.start(at: trace.sequence) }
        let follower = Follower(request: request, sentThrough: pending.last.number)
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
    /// The entries are encoded once for every follower that gets the same ones (all but one that joined during the
    /// dispatch), in replies of at most ``ControlInterface/maximumEventsPerReply`` entries (events and records): the
    /// cost of a batch does not grow with the number of followers, and no reply grows with the size of the tree.
    func flush() {
        let entries = pending.take()
        guard let newest = entries.last?.number else { return }
        var shared: [Int: [SharedReply]] = [:]
        for follower in followers where follower.request.isConnected {
            // Entries are in number order: the first one this follower has not had.
            let start = entries.firstIndex { $0.number > follower.sentThrough }
            follower.sentThrough = newest
            guard let start else { continue }
            let replies = shared[start] ?? Self.replies(entries[start...])
            shared[start] = replies
            for reply in replies {
                follower.request.send(reply)
            }
        }
    }

    private static func replies(_ entries: ArraySlice<(number: Int, entry: Entries.Entry)>) -> [SharedReply] {
        let limit = ControlInterface.maximumEventsPerReply
        return stride(from: entries.startIndex, to: entries.endIndex, by: limit).map { first in
            var events: [JSONValue] = []
            var records: [JSONValue] = []
            for (_, entry) in entries[first..<min(first + limit, entries.endIndex)] {
                switch entry {
                case .event(let event): events.append(ControlInterface.json(event))
                case .record(let record, let after): records.append(ControlInterface.json(record, after: after))
                }
            }
            var reply: JSONObject = ["events": .array(events)]
            if !records.isEmpty { reply["records"] = .array(records) }
            return SharedReply(reply)
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
        if tapsRecords {
            tapsRecords = false
            LoggingBackend.recordTap = nil
        }
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
        let following = !followers.isEmpty
        if following != tapsRecords {
            tapsRecords = following
            if following {
                let pending = self.pending
                LoggingBackend.recordTap = { record in pending.append(record) }
            } else {
                LoggingBackend.recordTap = nil
            }
        }
        let live = following || requestsInFlight > 0
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
