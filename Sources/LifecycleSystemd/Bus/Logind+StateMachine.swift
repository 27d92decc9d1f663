//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import SystemPackage

extension Logind {
    /// The client's state as a value: which connection it has and how far that got, the outage in progress, what the
    /// application wants and holds of the delay inhibitors, and what was reported once. ``Logind`` hands it each event
    /// of the bus and performs the actions it returns, in order; the machine does no I/O and reads no clock (the
    /// events that can begin an outage carry `now`), so `LogindStateMachineTests` drive it as a plain value.
    ///
    /// Which combinations are legal is the shape of ``State``: an outage carries its reconnection attempts, a lost
    /// connection says whether another follows, and the inhibitors exist only while the application wants them.
    ///
    /// An event returns a list of actions, not one: most of logind's events have several effects (a descriptor closed,
    /// the application told, a warning), in the order the contract fixes. The application hears announcements through
    /// ``Action/deliver(_:)`` and may take or release the inhibitors from inside it, so what an event does after a
    /// delivery depends on the state afterwards: that part comes as ``Action/then(_:)``, which the client hands back to
    /// ``resume(_:)`` when it gets there.
    ///
    /// Wrong events: one that our own client cannot send in a state (a reply after its call was dropped, a timer after
    /// it was cancelled) stops the process with the state named; a reply or signal that sd-bus may still dispatch
    /// after the connection closed is taken as the original client took it.
    struct StateMachine: CustomStringConvertible {
        /// Where the connection to the bus is.
        enum State {
            /// No connection and none planned: before ``connect()``, and after ``close()``.
            case idle
            /// A connection the bus has not answered on yet (its `Hello`). Losing the first one is the bus refusing
            /// this client; losing one made again after the bus closed (its outage says `busClosed`) continues the
            /// outage.
            case connecting(Connection, outage: Outage?)
            /// A connection the bus answered on.
            case up(Connection, outage: Outage?)
            /// The bus closed the connection; a timer tears it down (never inside sd-bus's dispatch of it), then a new
            /// one follows or, after a refusal, none.
            case lost(Connection, Loss)
            /// Between two connection attempts of an outage, with a timer armed for the next.
            case waitingToReconnect(Outage)
            /// The bus closed the first connection before it came up: it refuses this client, which a retry would not
            /// change.
            case refused
        }

        /// What one connection learned.
        struct Connection: Equatable {
            /// Who owns logind's name, as far as this connection knows.
            var owner = Owner.unknown(waiting: [])
            /// The subscriptions the bus answered on this connection (accepted or refused).
            var answeredSubscriptions: Set<String> = []
        }

        /// Who owns `org.freedesktop.login1`.
        enum Owner: Equatable {
            /// `GetNameOwner` has not answered: announcements wait (at most ``Logind/maximumWaitingAnnouncements``),
            /// so that none is judged against a guess.
            case unknown(waiting: [Announcement])
            /// The owner's unique name, or nil when the name has no owner.
            case known(String?)
        }

        /// An announcement kept until the owner of logind's name is known.
        struct Announcement: Equatable {
            /// Who sent it (nil: sd-bus made it up).
            var sender: String?
            /// What it announced.
            var event: Event
        }

        /// From the loss of logind (or of the bus) until logind owns its name again on a working connection and every
        /// inhibitor the application wants was answered.
        struct Outage: Equatable {
            /// What began the outage.
            enum Cause: Equatable, CustomStringConvertible {
                /// logind left the bus (`NameOwnerChanged` with no new owner).
                case logindLeft
                /// The bus closed a connection that was up.
                case busClosed

                var description: String {
                    switch self {
                    case .logindLeft: "logind left the system bus"
                    case .busClosed: "the system bus closed the connection"
                    }
                }
            }

            /// What began it.
            let cause: Cause
            /// When it began.
            let began: ContinuousClock.Instant
            /// Connection attempts since the bus closed the connection.
            var attempts = 0
            /// Whether the bus closed the connection during the outage (a new one was made).
            var busClosed: Bool
        }

