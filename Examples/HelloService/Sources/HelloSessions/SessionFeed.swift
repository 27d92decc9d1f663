//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// What a session is sent: its messages, each a function of its position in the session's stream.
///
/// A message named by its position is what a live dashboard's feed read from a log is (an offset), and it is what lets
/// a session survive a SIGKILL without a loss or a duplicate: the record on disk may be a checkpoint behind what the
/// client received, and the stream then goes on after the client's position with exactly the messages the killed
/// process would have sent (``SessionStreamMachine/resume(last:)``).
public protocol SessionFeed: Sendable {
    /// The `data` of message `seq` of the session `id` in state `state` (plain ASCII: no JSON escape needed).
    func data(session id: String, seq: UInt64, state: [String: String]) -> String
}

/// The example's feed: `tick N`, with the session's `topic` when the client set one.
public struct TickFeed: SessionFeed {
    /// The feed.
    public init() {}

    public func data(session id: String, seq: UInt64, state: [String: String]) -> String {
        guard let topic = state["topic"], topic.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C })
        else { return "tick \(seq)" }
        return "\(topic) tick \(seq)"
    }
}
