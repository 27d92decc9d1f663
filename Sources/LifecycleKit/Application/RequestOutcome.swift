//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// What became of a request submitted with ``Application/submit(_:cause:completion:)``.
public enum RequestOutcome: Hashable, Sendable, CustomStringConvertible {
    /// Its steps have all run. Its events are those numbered in `events` (``TraceEvent/sequence``) that carry its
    /// cause: transitions never nest, so nothing else fires in that range with that cause.
    case performed(events: Range<Int>)
    /// It was folded into an identical request already pending or being delivered (a memory warning, a reload);
    /// reported once that one has run, with the numbers of that one's events.
    case coalesced(events: Range<Int>)
    /// It asked for the state the application was already in when it started: nothing fired.
    case noChange
    /// It could not run; the reason says why (the application has not launched, termination has started, ...).
    case dropped(reason: String)
    /// A reload that ran and was refused — by its configuration, the delegate or a controller, whom the reason names
    /// — so nothing applied it; its events are numbered in `events`.
    case refused(reason: String, events: Range<Int>)

    /// The numbers of the events of the transition that carried the request out, if one ran.
    public var events: Range<Int>? {
        switch self {
        case .performed(let events), .coalesced(let events), .refused(_, let events): events
        case .noChange, .dropped: nil
        }
    }

    public var description: String {
        switch self {
        case .performed(let events): "performed (events #\(events.lowerBound)–#\(events.upperBound - 1))"
        case .coalesced(let events): "coalesced (events #\(events.lowerBound)–#\(events.upperBound - 1))"
        case .noChange: "no change"
        case .dropped(let reason): "dropped: \(reason)"
        case .refused(let reason, _): "refused by \(reason)"
        }
    }

    /// The outcome told to a request that was folded into the one this outcome is about.
    var forCoalescedRequest: RequestOutcome {
        if case .performed(let events) = self { return .coalesced(events: events) }
        return self
    }
}

/// Runs once with the outcome of a submitted request.
public typealias RequestCompletion = @MainActor (RequestOutcome) -> Void

/// Follows the requests the state machine holds, in the machine's own order (arrival order, one at a time), so that
/// each completion runs once its request's steps have run. Requests submitted without a completion are followed too:
/// the mirror of the machine's queue must stay aligned with it.
@MainActor
struct RequestTracker {
    private struct Entry {
        var request: ApplicationStateMachine.Request
        var completion: RequestCompletion?
        /// The trace's sequence number when the request's first step started: its events are numbered after it.
        var sequenceAtStart: Int?
    }

    /// The request whose steps run now.
    private var current: Entry?
    /// The requests queued behind it, in arrival order.
    private var queue: [Entry] = []

    /// The machine took the request as the one to run next (at once, or once the work it was made from is over).
    mutating func started(_ request: ApplicationStateMachine.Request, completion: RequestCompletion?) {
        current = Entry(request: request, completion: completion)
    }

    /// The machine queued the request behind the running transition.
    mutating func queued(_ request: ApplicationStateMachine.Request, completion: RequestCompletion?) {
        queue.append(Entry(request: request, completion: completion))
    }

    /// The machine folded the request into an identical one: the newest one waiting, else the one being delivered.
    mutating func coalesced(_ request: ApplicationStateMachine.Request, completion: RequestCompletion?) {
        guard let completion else { return }
        if let index = queue.lastIndex(where: { $0.request == request }) {
            queue[index].completion = Self.chain(queue[index].completion, completion)
        } else if var running = current, running.request == request {
            running.completion = Self.chain(running.completion, completion)
            current = running
        } else {
            // The machine and this mirror disagree; the request is in the machine anyway, so it is not dropped, but
            // nothing will report on it. Tell the caller now rather than never.
            completion(.noChange)
        }
    }

    /// A step starts: it belongs to the request that runs now, or to the one at the head of the queue.
    mutating func stepWillStart(sequence: Int) {
        if current == nil, !queue.isEmpty { current = queue.removeFirst() }
        if current?.sequenceAtStart == nil { current?.sequenceAtStart = sequence }
    }

    /// The request whose steps ran has none left: returns its completion with its outcome, to be run by the caller;
    /// `refusal` is set for a reload that was refused.
    mutating func finishCurrent(sequence: Int, refusal: String? = nil) -> (RequestCompletion, RequestOutcome)? {
        guard let finished = current else { return nil }
        current = nil
        guard let completion = finished.completion else { return nil }
        let start = finished.sequenceAtStart ?? sequence
        let events = (start + 1)..<(sequence + 1)
        if let refusal { return (completion, .refused(reason: refusal, events: events)) }
        return (completion, .performed(events: events))
    }

    /// The request at the head of the queue turned out to change nothing when its turn came.
    mutating func headChangedNothing() -> RequestCompletion? {
        guard current == nil, !queue.isEmpty else { return nil }
        return queue.removeFirst().completion
    }

    /// A completion that runs `first` with the outcome, then `folded` with what a coalesced request is told.
    static func chain(_ first: RequestCompletion?, _ folded: @escaping RequestCompletion) -> RequestCompletion {
        { outcome in
            first?(outcome)
            folded(outcome.forCoalescedRequest)
        }
    }
}
