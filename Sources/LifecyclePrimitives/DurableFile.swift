//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Crash-safe replacement of a whole file: the new bytes go to a temporary file in the same directory, which is
/// flushed (`fsync`), renamed over the file, and the directory flushed too. A crash at any moment leaves either the
/// old file or the new one at the path, never a mix; what it may leave is the temporary file, which
/// ``removeTemporaryFiles(for:)`` clears.
package enum DurableFile {
    /// The temporary files of `path` start with this: `.<name>.tmp-<pid>`.
    package static func temporaryPrefix(for path: String) -> String {
        let (directory, name) = split(path)
        return directory + "/." + name + ".tmp-"
    }

    /// Writes `bytes` to `path` crash-safely. `pause` runs between chunks of the write (a debug setting slows the
    /// write down to widen the window a crash test kills it in); `chunks` is how many pieces the write is split into.
    /// Without `flush` the file and the directory are not `fsync`ed: the replacement is still atomic for any crash of
    /// the process (the page cache keeps it), not for a power loss, and costs tens of microseconds instead of the disk's
    /// flushes.
    /// With `ownership`, the new file gets that owner and mode before it replaces the old one (an edit by root of a
    /// file a service's user owns leaves it the service's).
    package static func write(
        _ bytes: [UInt8],
        to path: String,
        chunks: Int = 1,
        flush: Bool = true,
        ownership: Ownership? = nil,
        pause: () -> Void = {}
    ) throws(Errno) {
        let (directory, _) = split(path)
        let temporary = temporaryPrefix(for: path) + "\(getpid())"
        _ = unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Errno(rawValue: errno) }
        var closed = false
        defer { if !closed { close(descriptor) } }
        do throws(Errno) {
            if let ownership {
                // The new file is this process's: chown only to someone else (which needs the right to).
                if ownership.user != UInt32(geteuid()) || ownership.group != UInt32(getegid()) {
                    guard fchown(descriptor, uid_t(ownership.user), gid_t(ownership.group)) == 0 else {
                        throw Errno(rawValue: errno)
                    }
                }
                guard fchmod(descriptor, mode_t(ownership.mode)) == 0 else { throw Errno(rawValue: errno) }
            }
            let pieces = max(1, chunks)
            let size = (bytes.count + pieces - 1) / max(pieces, 1)
            var written = 0
            while written < bytes.count {
                let end = min(bytes.count, written + max(size, 1))
                try writeAll(descriptor, bytes[written..<end])
                written = end
                if written < bytes.count { pause() }
            }
            if flush { guard fsync(descriptor) == 0 else { throw Errno(rawValue: errno) } }
            closed = true
            guard close(descriptor) == 0 else { throw Errno(rawValue: errno) }
            guard rename(temporary, path) == 0 else { throw Errno(rawValue: errno) }
        } catch {
            _ = unlink(temporary)
            throw error
        }
        if flush { try syncDirectory(directory) }
    }

    /// A file's owner and permission bits.
    package struct Ownership: Equatable, Sendable {
        package var user: UInt32
        package var group: UInt32
        package var mode: UInt32

        package init(user: UInt32, group: UInt32, mode: UInt32) {
            self.user = user
            self.group = group
            self.mode = mode
        }
    }

    /// Removes the temporary files an interrupted ``write(_:to:chunks:flush:ownership:pause:)`` of `path` left; returns their paths.
    @discardableResult
    package static func removeTemporaryFiles(for path: String) -> [String] {
        let (directory, _) = split(path)
        let prefix = temporaryPrefix(for: path)
        return directoryEntries(directory).map { directory + "/" + $0 }.filter { $0.hasPrefix(prefix) }.filter {
            unlink($0) == 0
        }
    }

    /// The names in a directory (without `.` and `..`); empty when it cannot be read.
    package static func directoryEntries(_ directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Flushes a directory, so that a rename in it is on disk.
    package static func syncDirectory(_ directory: String) throws(Errno) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Errno(rawValue: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw Errno(rawValue: errno) }
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: ArraySlice<UInt8>) throws(Errno) {
        do {
            // swift-system's writeAll retries interrupted and short writes.
            _ = try FileDescriptor(rawValue: descriptor).writeAll(bytes)
        } catch let error as Errno {
            throw error
        } catch {
            throw Errno.ioError
        }
    }

    private static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }
}
