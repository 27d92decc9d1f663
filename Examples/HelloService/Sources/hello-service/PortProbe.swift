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

/// Whether a TCP port on 127.0.0.1 can be listened on now: a reload checks a new port before anything moves to it.
enum PortProbe {
    struct Unavailable: Error, CustomStringConvertible {
        let port: Int
        let reason: String
        var description: String { "port \(port) cannot be listened on (\(reason)); the server stays on its port" }
    }

    static func check(_ port: Int) throws(Unavailable) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Unavailable(port: port, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw Unavailable(port: port, reason: String(cString: strerror(errno))) }
    }
}
