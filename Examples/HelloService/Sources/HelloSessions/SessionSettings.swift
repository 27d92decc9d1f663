//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The endpoint's timings and bounds (README.md, "Sessions"; `[Hello] Session…=` in the configuration).
public struct SessionSettings: Sendable, Hashable {
    /// How often the positions of connected sessions are written to the store (default 1 s).
    public var checkpointInterval: Duration = .seconds(1)
    /// A session whose record was not written for this long ends (default 10 minutes); a connected session's record is
    /// written at least every quarter of it.
    public var expiry: Duration = .seconds(600)
    /// The window a planned restart, upgrade or stop spreads its closes over (default 2 s).
    public var closeWindow: Duration = .seconds(2)
    /// How long a close waits for the client's answer before the connection is cut (default 1 s).
    public var closeTimeout: Duration = .seconds(1)
    /// How long a new connection may take to send its hello or resume (default 5 s).
    public var helloTimeout: Duration = .seconds(5)
    /// Sessions known to the process at most, connected or not (default 10,000): a new one past it ends the session
    /// disconnected longest ago; with every one connected, it is refused (4029).
    public var maximumSessions = 10_000
    /// The largest message a client may send, in bytes (default 4 KiB; larger: closed with 1009).
    public var maximumClientMessage = 4096
    /// The largest frame either side may send (hummingbird-websocket's `maxFrameSize`, default 16 KiB).
    public var maximumFrame = 16 * 1024
    /// What a session may hold unacknowledged (256 messages, 64 KiB).
    public var streamLimits = SessionStreamMachine.Limits()
    /// A session's state: keys at most, and bytes of a key and of a value (16, 64, 256).
    public var maximumStateKeys = 16
    public var maximumStateKey = 64
    public var maximumStateValue = 256
    /// The feed's period when the hello names none, and the shortest it may name (250 ms, 20 ms).
    public var defaultPeriod = 250
    public var shortestPeriod = 20

    /// The defaults.
    public init() {}
}
