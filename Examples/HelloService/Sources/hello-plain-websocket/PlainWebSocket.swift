//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The baseline scripts/bench sets beside the sessions endpoint: the same protocol (hello, resume, ack, a tick every
// every_ms) served the way a plain Hummingbird application serves a WebSocket (its Application, its own port,
// hummingbird-websocket's router), its sessions in memory. A restart loses them all: a resume is refused with 4002.

import Hummingbird
import HummingbirdWebSocket
import HelloSessions
import NIOWebSocket
import Synchronization
import WSCore

#if canImport(Glibc)
import Glibc
#endif

/// The sessions this process knows: token → last sequence number produced.
final class Sessions: Sendable {
    private let known = Mutex<[String: UInt64]>([:])

    func make() -> (token: SessionToken, produced: UInt64) {
        let token = SessionToken.make()
        known.withLock { $0[token.text] = 0 }
        return (token, 0)
    }

    func resume(_ text: String) -> UInt64? { known.withLock { $0[text] } }

    func produced(_ text: String, _ seq: UInt64) { known.withLock { $0[text] = seq } }
}

@main
struct PlainWebSocket {
    static func main() async throws {
        let port = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 8090
        let sessions = Sessions()
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.get("/") { _, _ in "hello" }
        router.ws("/ws") { inbound, outbound, _ in
            var messages = inbound.messages(maxSize: 4096).makeAsyncIterator()
            guard case .text(let first) = try await messages.next(), let hello = ClientMessage.parse(first) else { return }
            let token: String
            let seq: UInt64
            var every = 250
            switch hello {
            case .hello(let period):
                let made = sessions.make()
                token = made.token.text
                seq = 0
                every = period ?? 250
            case .resume(let text, let last):
                guard sessions.resume(text) != nil else {
                    try await outbound.close(.unknown(4002), reason: "unknown session")
                    return
                }
                token = text
                seq = last
            default:
                return
            }
            let identifier = String(token.prefix { $0 != "." })
            try await outbound.write(
                .text("{\"op\":\"welcome\",\"session\":\"\(identifier)\",\"token\":\"\(token)\",\"resumed\":false,\"state\":{}}")
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { [seq, every] in
                    var seq = seq
                    while true {
                        try await Task.sleep(for: .milliseconds(every))
                        seq += 1
                        sessions.produced(token, seq)
                        try await outbound.write(.text(ServerMessage.message(seq: seq, data: "tick \(seq)")))
                    }
                }
                while try await messages.next() != nil {}
                group.cancelAll()
            }
        }
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(address: .hostname("127.0.0.1", port: port))
        )
        try await app.runService()
    }
}
