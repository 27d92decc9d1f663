//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecycleKit

#if canImport(Glibc)
import Glibc
#endif

/// A listening socket a hosted server accepts connections on, known by its name.
///
/// When the process starts, a socket systemd passed under that name — a `.socket` unit's (`FileDescriptorName=`),
/// one kept in the file descriptor store by an earlier process of the service, or one handed over by an upgrade — is
/// served as it is; only when none was passed is one bound to ``address``, so the same program runs under a socket
/// unit, under a plain unit and in a terminal. The socket outlives every run of the server: in the background (with
/// the ``ListenerPolicy/pause`` policy) and between restarts, connections wait in its backlog instead of being
/// refused.
public struct Listener: Sendable, Hashable, CustomStringConvertible {
    /// Where to bind when nothing was passed under the listener's name.
    public enum Address: Sendable, Hashable, CustomStringConvertible {
        /// A TCP address: a numeric IPv4 or IPv6 address, or a host name, and a port (0 lets the kernel pick).
        case tcp(host: String, port: Int)
        /// An `AF_UNIX` stream socket at a path (a stale socket file left by a process that is gone is replaced).
        case unix(path: String)

        /// `127.0.0.1:8080`, `[::1]:8080`, `/run/hello.sock`.
        public var description: String {
            switch self {
            case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            case .unix(let path): path
            }
        }
    }

    /// The name: what a socket unit's `FileDescriptorName=` says, and what the file descriptor store calls it.
    public var name: String
    /// Where to bind when nothing was passed under ``name``.
    public var address: Address
    /// The length of the queue of connections waiting to be accepted, when this process binds the socket (the kernel
    /// caps it at `net.core.somaxconn`); a socket unit sets its own (`Backlog=`).
    public var backlog: Int

    /// A listener named `name` (ASCII letters, digits, `-`, `_`, `.`, at most 200 characters: it becomes a
    /// `FileDescriptorName=`), bound to `address` when systemd passed none under that name.
    public init(_ name: String, address: Address, backlog: Int = 4096) {
        precondition(
            Self.isValidName(name),
            "listener name \(name.debugDescription): use ASCII letters, digits, '-', '_' or '.', at most 200"
        )
        self.name = name
        self.address = address
        self.backlog = max(1, backlog)
    }

    /// A TCP listener named `name` on `host:port` (by default on the loopback).
    public static func tcp(_ name: String, host: String = "127.0.0.1", port: Int, backlog: Int = 4096) -> Listener {
        Listener(name, address: .tcp(host: host, port: port), backlog: backlog)
    }

    /// An `AF_UNIX` stream listener named `name` at `path`.
    public static func unix(_ name: String, path: String, backlog: Int = 4096) -> Listener {
        Listener(name, address: .unix(path: path), backlog: backlog)
    }

    /// `http (127.0.0.1:8080)`.
    public var description: String { "\(name) (\(address))" }

    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 200
            && name.utf8.allSatisfy {
                $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
            }
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}

/// What a ``ServiceController``'s listening sockets do while the application is in the background.
public enum ListenerPolicy: String, Sendable, Hashable, CaseIterable {
    /// Keep the socket listening while the server does not accept: connections wait in its backlog and are served on
    /// the return to the foreground. The default: in the background a server serves nobody new, and refuses nobody.
    case pause
    /// Shut the socket down, so new connections are refused at once (a load balancer in front fails over), and listen
    /// again on the return to the foreground. Connections waiting in the backlog when it shuts down are reset.
    case close
}

/// The listening socket one run of a hosted server accepts on: handed to the services a ``ServiceController`` makes.
public struct ListeningSocket: Sendable, Hashable, CustomStringConvertible {
    /// The listener's name.
    public let name: String
    /// Where it listens: `127.0.0.1:8080`, `[::1]:8080`, `/run/hello.sock`.
    public let address: String
    /// Where it came from.
    public let origin: ListenerOrigin
    /// The listening descriptor, borrowed: it stays open as long as the application has the socket. Never close it;
    /// a server that closes the descriptor it serves on takes one from ``duplicate()``.
    public let descriptor: Int32

    /// A new descriptor of the same socket, owned by the caller (close-on-exec): closing it stops nothing but the
    /// caller's use of it, for the application keeps its own.
    public func duplicate() throws(ListenerError) -> Int32 {
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
        guard copy >= 0 else {
            throw ListenerError(.systemCall, listener: name, address: address, systemCall: "dup", errno: errno)
        }
        return copy
    }

    /// `http on 127.0.0.1:8080 (socket-unit)`.
    public var description: String { "\(name) on \(address) (\(origin.rawValue))" }
}

/// A listening socket could not be opened, checked or listened on again.
public struct ListenerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A system call failed: ``ListenerError/systemCall`` names it, ``ListenerError/errno`` says why.
        case systemCall = "system-call"
        /// The port is outside 0...65535.
        case invalidPort = "invalid-port"
        /// The host name does not resolve (``ListenerError/detail``: the resolver's reason).
        case unresolvableHost = "unresolvable-host"
        /// The `AF_UNIX` path is empty or longer than a socket address holds (107 bytes).
        case invalidPath = "invalid-path"
        /// The descriptor passed under the listener's name is not a stream socket (``ListenerError/detail``: which).
        case notAStreamSocket = "not-a-stream-socket"
        /// The controller that declares the listener is in no application.
        case noApplication = "no-application"
    }

    /// What went wrong.
    public var kind: Kind
    /// The listener's name.
    public var listener: String
    /// Where it was to listen.
    public var address: String
    /// The system call that failed (`bind`, `listen`, `socket`, `dup`), for ``Kind/systemCall``.
    public var systemCall: String?
    /// The error number the system call failed with (0 for the other kinds).
    public var errno: Int32
    /// The resolver's reason, or the descriptor that is not a stream socket.
    public var detail: String?

    /// An error of `kind` for the listener `listener` at `address`.
    package init(
        _ kind: Kind,
        listener: String,
        address: String,
        systemCall: String? = nil,
        errno: Int32 = 0,
        detail: String? = nil
    ) {
        self.kind = kind
        self.listener = listener
        self.address = address
        self.systemCall = systemCall
        self.errno = errno
        self.detail = detail
    }

    /// `listener http cannot listen on 127.0.0.1:80: bind: Permission denied`.
    public var description: String {
        let reason: String =
            switch kind {
            case .systemCall: "\(systemCall ?? "a system call"): \(String(cString: strerror(errno)))"
            case .invalidPort: "the port must be 0...65535"
            case .unresolvableHost: "cannot resolve the host: \(detail ?? "no address")"
            case .invalidPath: "the path must have 1 to 107 bytes"
            case .notAStreamSocket: "the descriptor passed as \(listener) (\(detail ?? "?")) is not a stream socket"
            case .noApplication: "the controller is in no application"
            }
        return "listener \(listener) cannot listen on \(address): \(reason)"
    }
}
