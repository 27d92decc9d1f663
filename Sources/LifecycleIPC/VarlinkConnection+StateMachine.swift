//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

extension VarlinkConnection {
    /// A connection's state as a value: whether it reads, the call a handler owns, the dispatch running and what it
    /// spent of its budget, the work put off to a later loop iteration, the close that waits for the replies to go
    /// out. ``VarlinkConnection`` hands it each event and performs the action it returns; the machine does no I/O and
    /// reads no clock (the events that arm the idle deadline carry `now`), so `VarlinkConnectionStateMachineTests`
    /// drive it as a plain value, with any class standing in for the request.
    ///
    /// Calls are handled one at a time, in order: a dispatch reads the complete messages waiting, hands each to the
    /// server, and stops at a call a handler keeps (a reply later, or a stream of `more` replies), at its budget, or
    /// when no complete message waits. The call's final reply lets the next one run, in the dispatch still running or
    /// in a continuation.
    ///
    /// Wrong events: one the connection cannot send in a state (a message read outside a dispatch, input after its
    /// end) stops the process with the state named; a reply to a call that is no longer the connection's (it closed,
    /// or it was a refused call's error reply) changes nothing.
    struct StateMachine<Request: AnyObject>: CustomStringConvertible {
        /// Where the connection is.
        enum State {
            /// Reading calls and answering them, one at a time.
            case open(Open)
            /// The peer will send nothing more and every call of it is answered: the connection closes once its
            /// replies are out (or at its idle deadline, if it had one).
            case draining(idleDeadline: ContinuousClock.Instant?)
            /// Closed: nothing more happens on it.
            case closed
        }

        /// An open connection.
        struct Open {
            /// The call in progress, or the wait for the next one.
            var call: Call
            /// The peer shut down its side: what it sent is answered, then the connection closes.
            var inputEnded = false
            /// The dispatch running now, with what it spent; nil between dispatches.
            var dispatch: Dispatch?
            /// Work put off to a later loop iteration.
            var continuation = Continuation.none
        }

        /// The call a connection serves.
        enum Call {
            /// No call in progress: the next message is due by the deadline (nil until the dispatch that handled the
            /// last one ends, and while the input that came is not complete yet).
            case awaiting(deadline: ContinuousClock.Instant?)
            /// A handler owns the call; the next waits for its final reply.
            case inProgress(Request)
        }

        /// What one dispatch spent.
        struct Dispatch: Equatable {
            /// Messages handled.
            var handled = 0
            /// Reply bytes sent, and work charged in reply bytes.
            var replied = 0
        }

        /// Work put off to a later loop iteration.
        enum Continuation: Equatable {
            /// None.
            case none
            /// The rest of the calls run in a later iteration; `overBudget` says the last dispatch used up its budget,
            /// so input is not read until then either.
            case scheduled(overBudget: Bool)
        }

        /// What the connection does next in a dispatch.
        enum NextCall: Equatable {
            /// Take the next complete message, if one waits, and hand it to ``messageReceived()``.
            case readMessage
            /// The dispatch ends (a call is in progress, or the connection closed): tell
            /// ``endDispatch(pendingInput:now:)``.
            case stop
            /// The dispatch used up its budget and ends now; the rest runs in a continuation, which is to be scheduled
            /// unless it is already.
            case yield(scheduleContinuation: Bool)
        }

        /// What the connection does when a dispatch ends.
        enum DispatchEnd: Equatable {
            /// Nothing.
            case none
            /// Close it: more than a message's worth of input waits behind a call that may never end.
            case closeOversized
            /// The peer's input ended and every call is answered: close it once the replies are out (now, if none
            /// waits).
            case closeWhenFlushed
            /// It became idle: arm the idle sweep for this deadline.
            case becameIdle(ContinuousClock.Instant)
        }

        /// What the connection does after a call's final reply.
        enum CallFinished: Equatable {
            /// Nothing: the dispatch running takes the next call, or one is scheduled already, or the call was not
            /// the connection's.
            case none
            /// Schedule the continuation that takes the next call: the reply may have come from deep inside other
            /// work.
            case scheduleContinuation
        }

        /// What the connection does about the events of its descriptor, once it has flushed and read.
        enum PeerEvents: Equatable {
            /// Carry on: handle what was read.
            case dispatch
            /// Close it: an error, or a hang-up after the input ended.
            case close
            /// The peer hung up while what it sent waits unread: stop watching (epoll reports a hang-up whatever
            /// events are asked for) until the calls that wait are handled and reading resumes; then handle them.
            case stopWatchingAndDispatch
        }

