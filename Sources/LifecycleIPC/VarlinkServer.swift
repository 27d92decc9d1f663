//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CLifecycleIPC
public import LifecyclePrimitives
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
public final class VarlinkServer {
    /// What the service says about itself in `org.varlink.service.GetInfo`.
    public struct Info: Hashable, Sendable {
        /// The `vendor` of `GetInfo`.
        public var vendor: String
        /// The `product` of `GetInfo`.
        public var product: String
        /// The `version` of `GetInfo`.
        public var version: String
        /// The `url` of `GetInfo`.
        public var url: String

        /// What `GetInfo` answers.
        public init(vendor: String, product: String, version: String, url: String) {
            self.vendor = vendor
            self.product = product
            self.version = version
            self.url = url
        }
    }

    /// How much any peer may take; each bound ends in an error reply, a closed connection, or a peer that waits (its
    /// input is left in the kernel's socket buffer), never in the loop waiting.
    public struct Limits: Hashable, Sendable {
        /// The largest message (its NUL not counted); input beyond it without a NUL closes the connection, and so does
        /// more unanswered input than this waiting behind a call in progress. It is also the most input a connection
        /// holds unhandled: beyond it nothing more is read until the calls that wait are handled.
        public var maximumMessageSize = 65_536
        /// Connections open at once; one more is closed as soon as it is accepted. Fewer when the process's descriptor
        /// limit leaves fewer after ``descriptorReserve`` (``connectionCapacity``).
        public var maximumConnections = 128
        /// Descriptors the server leaves to the rest of the process whatever peers do: sd_notify (the watchdog's ping
        /// opens a socket each time), journald's memfds, the saved state's files, the bus, a name lookup.
        public var descriptorReserve = 16
        /// Each message must be complete within this long of the connection's acceptance or of its previous message's
        /// end, while no call of it is in progress; else the connection is closed (idle clients and slow senders
        /// alike: bytes that trickle in do not extend it).
        public var idleTimeout = Duration.seconds(10)
        /// The most reply bytes a peer may leave unread when a new reply is due (a trace follower that stopped
        /// reading): beyond it the connection is closed.
        public var maximumOutputBacklog = 1 << 20
        /// The largest reply: a larger one is replaced by the error `ReplyTooLarge` of the call's interface.
        public var maximumReplySize = 8 << 20
        /// Reply bytes waiting to be read, over all connections: a reply that would pass it first closes the
        /// connections that left the most unread, until it fits.
        public var maximumTotalOutput = 16 << 20
        /// Connections accepted per dispatch of the listening socket; then the listener yields to end-of-turn work.
        public var acceptsPerDispatch = 16
        /// Calls handled per dispatch of one connection; the rest wait for a later loop iteration.
        public var callsPerDispatch = 32
        /// Bytes read per dispatch of one connection.
        public var readBytesPerDispatch = 65_536
        /// Reply bytes one dispatch of a connection may produce: a call whose replies pass it ends the dispatch, so
        /// the cost of a dispatch is bounded by what it sends, not only by its count of calls.
        public var replyBytesPerDispatch = 256 << 10
        /// How long the listening socket rests after `accept` failed for want of a descriptor or memory (EMFILE,
        /// ENFILE, ENOBUFS, ENOMEM): the connection stays in the backlog, and retrying at once would spin.
        public var acceptRetryDelay = Duration.milliseconds(250)

        /// The default limits.
        public init() {}
    }

    /// Counters of what the server did, for status reports and tests.
    public struct Statistics: Hashable, Sendable {
        /// Connections accepted from authorized peers.
        public var accepted = 0
        /// Connections refused for their peer's credentials.
        public var refused = 0
        /// Connections closed at once because ``Limits/maximumConnections`` were open.
        public var overLimit = 0
        /// Calls handed to a handler (including `org.varlink.service`).
        public var calls = 0
        /// Error replies the server itself sent (unknown interface or method, invalid parameters, expected more).
        public var errorReplies = 0
        /// Connections closed for input that is not a JSON object or breaks the framing.
        public var closedMalformed = 0
        /// Connections closed for a message (or unread input) over the size limit.
        public var closedOversized = 0
        /// Connections closed by the idle timeout.
        public var closedIdle = 0
        /// Connections closed because their peer fell too far behind reading (or left the most unread when the
        /// replies of all connections reached their bound).
        public var closedBacklog = 0
        /// Replies replaced by `ReplyTooLarge`.
        public var repliesTooLarge = 0
        /// Times `accept` failed for want of a descriptor or memory (the listener then rests).
        public var acceptErrors = 0
        /// The most input one connection held unhandled at once, in bytes.
        public var peakBufferedInput = 0
        /// The most reply bytes left unread at once, over all connections.
        public var peakPendingOutput = 0

        /// All counts at zero.
        public init() {}
    }

    /// A method: its declaration and the handler its valid calls go to.
    public struct Method {
        /// The method as the interface declares it, checked against each call.
        public var declaration: VarlinkMethodDeclaration
        /// Answers a call, at once or later, through the request.
        public var handler: (VarlinkRequest) -> Void

        /// A method and what answers it.
        public init(_ declaration: VarlinkMethodDeclaration, handler: @escaping (VarlinkRequest) -> Void) {
            self.declaration = declaration
            self.handler = handler
        }
    }