        /// How a lost connection ends.
        enum Loss: Equatable {
            /// The bus closed the first connection before it came up: no other follows.
            case refused
            /// A connection that was up, or one made again after that: a new one follows.
            case outage(Outage)
        }

        /// One lock type's delay inhibitor.
        enum Inhibitor: Equatable {
            /// Neither held nor asked for.
            case released
            /// `Inhibit` was called; its answer is pending.
            case requested
            /// logind granted it: the descriptor whose closing releases it.
            case held(descriptor: Int32)
        }

        /// Both lock types' inhibitors.
        struct Inhibitors: Equatable {
            /// The sleep lock's.
            var sleep = Inhibitor.released
            /// The shutdown lock's.
            var shutdown = Inhibitor.released

            subscript(type: LockType) -> Inhibitor {
                get {
                    switch type {
                    case .sleep: sleep
                    case .shutdown: shutdown
                    }
                }
                set {
                    switch type {
                    case .sleep: sleep = newValue
                    case .shutdown: shutdown = newValue
                    }
                }
            }

            /// Whether an `Inhibit` call is pending.
            var anyRequested: Bool { sleep == .requested || shutdown == .requested }

            /// The lock types held, in ``LockType`` order.
            var held: [LockType] {
                LockType.allCases.filter {
                    if case .held = self[$0] { return true }
                    return false
                }
            }
        }

        /// A lock type that logind (or the bus's policy) refused, with the refusal.
        struct Refusal: Equatable {
            /// The lock type.
            var type: LockType
            /// The error reply.
            var failure: SdBus.ErrorReply
        }

        /// The answer to `GetNameOwner`.
        enum OwnerAnswer: Equatable {
            /// The owner's unique name.
            case owner(String)
            /// A reply without a string.
            case unreadable
            /// An error reply (`NameHasNoOwner` when logind is not running), `name: message`.
            case failed(String)
        }

        /// A `NameOwnerChanged`'s arguments that matter.
        struct OwnerChange: Equatable {
            /// The name whose owner changed.
            var name: String
            /// Its new owner; nil when it has none now.
            var newOwner: String?
        }

        /// The answer to `Inhibit`.
        enum InhibitAnswer: Equatable {
            /// The inhibitor: the client's own duplicate of the descriptor logind sent.
            case granted(descriptor: Int32)
            /// A reply without a descriptor.
            case noDescriptor
            /// A descriptor the client could not duplicate.
            case descriptorNotKept(Errno)
            /// An error reply.
            case failed(SdBus.ErrorReply)
        }

        /// What the next connection attempt waits for after one failed.
        struct Retry: Equatable {
            /// The attempt that failed.
            var attempt: Int
            /// The delay before the next.
            var delay: Duration
        }

        /// The part of an event that follows announcements delivered to the application.
        enum Continuation: Equatable {
            /// `GetNameOwner` named the owner: ask for the inhibitors, see whether the outage is over.
            case ownerAnswered
            /// `NameOwnerChanged` named a new owner: read its delay, ask for the inhibitors, see whether the outage is
            /// over.
            case logindAppeared(String)
        }

        /// Why a signal was dropped.
        enum IgnoreReason: Equatable, CustomStringConvertible {
            /// An announcement addressed to this connection.
            case addressedAnnouncement
            /// An announcement beyond those kept while the owner of logind's name is not known.
            case ownerNotKnownYet
            /// An announcement from someone other than the owner (named, or nil when the name has none).
            case notTheOwner(String?)
            /// A `NameOwnerChanged` from the bus driver, but addressed to this connection.
            case addressedOwnerChange
            /// A `NameOwnerChanged` from a peer.
            case ownerChangeFromPeer

            var description: String {
                switch self {
                case .addressedAnnouncement:
                    "it was addressed to this connection, and logind broadcasts its announcements"
                case .ownerNotKnownYet:
                    "the owner of \(Logind.busName) is not known yet"
                case .notTheOwner(let owner):
                    "it does not own \(Logind.busName) (\(owner.map { "\($0) does" } ?? "nobody does"))"
                case .addressedOwnerChange:
                    "it was addressed to this connection, and the bus driver broadcasts it"
                case .ownerChangeFromPeer:
                    "only the bus driver (\(SdBus.driverName)) tells who owns \(Logind.busName)"
                }
            }
        }

