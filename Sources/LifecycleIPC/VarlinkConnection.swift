//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#if canImport(Glibc)
import Glibc
#endif

/// One accepted connection: its input framing, its output backlog, the call in progress.
final class VarlinkConnection {
    enum CloseReason {
        case peer
        case error
        case malformed
        case oversized
        case idle
        case backlog
        case server
    }

    let fd: Int32
    let peer: PeerCredentials
    var source: (any EventLoopSource)?
    private(set) var isOpen = true
    /// When an idle connection (no call in progress) is closed.
    private(set) var idleDeadline: ContinuousClock.Instant?

    private unowned let server: VarlinkServer
    private var framer: VarlinkFramer
    private var output: [UInt8] = []
    private var outputStart = 0
    private var current: VarlinkRequest?
    private var isProcessing = false
    private var continuationScheduled = false
    private var inputEnded = false
    /// Reply bytes sent during the dispatch in progress (``VarlinkServer/Limits/replyBytesPerDispatch``).
    private var repliedThisDispatch = 0
    /// The last dispatch used up its budget: input is not read until the continuation has run.
    private var overBudget = false

    init(server: VarlinkServer, fd: Int32, peer: PeerCredentials) {
        self.server = server
        self.fd = fd
        self.peer = peer
        self.framer = VarlinkFramer(maximumMessageSize: server.limits.maximumMessageSize)
    }

    /// Reply bytes not yet taken by the peer.
    var pendingOutput: Int { output.count - outputStart }

    /// The largest reply this connection sends.
    var maximumReplySize: Int { server.limits.maximumReplySize }

    func replyWasTooLarge() {
        server.countReplyTooLarge()
    }

    /// Work done for a call of this connection, in reply bytes (``VarlinkRequest/charge(_:)``).
    func charge(_ cost: Int) {
        if isProcessing { repliedThisDispatch += max(0, cost) }
    }

    /// Whether input is read now: not while the calls that wait hold more than a message's worth (up to it, one more
    /// read shows whether a message without its NUL is over the limit), nor while a dispatch that used up its budget
    /// waits for its continuation.
    private var readsInput: Bool {
        !inputEnded && !overBudget && framer.pendingByteCount <= server.limits.maximumMessageSize
    }

    // MARK: Events

    func handleEvents(_ events: IOEvents) {
        guard isOpen else { return }
        if !events.isDisjoint(with: [.writable, .error, .hangup]) { flush() }
        guard isOpen else { return }
        if !events.isDisjoint(with: [.readable, .readHangup, .hangup, .error]), !inputEnded { readInput() }
        guard isOpen else { return }
        if events.contains(.error) || (events.contains(.hangup) && inputEnded) {
            close(reason: .peer)
            return
        }
        if events.contains(.hangup), !readsInput {
            // The peer is gone but what it sent waits unread: epoll reports a hang-up whatever events are asked for,
            // so stop watching until the calls that wait are handled and reading resumes (updateInterest).
            source?.cancel()
            source = nil
        }
        process()
    }

