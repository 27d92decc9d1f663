//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// What a store keeps of one session: enough for any process of the service, on any replica, to give its client the
/// session back as it was.
public struct SessionRecord: Codable, Sendable, Hashable {
    /// The session's identifier (the scene's persistent identifier).
    public var id: String
    /// The SHA-256 of its resume token's secret, hex.
    public var secretHash: String
    /// How often its feed sends, in milliseconds.
    public var everyMilliseconds: Int
    /// Its state, as the client set it (`{"op":"set"}`): where the client was.
    public var state: [String: String]
    /// The sequence number of the last message produced.
    public var produced: UInt64
    /// The last sequence number the client acknowledged.
    public var acknowledged: UInt64
    /// The messages produced and not acknowledged, oldest first (`acknowledged + 1 … produced`).
    public var pending: [PendingMessage]
    /// Moves on with each connection of the session: a process writes a record only over one of a lower or equal
    /// generation, so a process that lost the session cannot overwrite what its new owner wrote.
    public var generation: Int
    /// When it was made and last written, in seconds since 1970 (a store expires records not written for a while).
    public var createdAt: Double
    public var writtenAt: Double

    /// A record for a new session.
    public init(id: String, secretHash: String, everyMilliseconds: Int, now: Double) {
        self.id = id
        self.secretHash = secretHash
        self.everyMilliseconds = everyMilliseconds
        self.state = [:]
        self.produced = 0
        self.acknowledged = 0
        self.pending = []
        self.generation = 1
        self.createdAt = now
        self.writtenAt = now
    }
}

/// A message produced and not yet acknowledged: its sequence number and the text frame sent for it.
public struct PendingMessage: Codable, Sendable, Hashable {
    /// Its sequence number.
    public var seq: UInt64
    /// The frame's text.
    public var text: String

    /// A message `seq` whose frame is `text`.
    public init(seq: UInt64, text: String) {
        self.seq = seq
        self.text = text
    }
}