        /// What closing does.
        enum Close {
            /// Nothing: it is closed already.
            case none
            /// Close the descriptor and tell the call in progress, if any, that its peer is gone.
            case close(disconnecting: Request?)
        }

        private var state: State = .open(Open(call: .awaiting(deadline: nil)))
        /// The bounds of the server.
        let limits: VarlinkServer.Limits

        /// A connection just accepted.
        init(limits: VarlinkServer.Limits) {
            self.limits = limits
        }

        // MARK: What the connection shows

        /// The state's name, for preconditions and tests.
        var description: String {
            switch state {
            case .open(let open):
                var words = ["open"]
                switch open.call {
                case .awaiting(nil): words.append("awaiting a call")
                case .awaiting: words.append("idle")
                case .inProgress: words.append("a call in progress")
                }
                if open.inputEnded { words.append("input ended") }
                if open.dispatch != nil { words.append("dispatching") }
                switch open.continuation {
                case .none: break
                case .scheduled(overBudget: false): words.append("continuation scheduled")
                case .scheduled(overBudget: true): words.append("over budget")
                }
                return words.joined(separator: ", ")
            case .draining: return "draining"
            case .closed: return "closed"
            }
        }

        /// Whether the descriptor is open.
        var isOpen: Bool {
            if case .closed = state { return false }
            return true
        }

        /// Whether the peer's input ended (or the connection is closed): nothing more is read.
        var inputEnded: Bool {
            switch state {
            case .open(let open): open.inputEnded
            case .draining, .closed: true
            }
        }

        /// When the connection is closed for idleness: while no call is in progress, once armed.
        var idleDeadline: ContinuousClock.Instant? {
            switch state {
            case .open(let open):
                if case .awaiting(let deadline) = open.call { return deadline }
                return nil
            case .draining(let deadline): return deadline
            case .closed: return nil
            }
        }

        /// Whether a connection that closes once its replies are out waits for them.
        var closesWhenFlushed: Bool {
            if case .draining = state { return true }
            return false
        }

        /// Whether a dispatch is running.
        var isDispatching: Bool {
            if case .open(let open) = state { return open.dispatch != nil }
            return false
        }

        /// Whether input is read now, with `pendingInput` bytes read and not handled: not while the calls that wait
        /// hold more than a message's worth (up to it, one more read shows whether a message without its NUL is over
        /// the limit), nor while a dispatch that used up its budget waits for its continuation, nor after the input
        /// ended.
        func readsInput(pendingInput: Int) -> Bool {
            guard case .open(let open) = state, !open.inputEnded else { return false }
            return open.continuation != .scheduled(overBudget: true) && pendingInput <= limits.maximumMessageSize
        }

        /// What the descriptor's error or hang-up means, once the connection flushed and read.
        func peerEvents(error: Bool, hangup: Bool, pendingInput: Int) -> PeerEvents {
            if error || (hangup && inputEnded) { return .close }
            if hangup, !readsInput(pendingInput: pendingInput) { return .stopWatchingAndDispatch }
            return .dispatch
        }

        // MARK: Events

        /// The server accepted the connection: the first message is due within the idle timeout.
        mutating func accepted(now: ContinuousClock.Instant) -> ContinuousClock.Instant {
            guard case .open(var open) = state, case .awaiting(nil) = open.call, open.dispatch == nil,
                open.continuation == .none, !open.inputEnded
            else { preconditionFailure("a varlink connection accepted while \(self)") }
            let deadline = now + limits.idleTimeout
            open.call = .awaiting(deadline: deadline)
            state = .open(open)
            return deadline
        }

        /// A read found the end of the peer's input.
        mutating func inputDidEnd() {
            guard case .open(var open) = state, !open.inputEnded else {
                preconditionFailure("a varlink connection read the end of its input while \(self)")
            }
            open.inputEnded = true
            state = .open(open)
        }

        /// The connection starts a dispatch of the calls that wait; false when it must not now (one runs already, the
        /// last used up its budget and its continuation has not run, the connection is draining or closed).
        mutating func startDispatch() -> Bool {
            guard case .open(var open) = state, open.dispatch == nil, open.continuation != .scheduled(overBudget: true)
            else { return false }
            open.dispatch = Dispatch()
            state = .open(open)
            return true
        }

