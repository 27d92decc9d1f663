//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// Sockets a `.socket` unit handed over (`LISTEN_FDS`, `LISTEN_PID`, `LISTEN_FDNAMES`).
package enum SocketActivation {
    /// One descriptor systemd passed, with its name (`FileDescriptorName=`, by default the socket unit's name).
    package struct Socket: Hashable, Sendable {
        package var name: String
        package var descriptor: Int32

        package init(name: String, descriptor: Int32) {
            self.name = name
            self.descriptor = descriptor
        }
    }

    /// The stream sockets passed to this process (none when `LISTEN_PID` names another), in order.
    ///
    /// Other descriptors among `LISTEN_FDS` are left alone, and so are the variables: the file descriptor store's
    /// memfds come back the same way (``FileDescriptorStore/takeStored(prefix:)`` reads them), and a memfd is not a
    /// socket to serve on. A child cannot take them for its own: `LISTEN_PID` names this process.
    package static func take() -> [Socket] {
        // Listening or not: a server's socket that a process shut down (the close policy, in the background) listens
        // again when it is claimed.
        passed().filter { sd_is_socket($0.descriptor, AF_UNSPEC, Int32(SOCK_STREAM.rawValue), -1) > 0 }
    }

    /// Whether `descriptor` is an `AF_UNIX` socket.
    package static func isUnixSocket(_ descriptor: Int32) -> Bool {
        sd_is_socket(descriptor, AF_UNIX, 0, -1) > 0
    }

    /// Every descriptor passed to this process with its name (`LISTEN_FDNAMES`; "unknown" without one), in order,
    /// none when `LISTEN_PID` names another. The variables stay: each reader takes the descriptors that are its own
    /// (the control socket its listening socket, the state store its memfds).
    package static func passed() -> [Socket] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        var count = sd_listen_fds_with_names(0, &names)
        if count == -EINVAL {
            // LISTEN_FDNAMES does not name as many descriptors as LISTEN_FDS counts (a launcher's mistake: systemd
            // always names them all): the descriptors are still this process's, "unknown", not left open unseen.
            count = sd_listen_fds(0)
            names = nil
        }
        guard count > 0 else { return [] }
        defer {
            if let names {
                for index in 0..<Int(count) { free(names[index]) }
                free(names)
            }
        }
        return (0..<count).map { index in
            Socket(name: names?[Int(index)].map { String(cString: $0) } ?? "unknown", descriptor: SD_LISTEN_FDS_START + index)
        }
    }
}
