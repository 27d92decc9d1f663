//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// One call that a handler answers: at once, later, or (with `more`) several times.
///
/// Replies to a connection that has gone are dropped silently; ``isConnected`` tells, and ``onDisconnect`` runs when it
/// goes before the final reply.
public final class VarlinkRequest {
    /// The call.
    public let call: VarlinkCall
    /// Who made it.
    public let peer: PeerCredentials
    /// Whether the final reply (or error) has been sent.
    public private(set) var isFinished = false
    /// Runs once if the peer goes away before the final reply.
    public var onDisconnect: (() -> Void)?

    private weak var connection: VarlinkConnection?

    init(call: VarlinkCall, peer: PeerCredentials, connection: VarlinkConnection) {
        self.call = call
        self.peer = peer
        self.connection = connection
    }

    /// Whether the peer is still there and waits for a reply.
    public var isConnected: Bool { !isFinished && connection?.isOpen == true }

    /// The final reply.
    public func reply(_ parameters: JSONObject = [:]) {
        finish(VarlinkMessage.reply(parameters))
    }

    /// One reply of several (the call was made with `more`); the final one is ``reply(_:)`` or ``fail(_:)``.
    /// Without `more` this is the final reply, as the protocol allows.
    public func send(_ parameters: JSONObject) {
        guard call.more else {
            reply(parameters)
            return
        }
        guard !isFinished, !call.oneway else { return }
        sendContinuing(VarlinkMessage.reply(parameters, continues: true))
    }

    /// One reply of several that other callers get alike: encoded once for all of them.
    public func send(_ shared: SharedReply) {
        guard call.more else {
            reply(shared.parameters)
            return
        }
        guard !isFinished, !call.oneway else { return }
        sendContinuing(shared.message)
    }

    /// The final reply: an error.
    public func fail(_ error: VarlinkError) {
        finish(VarlinkMessage.error(error))
    }

    /// Counts work the handler did against the budget of the dispatch it runs in, in the reply bytes it is worth
    /// (``VarlinkServer/Limits/replyBytesPerDispatch``): a call that walks a large structure for a small reply ends
    /// the dispatch all the same.
    public func charge(_ cost: Int) {
        connection?.charge(cost)
    }

    private func sendContinuing(_ message: [UInt8]) {
        guard let connection else { return }
        guard message.count <= connection.maximumReplySize else {
            // The stream ends with the error: its later replies would only be refused the same way.
            finish(tooLarge(message.count, limit: connection.maximumReplySize))
            return
        }
        connection.send(message)
    }

    private func finish(_ message: [UInt8]) {
        guard !isFinished else { return }
        isFinished = true
        onDisconnect = nil
        guard let connection else { return }
        if !call.oneway {
            let limit = connection.maximumReplySize
            connection.send(message.count <= limit ? message : tooLarge(message.count, limit: limit))
        }
        // A oneway call gets no reply, but its connection waits for it all the same (calls are handled in order).
        connection.requestFinished(self)
    }

    private func tooLarge(_ size: Int, limit: Int) -> [UInt8] {
        connection?.replyWasTooLarge()
        return VarlinkMessage.error(.replyTooLarge(interface: call.interface, size: size, limit: limit))
    }

    /// The connection went away before the final reply.
    func disconnected() {
        guard !isFinished else { return }
        isFinished = true
        let handler = onDisconnect
        onDisconnect = nil
        handler?()
    }
}
