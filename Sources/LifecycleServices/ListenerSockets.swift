//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The system calls behind the application's ``ListenerTable``: claiming a passed socket or binding one, pausing
/// (shutting down) and resuming, closing what is retired.
@MainActor
package enum ListenerSockets {
    /// The socket named `listener.name` for a run of a hosted server in `application`: the one open already (the
    /// same address, or one systemd's configuration decides), else the one passed under that name, else a new one
    /// bound to `listener.address`. A socket that does not listen (shut down by an earlier process, or by this one's
    /// close policy) listens again. Counts the run as a server of it until ``release(_:in:)``.
    static func claim(_ listener: Listener, in application: Application) throws(ListenerError) -> ListeningSocket {
        let table = application.listeners
        let opened: ListenerTable.Listener
        if let current = table[listener.name], keeps(current, for: listener, logger: application.logger) {
            opened = current
        } else if let passed = table.unclaimed[listener.name] {
            opened = try adopt(passed, as: listener, in: application)
        } else {
            opened = try claimFresh(listener, replacing: nil, in: application)
        }
        // A socket the one opened retired, whose last run had ended already (a controller replaced by one at another
        // address, whose old run ended first), is closed now, or it would listen, served by nobody, until the process
        // exits. One still served is closed when its last run ends (release(_:in:)).
        closeUnusedRetired(in: application)
        if opened.isShutDown || !isListening(opened.descriptor) {
            rebindIfShutDown(opened.descriptor)
            guard Glibc.listen(opened.descriptor, Int32(clamping: listener.backlog)) == 0 else {
                throw ListenerError(listener: listener.name, address: opened.address, operation: "listen", errno: errno)
            }
        }
        table.update(descriptor: opened.descriptor) {
            $0.isShutDown = false
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
        if table.isUnusedRetired(descriptor: socket.descriptor) {
            close(socket.descriptor)
            table.forgetRetired(descriptor: socket.descriptor)
        }
    }

    /// Shuts the socket down (the close policy, in the background): new connections are refused until it listens
    /// again, and the table asks for that before the process exits, so a socket systemd holds never outlives the
    /// process shut down (a socket unit stops on it: "Got POLLHUP on a listening socket").
    static func shutDown(_ socket: ListeningSocket, in application: Application) {
        let table = application.listeners
        guard let current = table[socket.name], current.descriptor == socket.descriptor, !current.isShutDown else {
            return
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket.descriptor, $0, &length) }
        }
        if named == 0 { shutDownAddresses[socket.descriptor] = (address, length) }
        Glibc.shutdown(socket.descriptor, Int32(SHUT_RDWR))
        table.update(descriptor: socket.descriptor) { $0.isShutDown = true }
        application.logger.info(
            "listener \(socket.name): shut down in the background, \(socket.address) refuses connections",
            metadata: [LogKey.listener: .string(socket.name)]
        )
        table.willExit = { [unowned application] in relistenShutDown(in: application) }
    }

    /// Every shut-down socket listens again (before the process exits).
    static func relistenShutDown(in application: Application) {
        let table = application.listeners
        for listener in table.listeners where listener.isShutDown {
            rebindIfShutDown(listener.descriptor)
            if Glibc.listen(listener.descriptor, 4096) == 0 {
                table.update(descriptor: listener.descriptor) { $0.isShutDown = false }
            } else {
                application.logger.warning(
                    "listener \(listener.name): cannot listen on \(listener.address) again: \(String(cString: strerror(errno)))"
                )
            }
        }
    }

    /// Where each socket shut down by the close policy listened: a socket bound to a port the kernel picked loses
    /// the port when it shuts down (Linux keeps only a port the caller named), so it is bound to it again first.
    private static var shutDownAddresses: [Int32: (sockaddr_storage, socklen_t)] = [:]

    private static func rebindIfShutDown(_ descriptor: Int32) {
        guard let (saved, length) = shutDownAddresses.removeValue(forKey: descriptor) else { return }
        var address = saved
        // EINVAL when the socket kept its port (one the caller named): then listen alone brings it back.
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, length) }
        }
    }

    // MARK: Claiming

    /// Whether the open socket serves `listener`: one systemd's configuration decides (a socket unit's) always; one a
    /// process of the service bound only while `listener.address` still names where it listens.
    private static func keeps(_ current: ListenerTable.Listener, for listener: Listener, logger: Logger) -> Bool {
        if matches(listener.address, current.address) { return true }
        if current.origin == .socketUnit {
            logger.notice(
                "listener \(listener.name): serving on \(current.address), the socket unit's; the configured \(listener.address) is not used",
                metadata: [LogKey.listener: .string(listener.name)]
            )
            return true
        }
        logger.info(
            "listener \(listener.name): moving from \(current.address) to \(listener.address)",
            metadata: [LogKey.listener: .string(listener.name)]
        )
        return false
    }

    /// Takes a socket passed under `listener.name`: checks it is a stream socket and records where it listens.
    private static func adopt(
        _ passed: ListenerTable.Inherited,
        as listener: Listener,
        in application: Application
    ) throws(ListenerError) -> ListenerTable.Listener {
        let table = application.listeners
        let address = describe(passed.descriptor) ?? "fd \(passed.descriptor)"
        var type: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(passed.descriptor, SOL_SOCKET, SO_TYPE, &type, &length) == 0,
            type == Int32(SOCK_STREAM.rawValue)
        else {
            throw ListenerError(
                listener: listener.name,
                address: address,
                operation: "the descriptor passed as \(listener.name) (fd \(passed.descriptor)) is not a stream socket",
                errno: 0
            )
        }
        if passed.origin != .socketUnit, !matches(listener.address, address) {
            // Bound by an earlier process of the service for an address the configuration no longer names.
            table.unclaimed[listener.name] = nil
            let stale = ListenerTable.Listener(
                name: listener.name,
                descriptor: passed.descriptor,
                address: address,
                origin: passed.origin,
                handedOverBy: passed.handedOverBy
            )
            table.add(stale)
            return try claimFresh(listener, replacing: stale, in: application)
        }
        if passed.origin == .socketUnit, !matches(listener.address, address) {
            application.logger.notice(
                "listener \(listener.name): serving on \(address), the socket unit's; the configured \(listener.address) is not used",
                metadata: [LogKey.listener: .string(listener.name)]
            )
        }
        let adopted = ListenerTable.Listener(
            name: listener.name,
            descriptor: passed.descriptor,
            address: address,
            origin: passed.origin,
            handedOverBy: passed.handedOverBy
        )
        table.add(adopted)
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
    private static func claimFresh(
        _ listener: Listener,
        replacing stale: ListenerTable.Listener?,
        in application: Application
    ) throws(ListenerError) -> ListenerTable.Listener {
        let descriptor = try bind(listener)
        let fresh = ListenerTable.Listener(
            name: listener.name,
            descriptor: descriptor,
            address: describe(descriptor) ?? listener.address.description,
            origin: .bound
        )
        application.listeners.add(fresh)
        application.logger.info(
            "listener \(listener.name): bound \(fresh.address)\(stale.map { " (was \($0.address))" } ?? "")",
            metadata: [LogKey.listener: .string(listener.name), LogKey.listenerOrigin: "bound"]
        )
        return fresh
    }

    /// Closes the retired listeners no run serves.
    private static func closeUnusedRetired(in application: Application) {
        let table = application.listeners
        for listener in table.retired where table.isUnusedRetired(descriptor: listener.descriptor) {
            close(listener.descriptor)
            table.forgetRetired(descriptor: listener.descriptor)
        }
    }

    // MARK: System calls

    /// Whether `descriptor` is a listening socket now.
    package static func isListening(_ descriptor: Int32) -> Bool {
        var accepting: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) == 0 && accepting != 0
    }

    /// A new listening socket at `listener.address` (close-on-exec, `SO_REUSEADDR` for TCP).
    package static func bind(_ listener: Listener) throws(ListenerError) -> Int32 {
        switch listener.address {
        case .tcp(let host, let port):
            return try bindTCP(listener, host: host, port: port)
        case .unix(let path):
            return try bindUnix(listener, path: path)
        }
    }

    private static func bindTCP(_ listener: Listener, host: String, port: Int) throws(ListenerError) -> Int32 {
        let place = listener.address.description
        guard (0...65535).contains(port) else {
            throw ListenerError(
                listener: listener.name,
                address: place,
                operation: "the port must be 0...65535",
                errno: 0
            )
        }
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw ListenerError(
                listener: listener.name,
                address: place,
                operation: "cannot resolve \(host): \(reason)",
                errno: 0
            )
        }
        defer { freeaddrinfo(results) }
        var failure = ListenerError(listener: listener.name, address: place, operation: "no address", errno: 0)
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            next = info.pointee.ai_next
            let descriptor = socket(
                info.pointee.ai_family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                0
            )
            guard descriptor >= 0 else {
                failure = ListenerError(listener: listener.name, address: place, operation: "socket", errno: errno)
                continue
            }
            var one: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            if info.pointee.ai_family == AF_INET6 {
                setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            if Glibc.bind(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
                failure = ListenerError(listener: listener.name, address: place, operation: "bind", errno: errno)
                close(descriptor)
                continue
            }
            if Glibc.listen(descriptor, Int32(clamping: listener.backlog)) != 0 {
                failure = ListenerError(listener: listener.name, address: place, operation: "listen", errno: errno)
                close(descriptor)
                continue
            }
            return descriptor
        }
        throw failure
    }

    private static func bindUnix(_ listener: Listener, path: String) throws(ListenerError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ListenerError(
                listener: listener.name,
                address: path,
                operation: "the path must have 1 to 107 bytes",
                errno: 0
            )
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw ListenerError(listener: listener.name, address: path, operation: "socket", errno: errno)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        func bindNow() -> Int32 {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, length) }
            }
        }
        var bound = bindNow()
        if bound != 0, errno == EADDRINUSE, isStaleSocket(address) {
            // A socket file left by a process that is gone: nobody accepts on it.
            unlink(path)
            bound = bindNow()
        }
        guard bound == 0, Glibc.listen(descriptor, Int32(clamping: listener.backlog)) == 0 else {
            let error = ListenerError(
                listener: listener.name,
                address: path,
                operation: bound == 0 ? "listen" : "bind",
                errno: errno
            )
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Whether a connect to the socket file at `address` is refused: its listener is gone.
    private static func isStaleSocket(_ address: sockaddr_un) -> Bool {
        var address = address
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result != 0 && errno == ECONNREFUSED
    }

    /// Where the socket listens, as people write it (`127.0.0.1:8080`, `[::1]:8080`, a path, `@name` for an abstract
    /// socket), or nil when the kernel does not say.
    package static func describe(_ descriptor: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard status == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET, AF_INET6:
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            var port = [CChar](repeating: 0, count: Int(NI_MAXSERV))
            let named = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    getnameinfo(
                        $0,
                        length,
                        &host,
                        socklen_t(host.count),
                        &port,
                        socklen_t(port.count),
                        NI_NUMERICHOST | NI_NUMERICSERV
                    )
                }
            }
            guard named == 0 else { return nil }
            return Int32(storage.ss_family) == AF_INET6
                ? "[\(string(host))]:\(string(port))" : "\(string(host)):\(string(port))"
        case AF_UNIX:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_un.self, capacity: 1) { address in
                    let pathLength = Int(length) - MemoryLayout<sa_family_t>.size
                    guard pathLength > 0 else { return "(unnamed)" }
                    return withUnsafeBytes(of: address.pointee.sun_path) { raw in
                        let bytes = Array(raw.prefix(pathLength))
                        if bytes.first == 0 { return "@" + String(decoding: bytes.dropFirst(), as: UTF8.self) }
                        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                    }
                }
            }
        default:
            return nil
        }
    }

    /// Whether `address` names where a socket described as `bound` listens: the same port and, for TCP, the host as
    /// written or any address it resolves to.
    package static func matches(_ address: Listener.Address, _ bound: String) -> Bool {
        switch address {
        case .unix(let path):
            return path == bound
        case .tcp(let host, let port):
            if address.description == bound { return true }
            guard port != 0 else {
                // A port the kernel picked: any port on the same host is the one asked for.
                return resolved(host).contains { bound.hasPrefix($0 + ":") || bound.hasPrefix("[\($0)]:") }
            }
            return resolved(host).contains { bound == "\($0):\(port)" || bound == "[\($0)]:\(port)" }
        }
    }

    /// The numeric addresses `host` resolves to (passive: `0.0.0.0` and `::` for an empty host).
    private static func resolved(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host.isEmpty ? nil : host, "0", &hints, &results) == 0 else { return [] }
        defer { freeaddrinfo(results) }
        var addresses: [String] = []
        var next = results
        while let info = next {
            next = info.pointee.ai_next
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(
                info.pointee.ai_addr,
                info.pointee.ai_addrlen,
                &text,
                socklen_t(text.count),
                nil,
                0,
                NI_NUMERICHOST
            ) == 0 {
                addresses.append(string(text))
            }
        }
        return addresses
    }
}

/// The text of a NUL-terminated buffer.
private func string(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
