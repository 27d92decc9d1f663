//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import CLifecycleIPC
public import LifecyclePrimitives
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Who is at the other end of an AF_UNIX connection, as the kernel recorded it when the peer connected
/// (`SO_PEERCRED`, `SO_PEERGROUPS`): it cannot be forged by what the peer sends.
public struct PeerCredentials: Hashable, Sendable, CustomStringConvertible {
    /// The peer's process ID (0 when it is not visible from this PID namespace).
    public var pid: pid_t
    /// The peer's effective user ID.
    public var uid: uid_t
    /// The peer's effective group ID.
    public var gid: gid_t
    /// The peer's supplementary groups (empty when the kernel could not tell).
    public var groups: [gid_t]

    /// Credentials as given (tests; a peer's come from `SO_PEERCRED`).
    public init(pid: pid_t, uid: uid_t, gid: gid_t, groups: [gid_t] = []) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// Whether the peer is in a group, as its primary or a supplementary group.
    public func isMember(of group: gid_t) -> Bool {
        gid == group || groups.contains(group)
    }

    public var description: String { "uid \(uid), gid \(gid), pid \(pid)" }
}

/// What went wrong with a socket path.
public enum UnixSocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A system call failed.
    case system(SystemCallError)
    /// The path does not fit a `sockaddr_un` (107 bytes).
    case pathTooLong(String)
    /// Another process listens on the path already.
    case inUse(String)
    /// Something that is not a socket is in the way.
    case notASocket(String)
    /// The directory the socket would be in belongs to another user, or others may write to it: they could replace
    /// the socket.
    case unsafeDirectory(String, reason: String)

    public var description: String {
        switch self {
        case .system(let error): "\(error)"
        case .pathTooLong(let path): "\(path) is longer than a socket path may be (107 bytes)"
        case .inUse(let path): "another process is listening on \(path)"
        case .notASocket(let path): "\(path) exists and is not a socket; not replacing it"
        case .unsafeDirectory(let directory, let reason):
            "\(directory) \(reason): another user could replace the socket; use a directory of this user's or root's that only its owner may write"
        }
    }
}

/// AF_UNIX stream sockets: a listening socket on a path (replacing a stale one), a connection to one, and the
/// credentials of the peer of a connection.
public enum UnixSocket {
    /// The most bytes of a socket path (`sun_path` without its terminating NUL).
    public static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A `sockaddr_un` for a path, or nil when the path is too long.
    static func address(_ path: String) -> (sockaddr_un, socklen_t)? {
        SocketCalls.unixAddress(path)
    }

    private static func failure(_ operation: String) -> UnixSocketError {
        .system(SystemCallError(operation: operation, errno: Errno(rawValue: errno)))
    }

    /// A new stream socket, close-on-exec, optionally non-blocking.
    static func makeStreamSocket(nonBlocking: Bool) throws(UnixSocketError) -> Int32 {
        var type = lifecycle_ipc_sock_stream() | lifecycle_ipc_sock_cloexec()
        if nonBlocking { type |= lifecycle_ipc_sock_nonblock() }
        let fd = socket(AF_UNIX, type, 0)
        guard fd >= 0 else { throw failure("socket(AF_UNIX)") }
        return fd
    }

