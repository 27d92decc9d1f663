//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CLifecycleIPC
@_spi(Testing) import LifecycleKit
public import Logging
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A varlink service on the main loop: it accepts connections on a listening AF_UNIX socket, checks each peer's
/// credentials before it reads anything, frames and decodes calls, checks them against the methods' declarations and
/// hands them to their handlers, which reply at once or later.
///
/// Nothing it does blocks the loop: every descriptor is non-blocking, each dispatch accepts, reads and handles a
/// bounded amount (then yields to the other sources, which its lower priority lets go first), and every limit in
/// ``Limits`` ends in an error reply or a closed connection. Like its ``EventLoop`` it lives on the loop's thread.
///
/// It serves `org.varlink.service` (`GetInfo`, `GetInterfaceDescription`) itself, from the interfaces added with
/// ``add(_:)``.
@_spi(Testing) public final class VarlinkServer {
    /// What the service says about itself in `org.varlink.service.GetInfo`.
    @_spi(Testing) public struct Info: Hashable, Sendable {
        @_spi(Testing) public var vendor: String
        @_spi(Testing) public var product: String
        @_spi(Testing) public var version: String
        @_spi(Testing) public var url: String

        @_spi(Testing) public init(vendor: String, product: String, version: String, url: String) {
            self.vendor = vendor
            self.product = product
            self.version = version
            self.url = url
        }
    }

    /// How much any peer may take; each bound ends in an error reply or a closed connection, never a wait.
    @_spi(Testing) public struct Limits: Hashable, Sendable {
        /// The largest message (its NUL not counted); input beyond it without a NUL closes the connection, and so does
        /// more unanswered input than this waiting behind a call in progress.
        @_spi(Testing) public var maximumMessageSize = 65_536
        /// Connections open at once; one more is closed as soon as it is accepted.
        @_spi(Testing) public var maximumConnections = 128
        /// A connection with no call in progress is closed once this long has passed since it was accepted or since
        /// its last complete message, whichever is later (idle clients and slow senders alike).
        @_spi(Testing) public var idleTimeout = Duration.seconds(10)
        /// The most reply bytes a peer may leave unread when a new reply is due (a trace follower that stopped
        /// reading): beyond it the connection is closed. A single reply may be larger.
        @_spi(Testing) public var maximumOutputBacklog = 1 << 20
        /// Connections accepted per dispatch of the listening socket.
        @_spi(Testing) public var acceptsPerDispatch = 16
        /// Calls handled per dispatch of one connection; the rest wait for the next loop iteration.
        @_spi(Testing) public var callsPerDispatch = 32
        /// Bytes read per dispatch of one connection.
        @_spi(Testing) public var readBytesPerDispatch = 65_536

        @_spi(Testing) public init() {}
    }

    /// Counters of what the server did, for status reports and tests.
    @_spi(Testing) public struct Statistics: Hashable, Sendable {
        /// Connections accepted from authorized peers.
        @_spi(Testing) public var accepted = 0
        /// Connections refused for their peer's credentials.
        @_spi(Testing) public var refused = 0
        /// Connections closed at once because ``Limits/maximumConnections`` were open.
        @_spi(Testing) public var overLimit = 0
        /// Calls handed to a handler (including `org.varlink.service`).
        @_spi(Testing) public var calls = 0
        /// Error replies the server itself sent (unknown interface or method, invalid parameters, expected more).
        @_spi(Testing) public var errorReplies = 0
        /// Connections closed for input that is not a JSON object or breaks the framing.
        @_spi(Testing) public var closedMalformed = 0
        /// Connections closed for a message (or unread input) over the size limit.
        @_spi(Testing) public var closedOversized = 0
        /// Connections closed by the idle timeout.
        @_spi(Testing) public var closedIdle = 0
        /// Connections closed because their peer fell too far behind reading.
        @_spi(Testing) public var closedBacklog = 0

        @_spi(Testing) public init() {}
    }