    private func readInput() {
        guard readsInput else { return }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var total = 0
        // Never more than a message's worth unhandled: the rest waits in the kernel's socket buffer, where it is the
        // peer's to account for, and the peer's writes block once that is full.
        while total < server.limits.readBytesPerDispatch, framer.pendingByteCount <= server.limits.maximumMessageSize {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                framer.append(buffer[..<count])
                server.inputBuffered(framer.pendingByteCount)
                total += count
                if count < buffer.count { return }
                continue
            }
            if count == 0 {
                // The peer will send nothing more; what it sent is still answered, then the connection closes.
                inputEnded = true
                updateInterest()
                return
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return
            default:
                close(reason: .error)
                return
            }
        }
    }

    /// Handles the complete calls that wait, one at a time, a bounded number and a bounded reply size per dispatch.
    private func process() {
        // Over budget, only the continuation goes on (after the end of the turn).
        guard isOpen, !isProcessing, !overBudget else { return }
        isProcessing = true
        repliedThisDispatch = 0
        defer {
            isProcessing = false
            updateInterest()
        }
        var handled = 0
        while isOpen, current == nil {
            if handled >= server.limits.callsPerDispatch || repliedThisDispatch >= server.limits.replyBytesPerDispatch {
                // The rest after the end of the turn: reading waits too, or the readable socket would bring this
                // connection back before the loop's end-of-turn work.
                overBudget = true
                scheduleContinuation()
                return
            }
            let message: ArraySlice<UInt8>?
            do {
                message = try framer.next()
            } catch {
                server.debug("control connection from \(peer): \(error); closing")
                close(reason: .oversized)
                return
            }
            guard let message else { break }
            handled += 1
            handle(message)
        }
        guard isOpen else { return }
        // Reading stops past a message's worth: behind a call that may never end, the connection goes then.
        if current != nil, framer.pendingByteCount > server.limits.maximumMessageSize {
            server.debug("control connection from \(peer): more than \(server.limits.maximumMessageSize) bytes ahead of its replies; closing")
            close(reason: .oversized)
            return
        }
        if current == nil {
            if inputEnded {
                closeWhenFlushed()
            } else if idleDeadline == nil {
                // The deadline runs from the end of the last message (or the acceptance), not from the last byte.
                becameIdle()
            }
        }
    }

    private func handle(_ message: ArraySlice<UInt8>) {
        // A complete message, answered or refused: the next one gets a deadline of its own.
        idleDeadline = nil
        let call: VarlinkCall
        do {
            call = try VarlinkCall.decode(message)
        } catch {
            switch error {
            case .malformed(let reason):
                server.debug("control connection from \(peer): \(reason); closing")
                close(reason: .malformed)
            case .invalid(let varlinkError):
                server.replyWithError(varlinkError, to: VarlinkRequest(call: VarlinkCall(method: ""), peer: peer, connection: self))
            }
            return
        }
        current = server.dispatch(call, from: self)
    }

    private func scheduleContinuation() {
        guard !continuationScheduled else { return }
        continuationScheduled = true
        server.later { [weak self] in
            guard let self else { return }
            continuationScheduled = false
            overBudget = false
            process()
        }
    }

    /// A call's final reply was sent: the next waiting call may run, in a later loop iteration (the reply may have
    /// come from deep inside other work).
    func requestFinished(_ request: VarlinkRequest) {
        guard current === request else { return }
        current = nil
        if isProcessing { return }
        scheduleContinuation()
    }

    func becameIdle() {
        let deadline = ContinuousClock.now + server.limits.idleTimeout
        idleDeadline = deadline
        server.scheduleSweep(at: deadline)
    }

    // MARK: Output

    func send(_ message: [UInt8]) {
        guard isOpen else { return }
        if pendingOutput > server.limits.maximumOutputBacklog {
            server.debug("control connection from \(peer): \(pendingOutput) reply bytes unread; closing")
            close(reason: .backlog)
            return
        }
        server.makeRoom(for: message.count, on: self)
        guard isOpen else { return }
        if outputStart > 0, outputStart == output.count {
            output.removeAll(keepingCapacity: true)
            outputStart = 0
        }
        output.append(contentsOf: message)
        server.outputChanged(by: message.count)
        if isProcessing { repliedThisDispatch += message.count }
        flush()
    }

    private func flush() {
        while pendingOutput > 0 {
            let count = output.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + outputStart, pendingOutput, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if count > 0 {
                outputStart += count
                server.outputChanged(by: -count)
                continue
            }
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { break }
            close(reason: .peer)
            return
        }
        if pendingOutput == 0 {
            output.removeAll(keepingCapacity: output.capacity <= 65_536)
            outputStart = 0
        } else if outputStart > 65_536, outputStart * 2 > output.count {
            output.removeFirst(outputStart)
            outputStart = 0
        }
        updateInterest()
        if closeAfterFlush, pendingOutput == 0 { close(reason: .peer) }
    }

    private var closeAfterFlush = false

    private func closeWhenFlushed() {
        closeAfterFlush = true
        if pendingOutput == 0 { close(reason: .peer) }
    }

    private func updateInterest() {
        guard isOpen else { return }
        var events: IOEvents = []
        if readsInput { events.formUnion([.readable, .readHangup]) }
        if pendingOutput > 0 { events.insert(.writable) }
        guard let source else {
            // Not watched since a hang-up with input unread: watch again once there is something to do.
            if !events.isEmpty { watch(events) }
            return
        }
        guard events != watched else { return }
        watched = events
        try? source.setIOEvents(events)
    }

    /// Watches the descriptor for `events` (and hang-ups and errors, which epoll always reports).
    func watch(_ events: IOEvents) {
        do {
            let source = try server.watch(fd: fd, events: events) { [unowned self] events in handleEvents(events) }
            self.source = source
            watched = events
        } catch {
            close(reason: .error)
        }
    }

    /// The events the source waits for now.
    private var watched: IOEvents = [.readable, .readHangup]

    // MARK: Closing

    func close(reason: CloseReason = .server) {
        guard isOpen else { return }
        isOpen = false
        server.count(reason)
        server.outputChanged(by: -pendingOutput)
        output = []
        outputStart = 0
        source?.cancel()
        source = nil
        Glibc.close(fd)
        server.connectionClosed(self)
        let request = current
        current = nil
        request?.disconnected()
    }
}
