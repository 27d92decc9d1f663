//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Where a listening socket of the application came from.
public enum ListenerOrigin: String, Sendable, Hashable, CaseIterable {
    /// A `.socket` unit passed it (`LISTEN_FDS`, named by its `FileDescriptorName=`): systemd holds it open across
    /// restarts and crashes, so connections wait in its backlog while no process serves.
    case socketUnit = "socket-unit"
    /// systemd's file descriptor store gave it back: an earlier process of the service bound it and stored it.
    case fileDescriptorStore = "fd-store"
    /// This process bound it, for nothing was passed under its name (a terminal, a test, a unit without a socket).
    case bound
}

/// The application's listening sockets, by name: what its hosted servers accept on, where each came from, and
/// whether a server accepts on it now.
///
/// Bookkeeping only: the core makes no system call. LifecycleServices opens, duplicates, pauses and closes the
/// sockets and records it here; the host fills ``unclaimed`` with what it inherited (a socket unit, the file
/// descriptor store, an upgrade) and reads the table for its status, its file descriptor store and an upgrade.
@MainActor
package final class ListenerTable {
    /// One listening socket.
    package struct Listener: Sendable, Hashable {
        /// Its name: the socket unit's `FileDescriptorName=`, the name it has in the file descriptor store.
        package var name: String
        /// The descriptor this process holds for the whole time it has the socket.
        package var descriptor: Int32
        /// Where it listens, as people write it: `127.0.0.1:8080`, `[::1]:8080`, `/run/hello.sock`.
        package var address: String
        /// Where it came from.
        package var origin: ListenerOrigin
        /// The process that handed it over in an upgrade (the socket came to that one from ``origin``), if any.
        package var handedOverBy: Int32?
        /// Whether it is shut down (a background with the close policy): connections are refused until it
        /// listens again.
        package var isShutDown = false
        /// How many runs of hosted servers accept on it now.
        package var servers = 0

        /// `serving` (a server accepts on it), `paused` (open, connections wait in its backlog) or `closed` (shut
        /// down: connections are refused).
        package var state: String {
            isShutDown ? "closed" : servers > 0 ? "serving" : "paused"
        }

        /// Describes a listener.
        package init(
            name: String, descriptor: Int32, address: String, origin: ListenerOrigin, handedOverBy: Int32? = nil
        ) {
            self.name = name
            self.descriptor = descriptor
            self.address = address
            self.origin = origin
            self.handedOverBy = handedOverBy
        }
    }

    /// A socket passed to the process that no server has claimed yet.
    package struct Inherited: Sendable, Hashable {
        package var descriptor: Int32
        package var origin: ListenerOrigin
        package var handedOverBy: Int32?

        /// Describes a passed socket.
        package init(descriptor: Int32, origin: ListenerOrigin, handedOverBy: Int32? = nil) {
            self.descriptor = descriptor
            self.origin = origin
            self.handedOverBy = handedOverBy
        }
    }

    /// The listeners in the order they were opened.
    package private(set) var listeners: [Listener] = []
    /// Sockets passed to the process under a name no server has asked for yet, by name.
    package var unclaimed: [String: Inherited] = [:]
    /// Listeners replaced by one of the same name at another address, kept open until their last server ends.
    package private(set) var retired: [Listener] = []
    /// This process bound a listener (nothing was passed under its name): the host keeps it in systemd's file
    /// descriptor store, so the next process of the service gets it back after a crash.
    package var didBind: (@MainActor (Listener) -> Void)?
    /// A listener a process of the service bound was replaced (another address under the same name): the host drops it
    /// from the file descriptor store.
    package var didRetire: (@MainActor (Listener) -> Void)?
    /// Something changed (a listener opened, a server began or ended, a socket shut down or listening again).
    package var didChange: (@MainActor () -> Void)?
    /// Called when the application's teardown ends, before the host hears it terminated: what must be undone before
    /// the process exits (a socket shut down in the background listens again, so a socket systemd holds is never
    /// left shut down).
    package var willExit: (@MainActor () -> Void)?

    /// An empty table.
    package init() {}

    /// The listener named `name`, if one is open.
    package subscript(name: String) -> Listener? {
        listeners.first { $0.name == name }
    }

    /// Records a listener opened under its name: a passed one claimed, or one this process bound. A listener of the
    /// same name already open is retired (closed by its owner once no server uses it).
    package func add(_ listener: Listener) {
        unclaimed[listener.name] = nil
        if let index = listeners.firstIndex(where: { $0.name == listener.name }) {
            let old = listeners.remove(at: index)
            retired.append(old)
            if old.origin != .socketUnit { didRetire?(old) }
        }
        listeners.append(listener)
        if listener.origin == .bound, listener.handedOverBy == nil { didBind?(listener) }
        didChange?()
    }

    /// Changes the listener whose descriptor is `descriptor`, current or retired.
    package func update(descriptor: Int32, _ change: (inout Listener) -> Void) {
        if let index = listeners.firstIndex(where: { $0.descriptor == descriptor }) {
            change(&listeners[index])
        } else if let index = retired.firstIndex(where: { $0.descriptor == descriptor }) {
            change(&retired[index])
        }
        didChange?()
    }

    /// Removes a retired listener once its owner has closed it.
    package func forgetRetired(descriptor: Int32) {
        retired.removeAll { $0.descriptor == descriptor }
    }

    /// Whether the retired listener with this descriptor has no server left.
    package func isUnusedRetired(descriptor: Int32) -> Bool {
        retired.contains { $0.descriptor == descriptor && $0.servers == 0 }
    }

    /// Every descriptor the process holds for a listener, passed or bound, current or retired or unclaimed, with
    /// its name: what an upgrade hands to the next process.
    package var descriptorsToHandOver: [(name: String, descriptor: Int32, origin: ListenerOrigin)] {
        listeners.map { ($0.name, $0.descriptor, $0.origin) }
            + unclaimed.sorted { $0.key < $1.key }.map { ($0.key, $0.value.descriptor, $0.value.origin) }
    }
}
