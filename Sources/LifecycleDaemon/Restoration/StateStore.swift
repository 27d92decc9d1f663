//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging
import SystemPackage

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
///
/// The disk's copy is written on a thread of its own (``StateDiskWriter``): a save waits for it at most
/// ``diskWaitBudget``, and not at all while an earlier save is still being written; a slow disk then finishes in the
/// background and its outcome is logged when it is known.
@MainActor
final class StateStore {
    static let fileName = "state.archive"
    static let rejectedInfix = ".rejected-"
    static let storePrefix = "lifecycle-state-"
    /// How long a save waits for the disk before the main loop goes on without it.
    static let diskWaitBudget = Duration.milliseconds(250)
    /// The highest generation a restored state keeps: a higher one (up to `Int.max`, which the next save would
    /// overflow) is lowered to it, leaving room for 2³² saves in one run.
    static let highestRestoredGeneration = Int.max - (1 << 32)

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
    private let diskWriter = StateDiskWriter()
    /// Whether this process saves the service's state (the process's ``ProcessRole``): not an upgrade's successor
    /// before it is the main process, nor a process that handed the service to its successor, whose saves are the
    /// newer ones.
    private let isOwnerNow: @MainActor () -> Bool
    var isOwner: Bool { isOwnerNow() }
    /// Whether saves also go to systemd's file descriptor store.
    var usesFileDescriptorStore: Bool { store != nil }

    /// What an upgrade hands its successor in memory, as the file descriptor store would (its bytes and generation);
    /// nil when saves do not go to the store (the successor reads the state directory).
    func stateToHandOver(_ archive: Archive) -> (bytes: [UInt8], generation: Int)? {
        usesFileDescriptorStore ? (archive.encodedState(), archive.generation) : nil
    }

