//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// When a ``QuiesceGate`` passes the quiesce event on and which response heads announce `Connection: close`.
///
/// A value with one mutating function per event; the handler performs the action returned. It counts requests as the
/// frameworks' own handlers do (Hummingbird's `HTTPConnectionStateHandler`, SwiftNIO's `HTTPServerPipelineHandler`
/// under Vapor: a request head read starts one, a response end written ends it), so the gate and the handler after it
/// agree on whether a request is in progress when the event reaches that handler. It knows nothing of HTTP types: the
/// gate tells it what kind of part went by.
package struct QuiesceGateStateMachine: Equatable {
    /// Where the connection is in the server's shutdown.
    package enum State: Equatable {
        /// No quiesce event yet: requests pass untouched.
        case serving
        /// The event arrived with no request in progress; it waits for the next request head or the grace.
        case holding
        /// The event went on to the framework's handler, which closes the connection once no request is in progress.
        case released
    }

    /// What to do with a quiesce event that arrives.
    package enum QuiesceAction: Equatable {
        /// Pass it on now: a request is in progress, and the framework closes after its response.
        case release
        /// Keep it and start the grace timer: nothing is in progress yet. `firstRequest`: nothing was ever read on the
        /// connection (accepted a moment ago, its client's request still on the way), which gets the longer grace.
        case hold(firstRequest: Bool)
        /// Drop it: an earlier event is already held or passed on.
        case ignore
    }

    /// What to do with a request head read from the connection.
    package enum ReadAction: Equatable {
        /// Pass the head on.
        case forward
        /// Pass the head on, then the held quiesce event (and cancel the grace timer).
        case forwardThenRelease
    }

    /// A response part about to be written, as far as the gate cares.
    package enum ResponsePart: Equatable {
        /// A response head; `informational`: an interim (1xx) head that another head follows.
        case head(informational: Bool)
        /// Body bytes.
        case body
        /// The end of a response.
        case end
    }

    /// What to do with a response part written to the connection.
    package enum WriteAction: Equatable {
        /// Write the part as it is.
        case forward
        /// Write the head with `Connection: close`: the connection ends after this response.
        case announceClose
    }

    /// Where the connection is in the server's shutdown.
    package private(set) var state = State.serving
    /// Requests whose head was read and whose response has not ended.
    package private(set) var requestsInProgress = 0
    /// Whether a request head was ever read on the connection.
    package private(set) var hasHadARequest = false

    /// A machine for a connection that has had no request yet.
    package init() {}

    /// The server asked the connection to finish (`ChannelShouldQuiesceEvent`).
    package mutating func quiesce() -> QuiesceAction {
        switch state {
        case .serving where requestsInProgress > 0:
            state = .released
            return .release
        case .serving:
            state = .holding
            return .hold(firstRequest: !hasHadARequest)
        case .holding, .released:
            // A second event for the same shutdown changes nothing: the first already decided.
            return .ignore
        }
    }

    /// A request head was read (other request parts change nothing).
    package mutating func requestHeadRead() -> ReadAction {
        requestsInProgress += 1
        hasHadARequest = true
        guard state == .holding else { return .forward }
        state = .released
        return .forwardThenRelease
    }

    /// The grace for a connection with nothing in progress ran out; returns whether to pass the event on now.
    package mutating func graceExpired() -> Bool {
        // Released by a request head in the meantime: the timer was cancelled too late to matter.
        guard state == .holding else { return false }
        state = .released
        return true
    }

    /// A response part is about to be written.
    package mutating func write(_ part: ResponsePart) -> WriteAction {
        switch part {
        case .head(let informational):
            // Only the final response to the last request read says close; an interim (1xx) head is not the
            // response, and a pipelined earlier response is followed by another on the same connection.
            let last = requestsInProgress <= 1 && !informational
            return state == .released && last ? .announceClose : .forward
        case .body:
            return .forward
        case .end:
            // A framework's 400 after a parse error ends a response no head was read for: do not go below zero.
            requestsInProgress = max(0, requestsInProgress - 1)
            return .forward
        }
    }
}
