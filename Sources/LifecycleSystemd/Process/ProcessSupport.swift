//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd
import LifecyclePrimitives
package import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// The few process-level helpers the systemd side shares: the environment and whole-file reads. One place each, so
// their edge cases (EINTR, unset versus empty) are settled once.

/// The process environment.
package enum ProcessEnvironment {
    /// The value of a variable, or nil when it is unset.
    package static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Whether this process is PID 1 of its PID namespace (a container's init, `unshare --pid --fork`): it reaps the
    /// orphans re-parented to it, it cannot stop itself (the kernel drops the default-action signals an init sends
    /// itself), and every process of the namespace ends with it.
    package static var isContainerInit: Bool { getpid() == 1 }

    /// Every variable, read without Foundation.
    package static func all() -> [String: String] {
        variables(environ)
    }

    /// The variables of an environment block (`NAME=value` entries up to a null pointer), as ``all()`` reads them.
    ///
    /// Each entry is split at its first `=` byte, as getenv(3) splits it, and only then decoded (invalid UTF-8
    /// repaired): searching the decoded `String` for the `=` character went through grapheme breaking, a third of a
    /// million instructions at each start for an ordinary environment. An entry without `=` is skipped.
    static func variables(_ block: UnsafePointer<UnsafeMutablePointer<CChar>?>) -> [String: String] {
        var result: [String: String] = [:]
        var pointer = block
        while let entry = pointer.pointee {
            let bytes = UnsafeRawBufferPointer(start: entry, count: strlen(entry))
            if let equals = bytes.firstIndex(of: UInt8(ascii: "=")) {
                let name = String(decoding: bytes[..<equals], as: UTF8.self)
                result[name] = String(decoding: bytes[(equals + 1)...], as: UTF8.self)
            }
            pointer += 1
        }
        return result
    }
}

/// Whole-file reads, for configuration files and the small files of /proc and /sys.
package enum SystemFiles {
    /// The file's bytes; throws the errno of the open or read that failed.
    package static func readBytes(_ path: String) throws(Errno) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Errno(rawValue: errno) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes { try FileDescriptor(rawValue: descriptor).read(into: $0) }
            } catch {
                throw error as? Errno ?? .ioError
            }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }

    /// The file as UTF-8 text (invalid sequences replaced).
    package static func readText(_ path: String) throws(Errno) -> String {
        String(decoding: try readBytes(path), as: UTF8.self)
    }
}

/// CLOCK_MONOTONIC in microseconds, the clock systemd's `MONOTONIC_USEC=` and sd-event timers use.
func monotonicMicroseconds() -> UInt64 {
    MonotonicClock.now() / 1_000
}
