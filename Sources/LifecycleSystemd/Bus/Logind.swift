//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import Logging
import SystemPackage
@_spi(Testing) package import LifecycleIPC
@_spi(Testing) import LifecycleKit

#if canImport(Glibc)
import Glibc
#endif

/// A client of systemd-logind (`org.freedesktop.login1`) on the system bus, driven by a ``MainLoop``: it holds a
/// delay inhibitor for sleep and one for shutdown, and reports logind's `PrepareForSleep` and `PrepareForShutdown`.
///
/// Only logind can move the application. The bus filters broadcasts by the match's sender, but sd-bus, not knowing
/// the well-known names of a sender, accepts any unique-name sender for a well-known match locally, and a signal
/// addressed to this connection (`busctl emit --destination=…`) reaches it whatever its match rules say: any local
/// user may send one. So the client tracks the owner of `org.freedesktop.login1` (`GetNameOwner`, then the bus
/// driver's `NameOwnerChanged`) and takes a signal only when it was broadcast (no destination) by the right sender:
/// `NameOwnerChanged` from the bus driver itself (`org.freedesktop.DBus`, a sender no peer can take), announcements
/// from the tracked owner's unique name. Everything else is dropped, counted (``ignoredSignals``) and reported in a
/// notice at most once per ``strangerReportInterval``, with the count of those held back.
///
/// Each inhibitor is the file descriptor `Inhibit(what, who, why, "delay")` returns; closing it releases the lock.
/// There are two, `Inhibit("sleep", …)` and `Inhibit("shutdown", …)`, not one `"sleep:shutdown"`: logind picks the
/// polkit action by comparing `what` with each single lock type, so a combined `what` falls through to
/// `org.freedesktop.login1.inhibit-handle-lid-switch`, which an unprivileged user is refused, while
/// `inhibit-delay-sleep` and `inhibit-delay-shutdown` are allowed to anyone. Like ``MainLoop``, a client lives on the
/// loop's thread and calls its handler there.
///
/// Outages heal themselves. When logind leaves the bus (a restart), its inhibitors go with it: the client closes its
/// descriptors and takes new inhibitors as soon as logind is back. When the bus closes a connection that was up
/// (dbus-daemon restarted), the client drops it and reconnects from the loop, at once and then after
/// ``reconnectDelays`` (never blocking the loop: connecting is asynchronous in sd-bus), subscribes again and takes the
/// inhibitors the application still wants. Each outage is one warning; its end, one notice with its length
/// (`LIFECYCLE_OUTAGE_MS`). A connection the bus closes before it ever came up is the bus refusing this client (a
/// `DynamicUser=`), which a retry would not change: one warning, and no reconnection.
package final class Logind {
    /// An announcement from logind.
    package enum Event: Hashable, Sendable, CustomStringConvertible {
        /// `PrepareForSleep(true)`: the system is about to suspend or hibernate; `false`: it resumed.
        case prepareForSleep(Bool)
        /// `PrepareForShutdown(true)`: the system is about to shut down; `false`: the shutdown was cancelled.
        case prepareForShutdown(Bool)

        /// The D-Bus signal's member name.
        package var member: String {
            switch self {
            case .prepareForSleep: "PrepareForSleep"
            case .prepareForShutdown: "PrepareForShutdown"
            }
        }

        /// The signal's boolean: true before the sleep or shutdown, false after (resume, cancellation).
        package var isStarting: Bool {
            switch self {
            case .prepareForSleep(let value), .prepareForShutdown(let value): value
            }
        }

        package var description: String { "\(member)(\(isStarting))" }
    }

    /// A lock type that a delay inhibitor blocks; the raw value is logind's `what`.
    package enum LockType: String, CaseIterable, Hashable, Sendable, CustomStringConvertible {
        /// Suspend and hibernation: logind waits for it after `PrepareForSleep(true)`.
        case sleep
        /// Power-off and reboot: logind waits for it after `PrepareForShutdown(true)`.
        case shutdown

        /// The polkit action logind checks before granting a delay lock of this type.
        package var polkitAction: String { "org.freedesktop.login1.inhibit-delay-\(rawValue)" }

        /// The announcement whose wait the lock extends.
        package var announcement: String {
            switch self {
            case .sleep: "PrepareForSleep"
            case .shutdown: "PrepareForShutdown"
            }
        }

        package var description: String { rawValue }
    }

    /// logind's well-known bus name.
    package static let busName = "org.freedesktop.login1"
    static let objectPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"

    /// Who holds the inhibitor, as `systemd-inhibit --list` shows it.
    package let who: String
    /// Why, as `systemd-inhibit --list` shows it.
    package let why: String
    /// Called for every announcement from logind (and only logind), on the loop's thread.
    package var onEvent: (Event) -> Void
    /// Called when the inhibitor of a lock type is granted (true) or released or lost (false), on the loop's thread.
    package var onInhibitorChange: (LockType, Bool) -> Void = { _, _ in }

    /// logind's `InhibitDelayMaxUSec`: how long it waits for delay inhibitors; nil until read (or unreadable).
    package private(set) var inhibitDelayMax: Duration?
    /// The unique name of the connection that owns `org.freedesktop.login1`; nil when unknown or unowned.
    package var owner: String? {
        if case .known(let owner) = ownerState { return owner }
        return nil
    }
    /// The lock types whose delay inhibitor is held now.
    package var heldLocks: Set<LockType> { Set(LockType.allCases.filter { inhibitors[$0].descriptor >= 0 }) }
    /// Whether both delay inhibitors, sleep and shutdown, are held now.
    package var holdsInhibitors: Bool { heldLocks.count == LockType.allCases.count }
    /// This connection's unique name on the bus, once connected.
    package var uniqueName: String? { bus?.uniqueName }
    /// Whether logind or the bus is away and the client waits for it (or reconnects to the bus) to hold its inhibitors
    /// again.
    package var isRecovering: Bool { outage != nil }
    /// How many times the client connected to the bus again after losing its connection.
    package private(set) var reconnections = 0
    /// Signals dropped because they did not come from the bus driver or logind, or were addressed to this
    /// connection instead of broadcast.
    package private(set) var ignoredSignals = 0

    /// What the client still waits for before logind's announcements are sure to reach it and the delay inhibitors
    /// it wants are answered: the subscriptions, the owner of logind's name, each inhibitor asked for. Empty once all
    /// are in place (an inhibitor refused counts as answered), and whenever waiting could not help: logind has no owner,
    /// or the connection is closed.
    package var awaiting: [String] {
        guard bus != nil, !busLost else { return [] }
        var missing = Self.subscriptions.filter { !answeredSubscriptions.contains($0) }.map { "the subscription to \($0)" }
        switch ownerState {
        case .unknown: missing.append("the owner of \(Self.busName)")
        case .known(nil): return missing
        case .known: break
        }
        if wantsInhibitors {
            missing += LockType.allCases.filter { inhibitors[$0].call != nil }.map { "the \($0) delay inhibitor" }
        }
        return missing
    }
    /// Called on the loop's thread whenever something ``awaiting`` lists may have arrived.
    package var onSetupProgress: () -> Void = {}

    /// The signals the client subscribes to.
    static let subscriptions = ["PrepareForSleep", "PrepareForShutdown", "NameOwnerChanged"]

    /// At most one notice about ignored signals per this interval; the next one counts those held back.
    package static let strangerReportInterval = Duration.seconds(10)
    /// Announcements kept while the owner of logind's name is not known yet; later ones are dropped (logind sends
    /// one or two).
    static let maximumWaitingAnnouncements = 8

    /// The delays before the attempts to reconnect after the first (which is at once), the last repeated: the bus of
    /// a restarting dbus-daemon is listening again within milliseconds (systemd holds its socket), so the first
    /// attempts come quickly; a bus that stays away is tried every 5 s.
    package static let reconnectDelays: [Duration] = [
        .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
        .milliseconds(3200), .seconds(5),
    ]

    private enum OwnerState {
        // GetNameOwner has not answered: announcements wait, so that none is judged against a guess.
        case unknown(waiting: [(sender: String?, event: Event)])
        case known(String?)
    }

    private let loop: MainLoop
    private let logger: Logger
    private var address: String?
    private var bus: SdBus?
    /// The current connection was lost; it is torn down from the loop, not inside sd-bus's dispatch of it.
    private var busLost = false
    /// The bus answered on the current connection (its `Hello` is done).
    private var busUp = false
    /// Some connection of this client came up: losing one later is an outage, not a refusal.
    private var everConnected = false
    private var outage: Outage?
    private var reconnection: MainLoop.Source?
    private var matchSlots: [SdBus.Slot] = []
    private var ownerQuery: SdBus.Slot?
    private var propertyQuery: SdBus.Slot?
    private var inhibitors = Inhibitors()
    private var wantsInhibitors = false
    private var ownerState = OwnerState.unknown(waiting: [])
    private var unavailabilityReported = false
    private var connectionLossReported = false
    // Refusals wait for the other lock type's answer, so that one warning names both; each type is reported once
    // until it is granted.
    private var pendingRefusals: [(type: LockType, failure: SdBus.ErrorReply)] = []
    private var reportedRefusals: Set<LockType> = []
    private var strangerReports = RateLimiter(minimumInterval: Logind.strangerReportInterval)
    /// The subscriptions the bus answered on the current connection (accepted or refused).
    private var answeredSubscriptions: Set<String> = []
    private let clockOrigin = ContinuousClock.now

    /// From the loss of logind (or of the bus) until logind owns its name again and every inhibitor the application
    /// wants was answered.
    private struct Outage {
        enum Cause: CustomStringConvertible {
            case logindLeft
            case busClosed

            var description: String {
                switch self {
                case .logindLeft: "logind left the system bus"
                case .busClosed: "the system bus closed the connection"
                }
            }
        }

        let cause: Cause
        let began: ContinuousClock.Instant
        /// Connection attempts since the bus closed the connection.
        var attempts = 0
        var busClosed: Bool
    }

    /// One lock type's inhibitor: its descriptor once granted, its pending `Inhibit` call until then.
    private struct Inhibitor {
        var descriptor: Int32 = -1
        var call: SdBus.Slot?
    }

    private struct Inhibitors {
        var sleep = Inhibitor()
        var shutdown = Inhibitor()

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

        var anyCallPending: Bool { sleep.call != nil || shutdown.call != nil }
    }

    /// Creates a client; ``connect(address:)`` attaches it to the bus.
    package init(
        loop: MainLoop,
        who: String,
        why: String,
        logger: Logger,
        onEvent: @escaping (Event) -> Void = { _ in }
    ) {
        self.loop = loop
        self.who = who
        self.why = why
        self.logger = logger
        self.onEvent = onEvent
    }

    deinit {
        close()
    }

    // MARK: Connection

    /// Connects to the system bus (`$DBUS_SYSTEM_BUS_ADDRESS`, else /run/dbus/system_bus_socket), or to `address`,
    /// attaches the connection to the loop, and subscribes to logind's announcements and to its owner changes.
    ///
    /// Throws when there is no bus to connect to; a bus without logind is not an error here (the first
    /// ``takeInhibitors()`` reports it, once, and the client waits for logind to appear).
    package func connect(address: String? = nil) throws(SystemCallError) {
        precondition(bus == nil && reconnection == nil, "Logind.connect called twice")
        self.address = address
        do {
            try attach(SdBus(address: address, description: "logind", loop: loop))
        } catch {
            close()
            throw error
        }
    }

    /// Subscribes on a new connection and asks who owns logind's name; the inhibitors follow once that is known.
    private func attach(_ connection: SdBus) throws(SystemCallError) {
        bus = connection
        busLost = false
        busUp = false
        ownerState = .unknown(waiting: [])
        answeredSubscriptions = []
        let id = ObjectIdentifier(connection)
        matchSlots.append(try connection.matchDisconnected { [unowned self] in disconnected(id) })
        // Matches go first: the bus handles one connection's messages in order, so once GetNameOwner answers,
        // every later announcement is already subscribed to.
        try subscribe(member: "PrepareForSleep", on: connection)
        try subscribe(member: "PrepareForShutdown", on: connection)
        try subscribeToOwnerChanges(on: connection)
        try queryOwner(on: connection)
        try queryInhibitDelayMax(on: connection)
    }

    /// Releases the inhibitors, drops every subscription and closes the connection; no reconnection follows.
    package func close() {
        reconnection?.cancel()
        reconnection = nil
        outage = nil
        releaseInhibitors()
        detach()
    }

    /// Drops every subscription and pending call of the connection, and the connection.
    private func detach() {
        // Every slot holds a reference to the connection: they go first.
        matchSlots.removeAll()
        ownerQuery = nil
        propertyQuery = nil
        inhibitors.sleep.call = nil
        inhibitors.shutdown.call = nil
        bus?.close()
        bus = nil
        busLost = false
        busUp = false
    }

    // MARK: Inhibitors

    /// Asks logind (asynchronously) for a delay inhibitor on sleep and one on shutdown, each unless it is held or
    /// asked for; keeps asking each time logind (re)appears on the bus until ``releaseInhibitors()``.
    ///
    /// A lock type that logind refuses (an error reply from logind itself, such as polkit's `AccessDenied`) is
    /// reported in one warning and asked for again only on the next call or when logind restarts.
    package func takeInhibitors() {
        wantsInhibitors = true
        requestInhibitorsIfNeeded()
    }

    /// Closes both inhibitors' descriptors (logind then lets the sleep or shutdown proceed), and cancels the
    /// requests still pending.
    package func releaseInhibitors() {
        wantsInhibitors = false
        dropInhibitors(released: true)
    }

    /// Cancels both `Inhibit` calls still pending and closes both descriptors held, telling ``onInhibitorChange``
    /// of each lock lost; `released` says the application let go (logged), rather than logind leaving with them.
    private func dropInhibitors(released: Bool) {
        for type in LockType.allCases {
            // Dropping the pending call drops its reply, and with it the descriptor logind may already have sent.
            inhibitors[type].call = nil
            if inhibitors[type].descriptor >= 0 {
                Glibc.close(inhibitors[type].descriptor)
                inhibitors[type].descriptor = -1
                if released { logger.debug("released the logind delay inhibitor for \(type)") }
                onInhibitorChange(type, false)
            }
        }
        // A refusal waiting for the other answer, which will not come now.
        reportRefusals()
    }

    private func requestInhibitorsIfNeeded() {
        guard wantsInhibitors, let bus, !busLost else { return }
        let missing = LockType.allCases.filter { inhibitors[$0].descriptor < 0 && inhibitors[$0].call == nil }
        guard !missing.isEmpty else { return }
        if case .known(nil) = ownerState {
            // Nobody owns the name: calling would only ask the bus to activate logind.
            reportUnavailable("\(Self.busName) has no owner on the system bus")
            return
        }
        for type in missing {
            do {
                inhibitors[type].call = try bus.callAsync(
                    destination: Self.busName,
                    path: Self.objectPath,
                    interface: Self.managerInterface,
                    member: "Inhibit",
                    arguments: [type.rawValue, who, why, "delay"]
                ) { [unowned self] reply in inhibitReplied(type, reply) }
            } catch {
                reportUnavailable("\(error)")
            }
        }
    }

    private func inhibitReplied(_ type: LockType, _ reply: SdBus.Message) {
        inhibitors[type].call = nil
        defer { onSetupProgress() }
        if let failure = reply.errorReply {
            if reportIfConnectionLost(failure.text) {
                // Every other call fails the same way; nothing is waiting to be reported with this one.
                return
            } else if failure.isRefusal {
                refused(type, failure)
            } else {
                reportUnavailable(failure.text)
            }
            reportRefusals()
            recoveryCheck()
            return
        }
        defer {
            reportRefusals()
            recoveryCheck()
        }
        guard let received = reply.readFileDescriptor() else {
            logger.warning("logind answered Inhibit(\"\(type)\") without a file descriptor; no \(type) lock is held")
            return
        }
        // The reply owns its descriptor and closes it when freed: keep a duplicate.
        let descriptor = fcntl(received, F_DUPFD_CLOEXEC, 3)
        guard descriptor >= 0 else {
            logger.warning("cannot keep the logind \(type) inhibitor: \(Errno(rawValue: errno).description)")
            return
        }
        guard wantsInhibitors else {
            Glibc.close(descriptor)
            return
        }
        inhibitors[type].descriptor = descriptor
        unavailabilityReported = false
        reportedRefusals.remove(type)
        logger.debug(
            "holding a logind delay inhibitor for \(type)",
            metadata: ["lifecycle.inhibit_what": "\(type)", "lifecycle.inhibit_fd": "\(descriptor)"]
        )
        onInhibitorChange(type, true)
    }

    /// Notes a refusal for the warning ``reportRefusals()`` gives once the other lock type has its answer too.
    private func refused(_ type: LockType, _ failure: SdBus.ErrorReply) {
        guard !reportedRefusals.contains(type) else {
            logger.debug("\(failure.refuser) refused the \(type) delay inhibitor again: \(failure.text)")
            return
        }
        reportedRefusals.insert(type)
        pendingRefusals.append((type, failure))
    }

    /// One warning for the refusals noted, once no `Inhibit` call is pending. Asking again would only be refused
    /// again, so it says what the system no longer waits for and which polkit action decides it.
    private func reportRefusals() {
        guard !pendingRefusals.isEmpty, !inhibitors.anyCallPending else { return }
        let refusals = pendingRefusals
        pendingRefusals.removeAll()
        // The bus's own policy can refuse the call too (it never reaches logind then).
        let refuser = refusals.allSatisfy(\.failure.fromBusDriver) ? "the system bus" : "logind"
        let locks = refusals.map { "\"\($0.type)\" (\($0.failure.text))" }.joined(separator: " and ")
        let noun = refusals.count == 1 ? "delay inhibitor" : "delay inhibitors"
        let announcements = refusals.map(\.type.announcement).joined(separator: " and ")
        let verb = refusals.count == 1 ? "reaches" : "reach"
        let actions = refusals.map(\.type.polkitAction).joined(separator: ", ")
        logger.warning(
            """
            \(refuser) refused the \(noun) for \(locks): \(announcements) still \(verb) the application, but the \
            system does not wait for it to enter the background (polkit: \(actions))
            """,
            metadata: ["lifecycle.inhibit_what": "\(refusals.map(\.type.rawValue).joined(separator: ","))"]
        )
    }

    /// One warning per absence of logind; repeats, and an absence inside an outage already reported, are debug lines.
    private func reportUnavailable(_ reason: String) {
        if unavailabilityReported || connectionLossReported || outage != nil {
            logger.debug("logind still unavailable: \(reason)")
            return
        }
        unavailabilityReported = true
        logger.warning(
            """
            logind is not available (\(reason)); sleep and shutdown are not announced to the application until \
            \(Self.busName) appears on the system bus
            """
        )
    }

    /// Handles a call that failed because the connection is gone (``connectionLost(_:)``); every other call then
    /// fails the same way. Returns whether that is what happened.
    private func reportIfConnectionLost(_ failure: String) -> Bool {
        guard let bus, !bus.isOpen else { return false }
        connectionLost(failure)
        return true
    }

    // MARK: Outages

    /// The bus's `Disconnected`, which sd-bus delivers after failing every pending call.
    private func disconnected(_ connection: ObjectIdentifier) {
        // sd-bus makes this signal up itself once the connection is closed (the bus refuses the Local interface from
        // peers); a connection still open has not been lost.
        guard let bus, ObjectIdentifier(bus) == connection, !bus.isOpen else { return }
        connectionLost("org.freedesktop.DBus.Local.Disconnected")
    }

    /// The current connection is closed. One that never came up is the bus refusing this client: one warning, and
    /// nothing more. One that was up is an outage: the inhibitors are gone with it, and the client reconnects.
    private func connectionLost(_ failure: String) {
        guard bus != nil, !busLost else { return }
        busLost = true
        defer { onSetupProgress() }
        guard everConnected else {
            if !connectionLossReported {
                connectionLossReported = true
                // Seen with dbus-daemon under systemd 252: it runs with SYSTEMD_NSS_DYNAMIC_BYPASS=1, cannot resolve a
                // DynamicUser= uid, and drops the connection right after authentication.
                logger.warning(
                    """
                    logind is not watched: the system bus closed the connection (\(failure)); dbus-daemon drops \
                    clients whose user it cannot resolve, such as a DynamicUser= one. Sleep and shutdown are not \
                    announced to the application.
                    """
                )
            }
            scheduleReconnection(after: .zero, connecting: false)
            return
        }
        if outage == nil {
            outage = Outage(cause: .busClosed, began: .now, busClosed: true)
            logger.warning(
                """
                the system bus closed the connection (\(failure)): dbus-daemon stopped or is restarting. logind's \
                announcements do not reach the application and its delay inhibitors are gone until the bus and \
                logind are back; reconnecting
                """
            )
        } else {
            outage?.busClosed = true
            logger.debug("the connection to the system bus closed (\(failure)); reconnecting")
        }
        dropInhibitors(released: false)
        // Announcements waiting for an owner that will not answer now.
        ownerState = .unknown(waiting: [])
        let attempts = outage?.attempts ?? 0
        scheduleReconnection(after: attempts == 0 ? .zero : Self.reconnectDelay(afterAttempt: attempts), connecting: true)
    }

    /// The delay before the next attempt, after `attempt` attempts failed.
    static func reconnectDelay(afterAttempt attempt: Int) -> Duration {
        reconnectDelays[min(max(attempt, 1), reconnectDelays.count) - 1]
    }

    /// Drops the lost connection from the loop (never inside sd-bus's dispatch of it) and, when `connecting`, tries a
    /// new one.
    private func scheduleReconnection(after delay: Duration, connecting: Bool) {
        reconnection?.cancel()
        do {
            reconnection = try loop.addTimer(after: delay) { [unowned self] in
                reconnection = nil
                detach()
                if connecting { reconnect() }
            }
        } catch {
            reconnection = nil
            logger.error("cannot arm a timer to reconnect to the system bus: \(error); logind is no longer watched")
        }
    }

    /// One attempt: connecting is asynchronous (the socket connects at once, or fails at once; the authentication and
    /// `Hello` run on the loop), so it never blocks. A failure tries again later; a connection that the bus closes
    /// again before it comes up comes back through ``connectionLost(_:)``.
    private func reconnect() {
        guard outage != nil else { return }
        outage?.attempts += 1
        let attempt = outage?.attempts ?? 1
        do {
            try attach(SdBus(address: address, description: "logind", loop: loop))
            logger.debug("connecting to the system bus again (attempt \(attempt))")
        } catch {
            detach()
            let delay = Self.reconnectDelay(afterAttempt: attempt)
            logger.debug("cannot connect to the system bus (attempt \(attempt)): \(error); trying again in \(delay)")
            scheduleReconnection(after: delay, connecting: true)
        }
    }

    /// The bus answered on the current connection.
    private func connectionUp() {
        guard !busUp, let bus, bus.isOpen else { return }
        busUp = true
        if everConnected, let outage, outage.busClosed {
            reconnections += 1
            logger.debug(
                "connected to the system bus again \((ContinuousClock.now - outage.began).wholeMilliseconds) ms after \(outage.cause) (attempt \(outage.attempts))"
            )
        }
        everConnected = true
    }

    /// logind left the bus: its inhibitors went with it (it closed its ends of their descriptors).
    private func logindLeft() {
        if outage == nil {
            outage = Outage(cause: .logindLeft, began: .now, busClosed: false)
            logger.warning(
                """
                logind left the system bus (it stopped or is restarting): its delay inhibitors went with it, so sleep \
                and shutdown do not wait for the application until logind is back; they are taken again then
                """
            )
        } else {
            logger.debug("logind left the system bus")
        }
        dropInhibitors(released: false)
    }

    /// Ends the outage once logind owns its name again on a working connection and every inhibitor the application
    /// wants has been answered (granted, or refused: a refusal has its own warning).
    private func recoveryCheck() {
        guard let outage, busUp, !busLost, case .known(let owner?) = ownerState else { return }
        if wantsInhibitors {
            let missing = LockType.allCases.filter { inhibitors[$0].descriptor < 0 }
            guard !inhibitors.anyCallPending, missing.count < LockType.allCases.count || !reportedRefusals.isEmpty
            else { return }
        }
        self.outage = nil
        let elapsed = ContinuousClock.now - outage.began
        let held = LockType.allCases.filter { inhibitors[$0].descriptor >= 0 }
        let state =
            !wantsInhibitors
            ? "the delay inhibitors stay released until the resume"
            : held.isEmpty
                ? "no delay inhibitor was granted"
                : "holding the delay \(held.count == 1 ? "inhibitor" : "inhibitors") for \(held.map(\.rawValue).joined(separator: " and ")) again"
        let reconnected = outage.busClosed ? " (reconnected to the system bus, attempt \(outage.attempts))" : ""
        logger.notice(
            "logind is back as \(owner), \(elapsed.wholeMilliseconds) ms after \(outage.cause)\(reconnected): \(state)",
            metadata: [
                "lifecycle.outage_ms": "\(elapsed.wholeMilliseconds)",
                "lifecycle.outage_cause": "\(outage.busClosed ? "bus" : "logind")",
            ]
        )
    }

    // MARK: Announcements

    private func subscribe(member: String, on bus: SdBus) throws(SystemCallError) {
        matchSlots.append(
            try bus.matchSignal(
                sender: Self.busName,
                path: Self.objectPath,
                interface: Self.managerInterface,
                member: member,
                onSignal: { [unowned self] message in signalReceived(message) },
                onInstalled: { [unowned self] reply in matchInstalled(reply, member) }
            )
        )
    }

    private func subscribeToOwnerChanges(on bus: SdBus) throws(SystemCallError) {
        let match = "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
            + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.busName)'"
        matchSlots.append(
            try bus.addMatch(
                match,
                label: "NameOwnerChanged",
                onMessage: { [unowned self] message in ownerChanged(message) },
                onInstalled: { [unowned self] reply in matchInstalled(reply, "NameOwnerChanged") }
            )
        )
    }

    private func matchInstalled(_ reply: SdBus.Message, _ member: String) {
        answeredSubscriptions.insert(member)
        defer { onSetupProgress() }
        guard let failure = reply.errorReply?.text else {
            connectionUp()
            return
        }
        guard !reportIfConnectionLost(failure) else { return }
        logger.warning("the system bus refused a subscription to logind's announcements: \(failure)")
    }

    private func signalReceived(_ message: SdBus.Message) {
        let event: Event
        if message.isSignal(interface: Self.managerInterface, member: "PrepareForSleep") {
            guard let value = message.readBool() else { return }
            event = .prepareForSleep(value)
        } else if message.isSignal(interface: Self.managerInterface, member: "PrepareForShutdown") {
            guard let value = message.readBool() else { return }
            event = .prepareForShutdown(value)
        } else {
            return
        }
        guard message.isBroadcast else {
            ignore(
                "\(event)",
                from: message.sender,
                because: "it was addressed to this connection, and logind broadcasts its announcements"
            )
            return
        }
        judge(event, from: message.sender)
    }

    private func judge(_ event: Event, from sender: String?) {
        switch ownerState {
        case .unknown(var waiting):
            guard waiting.count < Self.maximumWaitingAnnouncements else {
                ignore("\(event)", from: sender, because: "the owner of \(Self.busName) is not known yet")
                return
            }
            waiting.append((sender, event))
            ownerState = .unknown(waiting: waiting)
        case .known(let owner):
            guard let sender, let owner, sender == owner else {
                ignore(
                    "\(event)",
                    from: sender,
                    because: "it does not own \(Self.busName) (\(owner.map { "\($0) does" } ?? "nobody does"))"
                )
                return
            }
            logger.debug("logind announced \(event)")
            onEvent(event)
        }
    }

    /// Drops a signal that did not come from where it must, counts it, and reports it at a bounded rate: any local
    /// user can send signals to this connection, and a flood of them must not flood the journal.
    private func ignore(_ what: String, from sender: String?, because reason: String) {
        ignoredSignals += 1
        guard let heldBack = strangerReports.admitCountingRefused(at: clockOrigin.duration(to: .now)) else { return }
        let more =
            heldBack > 0
            ? " (and \(heldBack) more ignored in the last \(Self.strangerReportInterval.formattedForLog))" : ""
        logger.notice(
            "ignored \(what) from \(sender ?? "an unknown sender"): \(reason)\(more)",
            metadata: ["lifecycle.ignored_signals": "\(ignoredSignals)"]
        )
    }

    private func settleOwner(_ owner: String?) {
        let previous = ownerState
        ownerState = .known(owner)
        defer { onSetupProgress() }
        if case .unknown(let waiting) = previous {
            for (sender, event) in waiting { judge(event, from: sender) }
        }
    }

    // MARK: The owner of org.freedesktop.login1

    private func queryOwner(on bus: SdBus) throws(SystemCallError) {
        ownerQuery = try bus.callAsync(
            destination: SdBus.driverName,
            path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus",
            member: "GetNameOwner",
            arguments: [Self.busName]
        ) { [unowned self] reply in ownerReplied(reply) }
    }

    private func ownerReplied(_ reply: SdBus.Message) {
        ownerQuery = nil
        defer { onSetupProgress() }
        if let failure = reply.errorReply?.text {
            guard !reportIfConnectionLost(failure) else { return }
            // org.freedesktop.DBus.Error.NameHasNoOwner: logind is not running (yet).
            connectionUp()
            logger.debug("\(Self.busName) has no owner: \(failure)")
            settleOwner(nil)
            requestInhibitorsIfNeeded()
            return
        }
        connectionUp()
        guard let owner = reply.readString() else {
            settleOwner(nil)
            return
        }
        logger.debug("\(Self.busName) is owned by \(owner)")
        settleOwner(owner)
        // After an outage the inhibitors are asked for again here: logind is there (the first connection asks in
        // takeInhibitors, which the application calls at once).
        requestInhibitorsIfNeeded()
        recoveryCheck()
    }

    private func ownerChanged(_ message: SdBus.Message) {
        // Only the bus driver knows who owns a name, and it broadcasts the change: a NameOwnerChanged from a peer, or
        // one addressed to this connection, would let that peer name itself logind.
        guard message.sender == SdBus.driverName, message.isBroadcast else {
            ignore(
                "\(message.name)",
                from: message.sender,
                because: message.sender == SdBus.driverName
                    ? "it was addressed to this connection, and the bus driver broadcasts it"
                    : "only the bus driver (\(SdBus.driverName)) tells who owns \(Self.busName)"
            )
            return
        }
        // NameOwnerChanged(name, old owner, new owner); an empty owner is none.
        var strings: [String] = []
        for _ in 0..<3 {
            guard let value = message.readString() else { return }
            strings.append(value)
        }
        guard strings[0] == Self.busName else { return }
        let newOwner = strings[2].isEmpty ? nil : strings[2]
        settleOwner(newOwner)
        if let newOwner {
            logger.info("logind is on the system bus as \(newOwner)")
            unavailabilityReported = false
            if let bus { try? queryInhibitDelayMax(on: bus) }
            requestInhibitorsIfNeeded()
            recoveryCheck()
        } else {
            logindLeft()
        }
    }

    // MARK: InhibitDelayMaxUSec

    private func queryInhibitDelayMax(on bus: SdBus) throws(SystemCallError) {
        propertyQuery = nil
        propertyQuery = try bus.callAsync(
            destination: Self.busName,
            path: Self.objectPath,
            interface: "org.freedesktop.DBus.Properties",
            member: "Get",
            arguments: [Self.managerInterface, "InhibitDelayMaxUSec"],
            // Never activate logind just to read a property.
            autoStart: false
        ) { [unowned self] reply in delayReplied(reply) }
    }

    private func delayReplied(_ reply: SdBus.Message) {
        propertyQuery = nil
        if let failure = reply.errorReply?.text {
            logger.debug("cannot read logind's InhibitDelayMaxUSec: \(failure)")
            return
        }
        guard let usec = reply.readVariantUInt64() else {
            logger.debug("logind's InhibitDelayMaxUSec is not a uint64")
            return
        }
        inhibitDelayMax = .microseconds(Int64(clamping: usec))
        logger.debug("logind waits up to \(usec) µs for delay inhibitors")
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

    /// Who answered an `Inhibit` call: the bus driver or logind.
    fileprivate var refuser: String { fromBusDriver ? "the system bus" : "logind" }

    /// Whether asking logind again would get the same answer: an error from logind itself (polkit's `AccessDenied`,
    /// an invalid argument), or the bus's policy denying the call. Anything else from the bus driver (no owner, a
    /// failed activation) means logind is not there.
    fileprivate var isRefusal: Bool {
        guard !Self.absence.contains(name) else { return false }
        return !fromBusDriver || name == "org.freedesktop.DBus.Error.AccessDenied"
    }
}
