//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import FoundationEssentials
import LifecyclePrimitives

/// A PSI trigger: report when tasks stalled on memory for at least `threshold` within any `window`.
///
/// The kernel accepts a window of 500 ms to 10 s; an unprivileged process only a multiple of 2 s (Linux 6.5+),
/// which is why systemd's default, and this one, is 200 ms per 2 s.
package struct MemoryPressureTrigger: Hashable, Sendable, CustomStringConvertible {
    /// Which stall counts: `some` (at least one task stalled) or `full` (all non-idle tasks stalled).
    package enum Kind: String, Hashable, Sendable {
        /// At least one task stalled on memory.
        case some
        /// Every non-idle task stalled on memory at once.
        case full
    }

    /// Which stall counts.
    package var kind: Kind
    /// The stall time within one window that fires the trigger.
    package var threshold: Duration
    /// The window the stall is measured over.
    package var window: Duration

    /// Creates a trigger; systemd's default is `some` 200 ms per 2 s.
    package init(kind: Kind = .some, threshold: Duration = .milliseconds(200), window: Duration = .seconds(2)) {
        self.kind = kind
        self.threshold = threshold
        self.window = window
    }

    /// What is written to a `memory.pressure` file: `some 200000 2000000`, in microseconds.
    package var text: String {
        "\(kind.rawValue) \(threshold.microsecondsRoundedUp) \(window.microsecondsRoundedUp)"
    }

    /// The bytes written: the text and a NUL. /proc/pressure/* overwrites the last byte written with a NUL before
    /// parsing, so without a terminator the window would lose its last digit.
    package var bytes: [UInt8] { Array(text.utf8) + [0] }

    /// For logs: `some 200 ms per 2 s`.
    package var description: String {
        "\(kind.rawValue) \(threshold.formattedForLog) per \(window.formattedForLog)"
    }
}

/// How the cgroup hierarchies are mounted under /sys/fs/cgroup.
package enum CgroupLayout: String, Hashable, Sendable {
    /// cgroup2 only, mounted at /sys/fs/cgroup.
    case unified
    /// cgroup v1 controllers, plus cgroup2 at /sys/fs/cgroup/unified (systemd's "hybrid" mode).
    case hybrid
    /// cgroup v1 only: no per-cgroup pressure files.
    case legacy

    /// `CGROUP2_SUPER_MAGIC`: the file system type statfs(2) reports for a cgroup2 mount.
    package static let cgroup2FileSystemType: UInt = 0x6367_7270

    /// The layout whose cgroup2 mount `fileSystemType` finds (the type statfs(2) reports for a path, nil when there
    /// is nothing there), as systemd decides it: cgroup2 at /sys/fs/cgroup is unified, at /sys/fs/cgroup/unified
    /// hybrid, anywhere else (or nowhere) legacy.
    package static func detect(fileSystemType: (String) -> UInt?) -> CgroupLayout {
        if fileSystemType("/sys/fs/cgroup") == cgroup2FileSystemType { return .unified }
        if fileSystemType("/sys/fs/cgroup/unified") == cgroup2FileSystemType { return .hybrid }
        return .legacy
    }

    /// Where this layout mounts cgroup2, or nil for `legacy`.
    package var cgroup2Root: String? {
        switch self {
        case .unified: "/sys/fs/cgroup"
        case .hybrid: "/sys/fs/cgroup/unified"
        case .legacy: nil
        }
    }
}

/// One file (or FIFO, or socket) a ``MemoryPressureMonitor`` can watch, and what it writes there first.
package struct MemoryPressureSource: Hashable, Sendable, CustomStringConvertible {
    /// Where the path came from.
    package enum Origin: String, Hashable, Sendable {
        /// `$MEMORY_PRESSURE_WATCH`, set by systemd 254+ (`MemoryPressureWatch=`).
        case environment
        /// The `memory.pressure` of the process's own cgroup (cgroup2).
        case cgroup
        /// `/proc/pressure/memory`: the whole system.
        case systemWide = "system-wide"
    }

    /// The path.
    package var path: String
    /// Where the path came from.
    package var origin: Origin
    /// Written once after opening: a PSI trigger, or `$MEMORY_PRESSURE_WRITE`; empty for none.
    package var write: [UInt8]

    /// Describes a source.
    package init(path: String, origin: Origin, write: [UInt8]) {
        self.path = path
        self.origin = origin
        self.write = write
    }

    /// What is written, as text up to its NUL (a trigger such as `some 200000 2000000`).
    package var writtenText: String {
        String(decoding: write.prefix { $0 != 0 }, as: UTF8.self)
    }

    package var description: String { "\(path) (\(origin.rawValue))" }
}