        /// What the client logs.
        enum Report: Equatable {
            /// A signal dropped (a notice at a bounded rate): what it was, its sender, why.
            case ignored(String, sender: String?, IgnoreReason)
            /// The bus refused a subscription (a warning).
            case subscriptionRefused(String)
            /// `GetNameOwner` failed: the name has no owner (debug).
            case ownerAbsent(String)
            /// `GetNameOwner` named the owner (debug).
            case ownerNamed(String)
            /// logind appeared on the bus as this unique name (info).
            case logindAppeared(String)
            /// logind left the bus: a warning when it begins an outage, else debug.
            case logindLeft(first: Bool)
            /// The bus closed a connection that was up: a warning when it begins an outage, else debug.
            case busClosed(String, first: Bool)
            /// The bus closed the first connection before it came up (a warning, once).
            case busRefusedClient(String)
            /// A connection made again during an outage came up (debug).
            case reconnected(Outage)
            /// The outage is over (a notice): logind's owner, the lock types held, whether the application wants them.
            case recovered(Outage, owner: String, held: [LockType], wanted: Bool)
            /// logind is not available: a warning the first time, else debug.
            case unavailable(String, first: Bool)
            /// A lock type refused again (debug).
            case refusedAgain(Refusal)
            /// The refusals noted since the last report (one warning).
            case refused([Refusal])
            /// logind granted an inhibitor without a descriptor (a warning).
            case noDescriptor(LockType)
            /// The client could not keep the descriptor (a warning).
            case descriptorNotKept(LockType, Errno)
        }

        /// What the client does, in the order given.
        enum Action: Equatable {
            /// Call `Inhibit` for the lock type; a call that cannot be sent comes back as
            /// ``inhibitRequestFailed(_:reason:)``.
            case requestInhibitor(LockType)
            /// Drop the pending `Inhibit` call: its reply, and the descriptor it may carry, go with it.
            case cancelInhibitorRequest(LockType)
            /// Close the inhibitor's descriptor and tell ``Logind/onInhibitorChange``; `released` says the
            /// application let go (rather than logind or the bus leaving with it).
            case closeInhibitor(LockType, descriptor: Int32, released: Bool)
            /// Tell ``Logind/onInhibitorChange`` that the inhibitor is held.
            case inhibitorHeld(LockType, descriptor: Int32)
            /// Read logind's `InhibitDelayMaxUSec` again.
            case queryInhibitDelayMax
            /// Arm the timer whose firing is ``timerFired()``.
            case armTimer(after: Duration)
            /// Drop every subscription and pending call of the connection, then the connection.
            case detach
            /// Make a new connection; if that fails at once, tell ``reconnectFailed()``.
            case reconnect(attempt: Int)
            /// Give the application an announcement from logind.
            case deliver(Event)
            /// Tell ``Logind/onSetupProgress`` that something ``awaiting`` lists may have arrived.
            case setupProgressed
            /// Hand the continuation to ``resume(_:)`` now.
            case then(Continuation)
            /// Log.
            case report(Report)
        }

        private var state = State.idle
        /// The inhibitors while the application wants them (``takeInhibitors()`` until ``releaseInhibitors()``); nil
        /// otherwise, when none is held or asked for.
        private var inhibitors: Inhibitors?
        /// logind's absence was reported: repeats are debug lines until logind appears or grants an inhibitor.
        private var unavailabilityReported = false
        /// The bus's refusal of this client was reported.
        private var refusalReported = false
        // Refusals wait for the other lock type's answer, so that one warning names both; each type is reported once
        // until it is granted.
        private var pendingRefusals: [Refusal] = []
        private var reportedRefusals: Set<LockType> = []

        /// A client with no connection, whose application wants no inhibitor yet.
        init() {}

        // MARK: What the client shows

