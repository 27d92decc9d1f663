//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//
import LifecyclePrimitives

#if canImport(Glibc)
import Glibc
#endif

/// One accepted connection: its input framing, its output backlog, its descriptor's source on the loop. Which call it
/// serves, whether it reads, its dispatch and budget, and its close are its state machine's
/// (VarlinkConnection+StateMachine.swift); the connection reads, writes and watches the descriptor and performs the
/// machine's actions.
final class VarlinkConnection {
    /// Why a connection was closed (the server counts some).
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

    private var machine: StateMachine<VarlinkRequest>
    private unowned let server: VarlinkServer
    private var framer: VarlinkFramer
    private var output: [UInt8] = []
    private var outputStart = 0
    /// The events the source waits for now.
    private var watched: IOEvents = [.readable, .readHangup]

    init(server: VarlinkServer, fd: Int32, peer: PeerCredentials) {
        self.server = server
        self.fd = fd
        self.peer = peer
        self.framer = VarlinkFramer(maximumMessageSize: server.limits.maximumMessageSize)
        self.machine = StateMachine(limits: server.limits)
    }

    /// Whether the descriptor is open.
    var isOpen: Bool { machine.isOpen }

    /// When an idle connection (no call in progress) is closed.
    var idleDeadline: ContinuousClock.Instant? { machine.idleDeadline }

    /// Reply bytes not yet taken by the peer.
    var pendingOutput: Int { output.count - outputStart }

    /// The largest reply this connection sends.
    var maximumReplySize: Int { server.limits.maximumReplySize }

    func replyWasTooLarge() {
        server.countReplyTooLarge()
    }

    /// Work done for a call of this connection, in reply bytes (``VarlinkRequest/charge(_:)``).
    func charge(_ cost: Int) {
        machine.charge(cost)
    }

    /// Whether input is read now (``StateMachine/readsInput(pendingInput:)``).
    private var readsInput: Bool { machine.readsInput(pendingInput: framer.pendingByteCount) }

    /// The server accepted the connection and watches it: the first message is due within the idle timeout.
    func accepted() {
        server.scheduleSweep(at: machine.accepted(now: .now))
    }

    // MARK: Events

    func handleEvents(_ events: IOEvents) {
        guard isOpen else { return }
        if !events.isDisjoint(with: [.writable, .error, .hangup]) { flush() }
        guard isOpen else { return }
        if !events.isDisjoint(with: [.readable, .readHangup, .hangup, .error]), !machine.inputEnded { readInput() }
        guard isOpen else { return }
        let error = events.contains(.error)
        switch machine.peerEvents(error: error, hangup: events.contains(.hangup), pendingInput: framer.pendingByteCount) {
        case .close:
            close(reason: .peer)
            return
        case .stopWatchingAndDispatch:
            // Watched again once reading resumes (updateInterest).
            source?.cancel()
            source = nil
        case .dispatch:
            break
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
                machine.inputDidEnd()
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
        guard machine.startDispatch() else { return }
        defer { updateInterest() }
        dispatching: while true {
            switch machine.nextCall() {
            case .readMessage:
                let message: ArraySlice<UInt8>?
                do {
                    message = try framer.next()
                } catch {
                    server.debug("control connection from \(peer): \(error); closing")
                    close(reason: .oversized)
                    return
                }
                guard let message else { break dispatching }
                machine.messageReceived()
                handle(message)
            case .stop:
                break dispatching
            case .yield(let scheduleContinuation):
                if scheduleContinuation { self.scheduleContinuation() }
                return
            }
        }
        switch machine.endDispatch(pendingInput: framer.pendingByteCount, now: .now) {
        case .none:
            break
        case .closeOversized:
            server.debug("control connection from \(peer): more than \(server.limits.maximumMessageSize) bytes ahead of its replies; closing")
            close(reason: .oversized)
        case .closeWhenFlushed:
            if pendingOutput == 0 { close(reason: .peer) }
        case .becameIdle(let deadline):
            server.scheduleSweep(at: deadline)
        }
    }

    private func handle(_ message: ArraySlice<UInt8>) {
        let call: VarlinkCall
        do {
            call = try VarlinkCall.decode(message)
        } catch {
            switch error {
            case .malformed(let reason):
                server.debug("control connection from \(peer): \(reason); closing")
                close(reason: .malformed)
            case .invalid(let varlinkError):
                // Answered at once by a request that stands in for the call; it never becomes the connection's.
                server.replyWithError(varlinkError, to: VarlinkRequest(call: VarlinkCall(method: ""), peer: peer, connection: self))
            }
            return
        }
        if let request = server.dispatch(call, from: self) { machine.callStarted(request) }
    }

    private func scheduleContinuation() {
        server.later { [weak self] in
            guard let self else { return }
            machine.continuationRan()
            process()
        }
    }

    /// A call's final reply was sent: the next waiting call may run, in the dispatch running or in a later loop
    /// iteration (the reply may have come from deep inside other work).
    func requestFinished(_ request: VarlinkRequest) {
        switch machine.callFinished(request) {
        case .none: break
        case .scheduleContinuation: scheduleContinuation()
        }
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
        machine.charge(message.count)
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
        if machine.closesWhenFlushed, pendingOutput == 0 { close(reason: .peer) }
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

    // MARK: Closing

    func close(reason: CloseReason = .server) {
        guard case .close(let request) = machine.close() else { return }
        server.count(reason)
        server.outputChanged(by: -pendingOutput)
        output = []
        outputStart = 0
        source?.cancel()
        source = nil
        Glibc.close(fd)
        server.connectionClosed(self)
        request?.disconnected()
    }
}
