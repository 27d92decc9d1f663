//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import SystemPackage

#if canImport(Glibc)
package import Glibc
#endif

/// Why a file the daemon (or lifecyclectl) was pointed at (configuration, storyboard, saved state) was not read.
package enum RegularFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Opening or reading it failed.
    case system(Errno)
    /// It is not a regular file: a FIFO or a device would block the main loop or never end.
    case notRegular(kind: String)
    /// It is larger than the daemon reads of such a file.
    case tooLarge(limit: Int)

    package var description: String {
        switch self {
        case .system(let errno): "\(errno)"
        case .notRegular(let kind): "it is \(kind), not a regular file"
        case .tooLarge(let limit): "it is larger than \(RegularFile.formatted(limit)), the most such a file may be"
        }
    }
}

/// Reads a whole regular file without ever blocking on what is at the path: opened non-blocking (a FIFO opens at once
/// instead of waiting for a writer), then checked with `fstat` (a FIFO, a socket or a device is refused before a
/// byte is read) and read up to a bound. Where the caller allows it, the null device reads as an empty file: `--config
/// /dev/null` is the Unix way to say "no configuration file".
package enum RegularFile {
    /// The most a configuration file may be.
    package static let configurationLimit = 1 << 20
    /// The most a storyboard may be.
    package static let storyboardLimit = 8 << 20
    /// The most a saved state file may be.
    package static let stateLimit = 64 << 20

    /// The bytes of the regular file at `path`, at most `limit` of them; with `nullDeviceIsEmpty`, none for the null
    /// device (by any name: checked by its device number, so no other device passes for it).
    package static func readBytes(
        _ path: String,
        limit: Int,
        nullDeviceIsEmpty: Bool = false
    ) throws(RegularFileError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { throw .system(Errno(rawValue: errno)) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .system(Errno(rawValue: errno)) }
        if nullDeviceIsEmpty, isNullDevice(status) { return [] }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegular(kind: kind(status.st_mode)) }
        guard status.st_size <= limit else { throw .tooLarge(limit: limit) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(status.st_size))
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes { try FileDescriptor(rawValue: descriptor).read(into: $0) }
            } catch let error as Errno {
                throw .system(error)
            } catch {
                throw .system(.ioError)
            }
            if count == 0 { return bytes }
            // It may have grown since fstat.
            guard bytes.count + count <= limit else { throw .tooLarge(limit: limit) }
            bytes += buffer[..<count]
        }
    }

    /// The file as UTF-8 text (invalid sequences replaced).
    package static func readText(
        _ path: String,
        limit: Int,
        nullDeviceIsEmpty: Bool = false
    ) throws(RegularFileError) -> String {
        String(decoding: try readBytes(path, limit: limit, nullDeviceIsEmpty: nullDeviceIsEmpty), as: UTF8.self)
    }

    /// Whether `status` is Linux's null device: a character device, major 1, minor 3 (Documentation/admin-guide/
    /// devices.txt), as `/dev/null` is in every mount namespace, a container's included.
    package static func isNullDevice(_ status: stat) -> Bool {
        guard status.st_mode & S_IFMT == S_IFCHR else { return false }
        // glibc's gnu_dev_major and gnu_dev_minor (macros, which Swift does not import).
        let device = UInt64(status.st_rdev)
        let major = ((device >> 8) & 0xFFF) | ((device >> 32) & ~UInt64(0xFFF))
        let minor = (device & 0xFF) | ((device >> 12) & ~UInt64(0xFF))
        return major == 1 && minor == 3
    }

    private static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "something other than a file"
        }
    }

    package static func formatted(_ bytes: Int) -> String {
        bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }
}
