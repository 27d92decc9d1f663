//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd
public import LifecyclePrimitives
public import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// systemd's file descriptor store (`FileDescriptorStoreMax=`): bytes kept by the service manager in sealed memfds
/// across restarts of the service (a crash, a watchdog kill, `Restart=`), though not across a stop and a start.
///
/// A stored memfd is sent with `FDSTORE=1` and a name (`FDNAME=`); at the next start it comes back among the
/// `LISTEN_FDS` with that name (``read(_:)``). `FDSTOREREMOVE=1` with the name drops it. The memfd is
/// sealed before it is sent (no writes, no growing or shrinking), so what comes back is exactly what was stored.
public struct FileDescriptorStore: Sendable {
    /// One stored file, as handed back at start.
    public struct Entry: Sendable, Hashable {
        /// Its `FDNAME=`.
        public var name: String
        /// Its bytes, or the errno that reading them failed with.
        public var contents: Result<[UInt8], Errno>
    }

    private let notifier: SystemdNotifier

    /// A store reached through `notifier` (disabled outside systemd).
    public init(notifier: SystemdNotifier) {
        self.notifier = notifier
    }

    /// Whether there is a service manager to store anything with.
    public var isAvailable: Bool { notifier.isEnabled }

    /// The stored files among the descriptors passed to this process (``SocketActivation/passed()``), read and
    /// closed.
    package static func read(_ stored: [SocketActivation.Socket]) -> [Entry] {
        stored.map { passed in
            defer { close(passed.descriptor) }
            return Entry(name: passed.name, contents: readAll(passed.descriptor))
        }
    }

    /// Reads a memfd from its start (its offset is wherever the writer left it).
    private static func readAll(_ descriptor: Int32) -> Result<[UInt8], Errno> {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var offset: Int64 = 0
        while true {
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes {
                    try FileDescriptor(rawValue: descriptor).read(fromAbsoluteOffset: offset, into: $0)
                }
            } catch {
                return .failure(error as? Errno ?? .ioError)
            }
            if count == 0 { return .success(bytes) }
            bytes += buffer[..<count]
            offset += Int64(count)
        }
    }

    /// Stores `bytes` under `name` in a new sealed memfd. Names are ASCII without control characters or `:`, at most
    /// 255 characters (sd_notify(3)).
    public func store(_ bytes: [UInt8], name: String) throws(SystemCallError) {
        guard let socket = notifier.socketPath, !socket.isEmpty else { return }
        let descriptor = try Self.sealedMemfd(bytes, name: name)
        defer { close(descriptor) }
        var descriptors = [descriptor]
        let message = "FDSTORE=1\nFDNAME=\(name)\nFDPOLL=0"
        try SystemCallError.check(
            sd_pid_notify_with_fds(0, 0, message, &descriptors, 1),
            "sd_pid_notify_with_fds(FDSTORE=1 FDNAME=\(name))"
        )
    }

    /// A new memfd holding `bytes`, sealed against writes, growing and shrinking and, where the kernel can (Linux
    /// 6.3, `MFD_NOEXEC_SEAL`), against ever being executable; the caller closes it.
    public static func sealedMemfd(_ bytes: [UInt8], name: String) throws(SystemCallError) -> Int32 {
        let descriptor = try SystemCallError.check(csystemd_memfd_create(name), "memfd_create(\(name))")
        do {
            _ = try FileDescriptor(rawValue: descriptor).writeAll(bytes)
        } catch {
            close(descriptor)
            throw SystemCallError(operation: "write(memfd \(name))", errno: error as? Errno ?? .ioError)
        }
        do {
            try SystemCallError.check(csystemd_seal_memfd(descriptor), "fcntl(F_ADD_SEALS) on memfd \(name)")
        } catch {
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Keeps `descriptor` (a listening socket) in the store under `name`, unpolled: systemd hands it back at the next
    /// start of the service after a crash or a restart it makes itself, and does not drop it when it signals an error
    /// (a socket shut down in the background signals a hangup).
    public func store(descriptor: Int32, name: String) throws(SystemCallError) {
        guard let socket = notifier.socketPath, !socket.isEmpty else { return }
        var descriptors = [descriptor]
        let message = "FDSTORE=1\nFDNAME=\(name)\nFDPOLL=0"
        try SystemCallError.check(
            sd_pid_notify_with_fds(0, 0, message, &descriptors, 1),
            "sd_pid_notify_with_fds(FDSTORE=1 FDNAME=\(name))"
        )
    }

    /// Drops every stored descriptor named `name`.
    public func remove(name: String) throws(SystemCallError) {
        guard notifier.isEnabled else { return }
        try SystemCallError.check(sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=\(name)"), "sd_notify(FDSTOREREMOVE=1 FDNAME=\(name))")
    }
}
