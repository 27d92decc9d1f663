//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import LifecyclePrimitives
package import Logging
import SystemPackage

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
    package var owner: String? { machine.owner }
    /// The lock types whose delay inhibitor is held now.
    package var heldLocks: Set<LockType> { machine.heldLocks }
    /// Whether both delay inhibitors, sleep and shutdown, are held now.
    package var holdsInhibitors: Bool { heldLocks.count == LockType.allCases.count }
    /// This connection's unique name on the bus, once connected.
    package var uniqueName: String? { bus?.uniqueName }
    /// Whether logind or the bus is away and the client waits for it (or reconnects to the bus) to hold its inhibitors
    /// again.
    package var isRecovering: Bool { machine.isRecovering }
    /// How many times the client connected to the bus again after losing its connection.
    package private(set) var reconnections = 0
    /// Signals dropped because they did not come from the bus driver or logind, or were addressed to this
    /// connection instead of broadcast.
    package private(set) var ignoredSignals = 0

    /// What the client still waits for before logind's announcements are sure to reach it and the delay inhibitors
    /// it wants are answered: the subscriptions, the owner of logind's name, each inhibitor asked for. Empty once all
    /// are in place (an inhibitor refused counts as answered), and whenever waiting could not help: logind has no owner,
    /// or the connection is closed.
    package var awaiting: [String] { machine.awaiting }
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

    // The state (the connection's progress, the outage, the inhibitors, what was reported once) is the machine's
    // (Logind+StateMachine.swift); the client keeps what does I/O (the connection, its subscriptions and calls, the
    // timer) and performs the machine's actions.
    private var machine = StateMachine()
    private let loop: MainLoop
    private let logger: Logger
    private var address: String?
    private var bus: SdBus?
    private var reconnection: MainLoop.Source?
    private var matchSlots: [SdBus.Slot] = []
    private var ownerQuery: SdBus.Slot?
    private var propertyQuery: SdBus.Slot?
    /// The pending `Inhibit` calls: one for each lock type the machine has `requested`.
    private var inhibitCalls: [LockType: SdBus.Slot] = [:]
    private var strangerReports = RateLimiter(minimumInterval: Logind.strangerReportInterval)
    private let clockOrigin = ContinuousClock.now

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
        machine.connect()
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
        perform(machine.close())
    }

    /// Drops every subscription and pending call of the connection, and the connection.
    private func detach() {
        // Every slot holds a reference to the connection: they go first.
        matchSlots.removeAll()
        ownerQuery = nil
        propertyQuery = nil
        inhibitCalls.removeAll()
        bus?.close()
        bus = nil
    }

    /// Whether the connection is still open: a call that failed on a closed one is the connection's loss.
    private var busIsOpen: Bool { bus?.isOpen == true }

    // MARK: Inhibitors

    /// Asks logind (asynchronously) for a delay inhibitor on sleep and one on shutdown, each unless it is held or
    /// asked for; keeps asking each time logind (re)appears on the bus until ``releaseInhibitors()``.
    ///
    /// A lock type that logind refuses (an error reply from logind itself, such as polkit's `AccessDenied`) is
    /// reported in one warning and asked for again only on the next call or when logind restarts.
    package func takeInhibitors() {
        perform(machine.takeInhibitors())
    }

    /// Closes both inhibitors' descriptors (logind then lets the sleep or shutdown proceed), and cancels the
    /// requests still pending.
    package func releaseInhibitors() {
        perform(machine.releaseInhibitors())
    }

    private func requestInhibitor(_ type: LockType) {
        guard let bus else { preconditionFailure("the logind client asks for an inhibitor without a connection") }
        do {
            inhibitCalls[type] = try bus.callAsync(
                destination: Self.busName,
                path: Self.objectPath,
                interface: Self.managerInterface,
                member: "Inhibit",
                arguments: [type.rawValue, who, why, "delay"]
            ) { [unowned self] reply in inhibitReplied(type, reply) }
        } catch {
            perform(machine.inhibitRequestFailed(type, reason: "\(error)"))
        }
    }

    private func inhibitReplied(_ type: LockType, _ reply: SdBus.Message) {
        inhibitCalls[type] = nil
        let answer: StateMachine.InhibitAnswer
        if let failure = reply.errorReply {
            answer = .failed(failure)
        } else if let received = reply.readFileDescriptor() {
            // The reply owns its descriptor and closes it when freed: keep a duplicate.
            let descriptor = fcntl(received, F_DUPFD_CLOEXEC, 3)
            answer = descriptor >= 0 ? .granted(descriptor: descriptor) : .descriptorNotKept(Errno(rawValue: errno))
        } else {
            answer = .noDescriptor
        }
        perform(machine.inhibitorAnswered(type, answer, busOpen: busIsOpen, now: .now))
    }

    // MARK: Outages

    /// The bus's `Disconnected`, which sd-bus delivers after failing every pending call.
    private func disconnected(_ connection: ObjectIdentifier) {
        // sd-bus makes this signal up itself once the connection is closed (the bus refuses the Local interface from
        // peers); a connection still open has not been lost.
        guard let bus, ObjectIdentifier(bus) == connection, !bus.isOpen else { return }
        perform(machine.connectionClosed("org.freedesktop.DBus.Local.Disconnected", now: .now))
    }

    /// The delay before the next attempt, after `attempt` attempts failed.
    static func reconnectDelay(afterAttempt attempt: Int) -> Duration {
        reconnectDelays[min(max(attempt, 1), reconnectDelays.count) - 1]
    }

    /// Arms the timer that drops the lost connection from the loop (never inside sd-bus's dispatch of it) and, unless
    /// the bus refused this client, tries a new one.
    private func armTimer(after delay: Duration) {
        reconnection?.cancel()
        do {
            reconnection = try loop.addTimer(after: delay) { [unowned self] in
                reconnection = nil
                perform(machine.timerFired())
            }
        } catch {
            reconnection = nil
            logger.error("cannot arm a timer to reconnect to the system bus: \(error); logind is no longer watched")
        }
    }

    /// One attempt: connecting is asynchronous (the socket connects at once, or fails at once; the authentication and
    /// `Hello` run on the loop), so it never blocks. A failure tries again later; a connection that the bus closes
    /// again before it comes up comes back through the machine's loss of it.
    private func reconnect(attempt: Int) {
        do {
            try attach(SdBus(address: address, description: "logind", loop: loop))
            logger.debug("connecting to the system bus again (attempt \(attempt))")
        } catch {
            detach()
            let retry = machine.reconnectFailed()
            logger.debug(
                "cannot connect to the system bus (attempt \(retry.attempt)): \(error); trying again in \(retry.delay)"
            )
            armTimer(after: retry.delay)
        }
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
        perform(machine.subscriptionAnswered(member, failure: reply.errorReply?.text, busOpen: busIsOpen, now: .now))
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
        perform(machine.announcementReceived(event, from: message.sender, isBroadcast: message.isBroadcast))
    }

    /// Drops a signal that did not come from where it must, counts it, and reports it at a bounded rate: any local
    /// user can send signals to this connection, and a flood of them must not flood the journal.
    private func ignore(_ what: String, from sender: String?, because reason: StateMachine.IgnoreReason) {
        ignoredSignals += 1
        guard let heldBack = strangerReports.admitCountingRefused(at: clockOrigin.duration(to: .now)) else { return }
        let more =
            heldBack > 0
            ? " (and \(heldBack) more ignored in the last \(Self.strangerReportInterval.formattedForLog))" : ""
        logger.notice(
            "ignored \(what) from \(sender ?? "an unknown sender"): \(reason)\(more)",
            metadata: [LogKey.ignoredSignals: "\(ignoredSignals)"]
        )
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
        let answer: StateMachine.OwnerAnswer
        if let failure = reply.errorReply?.text {
            answer = .failed(failure)
        } else if let owner = reply.readString() {
            answer = .owner(owner)
        } else {
            answer = .unreadable
        }
        perform(machine.ownerAnswered(answer, busOpen: busIsOpen, now: .now))
    }

    private func ownerChanged(_ message: SdBus.Message) {
        // NameOwnerChanged(name, old owner, new owner); an empty owner is none. The machine takes it only from the
        // bus driver.
        var strings: [String] = []
        for _ in 0..<3 {
            guard let value = message.readString() else { break }
            strings.append(value)
        }
        let change =
            strings.count == 3
            ? StateMachine.OwnerChange(name: strings[0], newOwner: strings[2].isEmpty ? nil : strings[2]) : nil
        perform(
            machine.nameOwnerChanged(
                member: message.name,
                from: message.sender,
                isBroadcast: message.isBroadcast,
                change: change,
                now: .now
            )
        )
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

    // MARK: Performing the machine's actions

    private func perform(_ actions: [StateMachine.Action]) {
        for action in actions {
            switch action {
            case .requestInhibitor(let type):
                requestInhibitor(type)
            case .cancelInhibitorRequest(let type):
                inhibitCalls[type] = nil
            case .closeInhibitor(let type, let descriptor, let released):
                Glibc.close(descriptor)
                if released { logger.debug("released the logind delay inhibitor for \(type)") }
                onInhibitorChange(type, false)
            case .inhibitorHeld(let type, let descriptor):
                logger.debug(
                    "holding a logind delay inhibitor for \(type)",
                    metadata: [LogKey.inhibitWhat: "\(type)", LogKey.inhibitFD: "\(descriptor)"]
                )
                onInhibitorChange(type, true)
            case .queryInhibitDelayMax:
                if let bus { try? queryInhibitDelayMax(on: bus) }
            case .armTimer(let delay):
                armTimer(after: delay)
            case .detach:
                detach()
            case .reconnect(let attempt):
                reconnect(attempt: attempt)
            case .deliver(let event):
                logger.debug("logind announced \(event)")
                onEvent(event)
            case .setupProgressed:
                onSetupProgress()
            case .then(let continuation):
                perform(machine.resume(continuation))
            case .report(let report):
                log(report)
            }
        }
    }

    private func log(_ report: StateMachine.Report) {
        switch report {
        case .ignored(let what, let sender, let reason):
            ignore(what, from: sender, because: reason)
        case .subscriptionRefused(let failure):
            logger.warning("the system bus refused a subscription to logind's announcements: \(failure)")
        case .ownerAbsent(let failure):
            logger.debug("\(Self.busName) has no owner: \(failure)")
        case .ownerNamed(let owner):
            logger.debug("\(Self.busName) is owned by \(owner)")
        case .logindAppeared(let owner):
            logger.info("logind is on the system bus as \(owner)")
        case .logindLeft(first: true):
            logger.warning(
                """
                logind left the system bus (it stopped or is restarting): its delay inhibitors went with it, so sleep \
                and shutdown do not wait for the application until logind is back; they are taken again then
                """
            )
        case .logindLeft(first: false):
            logger.debug("logind left the system bus")
        case .busClosed(let failure, first: true):
            logger.warning(
                """
                the system bus closed the connection (\(failure)): dbus-daemon stopped or is restarting. logind's \
                announcements do not reach the application and its delay inhibitors are gone until the bus and \
                logind are back; reconnecting
                """
            )
        case .busClosed(let failure, first: false):
            logger.debug("the connection to the system bus closed (\(failure)); reconnecting")
        case .busRefusedClient(let failure):
            // Seen with dbus-daemon under systemd 252: it runs with SYSTEMD_NSS_DYNAMIC_BYPASS=1, cannot resolve a
            // DynamicUser= uid, and drops the connection right after authentication.
            logger.warning(
                """
                logind is not watched: the system bus closed the connection (\(failure)); dbus-daemon drops \
                clients whose user it cannot resolve, such as a DynamicUser= one. Sleep and shutdown are not \
                announced to the application.
                """
            )
        case .reconnected(let outage):
            reconnections += 1
            logger.debug(
                "connected to the system bus again \((ContinuousClock.now - outage.began).wholeMilliseconds) ms after \(outage.cause) (attempt \(outage.attempts))"
            )
        case .recovered(let outage, let owner, let held, let wanted):
            let elapsed = ContinuousClock.now - outage.began
            let state =
                !wanted
                ? "the delay inhibitors stay released until the resume"
                : held.isEmpty
                    ? "no delay inhibitor was granted"
                    : "holding the delay \(held.count == 1 ? "inhibitor" : "inhibitors") for \(held.map(\.rawValue).joined(separator: " and ")) again"
            let reconnected = outage.busClosed ? " (reconnected to the system bus, attempt \(outage.attempts))" : ""
            logger.notice(
                "logind is back as \(owner), \(elapsed.wholeMilliseconds) ms after \(outage.cause)\(reconnected): \(state)",
                metadata: [
                    LogKey.outageMilliseconds: "\(elapsed.wholeMilliseconds)",
                    LogKey.outageCause: "\(outage.busClosed ? "bus" : "logind")",
                ]
            )
        case .unavailable(let reason, first: true):
            logger.warning(
                """
                logind is not available (\(reason)); sleep and shutdown are not announced to the application until \
                \(Self.busName) appears on the system bus
                """
            )
        case .unavailable(let reason, first: false):
            logger.debug("logind still unavailable: \(reason)")
        case .refusedAgain(let refusal):
            logger.debug(
                "\(refusal.failure.refuser) refused the \(refusal.type) delay inhibitor again: \(refusal.failure.text)"
            )
        case .refused(let refusals):
            reportRefusals(refusals)
        case .noDescriptor(let type):
            logger.warning("logind answered Inhibit(\"\(type)\") without a file descriptor; no \(type) lock is held")
        case .descriptorNotKept(let type, let error):
            logger.warning("cannot keep the logind \(type) inhibitor: \(error.description)")
        }
    }

    /// One warning for the refusals of both lock types. Asking again would only be refused again, so it says what the
    /// system no longer waits for and which polkit action decides it.
    private func reportRefusals(_ refusals: [StateMachine.Refusal]) {
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
            metadata: [LogKey.inhibitWhat: "\(refusals.map(\.type.rawValue).joined(separator: ","))"]
        )
    }
}

extension SdBus.ErrorReply {
    /// Who answered an `Inhibit` call: the bus driver or logind.
    fileprivate var refuser: String { fromBusDriver ? "the system bus" : "logind" }
}
