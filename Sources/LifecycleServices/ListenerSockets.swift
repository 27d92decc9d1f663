//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What the runs of hosted servers do to the application's ``ListenerTable``: claim a socket (the one in use, a
/// passed one, or a new one bound here) and give it back, shut it down in the background and listen again. The system
/// calls are ``SocketCalls`` and ``ListenerBinding``'s.
@MainActor
package enum ListenerSockets {
    /// The socket named `listener.name` for a run of a hosted server in `application`: the one in use already (the
    /// same address, or one systemd's configuration decides), else the one passed under that name, else a new one
    /// bound to `listener.address`. A socket that does not listen (shut down by an earlier process, or by this one's
    /// close policy) listens again. Counts the run as a server of it until ``release(_:in:)``.
    static func claim(_ listener: Listener, in application: Application) throws(ListenerError) -> ListeningSocket {
        let table = application.listeners
        let opened: ListenerTable.Entry
        if let current = table[listener.name], keeps(current, for: listener, logger: application.logger) {
            opened = current
        } else if let passed = table.passed[listener.name] {
            opened = try adopt(passed, as: listener, in: application)
        } else {
            opened = try bindFresh(listener, replacing: nil, in: application)
        }
        // A socket the one opened retired, whose last run had ended already (a controller replaced by one at another
        // address, whose old run ended first), is closed now, or it would listen, served by nobody, until the process
        // exits. One still served is closed when its last run ends (release(_:in:)).
        closeUnusedRetired(in: table)
        if opened.isShutDown || !SocketCalls.isListening(opened.descriptor) {
            let address: String? = if case .shutDown(let address) = opened.condition { address } else { nil }
            guard SocketCalls.listenAgain(opened.descriptor, backlog: listener.backlog, rebindTo: address) else {
                throw ListenerError(
                    .systemCall, listener: listener.name, address: opened.address, systemCall: "listen", errno: errno
                )
            }
        }
        table.update(descriptor: opened.descriptor) {
            $0.condition = .listening
            $0.backlog = listener.backlog
            $0.servers += 1
        }
        return ListeningSocket(
            name: opened.name,
            address: opened.address,
            origin: opened.origin,
            descriptor: opened.descriptor
        )
    }

    /// A run of a hosted server that accepted on `socket` has ended; a retired socket nobody serves is closed.
    static func release(_ socket: ListeningSocket, in application: Application) {
        let table = application.listeners
        table.update(descriptor: socket.descriptor) { $0.servers = max(0, $0.servers - 1) }
        closeUnusedRetired(in: table)
    }

    /// Shuts the socket down (the close policy, in the background): new connections are refused until it listens
    /// again, and it does before the process exits (``ListenerTable/listenAgainAtExit(using:)``).
    static func shutDown(_ socket: ListeningSocket, in application: Application) {
        let table = application.listeners
        guard let current = table[socket.name], current.descriptor == socket.descriptor, !current.isShutDown,
            !table.isHandedOver
        else { return }
        // Where it listens, for a port the kernel picked: Linux forgets it when the socket shuts down.
        let address = SocketCalls.localAddress(of: socket.descriptor)
        Glibc.shutdown(socket.descriptor, Int32(SHUT_RDWR))
        table.update(descriptor: socket.descriptor) { $0.condition = .shutDown(rebindTo: address) }
        table.listenAgainAtExit(using: SocketCalls.listenAgain)
        application.logger.info(
            "listener \(socket.name): shut down in the background, \(socket.address) refuses connections",
            metadata: [LogKey.listener: .string(socket.name)]
        )
    }

    // MARK: Claiming

    /// Whether the open socket serves `listener`: one systemd's configuration decides (a socket unit's) always; one a
    /// process of the service bound only while `listener.address` still names where it listens.
    private static func keeps(_ current: ListenerTable.Entry, for listener: Listener, logger: Logger) -> Bool {
        if ListenerBinding.matches(listener.address, current.address) { return true }
        if current.origin == .socketUnit {
            noteSocketUnitAddress(current.address, for: listener, logger: logger)
            return true
        }
        logger.info(
            "listener \(listener.name): moving from \(current.address) to \(listener.address)",
            metadata: [LogKey.listener: .string(listener.name)]
        )
        return false
    }

    private static func noteSocketUnitAddress(_ address: String, for listener: Listener, logger: Logger) {
        logger.notice(
            "listener \(listener.name): serving on \(address), the socket unit's; the configured \(listener.address) is not used",
            metadata: [LogKey.listener: .string(listener.name)]
        )
    }

    /// Takes a socket passed under `listener.name`: checks it is a stream socket and records where it listens.
    private static func adopt(
        _ passed: ListenerTable.Entry,
        as listener: Listener,
        in application: Application
    ) throws(ListenerError) -> ListenerTable.Entry {
        let table = application.listeners
        let address = SocketCalls.localAddress(of: passed.descriptor) ?? passed.address
        guard SocketCalls.isStreamSocket(passed.descriptor) else {
            throw ListenerError(
                .notAStreamSocket, listener: listener.name, address: address, detail: "fd \(passed.descriptor)"
            )
        }
        var adopted = passed
        adopted.address = address
        // As the process that passed it left it: listening, or shut down (an upgrade's predecessor in the background).
        if adopted.condition == .passed { adopted.condition = .listening }
        if passed.origin != .socketUnit, !ListenerBinding.matches(listener.address, address) {
            // Bound by an earlier process of the service for an address the configuration no longer names.
            table.open(adopted)
            return try bindFresh(listener, replacing: adopted, in: application)
        }
        if passed.origin == .socketUnit, !ListenerBinding.matches(listener.address, address) {
            noteSocketUnitAddress(address, for: listener, logger: application.logger)
        }
        table.open(adopted)
        let from = passed.handedOverBy.map { "handed over by pid \($0), " } ?? ""
        application.logger.info(
            "listener \(listener.name): \(address) (\(from)\(passed.origin.rawValue))",
            metadata: [
                LogKey.listener: .string(listener.name), LogKey.listenerOrigin: .string(passed.origin.rawValue),
            ]
        )
        return adopted
    }

    /// Binds a new socket for `listener`, in place of `stale` (a stored socket for an address no longer configured)
    /// if any.
    private static func bindFresh(
        _ listener: Listener,
        replacing stale: ListenerTable.Entry?,
        in application: Application
    ) throws(ListenerError) -> ListenerTable.Entry {
        let descriptor = try ListenerBinding.bind(listener)
        let fresh = ListenerTable.Entry(
            name: listener.name,
            descriptor: descriptor,
            address: SocketCalls.localAddress(of: descriptor) ?? listener.address.description,
            origin: .bound,
            backlog: listener.backlog
        )
        application.listeners.open(fresh)
        application.logger.info(
            "listener \(listener.name): bound \(fresh.address)\(stale.map { " (was \($0.address))" } ?? "")",
            metadata: [LogKey.listener: .string(listener.name), LogKey.listenerOrigin: "bound"]
        )
        return fresh
    }

    /// Closes the retired sockets no run serves.
    private static func closeUnusedRetired(in table: ListenerTable) {
        for entry in table.unusedRetired {
            close(entry.descriptor)
            table.forgetRetired(descriptor: entry.descriptor)
        }
    }
}
