//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// `lifecyclectl scene discard ID --state-directory DIR` while the service is not running: the saved state's session
/// is marked discarded, as UIKit marks a session the user closed in the app switcher while the app was not running,
/// and the next launch reports it to `application(_:didDiscardSceneSessions:)` and drops it (docs/restoration.md,
/// "Scene sessions").
///
/// The edit is the saved state's own: read whole (a regular file of at most 64 MiB), decoded and checked as a launch
/// checks it, the session marked (its tree and connection dropped, as a discard deletes them), the generation raised by
/// one, so that the edited copy is the newest whatever else a launch finds (a copy in the file descriptor store), and
/// written back crash-safely (a temporary file with the old file's owner and mode, `fsync`, `rename`): a crash leaves
/// the old state or the new, and nothing else in it changes.
enum OfflineSceneDiscard {
    /// What was done.
    struct Outcome: Equatable {
        /// The saved state's path.
        let path: String
        /// Its generation before the edit.
        let generation: Int
        /// Whether the session was already marked discarded (the file is left as it was).
        let alreadyDiscarded: Bool
    }

    /// Why the session could not be discarded, with the exit status (sysexits).
    enum Failure: Error, Equatable, CustomStringConvertible {
        /// No saved state in the directory (66, EX_NOINPUT).
        case noSavedState(path: String, reason: String)
        /// The saved state cannot be read as one (65, EX_DATAERR): nothing was changed.
        case unreadable(path: String, reason: String)
        /// The saved state has no session with the identifier (65, EX_DATAERR).
        case noSuchSession(identifier: String, path: String, sessions: Int)
        /// The run record names a process that is alive and is the service's run (75, EX_TEMPFAIL): its next save
        /// would undo the edit.
        case serviceRunning(pid: Int32, directory: String)
        /// The edited state could not be written (73, EX_CANTCREAT): the old one is still there, whole.
        case notWritten(path: String, reason: String)

        var exitCode: Int32 {
            switch self {
            case .noSavedState: 66
            case .unreadable, .noSuchSession: 65
            case .serviceRunning: 75
            case .notWritten: 73
            }
        }

        var description: String {
            switch self {
            case .noSavedState(let path, let reason):
                "no saved state at \(path) (\(reason)): the service has saved none there, or --state-directory names "
                    + "another directory than its StateDirectory="
            case .unreadable(let path, let reason):
                "\(path) is not a saved state this lifecyclectl reads: \(reason); nothing was changed"
            case .noSuchSession(let identifier, let path, let sessions):
                "\(path) has no scene session '\(identifier)' (it has \(sessions)); nothing was changed"
            case .serviceRunning(let pid, let directory):
                "the service is running (pid \(pid), \(directory)/\(runRecordName)) but its control socket did not "
                    + "answer: its next save would undo an edit of the saved state; discard through the socket "
                    + "(-u UNIT or --socket PATH), or stop the service first"
            case .notWritten(let path, let reason):
                "cannot write \(path): \(reason); the saved state is as it was"
            }
        }
    }

    /// The run record's name in the state directory (the daemon's `RunRecord.fileName`).
    static let runRecordName = "run.record"

    /// Marks session `identifier` discarded in the saved state of `directory`, unless the run record there names a
    /// process that is alive and started when the record says the service's run did.
    static func discard(
        _ identifier: String,
        inDirectory directory: String,
        isRunning: (ServiceRecord) -> Bool = Self.isRunning
    ) throws(Failure) -> Outcome {
        let directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        if let run = ServiceRecord.read(directory + "/" + runRecordName, kind: "Run"), isRunning(run),
            let pid = run.integer("pid").flatMap(Int32.init(exactly:))
        {
            throw .serviceRunning(pid: pid, directory: directory)
        }
        let path = directory + "/" + Archive.stateFileName
        let bytes: [UInt8]
        do {
            bytes = try RegularFile.readBytes(path, limit: RegularFile.stateLimit)
        } catch .system(let errno) where errno == .noSuchFileOrDirectory {
            throw .noSavedState(path: path, reason: "\(errno)")
        } catch {
            throw .unreadable(path: path, reason: error.description)
        }
        switch Archive.discardSession(identifier, inSavedState: bytes, source: path) {
        case .unreadable(let reason):
            throw .unreadable(path: path, reason: reason)
        case .noSuchSession(let sessions):
            throw .noSuchSession(identifier: identifier, path: path, sessions: sessions)
        case .alreadyDiscarded(let generation):
            return Outcome(path: path, generation: generation, alreadyDiscarded: true)
        case .discarded(let edited, let generation):
            do {
                // As the service's user owned it (DynamicUser=, User=), with its mode: root's edit must not take the
                // state from the service.
                try DurableFile.write(edited, to: path, ownership: DurableFile.Ownership(of: path))
            } catch {
                throw .notWritten(path: path, reason: "\(error)")
            }
            return Outcome(path: path, generation: generation, alreadyDiscarded: false)
        }
    }

    /// Whether the run `record` describes is going on: it has not exited, it is of this boot, and its pid is a
    /// process that started within two seconds of when the record says the run did (so a pid the kernel gave another
    /// process since is not taken for the service).
    static func isRunning(_ record: ServiceRecord) -> Bool {
        guard record["phase"] != "exited", let pid = record.integer("pid").flatMap(Int32.init(exactly:)), pid > 0
        else { return false }
        if let boot = record["boot"], let current = ServiceFacts.bootID(), boot != current { return false }
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let started = record["started"].flatMap({ Int64($0) }), let began = processStart(pid) else {
            // Alive, and nothing says it is another process: taken for the service.
            return true
        }
        return abs(began - started) <= 2_000_000
    }

    /// When process `pid` started, µs since the epoch: its start in clock ticks after boot (`/proc/PID/stat`, field
    /// 22), set against the time since boot now (`CLOCK_BOOTTIME`, the clock it is counted on) and the time now.
    static func processStart(_ pid: Int32) -> Int64? {
        guard let stat = ServiceFacts.readSmallFile("/proc/\(pid)/stat"),
            let afterName = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the name start at field 3 (the state); the start time is field 22.
        let fields = stat[stat.index(after: afterName)...].split(separator: " ")
        let perSecond = Int64(sysconf(Int32(_SC_CLK_TCK)))
        guard fields.count > 19, let ticks = Int64(fields[19]), perSecond > 0 else { return nil }
        var sinceBoot = timespec()
        guard clock_gettime(CLOCK_BOOTTIME, &sinceBoot) == 0 else { return nil }
        let bootMicroseconds = Int64(sinceBoot.tv_sec) * 1_000_000 + Int64(sinceBoot.tv_nsec) / 1000
        return WallClock.microseconds() - (bootMicroseconds - ticks * 1_000_000 / perSecond)
    }
}
