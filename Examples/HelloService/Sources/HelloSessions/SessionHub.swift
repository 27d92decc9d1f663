//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import FoundationEssentials
import HummingbirdWebSocket
public import LifecycleHummingbird
public import Logging
import NIOWebSocket
public import ServiceLifecycle
import Synchronization
import WSCore

/// What happened to a session, in the order it happened, for the application to drive its scene.
public enum SessionEvent: Sendable, Hashable {
    /// A client connected to the session (new, or resumed): connect its scene.
    case connected(String)
    /// Its client went away; the session stays: disconnect its scene.
    case disconnected(String)
    /// The sessions ended (their client said bye, they expired, or made room): discard their scenes.
    case ended([String])
}

/// How many sessions there are and what became of the connections, for `/sessions` and the tests' figures.
public struct SessionCounts: Sendable, Hashable, Codable {
    /// Sessions connected now, and known but disconnected.
    public var connected = 0
    public var disconnected = 0
    /// Since the process started: sessions made, resumed, ended; connections refused.
    public var created = 0
    public var resumed = 0
    public var ended = 0
    public var refused = 0
}

/// Serves the WebSocket endpoint whose clients are sessions (README.md, "Sessions"): the protocol, each session's
/// stream, the store, the checkpoints and expiry, and the close window when the process ends.
///
/// A `Service`: its ``run()`` runs the endpoint's connections, the feed, the checkpoints and the expiry until a graceful
/// shutdown, then closes every connection, spread over ``SessionSettings/closeWindow``, with the close code
/// `closeCode` gives at that moment (1012 when the service comes back, 1001 when it goes away), after writing every
/// connected session to the store. A session is pushed to only while the application says its scene is active
/// (``setSceneActive(_:_:)``); ``events`` says when a scene is to connect, disconnect or be discarded.
public final class SessionHub: Service, Sendable {
    /// The endpoint an `HTTPServer` upgrades `/ws` to.
    public let endpoint: WebSocketEndpoint
    /// Sessions connecting, disconnecting and ending, in order.
    public let events: AsyncStream<SessionEvent>
    /// The store.
    public let store: any SessionStore

    private let eventSink: AsyncStream<SessionEvent>.Continuation
    private let settings: SessionSettings
    private let feed: any SessionFeed
    private let closeCode: @Sendable () -> SessionCloseCode
    private let logger: Logger
    private let state = Mutex(HubState())
    private let clock = ContinuousClock()

    /// A hub keeping its sessions in `store`, sending `feed`, closing with `closeCode()` when it shuts down.
    public init(
        store: any SessionStore,
        settings: SessionSettings = SessionSettings(),
        feed: any SessionFeed = TickFeed(),
        path: String = "/ws",
        logger: Logger,
        closeCode: @escaping @Sendable () -> SessionCloseCode
    ) {
        self.store = store
        self.settings = settings
        self.feed = feed
        self.closeCode = closeCode
        self.logger = logger
        (events, eventSink) = AsyncStream.makeStream(of: SessionEvent.self)
        let box = HubBox()
        endpoint = WebSocketEndpoint(
            path: path,
            configuration: WebSocketServerConfiguration(
                maxFrameSize: settings.maximumFrame,
                autoPing: .enabled(timePeriod: .seconds(30)),
                closeTimeout: settings.closeTimeout
            )
        ) { _, _ in
            { inbound, outbound, context in
                try await box.hub?.serve(inbound: inbound, outbound: outbound, logger: context.logger)
            }
        }
        box.hub = self
    }

    /// The counts now.
    public var counts: SessionCounts {
        state.withLock { state in
            var counts = state.counts
            counts.connected = state.live.count
            counts.disconnected = state.disconnected.count
            return counts
        }
    }

    // MARK: Running