    /// A method: its declaration and the handler its valid calls go to.
    @_spi(Testing) public struct Method {
        @_spi(Testing) public var declaration: VarlinkMethodDeclaration
        @_spi(Testing) public var handler: (VarlinkRequest) -> Void

        @_spi(Testing) public init(_ declaration: VarlinkMethodDeclaration, handler: @escaping (VarlinkRequest) -> Void) {
            self.declaration = declaration
            self.handler = handler
        }
    }

    /// An interface: its name, its definition (the text `GetInterfaceDescription` returns) and its methods.
    @_spi(Testing) public struct Interface {
        @_spi(Testing) public var name: String
        @_spi(Testing) public var description: String
        @_spi(Testing) public var methods: [Method]

        @_spi(Testing) public init(name: String, description: String, methods: [Method]) {
            self.name = name
            self.description = description
            self.methods = methods
        }
    }

    /// The service's self-description.
    @_spi(Testing) public let info: Info
    /// The limits in force.
    @_spi(Testing) public let limits: Limits
    /// What happened so far.
    @_spi(Testing) public private(set) var statistics = Statistics()
    /// Decides, from a peer's credentials, whether it may talk to the service at all; checked right after `accept`.
    /// A refused peer gets `org.varlink.service.PermissionDenied` and the connection is closed unread.
    @_spi(Testing) public var authorize: (PeerCredentials) -> Bool = { _ in true }
    /// The priority of the server's sources on the loop: above 0, so signals, timers and the watchdog go first
    /// when both are ready.
    @_spi(Testing) public var priority: Int64 = 10

    private let loop: any EventLoop
    private let listeningDescriptor: Int32
    private var logger: Logger
    private var listener: (any EventLoopSource)?
    private var interfaces: [String: Interface] = [:]
    private var interfaceOrder: [String] = []
    private var connections: [ObjectIdentifier: VarlinkConnection] = [:]
    private var sweep: (any EventLoopSource)?
    private var sweepDeadline: ContinuousClock.Instant?
    private var noticeLimiter = RateLimiter(minimumInterval: .seconds(10))
    private var debugLimiter = RateLimiter(minimumInterval: .seconds(1))
    private let clockOrigin = ContinuousClock.now

    /// A server on a listening socket (bound, listening, non-blocking); the server owns it from now on and closes it
    /// in ``stop()``.
    @_spi(Testing) public init(loop: any EventLoop, listeningDescriptor: Int32, info: Info, limits: Limits = Limits(), logger: Logger) {
        self.loop = loop
        self.listeningDescriptor = listeningDescriptor
        self.info = info
        self.limits = limits
        self.logger = logger
    }

    /// Serves an interface; add every interface before ``start()``.
    @_spi(Testing) public func add(_ interface: Interface) {
        precondition(interface.name != Varlink.serviceInterface, "org.varlink.service is served by the server itself")
        if interfaces[interface.name] == nil { interfaceOrder.append(interface.name) }
        interfaces[interface.name] = interface
    }

    /// The interfaces served, `org.varlink.service` first.
    @_spi(Testing) public var interfaceNames: [String] { [Varlink.serviceInterface] + interfaceOrder }

    /// How many connections are open.
    @_spi(Testing) public var connectionCount: Int { connections.count }

    /// Starts accepting connections.
    @_spi(Testing) public func start() throws(SystemCallError) {
        guard listener == nil else { return }
        // A descriptor handed over by systemd may be blocking; accept must never wait.
        let flags = fcntl(listeningDescriptor, F_GETFL)
        if flags >= 0, flags & O_NONBLOCK == 0 { _ = fcntl(listeningDescriptor, F_SETFL, flags | O_NONBLOCK) }
        let source = try loop.addIOSource(fd: listeningDescriptor, events: .readable) { [unowned self] _ in acceptPending() }
        listener = source  // before anything else can throw: stop() cancels it
        try source.setPriority(priority)
    }

    /// Closes every connection (calls in progress are told their peer is gone) and the listening socket.
    @_spi(Testing) public func stop() {
        listener?.cancel()
        listener = nil
        for connection in Array(connections.values) { connection.close() }
        sweep?.cancel()
        sweep = nil
        if listeningDescriptor >= 0 { close(listeningDescriptor) }
    }

