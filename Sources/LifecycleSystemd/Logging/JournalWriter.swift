//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd
import LifecyclePrimitives
import Logging
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Sends entries to journald over its native protocol without ever blocking the thread that logs.
///
/// libsystemd's `sd_journal_sendv` writes to a blocking datagram socket. journald's socket is systemd's (socket
/// activation), so while journald is stopped, hung or restarting slowly the socket still takes datagrams, until its
/// receive queue is full (`net.unix.max_dgram_qlen`, 10 on this machine): then `sendmsg` blocks, and a main loop that
/// logs stops, stops feeding the watchdog and is killed. This writer sends each entry with `MSG_DONTWAIT` from the
/// thread that logs, which is all that happens while journald keeps up. When journald does not take an entry at once,
/// the entry waits in a bounded queue, in order, and every later one behind it; one thread of the writer's own (made
/// then, with every signal blocked) sends the queue, waiting for journald as long as it takes. A full queue
/// (``Limits``) drops new entries and counts them. Once the queue has drained after journald stalled (took nothing for
/// ``stallTimeout``) or after a drop, one entry says how long journald did not take lines, how many waited and how
/// many were dropped (`LIFECYCLE_JOURNAL_DELAYED`, `LIFECYCLE_JOURNAL_DROPPED`, `LIFECYCLE_JOURNAL_OUTAGE_MS`).
///
/// The protocol is journald's native one, as libsystemd writes it: `NAME=value\n` per field, or `NAME\n`, the value's
/// length as 64-bit little endian, the value and `\n` for a value with a newline; an entry too large for one datagram
/// goes in a sealed memfd passed with `SCM_RIGHTS`. Each datagram is addressed to the socket's path (the socket is not
/// connected), so a socket systemd makes again after a restart of `systemd-journald.socket` is found again.
///
/// ``waitForDelivery()`` lets the main loop keep its promise that a state's log lines reach the journal before
/// systemd hears of the state: it waits while the queue drains, at most ``deliveryBudget`` in all and no longer than
/// ``stallTimeout`` without journald taking an entry; once a wait has given up, the next ones return at once until the
/// queue has drained (journald has caught up). So journald, slowed down or stopped, holds the main loop at most one
/// budget per outage, never once per wait.
public final class JournalWriter: Sendable {

    /// How many entries may wait for journald, and how many bytes they may hold in all; beyond either, new entries are
    /// dropped and counted.
    public struct Limits: Hashable, Sendable {
        /// Entries waiting at most.
        public var entries: Int
        /// Bytes of waiting entries at most (their fields' sizes).
        public var bytes: Int

        /// Limits of this many entries and bytes.
        public init(entries: Int, bytes: Int) {
            self.entries = entries
            self.bytes = bytes
        }
    }

    /// What the writer did so far.
    public struct Statistics: Hashable, Sendable {
        /// Entries journald took at once, from the thread that logged them.
        public var sentDirectly = 0
        /// Entries that waited in the queue and reached journald late.
        public var sentLate = 0
        /// Entries sent in a memfd, being too large for a datagram.
        public var sentInMemfd = 0
        /// Entries dropped because the queue was full.
        public var dropped = 0
        /// Entries journald refused for good (an error other than a full or missing socket), written to stderr.
        public var failed = 0
        /// Entries waiting now.
        public var waiting = 0
        /// The reports of drops and stalls the writer sent.
        public var reports = 0
    }

    /// 1024 entries (about 57 signals' worth of the demo's lines, 18 for a background transition) or 4 MiB.
    public static let defaultLimits = Limits(entries: 1024, bytes: 4 << 20)
    /// journald taking nothing for this long is a stall: callers of ``waitForDelivery()`` stop waiting.
    public static let defaultStallTimeout = Duration.milliseconds(250)
    /// The longest one ``waitForDelivery()`` lasts, however steadily journald takes entries.
    public static let defaultDeliveryBudget = Duration.milliseconds(250)
    /// journald's native socket.
    public static let defaultSocketPath = "/run/systemd/journal/socket"

    /// The process's writer, to journald's socket; ``JournalLogHandler`` sends through it.
    public static let shared = JournalWriter()

    /// The socket the entries are sent to.
    public let socketPath: String
    /// The queue's bounds.
    public let limits: Limits
    /// How long journald may take nothing before waiting for it stops.
    public let stallTimeout: Duration
    /// The longest one ``waitForDelivery()`` lasts (the daemon lowers it to an eighth of a short watchdog interval).
    public var deliveryBudget: Duration {
        get { lock.withLock { $0.deliveryBudget } }
        set { lock.withLock { $0.deliveryBudget = newValue } }
    }

