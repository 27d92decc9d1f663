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

/// A listening socket on 127.0.0.1 at a port the kernel picks: the socket the daemon keeps, whose dups servers get.
public final class LoopbackListener {
    /// The test's own descriptor: it stays open while servers come and go.
    public let descriptor: Int32
    /// The port the kernel picked.
    public let port: Int

    /// Binds 127.0.0.1 port 0 and listens with `backlog`.
    public init(backlog: Int32 = 64) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(descriptor >= 0, "socket: \(String(cString: strerror(errno)))")
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && listen(descriptor, backlog) == 0
                    && getsockname(descriptor, address, &length) == 0
            }
        }
        precondition(listening, "cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }

    /// A new descriptor for the socket, for a server to own.
    public func dup() -> Int32 {
        let copy = Glibc.dup(descriptor)
        precondition(copy >= 0, "dup: \(String(cString: strerror(errno)))")
        return copy
    }

    /// Whether the socket listens (`SO_ACCEPTCONN`).
    public var isListening: Bool {
        var accepting: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) == 0 && accepting != 0
    }

    /// The limit of the accept queue (what listen(2) set, as the kernel reports it in `tcp_info`).
    public var backlog: Int { Int(info.tcpi_sacked) }

    /// Connections the kernel completed that no server has accepted yet.
    public var queued: Int { Int(info.tcpi_unacked) }

    private var info: tcp_info {
        var info = tcp_info()
        var length = socklen_t(MemoryLayout<tcp_info>.size)
        precondition(getsockopt(descriptor, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0)
        return info
    }

    /// Whether `other` is still open on this socket: false once its owner closed it (even if the number was reused).
    public func isOpen(_ other: Int32) -> Bool {
        Self.inode(of: other) == Self.inode(of: descriptor)
    }

    /// Waits until no connection waits in the accept queue: a server has accepted them.
    public func waitUntilAccepted() async throws {
        while queued > 0 { try await Task.sleep(for: .milliseconds(1)) }
    }

    /// Waits until `other` (a server's dup) is closed: the server has stopped accepting.
    public func waitUntilClosed(_ other: Int32) async throws {
        while isOpen(other) { try await Task.sleep(for: .milliseconds(1)) }
    }

    /// What `descriptor` refers to (`socket:[inode]` for a socket), or nil if it is not open.
    public static func inode(of descriptor: Int32) -> String? {
        var target = [UInt8](repeating: 0, count: 64)
        let path = "/proc/self/fd/\(descriptor)"
        let length = target.withUnsafeMutableBytes { readlink(path, $0.baseAddress!, $0.count) }
        return length > 0 ? String(decoding: target[..<length], as: UTF8.self) : nil
    }
}