    // MARK: Accepting

    private func acceptPending() {
        for _ in 0..<limits.acceptsPerDispatch {
            let fd = lifecycle_ipc_accept4(listeningDescriptor, lifecycle_ipc_sock_nonblock() | lifecycle_ipc_sock_cloexec())
            if fd < 0 {
                switch -fd {
                case EAGAIN, EWOULDBLOCK: return
                case EINTR, ECONNABORTED, EPROTO: continue
                default:
                    // EMFILE and friends: leave the connection in the backlog rather than spin; the next readiness
                    // tries again.
                    notice("cannot accept a control connection: \(Errno(rawValue: -fd))")
                    return
                }
            }
            admit(fd)
        }
    }

    private func admit(_ fd: Int32) {
        let peer: PeerCredentials
        do {
            peer = try UnixSocket.peerCredentials(of: fd)
        } catch {
            close(fd)
            return
        }
        guard authorize(peer) else {
            statistics.refused += 1
            // Refused before anything is read; the reply names why, so a client can say so.
            let refusal = VarlinkMessage.error(.permissionDenied)
            _ = refusal.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            close(fd)
            notice("refused a control connection from \(peer): not allowed by the service's access rules")
            return
        }
        guard connections.count < limits.maximumConnections else {
            statistics.overLimit += 1
            close(fd)
            notice("closed a control connection from \(peer): \(limits.maximumConnections) connections are open")
            return
        }
        let connection = VarlinkConnection(server: self, fd: fd, peer: peer)
        do {
            let source = try loop.addIOSource(fd: fd, events: [.readable, .readHangup]) { [unowned connection] events in
                connection.handleEvents(events)
            }
            try source.setPriority(priority)
            connection.source = source
        } catch {
            close(fd)
            notice("cannot watch a control connection: \(error)")
            return
        }
        statistics.accepted += 1
        connections[ObjectIdentifier(connection)] = connection
        connection.becameIdle()
    }

    // MARK: Calls

    /// Routes one decoded call; returns the request when a handler owns it now (the connection waits for its final
    /// reply), nil when it was answered already.
    fileprivate func dispatch(_ call: VarlinkCall, from connection: VarlinkConnection) -> VarlinkRequest? {
        let request = VarlinkRequest(call: call, peer: connection.peer, connection: connection)
        if call.interface == Varlink.serviceInterface {
            statistics.calls += 1
            serveServiceInterface(request)
            return request.isFinished ? nil : request
        }
        guard let interface = interfaces[call.interface] else {
            replyWithError(.interfaceNotFound(call.interface), to: request)
            return nil
        }
        guard let method = interface.methods.first(where: { $0.declaration.name == call.name }) else {
            replyWithError(.methodNotFound(call.method), to: request)
            return nil
        }
        do {
            try method.declaration.validate(call)
        } catch {
            replyWithError(error, to: request)
            return nil
        }
        statistics.calls += 1
        method.handler(request)
        return request.isFinished ? nil : request
    }

    fileprivate func replyWithError(_ error: VarlinkError, to request: VarlinkRequest) {
        statistics.errorReplies += 1
        request.fail(error)
    }

    private func serveServiceInterface(_ request: VarlinkRequest) {
        switch request.call.name {
        case "GetInfo":
            guard request.call.parameters.isEmpty else {
                replyWithError(.invalidParameter(request.call.parameters.keys[0]), to: request)
                return
            }
            request.reply([
                "vendor": .string(info.vendor),
                "product": .string(info.product),
                "version": .string(info.version),
                "url": .string(info.url),
                "interfaces": .array(interfaceNames.map(JSONValue.string)),
            ])
        case "GetInterfaceDescription":
            let declaration = VarlinkMethodDeclaration("GetInterfaceDescription", parameters: [.init("interface", .string)])
            do {
                try declaration.validate(request.call)
            } catch {
                replyWithError(error, to: request)
                return
            }
            let name = request.call.parameters["interface"]?.stringValue ?? ""
            let description =
                name == Varlink.serviceInterface ? Varlink.serviceInterfaceDescription : interfaces[name]?.description
            guard let description else {
                replyWithError(.interfaceNotFound(name), to: request)
                return
            }
            request.reply(["description": .string(description)])
        default:
            replyWithError(.methodNotFound(request.call.method), to: request)
        }
    }