/// The process's own cgroup2 path and what the environment says, turned into the sources to try, in order.
package enum MemoryPressurePlan: Hashable, Sendable {
    /// Watching is switched off (`MEMORY_PRESSURE_WATCH=` empty or `/dev/null`, as systemd does).
    case disabled(reason: String)
    /// Try these sources in order; the first that opens and accepts its write is watched.
    case sources([MemoryPressureSource])

    /// The systemd-wide fallback: every task of the machine.
    package static let systemWidePath = "/proc/pressure/memory"

    /// The bytes `$MEMORY_PRESSURE_WRITE` holds: RFC 4648 base64 (standard alphabet, padded), whitespace ignored; nil
    /// when the text is not that.
    package static func decodeWrite(_ text: String) -> [UInt8]? {
        // Data(base64Encoded:) takes no whitespace, and its lenient option would skip any character it does not know,
        // so only whitespace is taken out here.
        let whitespace: [UInt8] = [0x20, 0x0A, 0x0D, 0x09]
        let symbols = String(decoding: text.utf8.filter { !whitespace.contains($0) }, as: UTF8.self)
        return Data(base64Encoded: symbols).map { Array($0) }
    }

    /// Decides what to watch: `$MEMORY_PRESSURE_WATCH` (with `$MEMORY_PRESSURE_WRITE`, base64) when set, with no
    /// fallback, as sd-event does; else the cgroup's own `memory.pressure`, then `/proc/pressure/memory`.
    ///
    /// - Parameters:
    ///   - environment: the process environment (only the two variables are read).
    ///   - procSelfCgroup: the text of /proc/self/cgroup; its `0::PATH` line names the cgroup2 group.
    ///   - layout: where cgroup2 is mounted.
    ///   - trigger: the trigger to write when the environment names none.
    package static func make(
        environment: [String: String],
        procSelfCgroup: String?,
        layout: CgroupLayout,
        trigger: MemoryPressureTrigger
    ) throws(MemoryPressureError) -> MemoryPressurePlan {
        if let watch = environment["MEMORY_PRESSURE_WATCH"] {
            if watch.isEmpty || watch == "/dev/null" {
                return .disabled(reason: "MEMORY_PRESSURE_WATCH=\(watch) switches it off")
            }
            guard watch.hasPrefix("/"), !watch.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) else {
                throw MemoryPressureError(
                    attempts: [],
                    summary: "MEMORY_PRESSURE_WATCH=\(watch) is not an absolute, normalized path"
                )
            }
            var write: [UInt8] = []
            if let encoded = environment["MEMORY_PRESSURE_WRITE"] {
                guard let decoded = decodeWrite(encoded) else {
                    throw MemoryPressureError(
                        attempts: [],
                        summary: "MEMORY_PRESSURE_WRITE=\(encoded) is not valid base64"
                    )
                }
                write = decoded
            }
            return .sources([MemoryPressureSource(path: watch, origin: .environment, write: write)])
        }
        var sources: [MemoryPressureSource] = []
        if let procSelfCgroup, let path = cgroupPressurePath(procSelfCgroup: procSelfCgroup, layout: layout) {
            sources.append(MemoryPressureSource(path: path, origin: .cgroup, write: trigger.bytes))
        }
        sources.append(MemoryPressureSource(path: systemWidePath, origin: .systemWide, write: trigger.bytes))
        return .sources(sources)
    }

    /// The `memory.pressure` file of the cgroup2 group that /proc/self/cgroup names (`0::/system.slice/x.service`),
    /// or nil when there is no cgroup2 line or no cgroup2 mount.
    package static func cgroupPressurePath(procSelfCgroup: String, layout: CgroupLayout) -> String? {
        guard let root = layout.cgroup2Root else { return nil }
        for line in procSelfCgroup.split(separator: "\n") where line.hasPrefix("0::") {
            let group = line.dropFirst(3)
            guard group.hasPrefix("/") else { return nil }
            // A cgroup removed under us is reported with this suffix; its files are gone.
            guard !group.hasSuffix(" (deleted)") else { return nil }
            let trimmed = group.hasSuffix("/") ? String(group.dropLast()) : String(group)
            return root + trimmed + "/memory.pressure"
        }
        return nil
    }
}

/// Why memory pressure cannot be watched: every source tried and what each reported.
package struct MemoryPressureError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Each source tried, with the error that ruled it out.
    package var attempts: [Attempt]
    /// A reason that applies before any source is tried (a bad environment variable), if any.
    package var summary: String?

    /// One source that could not be used.
    package struct Attempt: Hashable, Sendable, CustomStringConvertible {
        /// The source.
        package var source: MemoryPressureSource
        /// What went wrong, e.g. `open: Read-only file system (errno 30)`.
        package var reason: String

        package var description: String { "\(source.path): \(reason)" }
    }

    /// Creates an error.
    package init(attempts: [Attempt], summary: String? = nil) {
        self.attempts = attempts
        self.summary = summary
    }

    package var description: String {
        var parts: [String] = []
        if let summary { parts.append(summary) }
        parts += attempts.map(\.description)
        return "Memory pressure cannot be watched: " + parts.joined(separator: "; ") + "."
    }
}
