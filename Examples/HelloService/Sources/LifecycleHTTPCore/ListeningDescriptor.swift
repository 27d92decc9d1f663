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

/// Why a framework adapter's server could not serve the listening descriptor it was given.
public struct HTTPServerError: Error, CustomStringConvertible, Equatable {
    /// What went wrong.
    public enum Code: Sendable, Equatable {
        /// The descriptor is not a socket that listen(2) was called on: closed, a file, or a connected socket.
        case notListening
        /// `run()` was called again; the descriptor went with the first run, which closed it.
        case alreadyRun
    }

    /// What went wrong.
    public let code: Code
    /// The descriptor the server was given.
    public let descriptor: Int32
    // What the system said, for the description.
    let reason: String

    package init(code: Code, descriptor: Int32, reason: String) {
        self.code = code
        self.descriptor = descriptor
        self.reason = reason
    }

    /// The error as a sentence: the descriptor, what is wrong with it, and what would be valid.
    public var description: String {
        switch code {
        case .notListening:
            "descriptor \(descriptor) is not a listening socket (\(reason)); the server needs a stream socket "
                + "that listen(2) was called on, such as one systemd passes in LISTEN_FDS"
        case .alreadyRun:
            "the server on descriptor \(descriptor) was already run, and its run closed the descriptor; make a "
                + "new server with a new dup(2) of the listening socket"
        }
    }
}

/// The calls on the listening descriptor besides accepting: checking it listens, naming where, closing it.
package enum ListeningDescriptor {
    /// Where `descriptor` listens (`127.0.0.1:8080`, `[::1]:8080`, a Unix socket's path), after checking it does.
    ///
    /// Throws unless `descriptor` is a listening socket: a descriptor that cannot accept would fail every accept.
    package static func checkListening(_ descriptor: Int32) throws(HTTPServerError) -> String {
        var accepting: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) == 0 else {
            throw HTTPServerError(code: .notListening, descriptor: descriptor, reason: String(cString: strerror(errno)))
        }
        guard accepting != 0 else {
            throw HTTPServerError(code: .notListening, descriptor: descriptor, reason: "listen(2) was not called on it")
        }
        return localAddress(of: descriptor)
    }

    /// `127.0.0.1:8080`, `[::1]:8080`, a Unix socket's path, or `unknown`.
    package static func localAddress(of descriptor: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) == 0 }
        }
        guard named else { return "unknown" }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            var address = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self) }
            inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
            return "\(string(text)):\(UInt16(bigEndian: address.sin_port))"
        case AF_INET6:
            var address = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self) }
            inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count))
            return "[\(string(text))]:\(UInt16(bigEndian: address.sin6_port))"
        case AF_UNIX:
            var address = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_un.self) }
            return withUnsafeBytes(of: &address.sun_path) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        default:
            return "unknown"
        }
    }

    // The text of a NUL-terminated buffer.
    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Closes `descriptor`: a run that cannot start still owns it.
    package static func close(_ descriptor: Int32) {
        _ = Glibc.close(descriptor)
    }
}
