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

/// The application's listening sockets, by name: every socket the process holds for its hosted servers — passed to it
/// and not claimed yet, open, shut down, retired — where each came from, and who accepts on it.
///
/// Bookkeeping only: the core makes no system call. LifecycleServices opens, duplicates, shuts down and closes the
/// sockets and records it here; the host records what it inherited (a socket unit, the file descriptor store, an
/// upgrade) and reads the table for its status, its file descriptor store and an upgrade. Whoever must hear of a
/// change observes it (``observe(_:)``): observers are added, never replaced.
@MainActor
package final class ListenerTable {
    /// Where a socket is in its life, for a process of the service.
    package enum Condition: Sendable, Hashable {
        /// Passed to the process (socket unit, file descriptor store, upgrade), not asked for by any server yet.
        case passed
        /// Open and listening, with or without a server accepting on it.
        case listening
        /// Shut down (the close policy, in the background): connections are refused until it listens again.
        /// `rebindTo`: where it listened, for one whose port the kernel picked (lost when a socket shuts down).
        case shutDown(rebindTo: String?)
    }

    /// What a socket looks like from outside, the one meaning every reader uses: status, probes, an upgrade's report.
    package enum State: String, Sendable, Hashable {
        /// A run of a hosted server accepts on it.
        case serving
        /// Open, nobody accepts: connections wait in its backlog (the background with the pause policy, between runs,
        /// or a socket this service had that no run has asked for again yet).
        case paused
        /// Shut down: connections are refused.
        case closed
        /// Passed by a socket unit under a name no server has asked for.
        case unclaimed
    }

    /// One socket.
    package struct Entry: Sendable, Hashable {
        /// Its name: the socket unit's `FileDescriptorName=`, the name it has in the file descriptor store.
        package var name: String
        /// The descriptor this process holds for the whole time it has the socket.
        package var descriptor: Int32
        /// Where it listens, as people write it: `127.0.0.1:8080`, `[::1]:8080`, `/run/hello.sock` (`fd 5` while
        /// it is passed and not looked at yet).
        package var address: String
        /// Where it came from.
        package var origin: ListenerOrigin
        /// The process that handed it over in an upgrade (the socket came to that one from ``origin``), if any.
        package var handedOverBy: Int32?
        /// Where it is in its life.
        package var condition: Condition
        /// The queue length it listens with.
        package var backlog: Int
        /// How many runs of hosted servers accept on it now.
        package var servers = 0

        /// Describes a socket.
        package init(
            name: String,
            descriptor: Int32,
            address: String,
            origin: ListenerOrigin,
            handedOverBy: Int32? = nil,
            condition: Condition = .listening,
            backlog: Int = 4096
        ) {
            self.name = name
            self.descriptor = descriptor
            self.address = address
            self.origin = origin
            self.handedOverBy = handedOverBy
            self.condition = condition
            self.backlog = backlog
        }

        /// Whether it is shut down.
        package var isShutDown: Bool {
            if case .shutDown = condition { return true }
            return false
        }

        /// What it looks like from outside. A passed socket is the service's own when it was bound by an earlier
        /// process (file descriptor store) or handed over by an upgrade: it waits for its server, paused (or closed,
        /// as the predecessor left it); a socket unit's that nobody asked for is unclaimed.
        package var state: State {
            switch condition {
            case .shutDown: return .closed
            case .listening: return servers > 0 ? .serving : .paused
            case .passed: return origin == .socketUnit && handedOverBy == nil ? .unclaimed : .paused
            }
        }

        /// Whether it does what it should for a process that serves: a server accepts on it, or it is shut down on
        /// purpose (the close policy).
        package var isServed: Bool { state == .serving || state == .closed }
    }

    /// What changed.
    package enum Change: Sendable {
        /// This process bound a socket (nothing was passed under its name): the host keeps it in systemd's file
        /// descriptor store, so the next process of the service gets it back after a crash.
        case bound(Entry)
        /// A socket a process of the service bound was replaced (another address under the same name): the host drops
        /// it from the file descriptor store.
        case retired(Entry)
        /// Anything else: a socket claimed, a server began or ended, a socket shut down or listening again.
        case updated
        /// The application's teardown ended, before the host hears it terminated: what must be undone before the
        /// process exits is undone now (a socket shut down in the background listens again, so a socket systemd holds
        /// is never left shut down).
        case willExit
    }

    /// A registered observer; ``cancel()`` removes it.
    @MainActor
    package final class Observation {
        fileprivate weak var table: ListenerTable?
        fileprivate let id: Int

        fileprivate init(table: ListenerTable, id: Int) {
            self.table = table
            self.id = id
        }

        /// Stops delivering changes.
        package func cancel() {
            table?.observers.removeAll { $0.id == id }
        }
    }

    /// The sockets in use, in the order they were opened.
    package private(set) var listeners: [Entry] = []
    /// Sockets passed to the process under a name no server has asked for yet, by name.
    package private(set) var passed: [String: Entry] = [:]
    /// Sockets replaced by one of the same name at another address, kept open until their last server ends.
    package private(set) var retired: [Entry] = []
    /// Whether an upgrade handed every socket to the next process: this one no longer changes how they listen.
    package private(set) var isHandedOver = false
    private var observers: [(id: Int, body: @MainActor (Change) -> Void)] = []
    private var nextObserverID = 0
    /// The observer that makes shut-down sockets listen again at exit, while one is shut down.
    private var exitGuard: Observation?

    /// An empty table.
    package init() {}

    /// The socket in use named `name`, if one is open.
    package subscript(name: String) -> Entry? {
        listeners.first { $0.name == name }
    }

    /// Calls `body` with every change from now on, until the returned observation is cancelled.
    @discardableResult
    package func observe(_ body: @escaping @MainActor (Change) -> Void) -> Observation {
        nextObserverID += 1
        observers.append((nextObserverID, body))
        return Observation(table: self, id: nextObserverID)
    }

    private func notify(_ change: Change) {
        for observer in observers { observer.body(change) }
    }

    /// Records a socket passed to the process under `entry.name` (its condition `.passed`, or `.shutDown` as an
    /// upgrade's predecessor left it), replacing one passed before under that name.
    package func recordPassed(_ entry: Entry) {
        passed[entry.name] = entry
        notify(.updated)
    }

    /// Forgets a passed socket (its owner closed it: another socket took its name).
    package func forgetPassed(named name: String) {
        passed[name] = nil
    }

    /// Records a socket opened under its name: a passed one claimed, or one this process bound. A socket of the same
    /// name in use already is retired (closed by its owner once no server uses it).
    package func open(_ entry: Entry) {
        passed[entry.name] = nil
        if let index = listeners.firstIndex(where: { $0.name == entry.name }) {
            let old = listeners.remove(at: index)
            retired.append(old)
            if old.origin != .socketUnit { notify(.retired(old)) }
        }
        listeners.append(entry)
        if entry.origin == .bound, entry.handedOverBy == nil { notify(.bound(entry)) }
        notify(.updated)
    }

    /// Changes the socket whose descriptor is `descriptor`, in use or retired.
    package func update(descriptor: Int32, _ change: (inout Entry) -> Void) {
        if let index = listeners.firstIndex(where: { $0.descriptor == descriptor }) {
            change(&listeners[index])
        } else if let index = retired.firstIndex(where: { $0.descriptor == descriptor }) {
            change(&retired[index])
        }
        notify(.updated)
    }

    /// Removes a retired socket once its owner has closed it.
    package func forgetRetired(descriptor: Int32) {
        retired.removeAll { $0.descriptor == descriptor }
    }

    /// The retired sockets no run serves any more: their owner closes them.
    package var unusedRetired: [Entry] { retired.filter { $0.servers == 0 } }

    /// Every socket the process holds for a listener, in use or passed, with what the next process must know: what
    /// an upgrade hands over.
    package var inUseAndPassed: [Entry] {
        listeners + passed.values.sorted { $0.name < $1.name }
    }

    /// An upgrade handed every socket to the next process: from now on they are that process's to shut down or to
    /// listen again, and this one leaves them as they are when it exits.
    package func handOver() {
        isHandedOver = true
    }

    /// The application's teardown ended (``Change/willExit``).
    package func applicationWillExit() {
        notify(.willExit)
    }

    /// Makes every socket that is shut down (in use or passed) listen again when the application's teardown ends,
    /// unless an upgrade handed the sockets to the next process: a socket systemd holds must never outlive the process
    /// shut down (a socket unit stops on it: "Got POLLHUP on a listening socket"). `listenAgain` makes the system
    /// calls — the descriptor, its backlog, where to bind it first — and says whether it listens. Called whenever a
    /// socket is shut down; the guard is one per table, and goes once no socket is shut down.
    package func listenAgainAtExit(using listenAgain: @escaping @MainActor (Int32, Int, String?) -> Bool) {
        guard exitGuard == nil else { return }
        exitGuard = observe { [unowned self] change in
            switch change {
            case .willExit:
                guard !isHandedOver else { return }
                for entry in listeners where entry.isShutDown {
                    guard case .shutDown(let address) = entry.condition else { continue }
                    if listenAgain(entry.descriptor, entry.backlog, address) {
                        update(descriptor: entry.descriptor) { $0.condition = .listening }
                    }
                }
                for entry in passed.values where entry.isShutDown {
                    guard case .shutDown(let address) = entry.condition else { continue }
                    if listenAgain(entry.descriptor, entry.backlog, address) { passed[entry.name]?.condition = .passed }
                }
            case .updated:
                if !listeners.contains(where: \.isShutDown), !passed.values.contains(where: \.isShutDown) {
                    exitGuard?.cancel()
                    exitGuard = nil
                }
            case .bound, .retired:
                break
            }
        }
    }
}