        /// The state's name, for preconditions and tests.
        var description: String {
            switch state {
            case .idle: "idle"
            case .connecting: "connecting"
            case .up: "up"
            case .lost(_, .refused): "lost (refused)"
            case .lost(_, .outage): "lost (reconnecting)"
            case .waitingToReconnect: "waiting to reconnect"
            case .refused: "refused"
            }
        }

        /// The unique name that owns logind's name, as the connection knows it; nil when unknown or unowned.
        var owner: String? {
            if case .known(let owner)? = state.connection?.owner { return owner }
            return nil
        }

        /// The lock types whose inhibitor is held.
        var heldLocks: Set<LockType> { Set(inhibitors?.held ?? []) }

        /// Whether an outage is in progress.
        var isRecovering: Bool { state.outage != nil }

        /// What ``Logind/awaiting`` lists: empty without a working connection, and when logind has no owner.
        var awaiting: [String] {
            guard let connection = state.liveConnection else { return [] }
            var missing = Logind.subscriptions.filter { !connection.answeredSubscriptions.contains($0) }
                .map { "the subscription to \($0)" }
            switch connection.owner {
            case .unknown: missing.append("the owner of \(Logind.busName)")
            case .known(nil): return missing
            case .known: break
            }
            if let inhibitors {
                missing += LockType.allCases.filter { inhibitors[$0] == .requested }.map { "the \($0) delay inhibitor" }
            }
            return missing
        }

        // MARK: The application

        /// ``Logind/connect(address:)``: the first connection, which the client attaches next.
        mutating func connect() {
            guard case .idle = state else { preconditionFailure("Logind.connect called twice (the client is \(self))") }
            state = .connecting(Connection(), outage: nil)
        }

        /// ``Logind/close()``: the inhibitors released, the connection dropped, no reconnection.
        mutating func close() -> [Action] {
            state = .idle
            return releaseInhibitors() + [.detach]
        }

        /// ``Logind/takeInhibitors()``: from now on the application wants both inhibitors.
        mutating func takeInhibitors() -> [Action] {
            if inhibitors == nil { inhibitors = Inhibitors() }
            return requestInhibitorsIfNeeded()
        }

        /// ``Logind/releaseInhibitors()``: both inhibitors closed, the requests pending cancelled.
        mutating func releaseInhibitors() -> [Action] {
            let actions = dropInhibitors(released: true)
            inhibitors = nil
            return actions
        }

        /// Carries on with the part of an event that follows its deliveries.
        mutating func resume(_ continuation: Continuation) -> [Action] {
            switch continuation {
            case .ownerAnswered:
                // After an outage the inhibitors are asked for again here: logind is there (the first connection
                // asks in takeInhibitors, which the application calls at once).
                return requestInhibitorsIfNeeded() + checkRecovery() + [.setupProgressed]
            case .logindAppeared(let owner):
                unavailabilityReported = false
                // No connection when the application closed the client from inside a delivery.
                let query: [Action] = state.connection == nil ? [] : [.queryInhibitDelayMax]
                return [.report(.logindAppeared(owner))] + query + requestInhibitorsIfNeeded() + checkRecovery()
            }
        }

        // MARK: The bus

        /// The bus answered an `AddMatch` (`failure` nil when it accepted); `busOpen` is whether the connection is
        /// still open.
        mutating func subscriptionAnswered(
            _ member: String,
            failure: String?,
            busOpen: Bool,
            now: ContinuousClock.Instant
        ) -> [Action] {
            guard state.connection != nil else { preconditionFailure("an AddMatch reply while \(self)") }
            updateConnection { $0.answeredSubscriptions.insert(member) }
            let actions: [Action]
            if let failure {
                actions = busOpen ? [.report(.subscriptionRefused(failure))] : connectionLost(failure, now: now)
            } else {
                actions = connectionUp(busOpen: busOpen)
            }
            return actions + [.setupProgressed]
        }

