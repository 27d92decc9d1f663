//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives

#if canImport(Glibc)
import Glibc
#endif

/// Binding a ``Listener``'s address when nothing was passed under its name, and telling whether a socket listens
/// where a listener's address says.
package enum ListenerBinding {
    /// A new listening socket at `listener.address` (close-on-exec, `SO_REUSEADDR` for TCP, a stale `AF_UNIX` socket
    /// file replaced).
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
        guard (0...65535).contains(port) else { throw ListenerError(.invalidPort, listener: listener.name, address: place) }
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw ListenerError(
                .unresolvableHost,
                listener: listener.name,
                address: place,
                detail: status == 0 ? "no address" : String(cString: gai_strerror(status))
            )
        }
        defer { freeaddrinfo(results) }
        var failure = ListenerError(.unresolvableHost, listener: listener.name, address: place, detail: "no address")
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            next = info.pointee.ai_next
            let descriptor = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else {
                failure = systemCallFailed("socket", listener, place)
                continue
            }
            var one: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            if info.pointee.ai_family == AF_INET6 {
                setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            if Glibc.bind(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
                failure = systemCallFailed("bind", listener, place)
                close(descriptor)
                continue
            }
            if Glibc.listen(descriptor, Int32(clamping: listener.backlog)) != 0 {
                failure = systemCallFailed("listen", listener, place)
                close(descriptor)
                continue
            }
            return descriptor
        }
        throw failure
    }

    private static func bindUnix(_ listener: Listener, path: String) throws(ListenerError) -> Int32 {
        guard case (var address, let length)? = SocketCalls.unixAddress(path) else {
            throw ListenerError(.invalidPath, listener: listener.name, address: path)
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw systemCallFailed("socket", listener, path) }
        func bindNow() -> Int32 {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, length) }
            }
        }
        var bound = bindNow()
        if bound != 0, errno == EADDRINUSE, SocketCalls.probe(unixPath: path) == .stale {
            // A socket file left by a process that is gone: nobody accepts on it.
            unlink(path)
            bound = bindNow()
        }
        guard bound == 0, Glibc.listen(descriptor, Int32(clamping: listener.backlog)) == 0 else {
            let error = systemCallFailed(bound == 0 ? "listen" : "bind", listener, path)
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// The error for the system call that just failed (its errno).
    private static func systemCallFailed(_ call: String, _ listener: Listener, _ place: String) -> ListenerError {
        ListenerError(.systemCall, listener: listener.name, address: place, systemCall: call, errno: errno)
    }

    /// Whether `address` names where a socket described as `bound` listens: the same port and, for TCP, the host as
    /// written or any address it resolves to.
    package static func matches(_ address: Listener.Address, _ bound: String) -> Bool {
        switch address {
        case .unix(let path):
            return path == bound
        case .tcp(let host, let port):
            if address.description == bound { return true }
            let hosts = SocketCalls.numericAddresses(of: host)
            guard port != 0 else {
                // A port the kernel picked: any port on the same host is the one asked for.
                return hosts.contains { bound.hasPrefix($0 + ":") || bound.hasPrefix("[\($0)]:") }
            }
            return hosts.contains { bound == "\($0):\(port)" || bound == "[\($0)]:\(port)" }
        }
    }
}
