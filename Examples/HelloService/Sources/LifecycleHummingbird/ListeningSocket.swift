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

/// Why an ``HTTPServer`` could not serve.
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

    /// The error as a sentence: the descriptor, what is wrong with it, and what would be valid.
    public var description: String {
        switch code {
        case .notListening:
            "descriptor \(descriptor) is not a listening socket (\(reason)); an HTTPServer needs a stream socket "
                + "that listen(2) was called on, such as one systemd passes in LISTEN_FDS"
        case .alreadyRun:
            "the HTTPServer on descriptor \(descriptor) was already run, and its run closed the descriptor; make a "
                + "new HTTPServer with a new dup(2) of the listening socket"
        }
    }
}

/// The calls on the listening descriptor that SwiftNIO does not make: checking it listens, keeping its backlog.
enum ListeningSocket {
    /// The backlog `descriptor` listens with, or `SOMAXCONN` where the kernel does not say (a Unix socket).
    ///
    /// Throws unless `descriptor` is a listening socket: SwiftNIO would register anything, and a descriptor that
    /// cannot accept would fail every read.
    static func backlog(of descriptor: Int32) throws(HTTPServerError) -> Int32 {
        var accepting: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) == 0 else {
            throw HTTPServerError(code: .notListening, descriptor: descriptor, reason: String(cString: strerror(errno)))
        }
        guard accepting != 0 else {
            throw HTTPServerError(code: .notListening, descriptor: descriptor, reason: "listen(2) was not called on it")
        }
        // For a listening TCP socket, tcp_info carries the accept queue's limit in tcpi_sacked (and its length in
        // tcpi_unacked); Linux has no such query for a Unix socket.
        var info = tcp_info()
        length = socklen_t(MemoryLayout<tcp_info>.size)
        guard getsockopt(descriptor, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0 else { return SOMAXCONN }
        return Int32(clamping: info.tcpi_sacked)
    }

    /// Sets the backlog `descriptor` listens with; a socket that listens already keeps listening, with the new limit.
    static func restore(backlog: Int32, of descriptor: Int32) {
        // It cannot fail on a socket that was checked to listen; if it did, the socket listens with SwiftNIO's 128.
        _ = listen(descriptor, backlog)
    }

    /// Closes `descriptor`: a run that cannot start still owns it.
    static func close(_ descriptor: Int32) {
        _ = Glibc.close(descriptor)
    }
}