    init(
        settings: RestorationSettings,
        notifier: SystemdNotifier,
        environment: [String: String],
        logger: Logger,
        isOwner: @escaping @MainActor () -> Bool = { true },
        reportStoreFailure: (@MainActor (SystemCallError) -> Void)? = nil
    ) {
        self.reportStoreFailure = reportStoreFailure
        self.isOwnerNow = isOwner
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
    /// Only an owner (not an upgrade's new process before it is the main process) clears what it refused: a copy
    /// dropped from the store, an unfinished save removed, a damaged file moved aside. The running process may be
    /// saving meanwhile.
    func load(stored: [FileDescriptorStore.Entry] = []) -> Archive? {
        var candidates: [Candidate] = []
        var rejections: [Rejection] = []
        if store != nil {
            for entry in stored {
                let place = "the file descriptor store's \(entry.name)"
                switch entry.contents {
                case .failure(let error):
                    rejections.append(Rejection(place: place, reason: "cannot be read: \(error)", note: dropFromStore(entry.name)))
                case .success(let bytes):
                    do {
                        var archive = try Archive.decodeState(bytes, source: place)
                        archive.sourceName = place
                        candidates.append(Candidate(archive: archive, place: place))
                        storedNames.insert(entry.name)
                    } catch {
                        rejections.append(Rejection(place: place, reason: error.reason, note: dropFromStore(entry.name)))
                    }
                }
            }
        }
        if let path {
            let unfinished = isOwner ? DurableFile.removeTemporaryFiles(for: path) : []
            if !unfinished.isEmpty {
                logger.notice(
                    "removed \(unfinished.count) unfinished save(s) of the state, never loaded: \(unfinished.joined(separator: ", "))"
                )
            }
            do {
                // A regular file only (a FIFO there would block the launch for ever), of at most 64 MiB.
                let bytes = try RegularFile.readBytes(path, limit: RegularFile.stateLimit)
                do {
                    var archive = try Archive.decodeState(bytes, source: path)
                    archive.sourceName = path
                    candidates.append(Candidate(archive: archive, place: path))
                } catch {
                    rejections.append(Rejection(place: path, reason: error.reason, keptAs: isOwner ? moveAside(path) : nil))
                }
            } catch {
                if error != .system(.noSuchFileOrDirectory) {
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
        var archive = chosen.archive
        if archive.generation > Self.highestRestoredGeneration {
            // The next save counts one more: at Int.max that would trap, at every restart.
            logger.notice(
                "the saved state's generation \(archive.generation) leaves no room to count saves; the next save counts from \(Self.highestRestoredGeneration)"
            )
            archive.generation = Self.highestRestoredGeneration
        }
        return archive
    }

    /// Renames a rejected state file aside and keeps only the newest few; returns the new name.
    private func moveAside(_ path: String) -> String? {
        let now = WallClock.now()
        let micros = Int64(now.seconds) * 1_000_000 + Int64(now.nanoseconds) / 1000
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

    /// Drops a refused copy from the store when this process owns the state; what the rejection's note says.
    private func dropFromStore(_ name: String) -> String? {
        guard isOwner else { return nil }
        removeFromStore(name)
        return "dropped from the store"
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

    /// Writes a saved state to the directory (crash-safely, on the disk writer's thread) and to the file descriptor
    /// store.
    func save(_ archive: Archive) {
        guard isOwner else {
            logger.debug("state not saved: the service's state belongs to the process this one upgraded to")
            return
        }
        let bytes = archive.encodedState()
        let generation = archive.generation
        var places: [String] = []
        var diskStillWriting = false
        if let path {
            // A directory named by hand may not exist yet (systemd makes StateDirectory=): make it, private.
            if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
                _ = mkdir(String(path[..<slash]), 0o700)
            }
            let handedOver = ContinuousClock.now
            let save = StateDiskWriter.Save(
                bytes: bytes,
                path: path,
                chunks: writeDelay > .zero ? 16 : 1,
                pause: writeDelay / 16
            ) { [weak self] outcome in
                // The main loop went on: the outcome comes back to it.
                Task { @MainActor in
                    self?.diskSaveEnded(outcome, generation: generation, size: bytes.count, since: handedOver)
                }
            }
            // No wait at all while an earlier save is still being written: the disk is slow already.
            let budget = diskWriter.isBusy ? .zero : Self.diskWaitBudget
            diskWriter.submit(save)
            switch save.wait(upTo: budget) {
            case .written?:
                places.append(path)
                diskSaveWorked()
            case .failed(let error)?:
                diskSaveFailed(error)
            case .superseded?, nil:
                diskStillWriting = true
            }
        }
        if let store {
            let name = Self.storePrefix + "\(generation)"
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
        let waiting = diskStillWriting ? "; the disk has not finished writing \(path ?? "") after \(Self.diskWaitBudget.formattedForLog), it goes on in the background" : ""
        if places.isEmpty {
            if path == nil, store == nil, !noPlaceLogged {
                noPlaceLogged = true
                logger.notice(
                    "the state is not saved: no state directory (StateDirectory=, --state-directory) and no file descriptor store"
                )
            } else if diskStillWriting {
                logger.notice("saving state generation \(generation) (\(bytes.count) bytes)\(waiting)")
            }
            return
        }
        logger.info(
            "saved state generation \(generation) (\(bytes.count) bytes) to \(places.joined(separator: " and "))\(waiting)"
        )
    }

    /// Waits (at exit) for the disk writer to finish what it was handed, up to `budget`; logs what it left undone.
    func finishWrites(within budget: Duration) {
        guard !diskWriter.finish(within: budget) else { return }
        logger.warning(
            "the disk has not finished writing the saved state to \(path ?? "its place") after \(budget.formattedForLog); exiting without waiting longer (the previous save stays there)"
        )
    }

    /// A save the main loop stopped waiting for has ended.
    private func diskSaveEnded(_ outcome: StateDiskWriter.Outcome, generation: Int, size: Int, since: ContinuousClock.Instant) {
        guard let path else { return }
        switch outcome {
        case .written:
            diskSaveWorked()
            logger.info(
                "saved state generation \(generation) (\(size) bytes) to \(path), \((ContinuousClock.now - since).wholeMilliseconds) ms after it was handed to the disk"
            )
        case .failed(let error):
            diskSaveFailed(error)
        case .superseded:
            logger.debug("state generation \(generation) was not written to \(path): a newer save replaced it first")
        }
    }

    private func diskSaveWorked() {
        guard failedDiskSaves > 0, let path else { return }
        logger.notice(
            "the state is saved to \(path) again, after \(failedDiskSaves) failed \(failedDiskSaves == 1 ? "save" : "saves")",
            metadata: [LogKey.failedSaves: "\(failedDiskSaves)"]
        )
        failedDiskSaves = 0
        diskFailureLogged = false
    }

    /// The temporary file is gone and the archive at `path` is the previous save's, untouched.
    private func diskSaveFailed(_ error: Errno) {
        guard let path else { return }
        failedDiskSaves += 1
        let text = "cannot save the state to \(path): \(error)"
        if diskFailureLogged {
            logger.debug("\(text)")
        } else {
            diskFailureLogged = true
            let kept = "the previous save stays there"
            let tail = store == nil ? "; \(kept)" : "; \(kept), and the file descriptor store keeps this one"
            logger.warning("\(text)\(tail)", metadata: [LogKey.stateFile: "\(path)", LogKey.errno: "\(error.rawValue)"])
        }
    }
}
