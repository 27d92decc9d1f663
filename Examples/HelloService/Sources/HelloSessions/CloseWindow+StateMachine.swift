//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// How the endpoint closes its connections when the process ends: spread evenly over a window, in an order that owes
/// nothing to when they connected, so that their clients do not all come back at the same moment; then, at the
/// deadline, whatever is still open is closed without waiting. A value; the hub performs the actions.
public struct CloseWindowMachine<ID: Hashable & Sendable>: Sendable {
    /// Where the closing is.
    public enum State: Sendable, Hashable {
        /// Nothing closed yet.
        case open
        /// Closes scheduled; `remaining` connections are still open.
        case closing(remaining: Int)
        /// Every connection closed (or was cut at the deadline).
        case closed
    }

    /// One connection to close, `after` the window began.
    public struct ScheduledClose: Sendable, Hashable {
        /// The connection.
        public var id: ID
        /// When, from the beginning of the window.
        public var after: Duration
    }

    /// What a closed connection or the deadline does.
    public enum Action: Sendable, Hashable {
        /// Nothing more to do yet.
        case none
        /// The last connection closed: the endpoint is done.
        case finished
        /// The deadline: cut these connections, which did not answer their close.
        case cut([ID])
    }

    /// The window the closes are spread over.
    public let window: Duration
    /// Where the closing is.
    public private(set) var state = State.open
    private var open: Set<ID> = []

    /// A machine that spreads closes over `window`.
    public init(window: Duration) {
        self.window = window
    }

    /// Begins closing `connections` (in an order of the caller's, shuffled by `generator`): the i-th of n is closed
    /// at i/n of the window, so the first goes at once and the last just before the window ends.
    public mutating func begin<Generator: RandomNumberGenerator>(
        _ connections: [ID],
        using generator: inout Generator
    ) -> [ScheduledClose] {
        guard case .open = state else {
            // A second shutdown of the same endpoint: the first one's schedule stands.
            return []
        }
        open = Set(connections)
        state = open.isEmpty ? .closed : .closing(remaining: open.count)
        let count = connections.count
        return connections.shuffled(using: &generator).enumerated().map { index, id in
            ScheduledClose(id: id, after: (window * index) / max(count, 1))
        }
    }

    /// `id` closed (its client answered, or it went away).
    public mutating func closed(_ id: ID) -> Action {
        guard case .closing = state, open.remove(id) != nil else { return .none }
        if open.isEmpty {
            state = .closed
            return .finished
        }
        state = .closing(remaining: open.count)
        return .none
    }

    /// The deadline (the window and the close handshake's timeout) has passed.
    public mutating func deadlinePassed() -> Action {
        guard case .closing = state else { return .none }
        let left = Array(open)
        open = []
        state = .closed
        return .cut(left)
    }
}