    private struct Item: Sendable {
        var fields: [String]
        var identifier: String
        var size: Int
        /// The writer's own report; not counted as an entry that waited.
        var isReport = false
    }

    private enum Outcome {
        case sent(inMemfd: Bool)
        /// The socket's queue is full: journald does not read it (a send that waited timed out).
        case full
        /// Nobody listens on the path, or there is no socket there.
        case absent(Errno)
        /// Refused for good.
        case failed(Errno)
    }

    private struct State: Sendable {
        var socket: Int32 = -1
        var queue: [Item] = []
        var queuedBytes = 0
        var statistics = Statistics()
        /// Since when entries wait (monotonic ns); nil while journald takes entries at once.
        var episodeBegan: UInt64?
        var episodeDelayed = 0
        var episodeDropped = 0
        var episodeStalled = false
        /// The last time journald took an entry, or the queue began to fill.
        var lastProgress: UInt64 = 0
        /// A wait gave up (journald stalled, or the delivery budget ran out) since the queue last drained: waiting
        /// callers return at once until it drains.
        var behind = false
        var deliveryBudget = JournalWriter.defaultDeliveryBudget
        var thread: pthread_t?
        var stopping = false
        var lastIdentifier = ""
        /// The writer thread waits for entries (a new one must wake it).
        var senderWaits = false
        /// Callers of ``waitForDelivery()`` and ``flush(timeout:)`` waiting for the queue to drain.
        var deliveryWaiters = 0
    }

    /// Everything that changes, and the condition the writer thread (for entries) and the callers of
    /// ``waitForDelivery()`` and ``flush(timeout:)`` (for the queue to drain or journald to stall) wait on.
    private let lock = ConditionLock(State())
    private let address: [UInt8]
    private let addressLength: socklen_t
    private let sendBufferSize: Int32

