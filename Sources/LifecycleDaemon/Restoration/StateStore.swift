//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleSystemd
import Logging
import SystemPackage
import LifecycleIPC

// A release build finds timespec's members only through the toolchain's shims (MemberImportVisibility).
import SwiftOverlayShims

#if canImport(Glibc)
import Glibc
#endif

/// Where the saved state lives between runs: `state.archive` in the state directory (`$STATE_DIRECTORY`, the unit's
/// `StateDirectory=`, or `--state-directory`), written crash-safely, and a copy in systemd's file descriptor store
/// (a sealed memfd named `lifecycle-state-<generation>`), which survives a restart even when the directory is
/// read-only.
///
/// At launch both copies are read; every copy that is empty, truncated, torn, malformed or of a newer format is
/// refused with one warning naming it and why (a file is moved aside as `state.archive.rejected-<µs>`, at most
/// ``RestorationSettings/keepRejectedFiles`` kept; a stored memfd is dropped from the store). Of the valid copies the
/// one with the higher generation wins, the file descriptor store on a tie: each save writes the directory first and
/// the store second, with the same generation, one more than the last; so the higher generation is the newer save,
/// and a copy that is behind is a save the other place missed (a read-only directory, a crash between the two).
@MainActor
final class StateStore {
    static let fileName = "state.archive"
    static let rejectedInfix = ".rejected-"
    static let storePrefix = "lifecycle-state-"

    /// The state file, when there is a state directory.
    let path: String?
    private let store: FileDescriptorStore?
    private let keepRejected: Int
    private let writeDelay: Duration
    private let logger: Logger
    /// Reports a failure to reach systemd's store: the daemon's one warning about its notification socket, which
    /// covers sd_notify and the store together. Without it, the store's first failure is a warning of its own.
    private let reportStoreFailure: (@MainActor (SystemCallError) -> Void)?
    /// The names this process knows to be in systemd's store; a save replaces them.
    private var storedNames: Set<String> = []
    private var diskFailureLogged = false
    /// Saves to the directory that failed since the last one that worked (a full or read-only directory).
    private var failedDiskSaves = 0
    private var storeFailureLogged = false
    private var noPlaceLogged = false

    init(
        settings: RestorationSettings,
        notifier: SystemdNotifier,
        environment: [String: String],
        logger: Logger,
        reportStoreFailure: (@MainActor (SystemCallError) -> Void)? = nil
    ) {
        self.reportStoreFailure = reportStoreFailure
        path = settings.stateDirectory.map { ($0.hasSuffix("/") ? String($0.dropLast()) : $0) + "/" + Self.fileName }
        let useStore: Bool
        switch settings.fileDescriptorStore {
        case .no: useStore = false
        case .yes: useStore = notifier.isEnabled
        // systemd 254 and later pass $FDSTORE, the store's size; 252 passes nothing, so "auto" tries.
        case .auto: useStore = notifier.isEnabled && environment["FDSTORE"] != "0"
        }
        store = useStore ? FileDescriptorStore(notifier: notifier) : nil
        keepRejected = settings.keepRejectedFiles
        writeDelay = settings.stateWriteDelay
        self.logger = logger
    }

    private struct Candidate {
        var archive: Archive
        var place: String
    }

    private struct Rejection {
        var place: String
        var reason: String
        var keptAs: String?
        var note: String?
    }

    // MARK: Loading

    /// The newest valid saved state of the two copies, or nil; logs which copy it took and every copy it refused.
    func load() -> Archive? {
        var candidates: [Candidate] = []
        var rejections: [Rejection] = []
        if store != nil {
            for entry in FileDescriptorStore.takeStored(prefix: Self.storePrefix) {
                let place = "the file descriptor store's \(entry.name)"
                switch entry.contents {
                case .failure(let error):
                    rejections.append(Rejection(place: place, reason: "cannot be read: \(error)", note: "dropped from the store"))
                    removeFromStore(entry.name)
                case .success(let bytes):
                    do {
                        var archive = try Archive.decodeState(bytes, source: place)
                        archive.sourceName = place
                        candidates.append(Candidate(archive: archive, place: place))
                        storedNames.insert(entry.name)
                    } catch {
                        rejections.append(Rejection(place: place, reason: error.reason, note: "dropped from the store"))
                        removeFromStore(entry.name)
                    }
                }
            }
        }
        if let path {
            let unfinished = DurableFile.removeTemporaryFiles(for: path)
            if !unfinished.isEmpty {
                logger.notice(
                    "removed \(unfinished.count) unfinished save(s) of the state, never loaded: \(unfinished.joined(separator: ", "))"
                )
            }
            do {
                let bytes = try SystemFiles.readBytes(path)
                do {
                    var archive = try Archive.decodeState(bytes, source: path)
                    archive.sourceName = path
                    candidates.append(Candidate(archive: archive, place: path))
                } catch {
                    rejections.append(Rejection(place: path, reason: error.reason, keptAs: moveAside(path)))
                }
            } catch {
                if error != .noSuchFileOrDirectory {
                    rejections.append(Rejection(place: path, reason: "cannot be read: \(error)"))
                }
            }
        }
        // The higher generation wins; on a tie the store (listed first) does, as max(by:) keeps the first maximum.
        let chosen = candidates.max { $0.archive.generation < $1.archive.generation }
        for rejection in rejections {
            var text = "the saved state in \(rejection.place) \(rejection.reason); "
            if let chosen {
                text += "restoring from \(chosen.place) instead"
            } else {
                text += "launching without saved state"
            }
            if let keptAs = rejection.keptAs { text += "; the file is kept aside as \(keptAs)" }
            if let note = rejection.note { text += "; \(note)" }
            logger.warning("\(text)")
        }
        guard let chosen else {
            if rejections.isEmpty { logger.info("no saved state: launching fresh") }
            return nil
        }
        let others = candidates.filter { $0.place != chosen.place }.map { "\($0.place) has generation \($0.archive.generation)" }
        let text =
            "restoring saved state generation \(chosen.archive.generation) from \(chosen.place)"
            + (chosen.archive.formatVersion == 1 ? " (format 1, migrated)" : "")
            + (others.isEmpty ? "" : "; " + others.joined(separator: ", "))
        logger.info("\(text)")
        return chosen.archive
    }