    /// An interface: its name, its definition (the text `GetInterfaceDescription` returns) and its methods.
    public struct Interface {
        /// The interface's qualified name: `io.lifecyclekit.Lifecycle`.
        public var name: String
        public var description: String
        /// The interface's methods.
        public var methods: [Method]

        /// An interface of this name, definition text and methods.
        public init(name: String, description: String, methods: [Method]) {
            self.name = name
            self.description = description
            self.methods = methods
        }
    }

    /// The service's self-description.
    public let info: Info
    /// The limits in force.
    public let limits: Limits
    /// What happened so far.
    public private(set) var statistics = Statistics()
    /// Decides, from a peer's credentials, whether it may talk to the service at all; checked right after `accept`.
    /// A refused peer gets `org.varlink.service.PermissionDenied` and the connection is closed unread.
    public var authorize: (PeerCredentials) -> Bool = { _ in true }
    /// The priority of the server's sources on the loop: above 0, so signals, timers and the watchdog go first
    /// when both are ready.
    public var priority: Int64 = 10
    /// The priority of work the server puts off to a later iteration (the rest of a busy connection's calls, the
    /// next batch of connections): 101, below sd-event's idle priority (100), where the daemon's end-of-turn work
    /// runs. A peer that keeps the server busy therefore never keeps that work from running.
    public var backgroundPriority: Int64 = 101
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
    public init(loop: any EventLoop, listeningDescriptor: Int32, info: Info, limits: Limits = Limits(), logger: Logger) {
        self.loop = loop
        self.listeningDescriptor = listeningDescriptor
        self.info = info
        self.limits = limits
        self.logger = logger
    }

    /// Serves an interface; add every interface before ``start()``.
    public func add(_ interface: Interface) {
        precondition(interface.name != Varlink.serviceInterface, "org.varlink.service is served by the server itself")
        if interfaces[interface.name] == nil { interfaceOrder.append(interface.name) }
        interfaces[interface.name] = interface
    }

    /// The interfaces served, `org.varlink.service` first.
    public var interfaceNames: [String] { [Varlink.serviceInterface] + interfaceOrder }

    /// How many connections are open.
    public var connectionCount: Int { connections.count }

    /// How many connections may be open at once: ``Limits/maximumConnections``, or fewer when the descriptor limit
    /// (`RLIMIT_NOFILE`) leaves fewer after the descriptors open at start and ``Limits/descriptorReserve`` (at least
    /// one). Peers holding connections never take the descriptors the process needs to ping the watchdog.
    public private(set) var connectionCapacity = 0

    /// Starts accepting connections.
    public func start() throws(SystemCallError) {
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
    public func stop() {
        stopAccepting()
        for connection in Array(connections.values) { connection.close() }
        sweep?.cancel()
        sweep = nil
    }

    /// The listening socket the server accepts on (an upgrade hands a copy to the next process).
    public var listeningSocket: Int32 { listeningDescriptor }

    /// Stops accepting and closes the listening socket, leaving the open connections served: the next process of
    /// the service accepts on its own copy of the socket from now on.
    public func stopAccepting() {
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
        connection.accepted()
    }

    /// An io source for a connection, at the server's priority.
    func watch(fd: Int32, events: IOEvents, handler: @escaping (IOEvents) -> Void) throws(SystemCallError)
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
    func dispatch(_ call: VarlinkCall, from connection: VarlinkConnection) -> VarlinkRequest? {
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

    func replyWithError(_ error: VarlinkError, to request: VarlinkRequest) {
        statistics.errorReplies += 1
        request.fail(error)
    }

    func countReplyTooLarge() {
        statistics.repliesTooLarge += 1
    }

    // MARK: Output, over all connections

    /// A connection's unread reply bytes changed by `delta`.
    func outputChanged(by delta: Int) {
        totalPendingOutput += delta
        statistics.peakPendingOutput = max(statistics.peakPendingOutput, totalPendingOutput)
    }

    func inputBuffered(_ count: Int) {
        statistics.peakBufferedInput = max(statistics.peakBufferedInput, count)
    }

    /// Makes room for `count` more reply bytes within ``Limits/maximumTotalOutput``: closes the connections that left
    /// the most unread (possibly `connection` itself) until they fit.
    func makeRoom(for count: Int, on connection: VarlinkConnection) {
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

    func connectionClosed(_ connection: VarlinkConnection) {
        connections[ObjectIdentifier(connection)] = nil
        // The last one gone, the idle sweep has nothing left to close: an idle server arms no timer, so a daemon a
        // client connected to once does not wake again an idle timeout later.
        if connections.isEmpty {
            sweep?.cancel()
            sweep = nil
            sweepDeadline = nil
        }
    }

    func count(_ reason: VarlinkConnection.CloseReason) {
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
    func debug(_ message: @autoclosure () -> String) {
        guard logger.logLevel <= .debug,
            let suppressed = debugLimiter.admitCountingRefused(at: clockOrigin.duration(to: .now))
        else { return }
        logger.debug("\(message())\(suppressed > 0 ? " (and \(suppressed) more in the last second)" : "")")
    }

    /// Arms the idle sweep for a connection that became idle, unless it is armed for an earlier time already.
    func scheduleSweep(at deadline: ContinuousClock.Instant) {
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
    func later(after delay: Duration = .zero, _ work: @escaping () -> Void) {
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
