//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import FoundationEssentials

/// What a client sends, one JSON object per text message (README.md, "Sessions", the protocol).
public enum ClientMessage: Sendable, Hashable {
    /// `{"op":"hello","every_ms":250}`: a new session, whose feed sends every `every_ms` (default 250).
    case hello(everyMilliseconds: Int?)
    /// `{"op":"resume","token":"…","last":41}`: the session of `token`, whose last message received was `last`.
    case resume(token: String, last: UInt64)
    /// `{"op":"ack","seq":41}`: every message up to `seq` was received (cumulative).
    case acknowledge(UInt64)
    /// `{"op":"set","key":"view","value":"chart-3"}`: part of the session's state (where the client is).
    case set(key: String, value: String)
    /// `{"op":"bye"}`: the session ends for good.
    case bye

    /// The message `text` holds, or nil when it is not one (the connection is then closed with 4003).
    public static func parse(_ text: String) -> ClientMessage? {
        guard let frame = try? JSONDecoder().decode(Frame.self, from: Data(text.utf8)) else { return nil }
        switch frame.op {
        case "hello": return .hello(everyMilliseconds: frame.every_ms)
        case "resume":
            guard let token = frame.token, let last = frame.last else { return nil }
            return .resume(token: token, last: last)
        case "ack":
            guard let seq = frame.seq else { return nil }
            return .acknowledge(seq)
        case "set":
            guard let key = frame.key, let value = frame.value else { return nil }
            return .set(key: key, value: value)
        case "bye": return .bye
        default: return nil
        }
    }

    private struct Frame: Decodable {
        var op: String
        var every_ms: Int?
        var token: String?
        var last: UInt64?
        var seq: UInt64?
        var key: String?
        var value: String?
    }
}

/// What the server sends: the welcome, then the session's messages.
public enum ServerMessage {
    /// `{"op":"welcome","session":…,"token":…,"resumed":…,"state":{…},"acknowledged":…,"produced":…}`.
    public static func welcome(token: SessionToken, resumed: Bool, record: SessionRecord) -> String {
        let welcome = Welcome(
            op: "welcome",
            session: token.identifier,
            token: token.text,
            resumed: resumed,
            state: record.state,
            acknowledged: record.acknowledged,
            produced: record.produced,
            every_ms: record.everyMilliseconds
        )
        guard let data = try? JSONEncoder().encode(welcome) else { return "{\"op\":\"welcome\"}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// `{"seq":7,"data":"tick 7"}`: message `seq` of the feed (`data` is plain ASCII, needing no escape).
    public static func message(seq: UInt64, data: String) -> String {
        "{\"seq\":\(seq),\"data\":\"\(data)\"}"
    }

    private struct Welcome: Encodable {
        var op: String
        var session: String
        var token: String
        var resumed: Bool
        var state: [String: String]
        var acknowledged: UInt64
        var produced: UInt64
        var every_ms: Int
    }
}

/// The close codes the endpoint sends, each with the reason it gives (RFC 6455 §7.4; 4000–4999 are the
/// application's).
public enum SessionCloseCode: UInt16, Sendable, CaseIterable {
    /// The process is going away and nothing says it comes back.
    case goingAway = 1001
    /// A message larger than the endpoint takes.
    case tooBig = 1009
    /// The service restarts or is upgraded (or another replica takes over): reconnect, with the token, after a pause.
    case serviceRestart = 1012
    /// The session was ended by the operator (`lifecyclectl scene discard`), or expired.
    case sessionEnded = 4001
    /// The token resumes nothing (unknown, ended, wrong secret): start a new session.
    case unknownSession = 4002
    /// A message that is not the protocol's, or an acknowledgement of a message never sent.
    case protocolViolation = 4003
    /// The client says it has less than it acknowledged: the messages in between are gone, start a new session.
    case positionLost = 4004
    /// Another connection resumed the same session.
    case replaced = 4005
    /// No hello or resume within the first seconds.
    case helloTimeout = 4008
    /// The endpoint holds as many connected sessions as it takes.
    case tooManySessions = 4029

    /// The reason sent with the code.
    public var reason: String {
        switch self {
        case .goingAway: "going away"
        case .tooBig: "message too big"
        case .serviceRestart: "service restart: resume with your token"
        case .sessionEnded: "session ended"
        case .unknownSession: "unknown session"
        case .protocolViolation: "protocol violation"
        case .positionLost: "resume position lost"
        case .replaced: "resumed elsewhere"
        case .helloTimeout: "no hello"
        case .tooManySessions: "too many sessions"
        }
    }
}
