//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// Sessions in a directory of the service's own state (`$STATE_DIRECTORY/sessions`), one file per session.
///
/// Each write goes to a new file that is renamed over the old one (rename(2) is atomic), so a reader — the next
/// process after a restart, a SIGKILL or an upgrade, or the other process during an upgrade — sees a whole record, the
/// old or the new, never a torn one. Written data is the kernel's at once: a SIGKILL loses nothing written. What a
/// power loss may lose is what the kernel had not written back yet; ``save(_:)`` with `durably` (the final checkpoint
/// of a stop or an upgrade) flushes each file and the directory before it returns.
public struct DirectorySessionStore: SessionStore {
    /// The directory.
    public let directory: String

    /// Sessions in `directory` (made if missing, mode 0700).
    public init(directory: String) {
        self.directory = directory
    }

    public var description: String { directory }

    public func prepare() async throws {
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw StoreError(message: "cannot make \(directory): \(String(cString: strerror(errno)))")
        }
        // Files a killed writer left half-made.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasSuffix(".tmp") {
            unlink(path(name))
        }
    }

    public func run() async {
        // Nothing to run; wait for the end.
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }

    public func load(_ id: String) async throws -> SessionRecord? {
        guard let data = FileManager.default.contents(atPath: file(id)) else { return nil }
        return try JSONDecoder().decode(SessionRecord.self, from: data)
    }

    public func save(_ records: [SessionRecord], durably: Bool) async throws {
        let encoder = JSONEncoder()
        for record in records {
            let data = try encoder.encode(record)
            let temporary = path("\(record.id).\(getpid()).tmp")
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw StoreError(message: "cannot write \(temporary): \(String(cString: strerror(errno)))") }
            let written = data.withUnsafeBytes { bytes in Glibc.write(fd, bytes.baseAddress, bytes.count) }
            if durably { fdatasync(fd) }
            close(fd)
            guard written == data.count, rename(temporary, file(record.id)) == 0 else {
                unlink(temporary)
                throw StoreError(message: "cannot write the session \(record.id) in \(directory)")
            }
        }
        if durably {
            let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if fd >= 0 {
                fsync(fd)
                close(fd)
            }
        }
    }

    public func delete(_ id: String, generation: Int) async throws {
        // One process owns a session at a time on one machine: the generation check is PostgreSQL's business.
        unlink(file(id))
    }

    public func expire(notWrittenSince cutoff: Double) async throws -> [String] {
        var expired: [String] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasSuffix(".json") {
            var info = stat()
            guard stat(path(name), &info) == 0, Double(info.st_mtim.tv_sec) < cutoff else { continue }
            unlink(path(name))
            expired.append(String(name.dropLast(".json".count)))
        }
        return expired
    }

    private func file(_ id: String) -> String { path("\(id).json") }
    private func path(_ name: String) -> String { directory + "/" + name }
}

/// A store that cannot do what it was asked, with the reason.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public var message: String
    public var description: String { message }
}