        /// What the running dispatch does next.
        mutating func nextCall() -> NextCall {
            guard case .open(var open) = state, case .awaiting = open.call else { return .stop }
            guard let dispatch = open.dispatch else {
                preconditionFailure("a varlink connection asks for its next call while \(self)")
            }
            guard dispatch.handled < limits.callsPerDispatch, dispatch.replied < limits.replyBytesPerDispatch else {
                // The rest after the end of the turn: reading waits too, or the readable socket would bring this
                // connection back before the loop's end-of-turn work.
                let schedule = open.continuation == .none
                open.continuation = .scheduled(overBudget: true)
                open.dispatch = nil
                state = .open(open)
                return .yield(scheduleContinuation: schedule)
            }
            return .readMessage
        }

        /// The dispatch took a complete message, which is answered or refused now: the next one has a deadline of its
        /// own, armed when the dispatch ends.
        mutating func messageReceived() {
            guard case .open(var open) = state, case .awaiting = open.call, var dispatch = open.dispatch else {
                preconditionFailure("a varlink connection received a message while \(self)")
            }
            dispatch.handled += 1
            open.dispatch = dispatch
            open.call = .awaiting(deadline: nil)
            state = .open(open)
        }

        /// A handler keeps the call it was given: the next waits for its final reply.
        mutating func callStarted(_ request: Request) {
            switch state {
            case .open(var open):
                guard case .awaiting = open.call, open.dispatch != nil else {
                    preconditionFailure("a varlink connection started a call while \(self)")
                }
                open.call = .inProgress(request)
                state = .open(open)
            case .draining, .closed:
                // The handler's own replies closed the connection (its peer read too little); the request sees it
                // in isConnected.
                break
            }
        }

        /// A call's final reply was sent.
        mutating func callFinished(_ request: Request) -> CallFinished {
            guard case .open(var open) = state, case .inProgress(let current) = open.call, current === request else {
                return .none
            }
            open.call = .awaiting(deadline: nil)
            defer { state = .open(open) }
            guard open.dispatch == nil, open.continuation == .none else { return .none }
            open.continuation = .scheduled(overBudget: false)
            return .scheduleContinuation
        }

        /// The continuation ran: the budget is new, and input is read again; the connection dispatches next.
        mutating func continuationRan() {
            // A draining or closed connection has nothing left to continue.
            guard case .open(var open) = state else { return }
            open.continuation = .none
            state = .open(open)
        }

        /// The dispatch ends, with `pendingInput` bytes read and not handled.
        mutating func endDispatch(pendingInput: Int, now: ContinuousClock.Instant) -> DispatchEnd {
            // Closed during the dispatch: nothing is left to end.
            guard case .open(var open) = state else { return .none }
            guard open.dispatch != nil else {
                preconditionFailure("a varlink connection ends a dispatch while \(self)")
            }
            open.dispatch = nil
            switch open.call {
            case .inProgress:
                state = .open(open)
                // Reading stops past a message's worth: behind a call that may never end, the connection goes then.
                return pendingInput > limits.maximumMessageSize ? .closeOversized : .none
            case .awaiting(let deadline?):
                state = open.inputEnded ? .draining(idleDeadline: deadline) : .open(open)
                return open.inputEnded ? .closeWhenFlushed : .none
            case .awaiting(nil):
                if open.inputEnded {
                    state = .draining(idleDeadline: nil)
                    return .closeWhenFlushed
                }
                // The deadline runs from the end of the last message (or the acceptance), not from the last byte.
                let deadline = now + limits.idleTimeout
                open.call = .awaiting(deadline: deadline)
                state = .open(open)
                return .becameIdle(deadline)
            }
        }

        /// Reply bytes sent, or work done for a call in reply bytes: they count against the budget of the dispatch
        /// running, if any (a stream's later replies run outside any).
        mutating func charge(_ cost: Int) {
            guard case .open(var open) = state, var dispatch = open.dispatch else { return }
            dispatch.replied += max(0, cost)
            open.dispatch = dispatch
            state = .open(open)
        }

        /// The connection closes, for whatever reason.
        mutating func close() -> Close {
            switch state {
            case .closed:
                return .none
            case .draining:
                state = .closed
                return .close(disconnecting: nil)
            case .open(let open):
                state = .closed
                guard case .inProgress(let request) = open.call else { return .close(disconnecting: nil) }
                return .close(disconnecting: request)
            }
        }
    }
}
