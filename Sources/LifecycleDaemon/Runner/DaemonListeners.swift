//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
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

extension Daemon {
    /// Takes the sockets systemd (or an upgrade) passed: the control socket's, then every other stream socket becomes
    /// a listener the application's servers claim by name. Returns the control socket's, if one was passed.
    func takeInheritedSockets(upgrade: UpgradeHandOver?) -> SocketActivation.Socket? {
        let inherited = effects.takeInheritedSockets()
        // Only an AF_UNIX socket can be the control socket (peers are known by their credentials); a TCP socket a
        // socket unit passed is a server's, whatever it is called.
        let candidates = inherited.filter { SocketActivation.isUnixSocket($0.descriptor) }
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
        let origins = upgrade?.listenerOrigins ?? [:]
        let table = application.listeners
        for socket in inherited where socket.descriptor != control?.descriptor {
            if isSecondSocket(socket) { continue }
            if let upgrade {
                table.unclaimed[socket.name] = ListenerTable.Inherited(
                    descriptor: socket.descriptor,
                    origin: origins[socket.name] ?? .socketUnit,
                    handedOverBy: upgrade.previousPID
                )
            } else if socket.name.hasPrefix(ListenerNames.storePrefix) {
                let name = String(socket.name.dropFirst(ListenerNames.storePrefix.count))
                if let unit = table.unclaimed[name], unit.origin == .socketUnit {
                    // A socket unit now passes this name: the socket this service bound before gives way to it.
                    dropStoredListener(socket, name: name)
                    continue
                }
                table.unclaimed[name] = ListenerTable.Inherited(
                    descriptor: socket.descriptor,
                    origin: .fileDescriptorStore
                )
            } else {
                if let stored = table.unclaimed[socket.name], stored.origin == .fileDescriptorStore {
                    dropStoredListener(
                        SocketActivation.Socket(name: socket.name, descriptor: stored.descriptor),
                        name: socket.name
                    )
                }
                table.unclaimed[socket.name] = ListenerTable.Inherited(
                    descriptor: socket.descriptor,
                    origin: .socketUnit
                )
            }
        }
        if !table.unclaimed.isEmpty {
            let passed = table.unclaimed.sorted { $0.key < $1.key }.map {
                "\($0.key) (fd \($0.value.descriptor), \($0.value.origin.rawValue))"
            }
            logger.debug("listening sockets passed: \(passed.joined(separator: ", "))")
        }
        keepBoundListenersInStore()
        return control
    }

    /// Whether a socket comes under a name that an earlier socket of the same kind (the socket unit's, or the file
    /// descriptor store's) already took: a listener serves one socket, so the second is closed here, with a warning
    /// that says what to change. A socket unit with two `ListenStream=` has one `FileDescriptorName=` for both.
    private func isSecondSocket(_ socket: SocketActivation.Socket) -> Bool {
        let table = application.listeners
        let isStored = socket.name.hasPrefix(ListenerNames.storePrefix)
        let name = isStored ? String(socket.name.dropFirst(ListenerNames.storePrefix.count)) : socket.name
        guard let first = table.unclaimed[name], (first.origin == .fileDescriptorStore) == isStored else { return false }
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

    /// Listeners this process binds go to systemd's file descriptor store (`FDSTORE=1`), so that a restart after a
    /// crash or a watchdog kill gets them back and connections wait in their backlog meanwhile; one replaced by
    /// another address is dropped from it.
    private func keepBoundListenersInStore() {
        let store = FileDescriptorStore(notifier: .fromEnvironment())
        guard store.isAvailable, configuration.restoration.fileDescriptorStore != .no else { return }
        let table = application.listeners
        table.didBind = { [unowned self] listener in
            guard isMainProcess else {
                // An upgrade's new process is not the main process yet: systemd takes its messages once it is.
                pendingListenerStores.append(listener)
                return
            }
            storeListener(listener, in: store)
        }
        table.didRetire = { [unowned self] listener in
            guard isMainProcess else {
                pendingListenerRemovals.append(listener.name)
                return
            }
            removeStoredListener(named: listener.name, from: store)
        }
    }

    func removeStoredListener(
        named name: String,
        from store: FileDescriptorStore = FileDescriptorStore(notifier: .fromEnvironment())
    ) {
        do {
            try store.remove(name: ListenerNames.storePrefix + name)
        } catch {
            notifications.reportFailure(error)
        }
    }

    func storeListener(
        _ listener: ListenerTable.Listener,
        in store: FileDescriptorStore = FileDescriptorStore(notifier: .fromEnvironment())
    ) {
        do {
            try store.store(descriptor: listener.descriptor, name: ListenerNames.storePrefix + listener.name)
            logger.debug("listener \(listener.name) kept in the file descriptor store")
        } catch {
            notifications.reportFailure(error)
        }
    }

    /// A stored listener superseded by a socket unit's: closed, and dropped from the store.
    private func dropStoredListener(_ socket: SocketActivation.Socket, name: String) {
        close(socket.descriptor)
        do {
            try FileDescriptorStore(notifier: .fromEnvironment()).remove(name: ListenerNames.storePrefix + name)
        } catch {
            notifications.reportFailure(error)
        }
        logger.notice("listener \(name): the socket unit's socket replaces the one this service bound before")
    }

    /// Sockets passed under names no server claimed, once the launch is over: a socket unit whose
    /// `FileDescriptorName=` matches no listener is a configuration mistake worth one warning.
    func warnAboutUnclaimedListeners() {
        let unclaimed = application.listeners.unclaimed.filter {
            $0.value.origin == .socketUnit && $0.value.handedOverBy == nil
        }
        guard !unclaimed.isEmpty, application.applicationState == .active else { return }
        let names = unclaimed.keys.sorted()
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
