//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The names the daemon gives what it passes on: listeners in systemd's file descriptor store, and what an upgrade
/// hands to the next process besides the listeners.
enum ListenerNames {
    /// A listener this service bound is kept in the file descriptor store as `lifecycle-listener-<name>`, so that the
    /// next start tells it from a socket unit's (named by `FileDescriptorName=`).
    static let storePrefix = "lifecycle-listener-"
    /// The control socket, as a socket unit names it and as an upgrade passes it.
    static let control = "control"
}

/// The listeners this service bound, kept in systemd's file descriptor store (`FDSTORE=1`), so that a restart after
/// a crash or a watchdog kill gets them back and connections wait in their backlog meanwhile; one replaced by another
/// address is dropped from it. Only the main process talks to the store: what an upgrade's successor binds waits until
/// it is the main process.
@MainActor
final class ListenerStore {
    private enum Operation {
        case store(ListenerTable.Entry)
        case remove(String)
    }

    private let store: FileDescriptorStore
    private let isMain: @MainActor () -> Bool
    private let logger: Logger
    private let reportFailure: @MainActor (any Error) -> Void
    private var pending: [Operation] = []

    /// Keeps what `table` records as bound (and drops what it retires) in `store`, while `isMain` says this process
    /// is the main process; `reportFailure` hears the store's errors.
    init(
        store: FileDescriptorStore,
        table: ListenerTable,
        isMain: @escaping @MainActor () -> Bool,
        logger: Logger,
        reportFailure: @escaping @MainActor (any Error) -> Void
    ) {
        self.store = store
        self.isMain = isMain
        self.logger = logger
        self.reportFailure = reportFailure
        table.observe { [weak self] change in
            switch change {
            case .bound(let entry): self?.perform(.store(entry))
            case .retired(let entry): self?.perform(.remove(entry.name))
            case .updated, .willExit: break
            }
        }
    }

    /// This process is the main process now: what waited goes to the store, in the order it happened.
    func becameMain() {
        let waiting = pending
        pending = []
        for operation in waiting { perform(operation) }
    }

    /// Drops a stored listener (a socket unit's now takes its name).
    func remove(named name: String) {
        perform(.remove(name))
    }

    private func perform(_ operation: Operation) {
        guard isMain() else {
            // An upgrade's successor: systemd takes its messages once it is the main process.
            pending.append(operation)
            return
        }
        do {
            switch operation {
            case .store(let entry):
                try store.store(descriptor: entry.descriptor, name: ListenerNames.storePrefix + entry.name)
                logger.debug("listener \(entry.name) kept in the file descriptor store")
            case .remove(let name):
                try store.remove(name: ListenerNames.storePrefix + name)
            }
        } catch {
            reportFailure(error)
        }
    }
}

extension Daemon {
    /// Takes the stream sockets systemd (or an upgrade) passed: the control socket's, then every other one becomes a
    /// listener the application's servers claim by name, recorded as the process that passed it left it. Returns the
    /// control socket's, if one was passed.
    func takePassedSockets(_ passed: [SocketActivation.Socket], upgrade: UpgradeFromPredecessor?) -> SocketActivation.Socket? {
        // Only an AF_UNIX socket can be the control socket (peers are known by their credentials); a TCP socket a
        // socket unit passed is a server's, whatever it is called.
        let candidates = passed.filter { SocketCalls.isUnixSocket($0.descriptor) }
        var control: SocketActivation.Socket?
        if configuration.control.isEnabled,
            case .inherited(let descriptor, _) = ControlSocketLocation.resolve(
                settings: configuration.control,
                inherited: candidates,
                environment: [:],
                uid: geteuid(),
                programName: options.programName
            )
        {
            control = candidates.first { $0.descriptor == descriptor }
        }
        let table = application.listeners
        for socket in passed where socket.descriptor != control?.descriptor {
            if isSecondSocket(socket) { continue }
            if let upgrade {
                let state = upgrade.listeners[socket.name] ?? UpgradeEnvironment.ListenerState(origin: .socketUnit)
                table.recordPassed(
                    ListenerTable.Entry(
                        name: socket.name,
                        descriptor: socket.descriptor,
                        address: state.address ?? Self.address(of: socket.descriptor),
                        origin: state.origin,
                        handedOverBy: upgrade.previousPID,
                        condition: state.isShutDown ? .shutDown(rebindTo: state.address) : .passed
                    )
                )
                // Shut down by the predecessor in the background: it listens again before this process exits, unless
                // a server claims it first.
                if state.isShutDown { table.listenAgainAtExit(using: SocketCalls.listenAgain) }
            } else if socket.name.hasPrefix(ListenerNames.storePrefix) {
                let name = String(socket.name.dropFirst(ListenerNames.storePrefix.count))
                if let unit = table.passed[name], unit.origin == .socketUnit {
                    // A socket unit now passes this name: the socket this service bound before gives way to it.
                    close(socket.descriptor)
                    listenerStore?.remove(named: name)
                    logger.notice("listener \(name): the socket unit's socket replaces the one this service bound before")
                    continue
                }
                table.recordPassed(
                    ListenerTable.Entry(
                        name: name,
                        descriptor: socket.descriptor,
                        address: Self.address(of: socket.descriptor),
                        origin: .fileDescriptorStore,
                        condition: .passed
                    )
                )
            } else {
                if let stored = table.passed[socket.name], stored.origin == .fileDescriptorStore {
                    close(stored.descriptor)
                    table.forgetPassed(named: socket.name)
                    listenerStore?.remove(named: socket.name)
                    logger.notice(
                        "listener \(socket.name): the socket unit's socket replaces the one this service bound before"
                    )
                }
                table.recordPassed(
                    ListenerTable.Entry(
                        name: socket.name,
                        descriptor: socket.descriptor,
                        address: Self.address(of: socket.descriptor),
                        origin: .socketUnit,
                        condition: .passed
                    )
                )
            }
        }
        if !table.passed.isEmpty {
            let described = table.passed.values.sorted { $0.name < $1.name }.map {
                "\($0.name) (fd \($0.descriptor), \($0.origin.rawValue))"
            }
            logger.debug("listening sockets passed: \(described.joined(separator: ", "))")
        }
        return control
    }