        /// `GetNameOwner` answered.
        mutating func ownerAnswered(_ answer: OwnerAnswer, busOpen: Bool, now: ContinuousClock.Instant) -> [Action] {
            guard state.connection != nil else { preconditionFailure("a GetNameOwner reply while \(self)") }
            switch answer {
            case .failed(let failure) where !busOpen:
                return connectionLost(failure, now: now) + [.setupProgressed]
            case .failed(let failure):
                // org.freedesktop.DBus.Error.NameHasNoOwner: logind is not running (yet).
                return connectionUp(busOpen: busOpen) + [.report(.ownerAbsent(failure))] + settleOwner(nil)
                    + requestInhibitorsIfNeeded() + [.setupProgressed]
            case .unreadable:
                return connectionUp(busOpen: busOpen) + settleOwner(nil) + [.setupProgressed]
            case .owner(let owner):
                return connectionUp(busOpen: busOpen) + [.report(.ownerNamed(owner))] + settleOwner(owner)
                    + [.then(.ownerAnswered)]
            }
        }

        /// A `PrepareForSleep` or `PrepareForShutdown` arrived.
        mutating func announcementReceived(_ event: Event, from sender: String?, isBroadcast: Bool) -> [Action] {
            guard state.connection != nil else { preconditionFailure("an announcement while \(self)") }
            guard isBroadcast else { return [.report(.ignored("\(event)", sender: sender, .addressedAnnouncement))] }
            return judge(event, from: sender)
        }

        /// A `NameOwnerChanged` for logind's name arrived (`member` names it in reports); `change` is nil when its
        /// arguments could not be read.
        mutating func nameOwnerChanged(
            member: String,
            from sender: String?,
            isBroadcast: Bool,
            change: OwnerChange?,
            now: ContinuousClock.Instant
        ) -> [Action] {
            guard state.connection != nil else { preconditionFailure("a NameOwnerChanged while \(self)") }
            // Only the bus driver knows who owns a name, and it broadcasts the change: a NameOwnerChanged from a peer,
            // or one addressed to this connection, would let that peer name itself logind.
            guard sender == SdBus.driverName, isBroadcast else {
                let reason = sender == SdBus.driverName ? IgnoreReason.addressedOwnerChange : .ownerChangeFromPeer
                return [.report(.ignored(member, sender: sender, reason))]
            }
            guard let change, change.name == Logind.busName else { return [] }
            let actions = settleOwner(change.newOwner)
            if let newOwner = change.newOwner { return actions + [.then(.logindAppeared(newOwner))] }
            return actions + logindLeft(now: now)
        }

        /// `Inhibit` answered for a lock type it was asked for.
        mutating func inhibitorAnswered(
            _ type: LockType,
            _ answer: InhibitAnswer,
            busOpen: Bool,
            now: ContinuousClock.Instant
        ) -> [Action] {
            // The client drops a call's slot, and its reply with it, whenever the lock leaves `requested`.
            guard var wanted = inhibitors, wanted[type] == .requested else {
                preconditionFailure("an Inhibit reply for \(type), which was not asked for (the client is \(self))")
            }
            wanted[type] = .released
            inhibitors = wanted
            let actions: [Action]
            switch answer {
            case .failed(let failure) where !busOpen:
                // Every other call fails the same way; nothing is waiting to be reported with this one.
                return connectionLost(failure.text, now: now) + [.setupProgressed]
            case .failed(let failure):
                actions = failure.isRefusal ? refused(type, failure) : [reportUnavailable(failure.text)]
            case .noDescriptor:
                actions = [.report(.noDescriptor(type))]
            case .descriptorNotKept(let errno):
                actions = [.report(.descriptorNotKept(type, errno))]
            case .granted(let descriptor):
                inhibitors?[type] = .held(descriptor: descriptor)
                unavailabilityReported = false
                reportedRefusals.remove(type)
                actions = [.inhibitorHeld(type, descriptor: descriptor)]
            }
            return actions + reportRefusals() + checkRecovery() + [.setupProgressed]
        }

        /// An `Inhibit` call the client was told to make could not be sent (``Action/requestInhibitor(_:)``).
        mutating func inhibitRequestFailed(_ type: LockType, reason: String) -> [Action] {
            guard inhibitors?[type] == .requested else {
                preconditionFailure("an Inhibit call for \(type) failed, which was not made (the client is \(self))")
            }
            inhibitors?[type] = .released
            return [reportUnavailable(reason)]
        }