    // MARK: Bookkeeping the connections report

    fileprivate func connectionClosed(_ connection: VarlinkConnection) {
        connections[ObjectIdentifier(connection)] = nil
    }

    fileprivate func count(_ reason: VarlinkConnection.CloseReason) {
        switch reason {
        case .malformed: statistics.closedMalformed += 1
        case .oversized: statistics.closedOversized += 1
        case .idle: statistics.closedIdle += 1
        case .backlog: statistics.closedBacklog += 1
        case .peer, .error, .server: break
        }
    }

    /// Why a connection was closed, at debug level and at most once a second (under journald the daemon logs at
    /// debug: a peer that breaks the protocol in a loop must not flood the journal); the ones held back are counted.
    fileprivate func debug(_ message: @autoclosure () -> String) {
        guard logger.logLevel <= .debug,
            let suppressed = debugLimiter.admitCountingRefused(at: clockOrigin.duration(to: .now))
        else { return }
        logger.debug("\(message())\(suppressed > 0 ? " (and \(suppressed) more in the last second)" : "")")
    }

    /// Arms the idle sweep for a connection that became idle, unless it is armed for an earlier time already.
    fileprivate func scheduleSweep(at deadline: ContinuousClock.Instant) {
        if let sweepDeadline, sweepDeadline <= deadline, sweep?.isActive == true { return }
        sweep?.cancel()
        sweepDeadline = deadline
        // One timer for every connection, armed for the earliest deadline: deadlines only move later, so a busy
        // connection costs no timer changes, and an idle server arms none.
        sweep = try? loop.addTimerSource(after: max(.zero, deadline - .now), accuracy: .milliseconds(100)) { [unowned self] in
            sweepIdleConnections()
        }
    }

    private func sweepIdleConnections() {
        sweep = nil
        sweepDeadline = nil
        let now = ContinuousClock.now
        var earliest: ContinuousClock.Instant?
        for connection in Array(connections.values) {
            guard let deadline = connection.idleDeadline else { continue }
            if deadline <= now {
                connection.close(reason: .idle)
            } else if earliest.map({ deadline < $0 }) ?? true {
                earliest = deadline
            }
        }
        if let earliest { scheduleSweep(at: earliest) }
    }

    /// Runs `work` in a later iteration of the loop (after other ready sources).
    fileprivate func later(_ work: @escaping () -> Void) {
        if let source = try? loop.addTimerSource(after: .zero, accuracy: .milliseconds(1), handler: work) {
            try? source.setPriority(priority)
        }
    }

    /// A notice at most every 10 s; the ones held back are counted in the next.
    private func notice(_ message: String) {
        guard let suppressed = noticeLimiter.admitCountingRefused(at: clockOrigin.duration(to: .now)) else { return }
        logger.notice("\(message)\(suppressed > 0 ? " (and \(suppressed) similar in the last 10 s)" : "")")
    }
}

/// One call that a handler answers: at once, later, or (with `more`) several times.
///
/// Replies to a connection that has gone are dropped silently; ``isConnected`` tells, and ``onDisconnect`` runs when it
/// goes before the final reply.
@_spi(Testing) public final class VarlinkRequest {
    /// The call.
    @_spi(Testing) public let call: VarlinkCall
    /// Who made it.
    @_spi(Testing) public let peer: PeerCredentials
    /// Whether the final reply (or error) has been sent.
    @_spi(Testing) public private(set) var isFinished = false
    /// Runs once if the peer goes away before the final reply.
    @_spi(Testing) public var onDisconnect: (() -> Void)?

