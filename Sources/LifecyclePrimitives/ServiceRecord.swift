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

/// A small text record of what a run of the service did, in its state directory: a header line naming the kind and
/// the format (`LifecycleKit-Run 1`), then one `key=value` line per field, sorted. The daemon writes the run record
/// (`run.record`), `lifecyclectl record-stop` (the units' `ExecStopPost=`) the stop record (`stop.record`); both are
/// read at the next launch to say why the last run ended (docs/restoration.md, "Why the last run ended").
///
/// A person can read it with `cat`; a value never holds a line break (it is replaced by a space when written).
package struct ServiceRecord: Sendable, Hashable {
    /// `Run` or `Stop`: the header's `LifecycleKit-<kind>`.
    package var kind: String
    /// The fields, by key.
    package var fields: [String: String]

    /// The format this build writes and reads.
    package static let formatVersion = 1
    /// The most a record may be: a few hundred bytes are written; anything larger is not one.
    package static let sizeLimit = 16 << 10

    /// A record of `kind` with `fields`.
    package init(kind: String, fields: [String: String] = [:]) {
        self.kind = kind
        self.fields = fields
    }

    /// The field `key`, nil when absent or empty.
    package subscript(key: String) -> String? {
        get { fields[key].flatMap { $0.isEmpty ? nil : $0 } }
        set { fields[key] = newValue }
    }

    /// The field `key` as a whole number.
    package func integer(_ key: String) -> Int? { self[key].flatMap { Int($0) } }

    /// The bytes of the record: the header, then the fields sorted by key.
    package func encoded() -> [UInt8] {
        var text = "LifecycleKit-\(kind) \(Self.formatVersion)\n"
        for key in fields.keys.sorted() {
            guard let value = fields[key] else { continue }
            let clean = String(value.map { $0.isNewline ? " " : $0 })
            text += "\(key)=\(clean)\n"
        }
        return Array(text.utf8)
    }

    /// The record of `kind` in `bytes`; nil when they are not one (another kind, another format, garbage).
    package static func decode(_ bytes: [UInt8], kind: String) -> ServiceRecord? {
        guard bytes.count <= sizeLimit else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard let header = lines.first, header == "LifecycleKit-\(kind) \(formatVersion)" else { return nil }
        lines.removeFirst()
        var fields: [String: String] = [:]
        for line in lines {
            guard let equals = line.firstIndex(of: "=") else { return nil }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return ServiceRecord(kind: kind, fields: fields)
    }

    /// The record of `kind` in the file at `path`; nil when there is none, or it is not one.
    package static func read(_ path: String, kind: String) -> ServiceRecord? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size <= sizeLimit else {
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size) + 1)
        let count = bytes.withUnsafeMutableBytes { buffer in
            (try? FileDescriptor(rawValue: descriptor).read(into: buffer, retryOnInterrupt: true)) ?? -1
        }
        guard count >= 0 else { return nil }
        return decode(Array(bytes[..<count]), kind: kind)
    }

    /// Writes the record to `path` crash-safely (``DurableFile``); without `flush`, atomically but not flushed to the
    /// disk (see ``DurableFile/write(_:to:chunks:flush:ownership:pause:)``).
    package func write(to path: String, flush: Bool = true) throws(Errno) {
        try DurableFile.write(encoded(), to: path, flush: flush)
    }
}

/// Facts about this boot and this process's control group that the run and stop records carry.
package enum ServiceFacts {
    /// This boot's identifier (`/proc/sys/kernel/random/boot_id`), nil when it cannot be read: a change between two
    /// records means the machine (or the container's host) rebooted in between.
    package static func bootID(path: String = "/proc/sys/kernel/random/boot_id") -> String? {
        guard let text = readSmallFile(path) else { return nil }
        let trimmed = text.filter { !$0.isWhitespace }
        return trimmed.isEmpty ? nil : trimmed
    }

    /// How many processes the kernel's OOM killer has killed in this process's memory control group: `oom_kill` of
    /// cgroup v2's `memory.events`, or of cgroup v1's `memory.oom_control` (these machines' hybrid layout: v1's memory
    /// controller); nil when neither can be read. `root` is where the hierarchies are mounted.
    package static func oomKillCount(
        procSelfCgroup: String = "/proc/self/cgroup",
        root: String = "/sys/fs/cgroup"
    ) -> Int? {
        guard let text = readSmallFile(procSelfCgroup) else { return nil }
        var candidates: [String] = []
        for line in text.split(separator: "\n") {
            // hierarchy-ID:controller-list:path
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            let path = String(parts[2])
            if parts[1].split(separator: ",").contains("memory") {
                candidates.append("\(root)/memory\(path)/memory.oom_control")
            } else if parts[0] == "0" && parts[1].isEmpty {
                candidates.append("\(root)\(path)/memory.events")
                candidates.append("\(root)/unified\(path)/memory.events")
            }
        }
        for file in candidates {
            guard let contents = readSmallFile(file) else { continue }
            for line in contents.split(separator: "\n") {
                let words = line.split(separator: " ")
                if words.count == 2, words[0] == "oom_kill", let count = Int(words[1]) { return count }
            }
        }
        return nil
    }

    /// A short file's text (at most 4 KiB), nil when it cannot be read.
    package static func readSmallFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { buffer in
            (try? FileDescriptor(rawValue: descriptor).read(into: buffer, retryOnInterrupt: true)) ?? -1
        }
        guard count > 0 else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }
}