    /// Serves until a graceful shutdown, then closes every connection over the close window and returns once all have
    /// closed (or the window and the close timeout have passed).
    public func run() async throws {
        let endpoint = self.endpoint
        let store = self.store
        try await withThrowingTaskGroup { group in
            // The store's pool first: preparing it (the table) goes through it.
            group.addTask { await store.run() }
            do {
                try await store.prepare()
            } catch {
                logger.critical("sessions: \(store.description) cannot be used: \(error)")
                group.cancelAll()
                throw error
            }
            logger.info("sessions: serving \(endpoint.path), kept in \(store.description)")
            group.addTask { await endpoint.run() }
            group.addTask { await self.produceLoop() }
            group.addTask { await self.checkpointLoop() }
            group.addTask { await self.expiryLoop() }
            // Until the graceful shutdown (or cancellation).
            try? await gracefulShutdown()
            await shutDown()
            // The connections are done: the loops and the store's pool go.
            group.cancelAll()
        }
        eventSink.finish()
        logger.info("sessions: every connection closed")
    }

    /// The operator discarded the session `id` (`lifecyclectl scene discard`): its connection closes with 4001, its
    /// record is deleted.
    public func discard(_ id: String) async {
        let (generation, connection) = state.withLock { state -> (Int, ConnectionHandle?) in
            state.disconnected[id] = nil
            guard let live = state.live.removeValue(forKey: id) else { return (Int.max, nil) }
            state.counts.ended += 1
            return (live.record.generation, live.connection)
        }
        connection?.outbound.yield(.close(.sessionEnded))
        try? await store.delete(id, generation: generation)
    }

    /// Whether the scene of session `id` is active: while it is, the session is sent to; else its connection is held.
    public func setSceneActive(_ id: String, _ active: Bool) {
        state.withLock { state in
            if active { state.sceneActive.insert(id) } else { state.sceneActive.remove(id) }
            guard state.live[id] != nil else { return }
            if active {
                let unsent = state.live[id]!.stream.push()
                state.live[id]!.nextDue = clock.now
                for message in unsent { state.live[id]!.connection.outbound.yield(.text(message.text)) }
            } else {
                state.live[id]!.stream.hold()
            }
        }
    }

    // MARK: One connection