    private weak var connection: VarlinkConnection?

    fileprivate init(call: VarlinkCall, peer: PeerCredentials, connection: VarlinkConnection) {
        self.call = call
        self.peer = peer
        self.connection = connection
    }

    /// Whether the peer is still there and waits for a reply.
    @_spi(Testing) public var isConnected: Bool { !isFinished && connection?.isOpen == true }

    /// The final reply.
    @_spi(Testing) public func reply(_ parameters: JSONObject = [:]) {
        finish(VarlinkMessage.reply(parameters))
    }

    /// One reply of several (the call was made with `more`); the final one is ``reply(_:)`` or ``fail(_:)``.
    /// Without `more` this is the final reply, as the protocol allows.
    @_spi(Testing) public func send(_ parameters: JSONObject) {
        guard call.more else {
            reply(parameters)
            return
        }
        guard !isFinished, !call.oneway else { return }
        connection?.send(VarlinkMessage.reply(parameters, continues: true))
    }

    /// The final reply: an error.
    @_spi(Testing) public func fail(_ error: VarlinkError) {
        finish(VarlinkMessage.error(error))
    }

    private func finish(_ message: [UInt8]) {
        guard !isFinished else { return }
        isFinished = true
        onDisconnect = nil
        guard !call.oneway, let connection else { return }
        connection.send(message)
        connection.requestFinished(self)
    }

    /// The connection went away before the final reply.
    fileprivate func disconnected() {
        guard !isFinished else { return }
        isFinished = true
        let handler = onDisconnect
        onDisconnect = nil
        handler?()
    }
}

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

    init(server: VarlinkServer, fd: Int32, peer: PeerCredentials) {
        self.server = server
        self.fd = fd
        self.peer = peer
        self.framer = VarlinkFramer(maximumMessageSize: server.limits.maximumMessageSize)
    }

    private var pendingOutput: Int { output.count - outputStart }

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
        process()
    }

    private func readInput() {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var total = 0
        while total < server.limits.readBytesPerDispatch {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                framer.append(buffer[..<count])
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

    /// Handles the complete calls that wait, one at a time, a bounded number per dispatch.
    private func process() {
        guard isOpen, !isProcessing else { return }
        isProcessing = true
        defer { isProcessing = false }
        var handled = 0
        while isOpen, current == nil {
            if handled >= server.limits.callsPerDispatch {
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
        if current != nil, framer.pendingByteCount > server.limits.maximumMessageSize {
            server.debug("control connection from \(peer): more than \(server.limits.maximumMessageSize) bytes ahead of its replies; closing")
            close(reason: .oversized)
            return
        }
        if current == nil {
            if inputEnded {
                closeWhenFlushed()
            } else {
                becameIdle()
            }
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
                server.replyWithError(varlinkError, to: VarlinkRequest(call: VarlinkCall(method: ""), peer: peer, connection: self))
            }
            return
        }
        idleDeadline = nil
        current = server.dispatch(call, from: self)
    }

    private func scheduleContinuation() {
        guard !continuationScheduled else { return }
        continuationScheduled = true
        server.later { [weak self] in
            guard let self else { return }
            continuationScheduled = false
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
        if outputStart > 0, outputStart == output.count {
            output.removeAll(keepingCapacity: true)
            outputStart = 0
        }
        output.append(contentsOf: message)
        flush()
    }

    private func flush() {
        while pendingOutput > 0 {
            let count = output.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + outputStart, pendingOutput, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if count > 0 {
                outputStart += count
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
        if !inputEnded { events.formUnion([.readable, .readHangup]) }
        if pendingOutput > 0 { events.insert(.writable) }
        try? source?.setIOEvents(events)
    }

    // MARK: Closing

    func close(reason: CloseReason = .server) {
        guard isOpen else { return }
        isOpen = false
        server.count(reason)
        source?.cancel()
        source = nil
        Glibc.close(fd)
        server.connectionClosed(self)
        let request = current
        current = nil
        request?.disconnected()
    }
}