        /// sd-bus's `Disconnected`: the connection is closed.
        mutating func connectionClosed(_ failure: String, now: ContinuousClock.Instant) -> [Action] {
            connectionLost(failure, now: now)
        }

        /// The timer of ``Action/armTimer(after:)`` fired: the lost connection goes, and a new one follows unless the
        /// bus refused this client.
        mutating func timerFired() -> [Action] {
            switch state {
            case .lost(_, .refused):
                state = .refused
                // Calls still pending go with the connection.
                if var wanted = inhibitors {
                    for type in LockType.allCases where wanted[type] == .requested { wanted[type] = .released }
                    inhibitors = wanted
                }
                return [.detach]
            case .lost(_, .outage(var outage)), .waitingToReconnect(var outage):
                outage.attempts += 1
                state = .connecting(Connection(), outage: outage)
                return [.detach, .reconnect(attempt: outage.attempts)]
            case .idle:
                // close() cancels the timer, but an event the application closed the client from (in a callback)
                // goes on to arm it: nothing is left to tear down.
                return []
            case .connecting, .up, .refused:
                preconditionFailure("Logind's reconnection timer fired while \(self): it is armed only after a loss")
            }
        }

        /// The connection of ``Action/reconnect(attempt:)`` could not be made: the next attempt waits.
        mutating func reconnectFailed() -> Retry {
            guard case .connecting(_, let outage?) = state, outage.busClosed else {
                preconditionFailure("a reconnection failed while \(self), which makes none")
            }
            state = .waitingToReconnect(outage)
            return Retry(attempt: outage.attempts, delay: Logind.reconnectDelay(afterAttempt: outage.attempts))
        }

        // MARK: Steps of the events

        /// The bus answered on the connection: it is up.
        private mutating func connectionUp(busOpen: Bool) -> [Action] {
            guard busOpen, case .connecting(let connection, let outage) = state else { return [] }
            state = .up(connection, outage: outage)
            guard let outage, outage.busClosed else { return [] }
            return [.report(.reconnected(outage))]
        }

        /// The connection is closed. One that never came up is the bus refusing this client: one warning, and
        /// nothing more. One that was up is an outage: the inhibitors are gone with it, and the client reconnects.
        private mutating func connectionLost(_ failure: String, now: ContinuousClock.Instant) -> [Action] {
            let connection: Connection
            let current: Outage?
            switch state {
            case .connecting(let c, let outage):
                (connection, current) = (c, outage)
            case .up(let c, let outage):
                (connection, current) = (c, outage)
            case .idle, .lost, .waitingToReconnect, .refused:
                // Lost already: sd-bus fails each pending call, then sends Disconnected.
                return []
            }
            // Only a connection made again after the bus closed one has an outage that says so, and it follows one
            // that was up. (An outage logind began before the first connection came up ends with the refusal: the
            // bus driver answers the AddMatch of NameOwnerChanged, which brings the connection up, before it sends
            // one.)
            let everConnected = if case .up = state { true } else { current?.busClosed == true }
            guard everConnected else {
                state = .lost(connection, .refused)
                var actions: [Action] = []
                if !refusalReported {
                    refusalReported = true
                    actions.append(.report(.busRefusedClient(failure)))
                }
                return actions + [.armTimer(after: .zero), .setupProgressed]
            }
            var actions: [Action]
            var outage: Outage
            if var current {
                current.busClosed = true
                outage = current
                actions = [.report(.busClosed(failure, first: false))]
            } else {
                outage = Outage(cause: .busClosed, began: now, busClosed: true)
                actions = [.report(.busClosed(failure, first: true))]
            }
            var lost = connection
            // Announcements waiting for an owner that will not answer now.
            lost.owner = .unknown(waiting: [])
            state = .lost(lost, .outage(outage))
            actions += dropInhibitors(released: false)
            let delay = outage.attempts == 0 ? .zero : Logind.reconnectDelay(afterAttempt: outage.attempts)
            return actions + [.armTimer(after: delay), .setupProgressed]
        }

