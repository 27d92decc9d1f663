//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#if canImport(Glibc)
package import Glibc
#endif

/// The socket calls the daemon's listeners, its control socket and the sockets systemd passes share: one home, so a
/// socket's address is written one way, a stale socket file is recognised one way, and "is it listening" has one
/// answer.
package enum SocketCalls {
    /// Whether `descriptor` is a listening socket now (`SO_ACCEPTCONN`): false for a socket shut down, a connected
    /// socket, a file, or a closed descriptor.
    package static func isListening(_ descriptor: Int32) -> Bool {
        intOption(descriptor, SO_ACCEPTCONN).map { $0 != 0 } ?? false
    }

    /// Whether `descriptor` is a stream socket (`SO_TYPE`).
    package static func isStreamSocket(_ descriptor: Int32) -> Bool {
        intOption(descriptor, SO_TYPE) == Int32(SOCK_STREAM.rawValue)
    }

    /// Whether `descriptor` is an `AF_UNIX` socket (`SO_DOMAIN`).
    package static func isUnixSocket(_ descriptor: Int32) -> Bool {
        intOption(descriptor, SO_DOMAIN) == AF_UNIX
    }

    private static func intOption(_ descriptor: Int32, _ option: Int32) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(descriptor, SOL_SOCKET, option, &value, &length) == 0 ? value : nil
    }

    /// Where the socket is bound, as people write it (`127.0.0.1:8080`, `[::1]:8080`, a path, `@name` for an abstract
    /// socket, `(unnamed)`), or nil when the kernel does not say.
    package static func localAddress(of descriptor: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard status == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET, AF_INET6:
            guard let (host, port) = numericHostAndPort(&storage, length) else { return nil }
            return Int32(storage.ss_family) == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
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

    private static func numericHostAndPort(_ storage: inout sockaddr_storage, _ length: socklen_t) -> (String, String)? {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var port = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let named = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo(
                    $0, length, &host, socklen_t(host.count), &port, socklen_t(port.count),
                    NI_NUMERICHOST | NI_NUMERICSERV
                )
            }
        }
        return named == 0 ? (text(host), text(port)) : nil
    }

    /// The numeric addresses `host` resolves to (passive: `0.0.0.0` and `::` for an empty host).
    package static func numericAddresses(of host: String) -> [String] {
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
            var name = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(info.pointee.ai_addr, info.pointee.ai_addrlen, &name, socklen_t(name.count), nil, 0, NI_NUMERICHOST)
                == 0
            {
                addresses.append(text(name))
            }
        }
        return addresses
    }

    /// A `sockaddr_un` for `path` and its length, or nil when the path is empty or longer than `sun_path` holds.
    package static func unixAddress(_ path: String) -> (sockaddr_un, socklen_t)? {
        let bytes = Array(path.utf8)
        var address = sockaddr_un()
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1)
        return (address, length)
    }

    /// What a connection attempt to the socket file at `path` says about it: a listener is there, nobody is (the file
    /// is stale: its process is gone), or the attempt failed otherwise (its errno).
    package enum UnixSocketFile: Sendable, Hashable {
        case live
        case stale
        case unreachable(Int32)
    }

    /// Connects to `path` once, without waiting, to learn whether anybody listens there.
    package static func probe(unixPath path: String) -> UnixSocketFile {
        guard case (var address, let length)? = unixAddress(path) else { return .unreachable(ENAMETOOLONG) }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard probe >= 0 else { return .unreachable(errno) }
        defer { close(probe) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, length) }
        }
        // A listener accepts (or its backlog is full: EAGAIN); only a refusal means nobody is there.
        if connected == 0 || errno == EAGAIN || errno == EINPROGRESS { return .live }
        return errno == ECONNREFUSED ? .stale : .unreachable(errno)
    }

    /// Binds `descriptor` again to `address` as ``localAddress(of:)`` wrote it (`127.0.0.1:41234`, `[::1]:41234`):
    /// a TCP socket shut down by `shutdown(2)` loses a port the kernel picked (Linux keeps only a port the caller
    /// named), so it is bound to it again before it listens. Returns false where it cannot (a port it kept answers
    /// `EINVAL`: then `listen` alone brings it back).
    @discardableResult
    package static func rebind(_ descriptor: Int32, to address: String) -> Bool {
        let host: Substring
        let port: Substring
        if address.hasPrefix("["), let close = address.lastIndex(of: "]") {
            host = address[address.index(after: address.startIndex)..<close]
            port = address[address.index(after: close)...].dropFirst()
        } else if let colon = address.lastIndex(of: ":") {
            host = address[..<colon]
            port = address[address.index(after: colon)...]
        } else {
            return false
        }
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(String(host), String(port), &hints, &results) == 0, let first = results else { return false }
        defer { freeaddrinfo(results) }
        return Glibc.bind(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0
    }

    /// Makes a socket listen (again) with `backlog`, binding it first to `rebindTo` (``rebind(_:to:)``) when given:
    /// whether it listens now.
    package static func listenAgain(_ descriptor: Int32, backlog: Int, rebindTo address: String?) -> Bool {
        if let address { rebind(descriptor, to: address) }
        return Glibc.listen(descriptor, Int32(clamping: backlog)) == 0
    }

    /// The text of a NUL-terminated buffer.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