    /// Where a passed socket listens, for status reports before a server claims it.
    private static func address(of descriptor: Int32) -> String {
        SocketCalls.localAddress(of: descriptor) ?? "fd \(descriptor)"
    }

    /// Whether a socket comes under a name that an earlier socket of the same kind (the socket unit's, or the file
    /// descriptor store's) already took: a listener serves one socket, so the second is closed here, with a warning
    /// that says what to change. A socket unit with two `ListenStream=` has one `FileDescriptorName=` for both.
    private func isSecondSocket(_ socket: SocketActivation.Socket) -> Bool {
        let isStored = socket.name.hasPrefix(ListenerNames.storePrefix)
        let name = isStored ? String(socket.name.dropFirst(ListenerNames.storePrefix.count)) : socket.name
        guard let first = application.listeners.passed[name], (first.origin == .fileDescriptorStore) == isStored
        else { return false }
        let source = isStored ? "the file descriptor store" : "systemd"
        let advice =
            isStored
            ? "a restart of the service (systemctl restart) empties the store"
            : "give each socket a name of its own (a socket unit each, with its own FileDescriptorName=)"
        logger.warning(
            "two sockets passed as \(name) by \(source) (fd \(first.descriptor) and fd \(socket.descriptor)): a listener serves one socket, so fd \(socket.descriptor) is closed and not served; \(advice)",
            metadata: [LogKey.listener: .string(name)]
        )
        close(socket.descriptor)
        return true
    }

    /// What an upgrade hands the successor: every socket in use or passed, with its origin and whether it is shut
    /// down. From then on they are the successor's to shut down or to listen again.
    func listenersToHandOver() -> [ListenerHandOver] {
        application.listeners.inUseAndPassed.map { entry in
            let address: String? = if case .shutDown(let address) = entry.condition { address } else { nil }
            return ListenerHandOver(
                name: entry.name,
                descriptor: entry.descriptor,
                origin: entry.origin,
                isShutDown: entry.isShutDown,
                address: address
            )
        }
    }

    /// Sockets passed under names no server claimed, once the launch is over: a socket unit whose
    /// `FileDescriptorName=` matches no listener is a configuration mistake worth one warning.
    func warnAboutUnclaimedListeners() {
        let unclaimed = application.listeners.passed.values.filter { $0.state == .unclaimed }
        guard !unclaimed.isEmpty, application.applicationState == .active else { return }
        let names = unclaimed.map(\.name).sorted()
        let declared = application.listeners.listeners.map(\.name)
        logger.warning(
            """
            systemd passed socket(s) named \(names.joined(separator: ", ")) that no server listens on\
            \(declared.isEmpty ? "" : " (the servers' listeners: \(declared.joined(separator: ", ")))"); set the \
            socket unit's FileDescriptorName= to a listener's name
            """
        )
    }
}