    /// Renames a rejected state file aside and keeps only the newest few; returns the new name.
    private func moveAside(_ path: String) -> String? {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let micros = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
        let aside = path + Self.rejectedInfix + "\(micros)"
        if keepRejected == 0 {
            _ = unlink(path)
            return nil
        }
        guard rename(path, aside) == 0 else {
            logger.warning("\(path) cannot be moved aside: \(Errno(rawValue: errno)); it will be overwritten by the next save")
            return nil
        }
        pruneRejected(around: path)
        return aside
    }

    private func pruneRejected(around path: String) {
        guard let slash = path.lastIndex(of: "/") else { return }
        let directory = String(path[..<slash])
        let prefix = Self.fileName + Self.rejectedInfix
        let kept = DurableFile.directoryEntries(directory.isEmpty ? "/" : directory)
            .filter { $0.hasPrefix(prefix) }
            .sorted { (Int64($0.dropFirst(prefix.count)) ?? 0) < (Int64($1.dropFirst(prefix.count)) ?? 0) }
        for name in kept.dropLast(keepRejected) {
            _ = unlink(directory + "/" + name)
        }
    }

    private func removeFromStore(_ name: String) {
        do {
            try store?.remove(name: name)
        } catch {
            if let reportStoreFailure {
                reportStoreFailure(error)
            } else {
                logger.warning("cannot drop \(name) from the file descriptor store: \(error)")
            }
        }
    }

    // MARK: Saving

    /// Writes a saved state to the directory (crash-safely) and to the file descriptor store.
    func save(_ archive: Archive) {
        let bytes = archive.encodedState()
        var places: [String] = []
        if let path {
            // A directory named by hand may not exist yet (systemd makes StateDirectory=): make it, private.
            if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
                _ = mkdir(String(path[..<slash]), 0o700)
            }
            let chunks = writeDelay > .zero ? 16 : 1
            let pause = writeDelay / 16
            do {
                try DurableFile.write(bytes, to: path, chunks: chunks) { Self.sleep(pause) }
                places.append(path)
                if failedDiskSaves > 0 {
                    logger.notice(
                        "the state is saved to \(path) again, after \(failedDiskSaves) failed \(failedDiskSaves == 1 ? "save" : "saves")",
                        metadata: ["lifecycle.failed_saves": "\(failedDiskSaves)"]
                    )
                    failedDiskSaves = 0
                    diskFailureLogged = false
                }
            } catch {
                // The temporary file is gone and the archive at `path` is the previous save's, untouched.
                failedDiskSaves += 1
                let text = "cannot save the state to \(path): \(error)"
                if diskFailureLogged {
                    logger.debug("\(text)")
                } else {
                    diskFailureLogged = true
                    let kept = "the previous save stays there"
                    let tail = store == nil ? "; \(kept)" : "; \(kept), and the file descriptor store keeps this one"
                    logger.warning("\(text)\(tail)", metadata: ["lifecycle.state_file": "\(path)", "lifecycle.errno": "\(error.rawValue)"])
                }
            }
        }
        if let store {
            let name = Self.storePrefix + "\(archive.generation)"
            do {
                try store.store(bytes, name: name)
                for old in storedNames where old != name { removeFromStore(old) }
                storedNames = [name]
                places.append("the file descriptor store (\(name))")
            } catch {
                let text = "cannot keep the state in the file descriptor store: \(error)"
                if let reportStoreFailure {
                    logger.debug("\(text)")
                    reportStoreFailure(error)
                } else if storeFailureLogged {
                    logger.debug("\(text)")
                } else {
                    storeFailureLogged = true
                    logger.warning("\(text)")
                }
            }
        }
        if places.isEmpty {
            if path == nil, store == nil, !noPlaceLogged {
                noPlaceLogged = true
                logger.notice(
                    "the state is not saved: no state directory (StateDirectory=, --state-directory) and no file descriptor store"
                )
            }
            return
        }
        logger.info(
            "saved state generation \(archive.generation) (\(bytes.count) bytes) to \(places.joined(separator: " and "))"
        )
    }

    private static func sleep(_ duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 { request = remaining }
    }
}
