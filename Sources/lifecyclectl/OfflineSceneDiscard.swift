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
/// The edit holds the state directory's lock exclusively (``StateDirectoryLock``: every process of the service holds
/// it shared from before its load until it exits, so the edit is refused while one runs, and a launch waits for the
/// edit). The saved state is read whole (a regular file of at most 64 MiB, not a symbolic link), decoded and checked as
/// a launch checks it, and rewritten only when this build writes it back byte for byte (a state written by another
/// LifecycleKit, with members this one does not know, is refused rather than losing them); the session is marked (its
/// tree and connection dropped, as a discard deletes them), the generation raised by one, and the file written back
/// crash-safely with its owner and mode (a temporary file, `fsync`, `rename`): a crash leaves the old state or the
/// new, and nothing else in it changes.
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

    /// Why the session could not be discarded, with the exit status (sysexits). Nothing was changed.
    enum Failure: Error, Equatable, CustomStringConvertible {
        /// No saved state in the directory (66, EX_NOINPUT).
        case noSavedState(path: String, reason: String)
        /// The saved state cannot be read as one, or not rewritten without loss (65, EX_DATAERR).
        case unreadable(path: String, reason: String)
        /// The saved state has no session with the identifier (65, EX_DATAERR).
        case noSuchSession(identifier: String, path: String, sessions: Int)
        /// A process of the service holds the state directory (75, EX_TEMPFAIL): its next save would undo the edit.
        case serviceRunning(directory: String)
        /// systemd has the unit running, starting or stopping, or its file descriptor store holds descriptors (a
        /// copy of the saved state may be there, which a launch could prefer) (75, EX_TEMPFAIL).
        case unitNotStopped(unit: String, state: String)
        /// The state directory cannot be locked (74, EX_IOERR; 77, EX_NOPERM, when this user may not open it).
        case cannotLock(directory: String, error: Errno)
        /// The edited state could not be written (73, EX_CANTCREAT).
        case notWritten(path: String, reason: String)

        var exitCode: Int32 {
            switch self {
            case .noSavedState: 66
            case .unreadable, .noSuchSession: 65
            case .serviceRunning, .unitNotStopped: 75
            case .cannotLock(_, let error): error == .permissionDenied ? 77 : 74
            case .notWritten: 73
            }
        }

        var description: String {
            switch self {
            case .noSavedState(let path, let reason):
                "no saved state at \(path) (\(reason)): the service has saved none there, or --state-directory names "
                    + "another directory than its StateDirectory=; nothing was changed"
            case .unreadable(let path, let reason):
                "\(path) \(reason); nothing was changed"
            case .noSuchSession(let identifier, let path, let sessions):
                "\(path) has no scene session '\(identifier)' (it has \(sessions)); nothing was changed"
            case .serviceRunning(let directory):
                "a process of the service holds \(directory) but its control socket did not answer: its next save "
                    + "would undo an edit of the saved state; discard through the socket (-u UNIT or --socket PATH), "
                    + "or stop the service first; nothing was changed"
            case .unitNotStopped(let unit, let state):
                "\(unit) is \(state): stop it first (systemctl stop \(unit)), so that no process of it runs and its "
                    + "file descriptor store is empty; nothing was changed"
            case .cannotLock(let directory, let error):
                "cannot lock \(directory): \(error); nothing was changed"
            case .notWritten(let path, let reason):
                "cannot write \(path): \(reason); the saved state is the old one or the new one, whole"
            }
        }
    }

    /// Marks session `identifier` discarded in the saved state of `directory`, holding the directory's lock
    /// exclusively (refused while a process of the service holds it).
    static func discard(_ identifier: String, inDirectory directory: String) throws(Failure) -> Outcome {
        let directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        let path = directory + "/" + Archive.stateFileName
        let lock: StateDirectoryLock?
        do {
            lock = try StateDirectoryLock.take(directory, .exclusive)
        } catch .noSuchFileOrDirectory {
            throw .noSavedState(path: path, reason: "\(directory): \(Errno.noSuchFileOrDirectory)")
        } catch {
            throw .cannotLock(directory: directory, error: error)
        }
        guard let lock else { throw .serviceRunning(directory: directory) }
        defer { withExtendedLifetime(lock) {} }

        var status = stat()
        guard lstat(path, &status) == 0 else {
            throw .noSavedState(path: path, reason: "\(Errno(rawValue: errno))")
        }
        guard status.st_mode & S_IFMT != S_IFLNK else {
            throw .unreadable(path: path, reason: "is a symbolic link, not the regular file the service writes")
        }
        let ownership = DurableFile.Ownership(
            user: UInt32(status.st_uid),
            group: UInt32(status.st_gid),
            mode: UInt32(status.st_mode & 0o7777)
        )
        let bytes: [UInt8]
        do {
            bytes = try RegularFile.readBytes(path, limit: RegularFile.stateLimit)
        } catch {
            throw .unreadable(path: path, reason: "cannot be read: \(error)")
        }
        switch Archive.discardSession(identifier, inSavedState: bytes, source: path) {
        case .unreadable(let reason):
            throw .unreadable(path: path, reason: "is not a saved state this lifecyclectl reads: \(reason)")
        case .notRewritable:
            throw .unreadable(
                path: path,
                reason: "holds what this lifecyclectl would not write back as it is (written by another LifecycleKit): "
                    + "use the lifecyclectl of the service's release"
            )
        case .noSuchSession(let sessions):
            throw .noSuchSession(identifier: identifier, path: path, sessions: sessions)
        case .alreadyDiscarded(let generation):
            return Outcome(path: path, generation: generation, alreadyDiscarded: true)
        case .discarded(let edited, let generation):
            do {
                // As the service's user owned it (DynamicUser=, User=), with its mode: root's edit must not take the
                // state from the service.
                try DurableFile.write(edited, to: path, ownership: ownership)
            } catch {
                throw .notWritten(path: path, reason: "\(error)")
            }
            return Outcome(path: path, generation: generation, alreadyDiscarded: false)
        }
    }

    /// Refuses a unit systemd does not have stopped: `ActiveState=` other than `inactive` or `failed` (running,
    /// starting — a crash's automatic restart waits in `activating` — reloading or stopping), or a file descriptor
    /// store that holds descriptors (`NFileDescriptorStore=`; systemd 252 empties it when the unit stops). `show` is
    /// systemctl's answer (`KEY=VALUE` lines); nil when systemctl could not answer, and nothing is checked then (the
    /// lock still is).
    static func checkStopped(unit: String, show: String?) throws(Failure) {
        guard let show else { return }
        var properties: [Substring: Substring] = [:]
        for line in show.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            properties[line[..<equals]] = line[line.index(after: equals)...]
        }
        if let active = properties["ActiveState"], active != "inactive", active != "failed" {
            let sub = properties["SubState"].map { " (\($0))" } ?? ""
            throw .unitNotStopped(unit: unit, state: "\(active)\(sub)")
        }
        if let stored = properties["NFileDescriptorStore"].flatMap({ Int($0) }), stored > 0 {
            throw .unitNotStopped(unit: unit, state: "stopped with \(stored) descriptor(s) in its file descriptor store")
        }
    }

    /// The properties ``checkStopped(unit:show:)`` reads, for `systemctl show`.
    static let unitProperties = ["ActiveState", "SubState", "NFileDescriptorStore"]
}