    /// Serves one upgraded connection: the hello or resume, then the session's messages out and the client's in.
    /// Throws what the inbound frames threw (a message too large, a protocol error): hummingbird-websocket closes the
    /// connection with the code it carries.
    func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, logger: Logger) async throws {
        let (commands, sink) = AsyncStream.makeStream(of: Outbound.self)
        let connection = ConnectionHandle(number: state.withLock { $0.nextConnection() }, outbound: sink)
        let settings = self.settings
        let greeted = Flag()
        let readerDone = Flag()
        let failure = Failure()
        await withTaskGroup(of: Bool.self) { group in
            // Out: the welcome and the messages the hub puts in `commands`, then a close, whose answer it waits for
            // (the reader ends) for the close timeout at most. Ends the connection: true.
            group.addTask {
                for await command in commands {
                    switch command {
                    case .text(let text):
                        try? await outbound.write(.text(text))
                    case .close(let code):
                        try? await outbound.close(WebSocketErrorCode(codeNumber: Int(code.rawValue)), reason: code.reason)
                        let deadline = ContinuousClock.now + settings.closeTimeout
                        while !readerDone.isSet, ContinuousClock.now < deadline {
                            try? await Task.sleep(for: .milliseconds(10))
                        }
                        return true
                    }
                }
                return true
            }
            // A connection that says nothing is closed.
            group.addTask {
                try? await Task.sleep(for: settings.helloTimeout)
                if !greeted.isSet { sink.yield(.close(.helloTimeout)) }
                return false
            }
            // In: the hello or resume, then acknowledgements, state, bye. Its end finishes what goes out.
            group.addTask {
                var session: String?
                do {
                    for try await message in inbound.messages(maxSize: settings.maximumClientMessage) {
                        // A message in one frame is bounded by the frame's size only: the message's bound is ours.
                        if case .text(let text) = message, text.utf8.count > settings.maximumClientMessage {
                            sink.yield(.close(.tooBig))
                            break
                        }
                        guard case .text(let text) = message, let parsed = ClientMessage.parse(text) else {
                            sink.yield(.close(.protocolViolation))
                            break
                        }
                        if let id = session {
                            if await self.received(parsed, session: id, connection: connection) { continue }
                            break
                        }
                        greeted.set()
                        guard let opened = await self.open(parsed, connection: connection) else { break }
                        session = opened
                    }
                } catch {
                    logger.debug("session connection ended", metadata: ["error": "\(error)"])
                    failure.error = error
                }
                if let session { await self.detach(session, connection: connection) }
                readerDone.set()
                sink.finish()
                return false
            }
            // Done once what goes out is done: the reader may still wait for a client that did not answer a close.
            for await endsConnection in group where endsConnection {
                group.cancelAll()
                break
            }
        }
        if let error = failure.error { throw error }
    }

    // The first message: a new session or a resumed one. Returns the session's identifier, or nil (and a close on the
    // way) when it is refused.
    private func open(_ message: ClientMessage, connection: ConnectionHandle) async -> String? {
        switch message {
        case .hello(let period):
            return await create(period: period, connection: connection)
        case .resume(let text, let last):
            return await resume(token: text, last: last, connection: connection)
        case .acknowledge, .set, .bye:
            refuse(connection, .protocolViolation)
            return nil
        }
    }

    private func create(period: Int?, connection: ConnectionHandle) async -> String? {
        let every = max(settings.shortestPeriod, period ?? settings.defaultPeriod)
        let token = SessionToken.make()
        let record = SessionRecord(id: token.identifier, secretHash: token.secretHash, everyMilliseconds: every, now: now())
        // Room first: the session disconnected longest ago ends when the process knows too many.
        let admitted = state.withLock { state -> Admission in
            guard state.phase == .serving else { return .refused(closeCode()) }
            guard state.live.count < settings.maximumSessions else { return .refused(.tooManySessions) }
            guard state.live.count + state.disconnected.count >= settings.maximumSessions,
                let oldest = state.disconnected.min(by: { $0.value < $1.value })?.key
            else { return .admitted(evicted: nil) }
            state.disconnected[oldest] = nil
            state.counts.ended += 1
            return .admitted(evicted: oldest)
        }
        switch admitted {
        case .refused(let code):
            refuse(connection, code)
            return nil
        case .admitted(let evicted):
            if let evicted {
                try? await store.delete(evicted, generation: Int.max)
                eventSink.yield(.ended([evicted]))
            }
        }
        // On the disk before the client hears of it: a session the client was told of survives a SIGKILL.
        do {
            try await store.save([record], durably: false)
        } catch {
            logger.error("sessions: a new session cannot be stored: \(error)")
            refuse(connection, .serviceRestart)
            return nil
        }
        var stream = SessionStreamMachine(record: record, limits: settings.streamLimits)
        stream.attachFirst()
        install(LiveSession(record: record, stream: stream, connection: connection, nextDue: clock.now), token, resumed: false)
        return record.id
    }

    private func resume(token text: String, last: UInt64, connection: ConnectionHandle) async -> String? {
        guard let token = SessionToken(parsing: Substring(text)) else {
            refuse(connection, .unknownSession)
            return nil
        }
        guard state.withLock({ $0.phase == .serving }) else {
            refuse(connection, closeCode())
            return nil
        }
        // The session in this process (a client that came back before its old connection was seen to go), else in
        // the store.
        let inMemory = state.withLock { $0.live[token.identifier]?.current }
        let loaded: SessionRecord?
        if let inMemory {
            loaded = inMemory
        } else {
            do {
                loaded = try await store.load(token.identifier)
            } catch {
                logger.error("sessions: the store cannot be read: \(error)")
                refuse(connection, .serviceRestart)
                return nil
            }
        }
        guard var record = loaded, token.matches(secretHash: record.secretHash) else {
            state.withLock { $0.counts.refused += 1 }
            refuse(connection, .unknownSession)
            return nil
        }
        var stream = SessionStreamMachine(record: record, limits: settings.streamLimits)
        guard stream.resume(last: last) == .resumed else {
            refuse(connection, .positionLost)
            return nil
        }
        record = stream.record(from: record)
        record.generation += 1
        record.writtenAt = now()
        // The new generation on the disk first: a process that held the session before writes over it no more.
        do {
            try await store.save([record], durably: false)
        } catch {
            logger.error("sessions: a resumed session cannot be stored: \(error)")
            refuse(connection, .serviceRestart)
            return nil
        }
        install(LiveSession(record: record, stream: stream, connection: connection, nextDue: clock.now), token, resumed: true)
        return record.id
    }

    // The session is connected: replaces another connection of it, sends the welcome, and pushes if its scene is active.
    private func install(_ session: LiveSession, _ token: SessionToken, resumed: Bool) {
        let id = session.record.id
        state.withLock { state in
            var session = session
            if let previous = state.live[id] {
                previous.connection.outbound.yield(.close(.replaced))
                session.record.generation = max(session.record.generation, previous.record.generation + 1)
            }
            state.disconnected[id] = nil
            if resumed { state.counts.resumed += 1 } else { state.counts.created += 1 }
            session.connection.outbound.yield(.text(ServerMessage.welcome(token: token, resumed: resumed, record: session.record)))
            if state.sceneActive.contains(id) {
                for message in session.stream.push() { session.connection.outbound.yield(.text(message.text)) }
            }
            state.live[id] = session
        }
        eventSink.yield(.connected(id))
    }

    // A message after the first; false when the connection is to close.
    private func received(_ message: ClientMessage, session id: String, connection: ConnectionHandle) async -> Bool {
        enum Outcome {
            case carryOn
            case violation
            case save(SessionRecord)
            case ended(SessionRecord)
        }
        let settings = self.settings
        let now = now()
        let outcome = state.withLock { state -> Outcome in
            guard var live = state.live[id], live.connection.number == connection.number else { return .carryOn }
            switch message {
            case .acknowledge(let seq):
                switch live.stream.acknowledge(seq) {
                case .violation: return .violation
                case .released: live.dirty = true
                case .none: break
                }
                state.live[id] = live
                return .carryOn
            case .set(let key, let value):
                guard key.utf8.count <= settings.maximumStateKey, value.utf8.count <= settings.maximumStateValue,
                    live.record.state[key] != nil || live.record.state.count < settings.maximumStateKeys
                else { return .violation }
                live.record.state[key] = value
                live.record.writtenAt = now
                live.dirty = false
                state.live[id] = live
                return .save(live.current)
            case .bye:
                state.counts.ended += 1
                state.live[id] = nil
                return .ended(live.current)
            case .hello, .resume:
                return .violation
            }
        }
        switch outcome {
        case .carryOn:
            return true
        case .violation:
            connection.outbound.yield(.close(.protocolViolation))
            return false
        case .save(let record):
            // Where the client is, on the disk at once.
            try? await store.save([record], durably: false)
            return true
        case .ended(let record):
            try? await store.delete(id, generation: record.generation)
            eventSink.yield(.ended([id]))
            connection.outbound.yield(.close(nil))
            return false
        }
    }

    // The connection went away: the session waits in the store for its client.
    private func detach(_ id: String, connection: ConnectionHandle) async {
        let now = now()
        let maximum = settings.maximumSessions
        let (record, evicted) = state.withLock { state -> (SessionRecord?, [String]) in
            guard var live = state.live[id], live.connection.number == connection.number else { return (nil, []) }
            live.stream.detach()
            live.record.writtenAt = now
            let record = live.current
            state.live[id] = nil
            state.disconnected[id] = now
            if case .finished = state.closeWindow?.closed(id) {
                state.allClosed?.resume()
                state.allClosed = nil
            }
            // Sessions admitted together may overshoot the bound: the ones left longest ago make room.
            var evicted: [String] = []
            while state.live.count + state.disconnected.count > maximum,
                let oldest = state.disconnected.min(by: { $0.value < $1.value })?.key
            {
                state.disconnected[oldest] = nil
                state.counts.ended += 1
                evicted.append(oldest)
            }
            return (record, evicted)
        }
        guard let record else { return }
        try? await store.save([record], durably: false)
        eventSink.yield(.disconnected(id))
        guard !evicted.isEmpty else { return }
        for gone in evicted { try? await store.delete(gone, generation: Int.max) }
        eventSink.yield(.ended(evicted))
    }

    private func refuse(_ connection: ConnectionHandle, _ code: SessionCloseCode) {
        connection.outbound.yield(.close(code))
    }

    // MARK: The loops

    // Produces the messages that are due, for every session pushed to whose window is open.
    private func produceLoop() async {
        let feed = self.feed
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
            let now = clock.now
            state.withLock { state in
                guard state.phase == .serving else { return }
                for index in state.live.values.indices {
                    guard state.live.values[index].stream.mayProduce, state.live.values[index].nextDue <= now else {
                        continue
                    }
                    let id = state.live.values[index].record.id
                    let topicState = state.live.values[index].record.state
                    let period = Duration.milliseconds(state.live.values[index].record.everyMilliseconds)
                    let action = state.live.values[index].stream.produce { seq in
                        ServerMessage.message(seq: seq, data: feed.data(session: id, seq: seq, state: topicState))
                    }
                    if case .send(let message) = action {
                        state.live.values[index].connection.outbound.yield(.text(message.text))
                    }
                    state.live.values[index].dirty = true
                    let next = state.live.values[index].nextDue + period
                    // Behind by more than a period (a busy machine): carry on from now rather than burst.
                    state.live.values[index].nextDue = next < now ? now + period : next
                }
            }
        }
    }

    // Writes the connected sessions whose positions moved (and those not written for a quarter of the expiry).
    private func checkpointLoop() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: settings.checkpointInterval)
            await checkpoint()
        }
    }

    private func checkpoint() async {
        let now = now()
        let stale = now - settings.expiry.seconds / 4
        let records = state.withLock { state -> [SessionRecord] in
            guard state.phase == .serving else { return [] }
            var records: [SessionRecord] = []
            for index in state.live.values.indices {
                let live = state.live.values[index]
                guard live.dirty || live.record.writtenAt < stale else { continue }
                state.live.values[index].dirty = false
                state.live.values[index].record.writtenAt = now
                records.append(state.live.values[index].current)
            }
            return records
        }
        guard !records.isEmpty else { return }
        do {
            try await store.save(records, durably: false)
        } catch {
            logger.error("sessions: checkpoint of \(records.count) sessions failed: \(error)")
            state.withLock { state in
                for record in records where state.live[record.id] != nil { state.live[record.id]!.dirty = true }
            }
        }
    }

    // Ends the sessions whose records were not written for the expiry.
    private func expiryLoop() async {
        let period = min(Duration.seconds(30), settings.expiry / 4)
        while !Task.isCancelled {
            try? await Task.sleep(for: period)
            guard let expired = try? await store.expire(notWrittenSince: now() - settings.expiry.seconds),
                !expired.isEmpty
            else { continue }
            state.withLock { state in
                for id in expired {
                    if state.disconnected.removeValue(forKey: id) != nil { state.counts.ended += 1 }
                }
            }
            eventSink.yield(.ended(expired))
        }
    }

    // MARK: Shutting down

    // Every connected session to the store (durably), then the closes spread over the window; returns once all have
    // closed, or at the deadline with the rest cut.
    private func shutDown() async {
        let code = closeCode()
        endpoint.finish()
        var generator = SystemRandomNumberGenerator()
        let now = now()
        let (records, schedule, connections) = state.withLock {
            state -> ([SessionRecord], [CloseWindowMachine<String>.ScheduledClose], [String: ConnectionHandle]) in
            state.phase = .closing
            var window = CloseWindowMachine<String>(window: settings.closeWindow)
            var records: [SessionRecord] = []
            var connections: [String: ConnectionHandle] = [:]
            for index in state.live.values.indices {
                state.live.values[index].stream.hold()
                state.live.values[index].record.writtenAt = now
                records.append(state.live.values[index].current)
                connections[state.live.values[index].record.id] = state.live.values[index].connection
            }
            let schedule = window.begin(Array(state.live.keys), using: &generator)
            state.closeWindow = window
            return (records, schedule, connections)
        }
        do {
            try await store.save(records, durably: true)
        } catch {
            logger.error("sessions: the final write of \(records.count) sessions failed: \(error)")
        }
        logger.info("sessions: closing \(schedule.count) connections with \(code.rawValue) over \(settings.closeWindow)")
        let start = clock.now
        let closing = Task {
            for close in schedule {
                try? await clock.sleep(until: start + close.after)
                connections[close.id]?.outbound.yield(.close(code))
            }
        }
        // Every connection closed, or the deadline: the window, the close timeout and a second's grace.
        let deadline = start + settings.closeWindow + settings.closeTimeout + .seconds(1)
        await withTaskGroup { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let done = self.state.withLock { state -> Bool in
                        if case .closed = state.closeWindow?.state { return true }
                        state.allClosed = continuation
                        return false
                    }
                    if done { continuation.resume() }
                }
            }
            group.addTask { try? await self.clock.sleep(until: deadline) }
            await group.next()
            group.cancelAll()
            // Whichever came first, nobody waits any more.
            self.state.withLock { state in
                state.allClosed?.resume()
                state.allClosed = nil
            }
        }
        closing.cancel()
        let cut = state.withLock { state -> [ConnectionHandle] in
            guard case .cut(let ids) = state.closeWindow?.deadlinePassed() else { return [] }
            return ids.compactMap { state.live[$0]?.connection }
        }
        if !cut.isEmpty { logger.warning("sessions: \(cut.count) connections did not close within the window; cut") }
        for connection in cut { connection.outbound.finish() }
        state.withLock { $0.phase = .closed }
    }

    private func now() -> Double {
        Date().timeIntervalSince1970
    }
}

