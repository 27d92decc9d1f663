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
/// ``Limits`` ends in an error reply, a closed connection or a peer that must wait (a connection's input is not read
/// while it holds a message's worth unhandled: the kernel's socket buffer then holds the peer's writes). Memory is
/// bounded per connection and in total whatever a peer sends or fails to read. Work it could not finish in one
/// dispatch continues at ``backgroundPriority``, below the loop's end-of-turn work, so that a busy peer never starves
/// it. Like its ``EventLoop`` it lives on the loop's thread.
///
/// It serves `org.varlink.service` (`GetInfo`, `GetInterfaceDescription`) itself, from the interfaces added with
/// ``add(_:)``. A reply larger than ``Limits/maximumReplySize`` is replaced by the error `ReplyTooLarge(size, limit)`
/// of the call's interface, which an interface with large replies declares.
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

    /// How much any peer may take; each bound ends in an error reply, a closed connection, or a peer that waits (its
    /// input is left in the kernel's socket buffer), never in the loop waiting.
    @_spi(Testing) public struct Limits: Hashable, Sendable {
        /// The largest message (its NUL not counted); input beyond it without a NUL closes the connection, and so does
        /// more unanswered input than this waiting behind a call in progress. It is also the most input a connection
        /// holds unhandled: beyond it nothing more is read until the calls that wait are handled.
        @_spi(Testing) public var maximumMessageSize = 65_536
        /// Connections open at once; one more is closed as soon as it is accepted. Fewer when the process's descriptor
        /// limit leaves fewer after ``descriptorReserve`` (``connectionCapacity``).
        @_spi(Testing) public var maximumConnections = 128
        /// Descriptors the server leaves to the rest of the process whatever peers do: sd_notify (the watchdog's ping
        /// opens a socket each time), journald's memfds, the saved state's files, the bus, a name lookup.
        @_spi(Testing) public var descriptorReserve = 16
        /// Each message must be complete within this long of the connection's acceptance or of its previous message's
        /// end, while no call of it is in progress; else the connection is closed (idle clients and slow senders
        /// alike: bytes that trickle in do not extend it).
        @_spi(Testing) public var idleTimeout = Duration.seconds(10)
        /// The most reply bytes a peer may leave unread when a new reply is due (a trace follower that stopped
        /// reading): beyond it the connection is closed.
        @_spi(Testing) public var maximumOutputBacklog = 1 << 20
        /// The largest reply: a larger one is replaced by the error `ReplyTooLarge` of the call's interface.
        @_spi(Testing) public var maximumReplySize = 8 << 20
        /// Reply bytes waiting to be read, over all connections: a reply that would pass it first closes the
        /// connections that left the most unread, until it fits.
        @_spi(Testing) public var maximumTotalOutput = 16 << 20
        /// Connections accepted per dispatch of the listening socket; then the listener yields to end-of-turn work.
        @_spi(Testing) public var acceptsPerDispatch = 16
        /// Calls handled per dispatch of one connection; the rest wait for a later loop iteration.
        @_spi(Testing) public var callsPerDispatch = 32
        /// Bytes read per dispatch of one connection.
        @_spi(Testing) public var readBytesPerDispatch = 65_536
        /// Reply bytes one dispatch of a connection may produce: a call whose replies pass it ends the dispatch, so
        /// the cost of a dispatch is bounded by what it sends, not only by its count of calls.
        @_spi(Testing) public var replyBytesPerDispatch = 256 << 10
        /// How long the listening socket rests after `accept` failed for want of a descriptor or memory (EMFILE,
        /// ENFILE, ENOBUFS, ENOMEM): the connection stays in the backlog, and retrying at once would spin.
        @_spi(Testing) public var acceptRetryDelay = Duration.milliseconds(250)

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
        /// Connections closed because their peer fell too far behind reading (or left the most unread when the
        /// replies of all connections reached their bound).
        @_spi(Testing) public var closedBacklog = 0
        /// Replies replaced by `ReplyTooLarge`.
        @_spi(Testing) public var repliesTooLarge = 0
        /// Times `accept` failed for want of a descriptor or memory (the listener then rests).
        @_spi(Testing) public var acceptErrors = 0
        /// The most input one connection held unhandled at once, in bytes.
        @_spi(Testing) public var peakBufferedInput = 0
        /// The most reply bytes left unread at once, over all connections.
        @_spi(Testing) public var peakPendingOutput = 0

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
    /// The priority of work the server puts off to a later iteration (the rest of a busy connection's calls, the
    /// next batch of connections): 101, below sd-event's idle priority (100), where the daemon's end-of-turn work
    /// runs. A peer that keeps the server busy therefore never keeps that work from running.
    @_spi(Testing) public var backgroundPriority: Int64 = 101
    /// Takes one connection from the listening socket: the descriptor, or -errno (tests stand in for the kernel).
    var acceptConnection: (Int32) -> Int32 = { listening in
        lifecycle_ipc_accept4(listening, lifecycle_ipc_sock_nonblock() | lifecycle_ipc_sock_cloexec())
    }

    private let loop: any EventLoop
    private let listeningDescriptor: Int32
    private var logger: Logger
    private var listener: (any EventLoopSource)?
    private var interfaces: [String: Interface] = [:]
    private var interfaceOrder: [String] = []
    private var connections: [ObjectIdentifier: VarlinkConnection] = [:]
    private var sweep: (any EventLoopSource)?
    private var sweepDeadline: ContinuousClock.Instant?
    /// The listener does not watch its socket: it yielded after a full batch, or rests after an accept error.
    private var listenerPaused = false
    /// The listening socket was closed (``stopAccepting()``).
    private var listeningClosed = false
    /// Reply bytes not yet read, over all connections.
    private(set) var totalPendingOutput = 0
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

    /// How many connections may be open at once: ``Limits/maximumConnections``, or fewer when the descriptor limit
    /// (`RLIMIT_NOFILE`) leaves fewer after the descriptors open at start and ``Limits/descriptorReserve`` (at least
    /// one). Peers holding connections never take the descriptors the process needs to ping the watchdog.
    package private(set) var connectionCapacity = 0

    /// Starts accepting connections.
    @_spi(Testing) public func start() throws(SystemCallError) {
        guard listener == nil else { return }
        connectionCapacity = Self.capacity(limits)
        if connectionCapacity < limits.maximumConnections {
            logger.notice(
                "the control socket takes at most \(connectionCapacity) connections at once: the descriptor limit (LimitNOFILE=) leaves no more after \(limits.descriptorReserve) kept for the daemon itself"
            )
        }
        // A descriptor handed over by systemd may be blocking; accept must never wait.
        let flags = fcntl(listeningDescriptor, F_GETFL)
        if flags >= 0, flags & O_NONBLOCK == 0 { _ = fcntl(listeningDescriptor, F_SETFL, flags | O_NONBLOCK) }
        let source = try loop.addIOSource(fd: listeningDescriptor, events: .readable) { [unowned self] _ in acceptPending() }
        listener = source  // before anything else can throw: stop() cancels it
        try source.setPriority(priority)
    }

    /// Closes every connection (calls in progress are told their peer is gone) and the listening socket.
    @_spi(Testing) public func stop() {
        stopAccepting()
        for connection in Array(connections.values) { connection.close() }
        sweep?.cancel()
        sweep = nil
    }

    /// The listening socket the server accepts on (an upgrade hands a copy to the next process).
    package var listeningSocket: Int32 { listeningDescriptor }

    /// Stops accepting and closes the listening socket, leaving the open connections served: the next process of
    /// the service accepts on its own copy of the socket from now on.
    package func stopAccepting() {
        listener?.cancel()
        listener = nil
        listenerPaused = false
        if listeningDescriptor >= 0, !listeningClosed {
            listeningClosed = true
            close(listeningDescriptor)
        }
    }

    // MARK: Accepting

    private func acceptPending() {
        guard !listenerPaused else { return }
        for _ in 0..<limits.acceptsPerDispatch {
            let fd = acceptConnection(listeningDescriptor)
            if fd < 0 {
                switch -fd {
                case EAGAIN, EWOULDBLOCK: return
                case EINTR, ECONNABORTED, EPROTO: continue
                default:
                    // EMFILE and friends: the connection stays in the backlog, and the socket stays readable, so
                    // trying again at once would spin. Rest, and let closing connections free descriptors meanwhile.
                    statistics.acceptErrors += 1
                    notice(
                        "cannot accept a control connection: \(Errno(rawValue: -fd)); trying again in \(limits.acceptRetryDelay.formattedForLog)"
                    )
                    pauseListener(for: limits.acceptRetryDelay)
                    return
                }
            }
            admit(fd)
        }
        // A full batch: more may wait. Let the loop's end-of-turn work run before the next batch (a connect flood,
        // refused or not, would otherwise keep this source ready for ever).
        pauseListener(for: nil)
    }

    /// The connections the descriptor limit leaves room for, at most the configured ones.
    static func capacity(_ limits: Limits) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else {
            return limits.maximumConnections
        }
        let room = Int(clamping: limit.rlim_cur) - openDescriptorCount() - limits.descriptorReserve
        return max(1, min(limits.maximumConnections, room))
    }

    /// The descriptors open in this process (the entries of /proc/self/fd, less the one reading it).
    private static func openDescriptorCount() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let dot = withUnsafeBytes(of: entry.pointee.d_name) { $0.first == UInt8(ascii: ".") }
            if !dot { count += 1 }
        }
        return max(0, count - 1)
    }

    /// Stops watching the listening socket until `delay` has passed, or (nil) until the loop has run its end-of-turn
    /// work.
    private func pauseListener(for delay: Duration?) {
        guard let listener, !listenerPaused else { return }
        listenerPaused = true
        do {
            try listener.setIOEvents([])
        } catch {
            listenerPaused = false
            return
        }
        later(after: delay ?? .zero) { [weak self] in
            guard let self, listenerPaused, let listener = self.listener else { return }
            listenerPaused = false
            try? listener.setIOEvents(.readable)
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
        guard connections.count < connectionCapacity else {
            statistics.overLimit += 1
            close(fd)
            notice("closed a control connection from \(peer): \(connectionCapacity) connections are open")
            return
        }
        let connection = VarlinkConnection(server: self, fd: fd, peer: peer)
        do {
            connection.source = try watch(fd: fd, events: [.readable, .readHangup]) { [unowned connection] events in
                connection.handleEvents(events)
            }
        } catch {
            close(fd)
            notice("cannot watch a control connection: \(error)")
            return
        }
        statistics.accepted += 1
        connections[ObjectIdentifier(connection)] = connection
        connection.becameIdle()
    }

    /// An io source for a connection, at the server's priority.
    fileprivate func watch(fd: Int32, events: IOEvents, handler: @escaping (IOEvents) -> Void) throws(SystemCallError)
        -> any EventLoopSource
    {
        let source = try loop.addIOSource(fd: fd, events: events, handler: handler)
        do {
            try source.setPriority(priority)
        } catch {
            source.cancel()
            throw error
        }
        return source
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

    fileprivate func countReplyTooLarge() {
        statistics.repliesTooLarge += 1
    }

    // MARK: Output, over all connections

    /// A connection's unread reply bytes changed by `delta`.
    fileprivate func outputChanged(by delta: Int) {
        totalPendingOutput += delta
        statistics.peakPendingOutput = max(statistics.peakPendingOutput, totalPendingOutput)
    }

    fileprivate func inputBuffered(_ count: Int) {
        statistics.peakBufferedInput = max(statistics.peakBufferedInput, count)
    }

    /// Makes room for `count` more reply bytes within ``Limits/maximumTotalOutput``: closes the connections that left
    /// the most unread (possibly `connection` itself) until they fit.
    fileprivate func makeRoom(for count: Int, on connection: VarlinkConnection) {
        while totalPendingOutput + count > limits.maximumTotalOutput {
            guard let worst = connections.values.max(by: { $0.pendingOutput < $1.pendingOutput }),
                worst.pendingOutput > 0
            else { return }
            debug(
                "control connection from \(worst.peer): \(worst.pendingOutput) reply bytes unread while the replies of all connections reach \(limits.maximumTotalOutput); closing"
            )
            worst.close(reason: .backlog)
            if worst === connection { return }
        }
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

    /// Runs `work` in a later iteration of the loop, after `delay`, once every other ready source and the loop's
    /// end-of-turn work have run (``backgroundPriority``).
    fileprivate func later(after delay: Duration = .zero, _ work: @escaping () -> Void) {
        if let source = try? loop.addTimerSource(after: delay, accuracy: .milliseconds(1), handler: work) {
            try? source.setPriority(backgroundPriority)
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
        sendContinuing(VarlinkMessage.reply(parameters, continues: true))
    }

    /// One reply of several that other callers get alike: encoded once for all of them.
    @_spi(Testing) public func send(_ shared: SharedReply) {
        guard call.more else {
            reply(shared.parameters)
            return
        }
        guard !isFinished, !call.oneway else { return }
        sendContinuing(shared.message)
    }

    /// The final reply: an error.
    @_spi(Testing) public func fail(_ error: VarlinkError) {
        finish(VarlinkMessage.error(error))
    }

    /// Counts work the handler did against the budget of the dispatch it runs in, in the reply bytes it is worth
    /// (``VarlinkServer/Limits/replyBytesPerDispatch``): a call that walks a large structure for a small reply ends
    /// the dispatch all the same.
    @_spi(Testing) public func charge(_ cost: Int) {
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
    fileprivate func disconnected() {
        guard !isFinished else { return }
        isFinished = true
        let handler = onDisconnect
        onDisconnect = nil
        handler?()
    }
}

/// One reply to several `more` calls alike (the same batch of trace events to every follower): its message is
/// encoded once, when the first of them sends it.
@_spi(Testing) public final class SharedReply {
    /// The reply's parameters.
    @_spi(Testing) public let parameters: JSONObject
    /// The message, with `continues`.
    package private(set) lazy var message: [UInt8] = VarlinkMessage.reply(parameters, continues: true)

    /// A reply to share.
    @_spi(Testing) public init(_ parameters: JSONObject) {
        self.parameters = parameters
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
