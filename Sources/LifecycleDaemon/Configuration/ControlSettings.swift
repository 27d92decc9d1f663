//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecyclePrimitives
import LifecycleSystemd

#if canImport(Glibc)
public import Glibc
#endif

/// `[Control]`: the control socket (docs/control.md).
@_spi(Internal) public struct ControlSettings: Sendable, Hashable {
    /// A group whose members may use the control socket, as configured and as resolved.
    @_spi(Internal) public struct Group: Sendable, Hashable {
        /// The name (or number) as written.
        @_spi(Internal) public var name: String
        /// Its group ID.
        @_spi(Internal) public var id: gid_t
    }

    /// Whether the control socket is served (`Enable=`, default yes).
    @_spi(Internal) public var isEnabled = true
    /// Where it listens (`Socket=`); nil: the standard place (see ``ControlSocketLocation``).
    package var socketPath: String?
    /// A group whose members may use it besides the service's own user and root (`Group=`).
    @_spi(Internal) public var group: Group?
    /// How many of the delegate's recent trace events (the application's transitions) the daemon keeps for
    /// `lifecyclectl trace` (`TraceBacklog=`, 0 to 10,000); 0 keeps none, and then the trace is only watched while
    /// someone follows it or waits for a request.
    package var traceBacklog = 256

    @_spi(Internal) public init() {}

    /// The section's keys, in DaemonConfiguration's one table.
    static let keys: [ConfigurationKey<DaemonConfiguration>] = [
        .boolean("Enable", \DaemonConfiguration.control.isEnabled),
        ConfigurationKey("Socket") { configuration, value throws(ConfigurationValueError) in
            guard !value.isEmpty else {
                configuration.control.socketPath = nil
                return
            }
            guard value.hasPrefix("/") else { throw ConfigurationValueError("Socket=\(value) is not an absolute path") }
            guard value.utf8.count <= UnixSocket.maximumPathLength else {
                throw ConfigurationValueError(
                    "Socket=\(value) is longer than a socket path may be (\(UnixSocket.maximumPathLength) bytes)"
                )
            }
            configuration.control.socketPath = value
        },
        ConfigurationKey("Group") { configuration, value throws(ConfigurationValueError) in
            guard !value.isEmpty else {
                configuration.control.group = nil
                return
            }
            switch Self.groupID(value) {
            case .found(let id):
                configuration.control.group = Group(name: value, id: id)
            case .unknown:
                throw ConfigurationValueError("Group=\(value) is not a group of this system")
            case .timedOut(let budget):
                throw ConfigurationValueError(
                    "Group=\(value): the group database did not answer within \(budget.formattedForLog) (NSS: LDAP, sssd, systemd-userdbd?); give the group's number instead"
                )
            }
        },
        .integer("TraceBacklog", \DaemonConfiguration.control.traceBacklog, in: 0...10_000),
    ]

    /// What looking a group up found.
    enum GroupLookup: Equatable {
        case found(gid_t)
        case unknown
        /// The group database did not answer within this budget.
        case timedOut(Duration)
    }

    /// How long the configuration waits for the group database: a name is looked up through NSS, which may ask a
    /// directory server or a daemon that does not answer; the main loop must not wait for it longer.
    static let groupLookupBudget = Duration.seconds(1)

    /// The ID of a group given by name or number. A name is looked up on a thread of its own, waited for at most
    /// `budget`.
    static func groupID(
        _ text: String,
        within budget: Duration = groupLookupBudget,
        lookUp: @escaping @Sendable (String) -> gid_t? = lookUpGroup
    ) -> GroupLookup {
        if let number = gid_t(text) { return .found(number) }
        // nil until the thread answers; then the group's ID, or nil for no such group.
        let answer = ConditionLock<gid_t??>(nil)
        let started = SystemThread.start(blockingSignals: true) {
            let id = lookUp(text)
            answer.withLock { $0 = .some(id) }
            answer.notifyAll()
        }
        guard case .success(let thread) = started else { return .timedOut(.zero) }
        // Whatever it answers after the budget is dropped with its thread.
        pthread_detach(thread)
        let deadline = MonotonicClock.deadline(after: budget)
        let answered = answer.withLock(waiting: { state -> ConditionLock<gid_t??>.Step<gid_t??> in
            if case .some(let id) = state { return .done(.some(id)) }
            return MonotonicClock.now() >= deadline ? .done(nil) : .wait(until: deadline)
        })
        guard case .some(let id) = answered else { return .timedOut(budget) }
        return id.map(GroupLookup.found) ?? .unknown
    }

    /// `getgrnam_r`: the group's ID, or nil when there is no such group.
    @Sendable static func lookUpGroup(_ name: String) -> gid_t? {
        var size = 16_384
        while size <= 1 << 20 {
            var entry = Glibc.group()
            var result: UnsafeMutablePointer<Glibc.group>?
            var buffer = [CChar](repeating: 0, count: size)
            let status = getgrnam_r(name, &entry, &buffer, buffer.count, &result)
            if status == ERANGE {
                size *= 4
                continue
            }
            guard status == 0, result != nil else { return nil }
            return entry.gr_gid
        }
        return nil
    }

    /// Whether a peer may use the control socket: the service's own user, root, or a member of ``group``.
    func allows(_ peer: PeerCredentials, serviceUID: uid_t) -> Bool {
        if peer.uid == 0 || peer.uid == serviceUID { return true }
        if let group, peer.isMember(of: group.id) { return true }
        return false
    }
}

/// Where the control socket listens, in order of precedence: a listening socket systemd handed over (`LISTEN_FDS`,
/// named `control`, or the only `AF_UNIX` one when it has no name but its socket unit's), `[Control] Socket=`, `$RUNTIME_DIRECTORY/control` (systemd's `RuntimeDirectory=`),
/// `$XDG_RUNTIME_DIR/<program>/control` (run by hand), `/run/<program>/control` (run by hand as root).
@_spi(Internal) public enum ControlSocketLocation: Hashable, Sendable {
    /// A listening socket systemd passed.
    case inherited(descriptor: Int32, name: String)
    /// A path to bind, after making its directory (with this mode) if it is missing.
    case path(String, directoryMode: mode_t?)
    /// Nowhere: the reason why.
    case none(String)

    /// Decides where the socket goes; pure, for tests.
    static func resolve(
        settings: ControlSettings,
        inherited: [SocketActivation.Socket],
        environment: [String: String],
        uid: uid_t,
        programName: String
    ) -> ControlSocketLocation {
        // Named "control"; or the only one, unless a name was given to it that is not a socket unit's own (a server's
        // listener, which the caller has left out when it is not AF_UNIX).
        let sole = inherited.count == 1 ? inherited.first : nil
        let passed =
            inherited.first { $0.name == "control" }
            ?? sole.flatMap { $0.name == "unknown" || $0.name.hasSuffix(".socket") ? $0 : nil }
        if let passed { return .inherited(descriptor: passed.descriptor, name: passed.name) }
        if let path = settings.socketPath { return .path(path, directoryMode: nil) }
        if let directories = environment["RUNTIME_DIRECTORY"], let first = directories.split(separator: ":").first {
            return .path("\(first)/control", directoryMode: nil)
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return .path("\(runtime)/\(programName)/control", directoryMode: 0o700)
        }
        if uid == 0 { return .path("/run/\(programName)/control", directoryMode: 0o755) }
        return .none("no RUNTIME_DIRECTORY or XDG_RUNTIME_DIR to put it in; set [Control] Socket=")
    }
}
