//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#if canImport(Glibc)
import Glibc
#endif

/// Whether a TCP port on an address can be listened on now: a reload checks a new address or port before anything
/// moves to it.
enum PortProbe {
    struct Unavailable: Error, CustomStringConvertible {
        let address: String
        let port: Int
        let reason: String
        var description: String {
            let endpoint = address == "127.0.0.1" ? "port \(port)" : "\(address) port \(port)"
            return "\(endpoint) cannot be listened on (\(reason)); the server stays on its port"
        }
    }

    /// What an address must be, for an error to say.
    static let numericAddress = "a numeric IPv4 or IPv6 address (127.0.0.1, 0.0.0.0, ::1, ::)"

    /// Whether `text` is a numeric IPv4 or IPv6 address (no host name: nothing to resolve, or to resolve differently
    /// later).
    static func isNumericAddress(_ text: String) -> Bool {
        var bytes = in6_addr()
        return inet_pton(AF_INET, text, &bytes) == 1 || inet_pton(AF_INET6, text, &bytes) == 1
    }

    static func check(address: String, port: Int) throws(Unavailable) {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(address, String(port), &hints, &results)
        guard status == 0, let found = results else {
            throw Unavailable(address: address, port: port, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(results) }
        let fd = socket(found.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Unavailable(address: address, port: port, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        // As the server binds (ListenerSockets): a port whose last connections linger in TIME_WAIT can be listened
        // on, and an IPv6 address is checked alone.
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if found.pointee.ai_family == AF_INET6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        guard bind(fd, found.pointee.ai_addr, found.pointee.ai_addrlen) == 0 else {
            throw Unavailable(address: address, port: port, reason: String(cString: strerror(errno)))
        }
    }
}
