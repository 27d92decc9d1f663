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

/// Gives back, once the program has started, the memory it only needed to start.
///
/// Starting touches pages that a running daemon never reads again: the command-line parser, the configuration
/// reader, the runtime's first metadata lookups, the dynamic linker's relocation tables, in the program and in every
/// shared library. They are clean, read-only, file-backed pages: the kernel may drop them whenever memory is short
/// and read them again from the page cache on the next access. Dropping them from this process's mappings right after
/// start (`madvise(MADV_DONTNEED)` on its read-only private file mappings), and returning the heap's free pages
/// (`malloc_trim`), makes the resident set what the running daemon uses, not what starting it used.
///
/// Only mappings whose every page is still the file's are dropped: a writable mapping, or a read-only one that holds
/// pages the process wrote (the relocated `RELRO` part of a program or library, made read-only after the dynamic
/// linker wrote it: `/proc/self/smaps` counts those as `Anonymous`), would lose its data.
package enum StartupMemory {
    /// What was given back.
    package struct Release: Sendable, Hashable {
        /// Read-only file mappings whose pages were dropped.
        package var mappings: Int
        /// Their total size, in bytes (mapped, not necessarily resident).
        package var bytes: Int
    }

    /// Drops the pages of the read-only private file mappings and trims the heap; returns what it covered.
    @discardableResult
    package static func release() -> Release {
        var release = Release(mappings: 0, bytes: 0)
        guard let smaps = try? SystemFiles.readText("/proc/self/smaps") else { return release }
        for mapping in cleanReadOnlyFileMappings(smaps: smaps) {
            let length = mapping.end - mapping.start
            guard madvise(UnsafeMutableRawPointer(bitPattern: mapping.start), Int(length), MADV_DONTNEED) == 0 else {
                continue
            }
            release.mappings += 1
            release.bytes += Int(length)
        }
        malloc_trim(0)
        return release
    }

    /// The read-only private file mappings of an smaps text that hold no page the process wrote.
    static func cleanReadOnlyFileMappings(smaps: String) -> [ReadOnlyFileMapping] {
        var clean: [ReadOnlyFileMapping] = []
        var current: ReadOnlyFileMapping?
        var isCandidate = false
        for line in smaps.split(separator: "\n") {
            if let first = line.first, first.isHexDigit, line.contains("-") {
                // A mapping's first line: "start-end perms offset dev inode path".
                current = ReadOnlyFileMapping(line: line)
                isCandidate = current != nil
            } else if isCandidate, line.hasPrefix("Anonymous:") {
                let kilobytes = line.dropFirst("Anonymous:".count).split(separator: " ").first.flatMap { Int($0) }
                if kilobytes == 0, let current { clean.append(current) }
                isCandidate = false
            }
        }
        return clean
    }

    /// A line of /proc/self/maps (or a mapping's first line in smaps) that is a read-only, private mapping of a file.
    struct ReadOnlyFileMapping: Hashable {
        var start: UInt
        var end: UInt
        var path: String

        /// Parses `start-end perms offset dev inode path`; nil unless the mapping is `r-?p`, of a file (inode ≠ 0).
        init?(line: Substring) {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6 else { return nil }
            let range = fields[0].split(separator: "-")
            let permissions = Array(fields[1].utf8)
            guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
                permissions.count == 4,
                permissions[0] == UInt8(ascii: "r"), permissions[1] == UInt8(ascii: "-"),
                permissions[3] == UInt8(ascii: "p"),
                fields[4] != "0"
            else { return nil }
            let path = fields[5].drop { $0 == " " }
            guard path.hasPrefix("/") else { return nil }
            self.start = start
            self.end = end
            self.path = String(path)
        }
    }
}