// MARK: State

/// One connection's channel out: the messages and the close the hub puts in it.
struct ConnectionHandle: Sendable {
    let number: Int
    let outbound: AsyncStream<Outbound>.Continuation
}

/// What goes out on a connection.
enum Outbound: Sendable {
    case text(String)
    case close(SessionCloseCode?)
}

extension Optional where Wrapped == SessionCloseCode {
    var rawValue: UInt16 { self?.rawValue ?? 1000 }
    var reason: String { self?.reason ?? "bye" }
}

/// A connected session.
struct LiveSession: Sendable {
    var record: SessionRecord
    var stream: SessionStreamMachine
    var connection: ConnectionHandle
    var nextDue: ContinuousClock.Instant
    var dirty = false

    /// The record with the stream's positions.
    var current: SessionRecord {
        stream.record(from: record)
    }
}

enum Admission {
    case admitted(evicted: String?)
    case refused(SessionCloseCode)
}

struct HubState {
    enum Phase { case serving, closing, closed }
    var phase = Phase.serving
    var live: [String: LiveSession] = [:]
    /// Sessions this process knows that wait for their client, by when they were left.
    var disconnected: [String: Double] = [:]
    var sceneActive: Set<String> = []
    var closeWindow: CloseWindowMachine<String>?
    var allClosed: CheckedContinuation<Void, Never>?
    var counts = SessionCounts()
    private var connections = 0

    mutating func nextConnection() -> Int {
        connections += 1
        return connections
    }
}

/// A flag one task sets and others read.
private final class Flag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}

/// The error a connection's reader ended with.
private final class Failure: Sendable {
    private let value = Mutex<(any Error)?>(nil)
    var error: (any Error)? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

// The endpoint's handler reaches the hub that made it (set once, right after the endpoint).
private final class HubBox: Sendable {
    private let storage = Mutex<SessionHub?>(nil)
    var hub: SessionHub? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