    /// A writer to `socketPath` (a path, not an abstract name). `sendBufferSize` is asked for the socket's
    /// `SO_SNDBUF`, which bounds the size of one datagram (the kernel caps it at twice `net.core.wmem_max`); larger
    /// entries go in a memfd.
    public init(
        socketPath: String = JournalWriter.defaultSocketPath,
        limits: Limits = JournalWriter.defaultLimits,
        stallTimeout: Duration = JournalWriter.defaultStallTimeout,
        sendBufferSize: Int32 = 8 << 20
    ) {
        self.socketPath = socketPath
        self.limits = limits
        self.stallTimeout = stallTimeout
        self.sendBufferSize = sendBufferSize
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8.prefix(MemoryLayout.size(ofValue: socketAddress.sun_path) - 1))
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { bytes in
            for (index, byte) in path.enumerated() { bytes[index] = byte }
        }
        address = withUnsafeBytes(of: socketAddress) { Array($0) }
        addressLength = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + path.count + 1)
    }

    deinit {
        stop()
        let socket = lock.withLock { $0.socket }
        if socket >= 0 { close(socket) }
    }

    // MARK: Sending

    /// Sends one entry (`NAME=value` fields; `identifier` is its `SYSLOG_IDENTIFIER`, for the writer's own report),
    /// at once if journald takes it, else after the entries waiting; never blocks beyond taking a lock.
    public func submit(_ fields: [String], identifier: String) {
        let wake = lock.withLock { state -> Bool in
            state.lastIdentifier = identifier
            if state.queue.isEmpty {
                let socket = openSocket(&state)
                if socket >= 0, case .sent(let inMemfd) = deliver(Self.encode(fields), on: socket, waiting: false) {
                    state.statistics.sentDirectly += 1
                    if inMemfd { state.statistics.sentInMemfd += 1 }
                    return false
                }
                // journald did not take it: from now on entries wait, in order, for the writer thread.
                if state.episodeBegan == nil {
                    let now = Self.now()
                    state.episodeBegan = now
                    state.lastProgress = now
                }
            }
            let size = fields.reduce(fields.count) { $0 + $1.utf8.count }
            guard state.queue.count < limits.entries, state.queuedBytes + size <= limits.bytes else {
                state.statistics.dropped += 1
                state.episodeDropped += 1
                return false
            }
            state.queue.append(Item(fields: fields, identifier: identifier, size: size))
            state.queuedBytes += size
            state.statistics.waiting = state.queue.count
            startThread(&state)
            return state.senderWaits
        }
        if wake { lock.notifyAll() }
    }

    /// Waits until every waiting entry reached journald, at most ``deliveryBudget`` and no longer than
    /// ``stallTimeout`` without journald taking one; returns at once when nothing waits, or when an earlier wait gave up
    /// and the queue has not drained since.
    public func waitForDelivery() {
        let start = Self.now()
        var waiting = false
        lock.withLock { (state: inout State) -> ConditionLock<State>.Step<Void> in
            if waiting {
                state.deliveryWaiters -= 1
                waiting = false
            }
            guard !state.queue.isEmpty, !state.behind else { return .done(()) }
            let budgetEnds = start &+ UInt64(state.deliveryBudget.wholeNanoseconds)
            let stallEnds = state.lastProgress &+ UInt64(stallTimeout.wholeNanoseconds)
            if Self.now() >= min(budgetEnds, stallEnds) {
                // From now on callers do not wait, until journald has caught up.
                state.behind = true
                markStalled(&state)
                return .done(())
            }
            state.deliveryWaiters += 1
            waiting = true
            return .wait(until: min(budgetEnds, stallEnds))
        }
    }

    /// Waits, at most `timeout`, until every waiting entry reached journald; gives up once journald has taken nothing
    /// for ``stallTimeout`` from now on. For the end of the process: what waits is lost when it exits.
    public func flush(timeout: Duration = .seconds(2)) {
        let start = Self.now()
        let end = start &+ UInt64(timeout.wholeNanoseconds)
        var waiting = false
        lock.withLock { (state: inout State) -> ConditionLock<State>.Step<Void> in
            if waiting {
                state.deliveryWaiters -= 1
                waiting = false
            }
            guard !state.queue.isEmpty else { return .done(()) }
            let deadline = min(end, max(state.lastProgress, start) &+ UInt64(stallTimeout.wholeNanoseconds))
            if Self.now() >= deadline { return .done(()) }
            state.deliveryWaiters += 1
            waiting = true
            return .wait(until: deadline)
        }
    }

    /// What the writer did so far.
    public var statistics: Statistics {
        lock.withLock { state in
            var statistics = state.statistics
            statistics.waiting = state.queue.count
            return statistics
        }
    }

    /// Ends the writer thread once the queue is empty or journald took nothing for ``stallTimeout`` (tests).
    public func stop() {
        let thread = lock.withLock { state -> pthread_t? in
            state.stopping = true
            defer { state.thread = nil }
            return state.thread
        }
        lock.notifyAll()
        if let thread { pthread_join(thread, nil) }
    }

    // MARK: The native protocol

    /// One entry in journald's native protocol: `NAME=value\n` per field, or, for a value with a newline, `NAME\n`,
    /// the value's length as 64-bit little endian, the value and `\n`. A field without `=` is skipped (libsystemd
    /// refuses the whole entry for it).
    public static func encode(_ fields: [String]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce(fields.count * 9) { $0 + $1.utf8.count })
        for field in fields {
            let utf8 = field.utf8
            guard let equals = utf8.firstIndex(of: UInt8(ascii: "=")), equals != utf8.startIndex else { continue }
            let value = utf8[utf8.index(after: equals)...]
            if value.contains(UInt8(ascii: "\n")) {
                bytes.append(contentsOf: utf8[..<equals])
                bytes.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(value.count).littleEndian) { bytes.append(contentsOf: $0) }
                bytes.append(contentsOf: value)
            } else {
                bytes.append(contentsOf: utf8)
            }
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    // MARK: The socket

    /// The socket, made at first use; a negative errno if it cannot be made. Called with the lock held.
    private func openSocket(_ state: inout State) -> Int32 {
        if state.socket >= 0 { return state.socket }
        // Entries up to about `sendBufferSize` fit one datagram; larger ones go in a memfd. The writer thread's sends
        // wait at most the stall timeout, so it notices a stall (the thread that logs never waits).
        let socket = csystemd_datagram_socket(sendBufferSize, Int(stallTimeout.wholeNanoseconds / 1000))
        guard socket >= 0 else { return socket }
        state.socket = socket
        return socket
    }

    /// One send: `waiting` blocks up to the socket's send timeout (the writer thread), otherwise it never blocks.
    private func deliver(_ payload: [UInt8], on socket: Int32, waiting: Bool) -> Outcome {
        while true {
            let sent = payload.withUnsafeBytes { bytes in
                address.withUnsafeBytes { raw in
                    csystemd_send_datagram(
                        socket, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), addressLength,
                        bytes.baseAddress, bytes.count, waiting ? 1 : 0
                    )
                }
            }
            if sent >= 0 { return .sent(inMemfd: false) }
            let error = Int32(-sent)
            switch error {
            case EINTR:
                continue
            case EMSGSIZE, ENOBUFS:
                // Too large for a datagram: hand it over in a memfd, as libsystemd does.
                return deliverInMemfd(payload, on: socket, waiting: waiting)
            default:
                return Self.outcome(errno: error)
            }
        }
    }

    private func deliverInMemfd(_ payload: [UInt8], on socket: Int32, waiting: Bool) -> Outcome {
        let memfd = csystemd_memfd_create("journal-entry")
        guard memfd >= 0 else { return .failed(Errno(rawValue: -memfd)) }
        defer { close(memfd) }
        var offset = 0
        while offset < payload.count {
            let written = payload[offset...].withUnsafeBytes { write(memfd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return .failed(Errno(rawValue: errno))
            }
            offset += written
        }
        // journald reads a memfd only once it is sealed against changes.
        let sealed = csystemd_seal_memfd(memfd)
        guard sealed == 0 else { return .failed(Errno(rawValue: -sealed)) }
        while true {
            let result = address.withUnsafeBytes { raw in
                csystemd_send_descriptor(
                    socket, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), addressLength, memfd, waiting ? 1 : 0
                )
            }
            if result >= 0 { return .sent(inMemfd: true) }
            if -result == EINTR { continue }
            return Self.outcome(errno: -result)
        }
    }

    private static func outcome(errno error: Int32) -> Outcome {
        switch error {
        case EAGAIN, EWOULDBLOCK:
            .full
        case ECONNREFUSED, ENOENT, ENOTCONN, ECONNRESET:
            .absent(Errno(rawValue: error))
        default:
            .failed(Errno(rawValue: error))
        }
    }

    // MARK: The writer thread

    /// Starts the writer thread, once, with every signal blocked (so that none is delivered to it). Lock held.
    private func startThread(_ state: inout State) {
        guard state.thread == nil, !state.stopping else { return }
        // On failure no thread: entries keep waiting in the bounded queue, and the next one tries again.
        guard case .success(let created) = SystemThread.start(blockingSignals: true, { [self] in run() }) else { return }
        state.thread = created
    }

    /// What the writer thread does next.
    private enum Work: Sendable {
        case send(Item, socket: Int32)
        case end
    }

    private func run() {
        while true {
            let work = lock.withLock { (state: inout State) -> ConditionLock<State>.Step<Work> in
                guard let item = state.queue.first else {
                    if state.stopping { return .done(.end) }
                    state.senderWaits = true
                    return .wait(until: nil)
                }
                state.senderWaits = false
                return .done(.send(item, socket: openSocket(&state)))
            }
            guard case .send(let item, let socket) = work else { return }
            let outcome = socket >= 0
                ? deliver(Self.encode(item.fields), on: socket, waiting: true)
                : .failed(Errno(rawValue: -socket))
            switch outcome {
            case .sent(let inMemfd):
                let wake = lock.withLock { state -> Bool in
                    removeFirst(&state)
                    if inMemfd { state.statistics.sentInMemfd += 1 }
                    if item.isReport {
                        state.statistics.reports += 1
                    } else {
                        state.statistics.sentLate += 1
                        state.episodeDelayed += 1
                    }
                    state.lastProgress = Self.now()
                    guard state.queue.isEmpty else { return false }
                    endEpisode(&state)
                    // Waiters hear of the end only (they read lastProgress when their timed wait ends): one wake-up
                    // per drain, not one per entry.
                    return state.deliveryWaiters > 0
                }
                if wake { lock.notifyAll() }
            case .full:
                // The send waited the whole stall timeout.
                let wake = lock.withLock { state -> Bool in
                    let stalled = markStalled(&state)
                    if state.stopping { removeAll(&state) }
                    return (stalled || state.stopping) && state.deliveryWaiters > 0
                }
                if wake { lock.notifyAll() }
            case .absent:
                let (wake, stopping) = lock.withLock { state -> (Bool, Bool) in
                    let stalled = markStalled(&state)
                    if state.stopping { removeAll(&state) }
                    return ((stalled || state.stopping) && state.deliveryWaiters > 0, state.stopping)
                }
                if wake { lock.notifyAll() }
                if stopping { continue }
                // Nothing to wait on: try again a little later (or at once when stopping).
                let deadline = Self.now() &+ UInt64(stallTimeout.wholeNanoseconds)
                lock.withLock { (state: inout State) -> ConditionLock<State>.Step<Void> in
                    state.stopping || Self.now() >= deadline ? .done(()) : .wait(until: deadline)
                }
            case .failed(let error):
                lock.withLock { state in
                    removeFirst(&state)
                    state.statistics.failed += 1
                }
                Self.writeToStderr(item, error: error)
                let drained = lock.withLock { state -> Bool in
                    guard state.queue.isEmpty else { return false }
                    endEpisode(&state)
                    return state.deliveryWaiters > 0
                }
                if drained { lock.notifyAll() }
            }
        }
    }

    /// Lock held.
    private func removeFirst(_ state: inout State) {
        let item = state.queue.removeFirst()
        state.queuedBytes -= item.size
    }

    /// Lock held; a stopping writer gives up what journald will not take.
    private func removeAll(_ state: inout State) {
        state.statistics.dropped += state.queue.count(where: { !$0.isReport })
        state.queue.removeAll()
        state.queuedBytes = 0
    }

    /// Whether journald has taken nothing for the stall timeout while entries wait; if so the outage's report will say
    /// so. Lock held.
    @discardableResult
    private func markStalled(_ state: inout State) -> Bool {
        guard !state.queue.isEmpty, Self.now() &- state.lastProgress >= UInt64(stallTimeout.wholeNanoseconds) else {
            return false
        }
        state.behind = true
        state.episodeStalled = true
        return true
    }

    /// The queue drained: journald has caught up, so callers wait for it again; after a stall or a drop, one report
    /// goes out (it is the next entry). Lock held.
    private func endEpisode(_ state: inout State) {
        state.behind = false
        guard let began = state.episodeBegan else { return }
        let dropped = state.episodeDropped
        let delayed = state.episodeDelayed
        let stalled = state.episodeStalled
        state.episodeBegan = nil
        state.episodeDropped = 0
        state.episodeDelayed = 0
        state.episodeStalled = false
        guard dropped > 0 || stalled else { return }
        let now = Self.now()
        let milliseconds = Int((now &- began) / 1_000_000)
        var message = "journald did not take log lines at once for \(Self.seconds(milliseconds)) (it stopped, hung or restarted): "
        message += "\(delayed) \(delayed == 1 ? "line" : "lines") waited and reached it late"
        message +=
            dropped > 0
            ? ", \(dropped) \(dropped == 1 ? "was" : "were") dropped (at most \(limits.entries) lines wait)"
            : "; none was dropped"
        let fields = [
            "MESSAGE=\(message)",
            "PRIORITY=\(JournalLogHandler.syslogPriority(for: dropped > 0 ? .warning : .notice))",
            "SYSLOG_IDENTIFIER=\(state.lastIdentifier)",
            Self.field(LogKey.journalDelayed, delayed),
            Self.field(LogKey.journalDropped, dropped),
            Self.field(LogKey.journalOutageMilliseconds, milliseconds),
        ]
        // A new episode, so that the report itself waits its turn like any entry.
        state.episodeBegan = now
        state.lastProgress = now
        state.queue.append(
            Item(fields: fields, identifier: state.lastIdentifier, size: fields.reduce(0) { $0 + $1.utf8.count }, isReport: true)
        )
    }

    /// An entry journald refused for good, as one stderr line with the error.
    private static func writeToStderr(_ item: Item, error: Errno) {
        var message = ""
        var priority = 6
        var metadata: Logger.Metadata = ["journal_error": "\(error)"]
        for field in item.fields {
            guard let equals = field.firstIndex(of: "=") else { continue }
            let name = field[..<equals]
            let value = String(field[field.index(after: equals)...])
            switch name {
            case "MESSAGE": message = value
            case "PRIORITY": priority = Int(value) ?? priority
            case "SYSLOG_IDENTIFIER", "SWIFT_LOG_LABEL", "CODE_FILE", "CODE_LINE", "CODE_FUNC": break
            default: metadata[name.lowercased()] = .string(value)
            }
        }
        let level: Logger.Level =
            switch priority {
            case ...2: .critical
            case 3: .error
            case 4: .warning
            case 5: .notice
            case 6: .info
            default: .debug
            }
        let line = StderrLogHandler.line(
            timestamp: StderrLogHandler.timestamp(),
            level: level,
            identifier: item.identifier,
            message: message,
            metadata: metadata
        )
        StderrLogHandler.writeFully(line, to: STDERR_FILENO)
    }

    /// One journal field of the outage report: `lifecycle.journal_dropped` is written as `LIFECYCLE_JOURNAL_DROPPED=`.
    private static func field(_ key: String, _ value: Int) -> String {
        "\(JournalLogHandler.fieldName(forMetadataKey: key))=\(value)"
    }

    private static func seconds(_ milliseconds: Int) -> String {
        milliseconds < 1000 ? "\(milliseconds) ms" : "\(milliseconds / 1000).\((milliseconds % 1000) / 100) s"
    }

    static func now() -> UInt64 {
        MonotonicClock.now()
    }
}
