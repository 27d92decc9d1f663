//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// One session's stream of messages, as a value: sequence numbers, what the client has not acknowledged, what to send
/// when a connection resumes, and whether the feed may produce more. The hub performs the actions returned.
///
/// Every message gets the next sequence number and stays until the client acknowledges it (acknowledgements are
/// cumulative). At most ``Limits/unacknowledged`` messages and ``Limits/unacknowledgedBytes`` bytes stay: past either,
/// the feed produces nothing for the session until the client acknowledges (the window is full), so a client that never
/// acknowledges holds that much and no more, and nothing is dropped. A connection that resumes with the last sequence
/// number it received gets every message after it, once; a position past what this process knows (the record came
/// from a checkpoint older than what the client received before a SIGKILL) moves the stream on to it, which is right
/// for a feed whose messages are a function of their position (``SessionFeed``).
public struct SessionStreamMachine: Sendable, Hashable {
    /// How much a session may hold unacknowledged.
    public struct Limits: Sendable, Hashable {
        /// Messages at most (default 256).
        public var unacknowledged: Int
        /// Bytes of message text at most (default 64 KiB).
        public var unacknowledgedBytes: Int

        /// The limits; the defaults are the documented bounds.
        public init(unacknowledged: Int = 256, unacknowledgedBytes: Int = 64 * 1024) {
            self.unacknowledged = unacknowledged
            self.unacknowledgedBytes = unacknowledgedBytes
        }
    }

    /// Where the session's connection is.
    public enum Connection: Sendable, Hashable {
        /// No connection: messages wait for a resume.
        case detached
        /// A connection that may not be sent to now (its scene is not active: the application is in the background,
        /// or the scene not yet connected).
        case held
        /// A connection that is sent to.
        case pushing
    }

    /// What a resume does.
    public enum ResumeAction: Sendable, Hashable {
        /// Resumed; the messages after the client's position go out when its scene is active.
        case resumed
        /// The client says it has less than it acknowledged: the messages in between are gone.
        case positionLost
    }

    /// What producing a message does.
    public enum ProduceAction: Sendable, Hashable {
        /// Send it now.
        case send(PendingMessage)
        /// Keep it for later (the connection is held or detached).
        case keep
    }

    /// What an acknowledgement does.
    public enum AcknowledgeAction: Sendable, Hashable {
        /// Messages were released.
        case released(Int)
        /// Nothing new (a repeated or older acknowledgement: harmless).
        case none
        /// An acknowledgement of a message never sent on this connection: a protocol violation.
        case violation
    }

    /// The limits.
    public let limits: Limits
    /// The last sequence number produced.
    public private(set) var produced: UInt64
    /// The last sequence number acknowledged.
    public private(set) var acknowledged: UInt64
    /// The messages not acknowledged, oldest first.
    public private(set) var pending: [PendingMessage]
    /// The last sequence number the current connection has been sent (or had when it resumed).
    public private(set) var sent: UInt64
    /// Where the connection is.
    public private(set) var connection = Connection.detached
    /// Bytes of text in `pending`.
    private var pendingBytes: Int

    /// A stream as `record` left it, with no connection.
    public init(record: SessionRecord, limits: Limits = Limits()) {
        self.limits = limits
        self.produced = record.produced
        self.acknowledged = record.acknowledged
        self.pending = record.pending.filter { $0.seq > record.acknowledged && $0.seq <= record.produced }
        self.pendingBytes = pending.reduce(0) { $0 + $1.text.utf8.count }
        self.sent = record.acknowledged
    }

    /// Whether the feed may produce a message now: a connection is pushed to and the window is not full.
    public var mayProduce: Bool {
        connection == .pushing && !windowIsFull
    }

    /// Whether the unacknowledged messages reached a limit.
    public var windowIsFull: Bool {
        pending.count >= limits.unacknowledged || pendingBytes >= limits.unacknowledgedBytes
    }

    /// A connection resumes, its client having received everything up to `last`; it is held until ``push()``.
    public mutating func resume(last: UInt64) -> ResumeAction {
        guard last >= acknowledged else { return .positionLost }
        if last > produced {
            // A checkpoint older than the client: what it has, it has; the feed goes on after it.
            produced = last
        }
        releaseThrough(last)
        sent = last
        connection = .held
        return .resumed
    }

    /// A new session's first connection; held until ``push()``.
    public mutating func attachFirst() {
        sent = acknowledged
        connection = .held
    }

    /// The connection may be sent to (its scene is active): returns what it has not been sent yet, in order.
    public mutating func push() -> [PendingMessage] {
        guard connection != .detached else { return [] }
        connection = .pushing
        let unsent = pending.filter { $0.seq > sent }
        sent = produced
        return unsent
    }

    /// The connection may not be sent to (its scene left the foreground); it stays open.
    public mutating func hold() {
        guard connection == .pushing else { return }
        connection = .held
    }

    /// The connection is gone; what it was not sent, or did not acknowledge, waits for the next.
    public mutating func detach() {
        connection = .detached
        sent = acknowledged
    }

    /// The feed produced message `produced + 1` with frame `text`. Call only when ``mayProduce`` or to keep a message
    /// for a held or detached connection.
    public mutating func produce(_ text: (UInt64) -> String) -> ProduceAction {
        produced += 1
        let message = PendingMessage(seq: produced, text: text(produced))
        pending.append(message)
        pendingBytes += message.text.utf8.count
        guard connection == .pushing else { return .keep }
        sent = produced
        return .send(message)
    }

    /// The client acknowledged everything up to `seq`.
    public mutating func acknowledge(_ seq: UInt64) -> AcknowledgeAction {
        guard seq <= sent else { return .violation }
        guard seq > acknowledged else { return .none }
        return .released(releaseThrough(seq))
    }

    /// The record of this stream, for a store: `base` with the stream's positions and messages.
    public func record(from base: SessionRecord) -> SessionRecord {
        var record = base
        record.produced = produced
        record.acknowledged = acknowledged
        record.pending = pending
        return record
    }

    @discardableResult
    private mutating func releaseThrough(_ seq: UInt64) -> Int {
        acknowledged = max(acknowledged, seq)
        let released = pending.prefix { $0.seq <= seq }
        guard !released.isEmpty else { return 0 }
        pendingBytes -= released.reduce(0) { $0 + $1.text.utf8.count }
        pending.removeFirst(released.count)
        return released.count
    }
}