/// What systemd said about the end of a run, as `lifecyclectl record-stop` (the units' `ExecStopPost=`) wrote it:
/// `$SERVICE_RESULT`, `$EXIT_CODE`, `$EXIT_STATUS` and the control group's OOM kill count, with the unit's invocation
/// and the boot it happened in.
package struct StopRecord: Sendable, Hashable {
    /// The unit's `$INVOCATION_ID`: the run record of the same start has it too.
    package var invocation: String?
    /// The boot it happened in.
    package var boot: String?
    /// When, in microseconds since the Unix epoch.
    package var at: Int64
    /// `$SERVICE_RESULT`: success, exit-code, signal, core-dump, watchdog, timeout, oom-kill, start-limit-hit, resources…
    package var result: String?
    /// `$EXIT_CODE`: exited, killed or dumped.
    package var code: String?
    /// `$EXIT_STATUS`: the exit status (`3`) or the signal's name without `SIG` (`SEGV`, `KILL`).
    package var status: String?
    /// The control group's OOM kill count then.
    package var oomKills: Int?

    /// The file's name in the state directory.
    package static let fileName = "stop.record"
    static let kind = "Stop"

    /// A record of these values.
    package init(
        invocation: String? = nil,
        boot: String? = nil,
        at: Int64,
        result: String? = nil,
        code: String? = nil,
        status: String? = nil,
        oomKills: Int? = nil
    ) {
        self.invocation = invocation
        self.boot = boot
        self.at = at
        self.result = result
        self.code = code
        self.status = status
        self.oomKills = oomKills
    }

    /// The record `ExecStopPost=` makes from its environment, now.
    package static func fromEnvironment(_ environment: [String: String], now: Int64) -> StopRecord {
        StopRecord(
            invocation: environment["INVOCATION_ID"],
            boot: ServiceFacts.bootID(),
            at: now,
            result: environment["SERVICE_RESULT"],
            code: environment["EXIT_CODE"],
            status: environment["EXIT_STATUS"],
            oomKills: ServiceFacts.oomKillCount()
        )
    }

    /// As a ``ServiceRecord``.
    package var record: ServiceRecord {
        var record = ServiceRecord(kind: Self.kind)
        record["invocation"] = invocation
        record["boot"] = boot
        record["at"] = String(at)
        record["result"] = result
        record["code"] = code
        record["status"] = status
        record["oom-kills"] = oomKills.map(String.init)
        return record
    }

    /// The stop record `record` holds; nil when it has no time.
    package init?(_ record: ServiceRecord) {
        guard let at = record["at"].flatMap({ Int64($0) }) else { return nil }
        self.init(
            invocation: record["invocation"],
            boot: record["boot"],
            at: at,
            result: record["result"],
            code: record["code"],
            status: record["status"],
            oomKills: record.integer("oom-kills")
        )
    }

    /// The stop record in `directory`, if there is a valid one.
    package static func read(inDirectory directory: String) -> StopRecord? {
        ServiceRecord.read(directory + "/" + fileName, kind: kind).flatMap(StopRecord.init)
    }

    /// Writes it to `directory` crash-safely.
    package func write(toDirectory directory: String) throws(Errno) {
        try record.write(to: directory + "/" + Self.fileName)
    }
}

extension WallClock {
    /// Now, in microseconds since the Unix epoch.
    package static func microseconds() -> Int64 {
        let now = now()
        return Int64(now.seconds) * 1_000_000 + Int64(now.nanoseconds / 1000)
    }
}