        /// logind left the bus: its inhibitors went with it (it closed its ends of their descriptors).
        private mutating func logindLeft(now: ContinuousClock.Instant) -> [Action] {
            var actions: [Action]
            switch state {
            case .connecting(let connection, nil):
                state = .connecting(connection, outage: Outage(cause: .logindLeft, began: now, busClosed: false))
                actions = [.report(.logindLeft(first: true))]
            case .up(let connection, nil):
                state = .up(connection, outage: Outage(cause: .logindLeft, began: now, busClosed: false))
                actions = [.report(.logindLeft(first: true))]
            case .connecting, .up, .lost, .idle, .waitingToReconnect, .refused:
                // An outage is in progress, or the bus closed the connection (after which sd-bus dispatches no signal).
                actions = [.report(.logindLeft(first: false))]
            }
            return actions + dropInhibitors(released: false)
        }

        /// The owner of logind's name is known: the announcements that waited are judged now.
        private mutating func settleOwner(_ owner: String?) -> [Action] {
            var previous: Owner?
            updateConnection {
                previous = $0.owner
                $0.owner = .known(owner)
            }
            var actions: [Action] = []
            if case .unknown(let waiting)? = previous {
                for announcement in waiting { actions += judge(announcement.event, from: announcement.sender) }
            }
            return actions + [.setupProgressed]
        }

        /// Delivers an announcement from the owner, keeps it while the owner is unknown, drops the rest.
        private mutating func judge(_ event: Event, from sender: String?) -> [Action] {
            switch state.connection?.owner {
            case .unknown(var waiting)?:
                guard waiting.count < Logind.maximumWaitingAnnouncements else {
                    return [.report(.ignored("\(event)", sender: sender, .ownerNotKnownYet))]
                }
                waiting.append(Announcement(sender: sender, event: event))
                updateConnection { $0.owner = .unknown(waiting: waiting) }
                return []
            case .known(let owner)?:
                guard let sender, let owner, sender == owner else {
                    return [.report(.ignored("\(event)", sender: sender, .notTheOwner(owner)))]
                }
                return [.deliver(event)]
            case nil:
                return []
            }
        }

        /// Asks for each inhibitor the application wants that is neither held nor asked for, on a working
        /// connection whose logind has an owner (or is not known yet).
        private mutating func requestInhibitorsIfNeeded() -> [Action] {
            guard var wanted = inhibitors, let connection = state.liveConnection else { return [] }
            let missing = LockType.allCases.filter { wanted[$0] == .released }
            guard !missing.isEmpty else { return [] }
            if case .known(nil) = connection.owner {
                // Nobody owns the name: calling would only ask the bus to activate logind.
                return [reportUnavailable("\(Logind.busName) has no owner on the system bus")]
            }
            for type in missing { wanted[type] = .requested }
            inhibitors = wanted
            return missing.map(Action.requestInhibitor)
        }

        /// Cancels the pending `Inhibit` calls and closes the descriptors held, then reports the refusals that
        /// waited for them.
        private mutating func dropInhibitors(released: Bool) -> [Action] {
            guard var wanted = inhibitors else { return reportRefusals() }
            var actions: [Action] = []
            for type in LockType.allCases {
                switch wanted[type] {
                case .released:
                    continue
                case .requested:
                    // Dropping the pending call drops its reply, and with it the descriptor logind may have sent.
                    actions.append(.cancelInhibitorRequest(type))
                case .held(let descriptor):
                    actions.append(.closeInhibitor(type, descriptor: descriptor, released: released))
                }
                wanted[type] = .released
            }
            inhibitors = wanted
            // A refusal waiting for the other answer, which will not come now.
            return actions + reportRefusals()
        }

