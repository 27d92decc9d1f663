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

    /// Every descriptor passed to this process with its name (`LISTEN_FDNAMES`; "unknown" without one), in order,
    /// none when `LISTEN_PID` names another. Read once, at start, by the daemon, which hands each part its own: an
    /// upgrade's channel, the saved state's memfds, the control socket, the listeners.
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