    /// Binds a non-blocking, close-on-exec listening socket to `path` and makes it connectable by everyone
    /// (`mode`, by default 0666: who may use it is decided by peer credentials after `accept`).
    ///
    /// The socket has its mode before anyone can connect to it, whatever the process's umask: it is bound in a private
    /// directory made beside `path` (mode 0700), given its mode there, listening, and then renamed to `path` in one
    /// step. The directory of `path` must belong to this user or root and be writable by its owner only; one that
    /// others may write is refused (they could swap the socket, or what a path names, under the daemon). When the
    /// private directory's path would not fit a socket address, the socket is bound at `path` under a umask that
    /// gives it `mode` at once.
    ///
    /// The backlog is the kernel's maximum (`SOMAXCONN`, capped by `net.core.somaxconn`): a burst of connections
    /// waits there to be accepted (and answered or closed) instead of being refused with `EAGAIN`.
    ///
    /// A socket file left by a process that is gone (connecting to it is refused) is replaced; a path where another
    /// process listens, or that is not a socket, is left alone and reported.
    public static func listen(at path: String, mode: mode_t = 0o666, backlog: Int32 = SOMAXCONN) throws(UnixSocketError)
        -> Int32
    {
        guard Self.address(path) != nil else { throw .pathTooLong(path) }
        let directory = Self.directory(of: path)
        try checkDirectory(directory)
        try removeStaleSocket(at: path)
        let fd = try makeStreamSocket(nonBlocking: true)
        do throws(UnixSocketError) {
            if let staging = try makeStagingDirectory(in: directory) {
                let staged = staging + "/s"
                defer { rmdir(staging) }
                do throws(UnixSocketError) {
                    try bind(fd, to: staged)
                    // In a directory only this user can enter: nobody can connect yet, or swap the path.
                    guard chmod(staged, mode) == 0 else { throw failure("chmod(\(staged))") }
                    guard Glibc.listen(fd, backlog) == 0 else { throw failure("listen(\(staged))") }
                    guard rename(staged, path) == 0 else { throw failure("rename(\(staged), \(path))") }
                } catch {
                    unlink(staged)
                    throw error
                }
            } else {
                // umask is process-wide: only for the bind, whose file then has `mode` from the start.
                let previous = umask(~mode & 0o777)
                defer { umask(previous) }
                try bind(fd, to: path)
                guard Glibc.listen(fd, backlog) == 0 else {
                    let error = failure("listen(\(path))")
                    unlink(path)
                    throw error
                }
            }
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    private static func bind(_ fd: Int32, to path: String) throws(UnixSocketError) {
        guard case (var address, let length)? = Self.address(path) else { throw .pathTooLong(path) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard bound == 0 else { throw failure("bind(\(path))") }
    }

    /// A new directory beside the socket, mode 0700, whose `s` fits a socket address; nil when none would fit.
    private static func makeStagingDirectory(in directory: String) throws(UnixSocketError) -> String? {
        let template = (directory == "/" ? "" : directory) + "/.lk-XXXXXX"
        guard template.utf8.count + 2 <= maximumPathLength else { return nil }
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw failure("mkdtemp(\(template))") }
        return String(decoding: bytes.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Refuses a directory another user owns or may write to.
    static func checkDirectory(_ directory: String) throws(UnixSocketError) {
        var status = stat()
        guard stat(directory, &status) == 0 else { throw failure("stat(\(directory))") }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw .unsafeDirectory(directory, reason: "is not a directory") }
        let owner = status.st_uid
        guard owner == geteuid() || owner == 0 else {
            throw .unsafeDirectory(directory, reason: "belongs to uid \(owner), not to this user (uid \(geteuid())) or root")
        }
        let writable = status.st_mode & 0o022
        guard writable == 0 else {
            let mode = String(status.st_mode & 0o7777, radix: 8)
            throw .unsafeDirectory(directory, reason: "is writable by \(writable & 0o002 != 0 ? "everyone" : "its group") (mode \(mode))")
        }
    }

    /// The directory part of a path (`/` for a path in the root).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    /// Removes a socket file nobody listens on; leaves a live one or anything else in place (and throws).
    static func removeStaleSocket(at path: String) throws(UnixSocketError) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return }
            throw failure("lstat(\(path))")
        }
        guard status.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path) }
        switch SocketCalls.probe(unixPath: path) {
        case .live: throw .inUse(path)
        case .stale: break
        case .unreachable(let code):
            errno = code
            throw failure("connect(\(path))")
        }
        guard unlink(path) == 0 || errno == ENOENT else { throw failure("unlink(\(path))") }
    }

    /// Connects to the socket at `path` (blocking, close-on-exec).
    public static func connect(to path: String) throws(UnixSocketError) -> Int32 {
        guard case (var address, let length)? = Self.address(path) else { throw .pathTooLong(path) }
        let fd = try makeStreamSocket(nonBlocking: false)
        while true {
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
            }
            if result == 0 { return fd }
            if errno == EINTR { continue }
            let error = failure("connect(\(path))")
            close(fd)
            throw error
        }
    }

    /// The kernel's record of who connected: `SO_PEERCRED`, plus `SO_PEERGROUPS` (Linux 4.13) when `groups` is set.
    public static func peerCredentials(of fd: Int32, groups: Bool = true) throws(SystemCallError) -> PeerCredentials {
        // struct ucred (pid, uid, gid), which glibc declares only under _GNU_SOURCE: three 32-bit fields.
        var raw: (Int32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: raw))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &raw, &length) == 0 else {
            throw SystemCallError(operation: "getsockopt(SO_PEERCRED)", errno: Errno(rawValue: errno))
        }
        var credentials = PeerCredentials(pid: raw.0, uid: raw.1, gid: raw.2)
        guard groups else { return credentials }
        var list = [gid_t](repeating: 0, count: 64)
        var size = socklen_t(list.count * MemoryLayout<gid_t>.size)
        var result = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, &list, &size)
        if result != 0, errno == ERANGE {
            list = [gid_t](repeating: 0, count: Int(size) / MemoryLayout<gid_t>.size + 1)
            size = socklen_t(list.count * MemoryLayout<gid_t>.size)
            result = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, &list, &size)
        }
        if result == 0 { credentials.groups = Array(list.prefix(Int(size) / MemoryLayout<gid_t>.size)) }
        return credentials
    }
}