        /// Notes a refusal for the warning ``reportRefusals()`` gives once the other lock type has its answer too.
        private mutating func refused(_ type: LockType, _ failure: SdBus.ErrorReply) -> [Action] {
            guard !reportedRefusals.contains(type) else {
                return [.report(.refusedAgain(Refusal(type: type, failure: failure)))]
            }
            reportedRefusals.insert(type)
            pendingRefusals.append(Refusal(type: type, failure: failure))
            return []
        }

        /// One warning for the refusals noted, once no `Inhibit` call is pending.
        private mutating func reportRefusals() -> [Action] {
            guard !pendingRefusals.isEmpty, inhibitors?.anyRequested != true else { return [] }
            defer { pendingRefusals.removeAll() }
            return [.report(.refused(pendingRefusals))]
        }

        /// One warning per absence of logind; repeats, and an absence inside an outage or after the bus refused this
        /// client, are debug lines.
        private mutating func reportUnavailable(_ reason: String) -> Action {
            if unavailabilityReported || refusalReported || state.outage != nil {
                return .report(.unavailable(reason, first: false))
            }
            unavailabilityReported = true
            return .report(.unavailable(reason, first: true))
        }

        /// Ends the outage once logind owns its name again on a working connection and every inhibitor the
        /// application wants has been answered (granted, or refused: a refusal has its own warning).
        private mutating func checkRecovery() -> [Action] {
            guard case .up(let connection, let outage?) = state, case .known(let owner?) = connection.owner else {
                return []
            }
            if let inhibitors {
                let answered = inhibitors.held.count > 0 || !reportedRefusals.isEmpty
                guard !inhibitors.anyRequested, answered else { return [] }
            }
            state = .up(connection, outage: nil)
            let held = inhibitors?.held ?? []
            return [.report(.recovered(outage, owner: owner, held: held, wanted: inhibitors != nil))]
        }

        /// Changes the connection in place, in any state that has one.
        private mutating func updateConnection(_ change: (inout Connection) -> Void) {
            switch state {
            case .connecting(var connection, let outage):
                change(&connection)
                state = .connecting(connection, outage: outage)
            case .up(var connection, let outage):
                change(&connection)
                state = .up(connection, outage: outage)
            case .lost(var connection, let loss):
                change(&connection)
                state = .lost(connection, loss)
            case .idle, .waitingToReconnect, .refused:
                break
            }
        }
    }
}

extension Logind.StateMachine.State {
    /// The connection, in a state that has one (its subscriptions and calls may still answer).
    fileprivate var connection: Logind.StateMachine.Connection? {
        switch self {
        case .connecting(let connection, _), .up(let connection, _), .lost(let connection, _): connection
        case .idle, .waitingToReconnect, .refused: nil
        }
    }

    /// The connection, while it works (not lost).
    fileprivate var liveConnection: Logind.StateMachine.Connection? {
        switch self {
        case .connecting(let connection, _), .up(let connection, _): connection
        case .idle, .lost, .waitingToReconnect, .refused: nil
        }
    }

    /// The outage in progress.
    fileprivate var outage: Logind.StateMachine.Outage? {
        switch self {
        case .connecting(_, let outage), .up(_, let outage): outage
        case .lost(_, .outage(let outage)), .waitingToReconnect(let outage): outage
        case .idle, .lost(_, .refused), .refused: nil
        }
    }
}

extension SdBus.ErrorReply {
    // What an absent, starting or hung logind (or a closed connection) looks like: the bus driver's answers for a
    // name without owner, and the errors sd-bus makes up itself for a call that got no reply.
    private static let absence: Set<String> = [
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
        "org.freedesktop.DBus.Error.NoReply",
        "org.freedesktop.DBus.Error.Timeout",
        "org.freedesktop.DBus.Error.Disconnected",
    ]

    /// Whether asking logind again would get the same answer: an error from logind itself (polkit's `AccessDenied`,
    /// an invalid argument), or the bus's policy denying the call. Anything else from the bus driver (no owner, a
    /// failed activation) means logind is not there.
    fileprivate var isRefusal: Bool {
        guard !Self.absence.contains(name) else { return false }
        return !fromBusDriver || name == "org.freedesktop.DBus.Error.AccessDenied"
    }
}
