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
    static let fileName = Archive.stateFileName
    static let rejectedInfix = ".rejected-"
    static let storePrefix = "lifecycle-state-"
    /// How long a save waits for the disk before the main loop goes on without it.
    static let diskWaitBudget = Duration.milliseconds(250)
    /// The highest generation a restored state keeps: a higher one (up to `Int.max`, which the next save would
    /// overflow) is lowered to it, leaving room for 2³² saves in one run.
    static let highestRestoredGeneration = Int.max - (1 << 32)

    /// The state file, when there is a state directory.
    let path: String?
    /// The state directory's lock, held shared from before the load until the process ends, so that an edit of the
    /// saved state (`lifecyclectl scene discard --state-directory`) is refused while the service runs and waits for
    /// none of its processes.
    private let directoryLock: StateDirectoryLock?
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
        usesFileDescriptorStore ? (stamped(archive).encodedState(), archive.generation) : nil
    }

    /// The version of the program that saves (its `--version`), written into each save with its build id and time.
    var writerVersion: String?

    /// `archive` with who wrote it and when.
    func stamped(_ archive: Archive) -> Archive {
        var archive = archive
        archive.writerVersion = writerVersion
        archive.writerBuildID = BuildID.current
        archive.savedAt = WallClock.microseconds()
        return archive
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
        if let directory = settings.stateDirectory {
            let (lock, problem) = StateDirectoryLock.shared(directory)
            directoryLock = lock
            if let problem { logger.warning("state directory: \(problem); going on without its lock") }
        } else {
            directoryLock = nil
        }
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
        var bytes: [UInt8]
        /// Its name in systemd's store; nil for the file.
        var storeName: String?
    }

    /// What a launch found of the saved state: the archive to restore, and what it set aside, discarded or restored
    /// on purpose.
    struct LoadOutcome {
        /// What to restore; nil: launch without saved state.
        var archive: Archive?
        /// The highest generation of the valid copies, restored or not: the next save counts on from it.
        var newestGeneration: Int?
        /// A generation set aside by the safe launch, and the file that keeps it (nil: nowhere to keep it).
        var setAside: (generation: Int, keptAs: String?)?
        /// A generation discarded by the policy for the last run's end, and the file that keeps it.
        var discarded: (generation: Int, keptAs: String?)?
        /// A generation set aside earlier, restored on purpose (`[Restoration] RestoreSetAside=`).
        var restoredSetAside: Int?
    }

    static let setAsideInfix = ".set-aside-"
    static let writtenByInfix = ".written-by-"
    /// The controllers of an archive whose values are newer than this build's classes write (``Application/newerStateVersions(in:)``).
    var newerStateVersions: @MainActor (Archive) -> [String] = { _ in [] }
    static let discardedInfix = ".discarded-"

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
        load(stored: stored, decision: .restore).archive
    }

    /// The saved state a launch restores, given what it decided from the last run's end (``LaunchDecision``): the
    /// newest valid copy; or none, the copies of generation `G` and newer kept aside as
    /// `state.archive.set-aside-G` (the safe launch) or `state.archive.discarded-G` (the policy) and dropped from
    /// the store; or, with `restoreSetAside`, a generation set aside earlier.
    func load(
        stored: [FileDescriptorStore.Entry] = [],
        decision: LaunchDecision,
        restoreSetAside: SetAsideChoice? = nil
    ) -> LoadOutcome {
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
                        candidates.append(Candidate(archive: archive, place: place, bytes: bytes, storeName: entry.name))
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
                    candidates.append(Candidate(archive: archive, place: path, bytes: bytes))
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
        var outcome = LoadOutcome(newestGeneration: candidates.map(\.archive.generation).max())
        if let chosen, let aside = asideFor(decision, chosen: chosen.archive.generation) {
            let kept = keepAside(chosen, infix: aside.infix, candidates: candidates, from: aside.generation)
            let restore = "; restore it on purpose with [Restoration] RestoreSetAside=\(chosen.archive.generation)"
            switch decision {
            case .setAside(_, let reason):
                outcome.setAside = (chosen.archive.generation, kept)
                let placement = kept.map { "kept as \($0)" + restore } ?? "not kept (no state directory)"
                logger.warning(
                    "safe launch: saved state generation \(chosen.archive.generation) is set aside, not restored: \(reason); \(placement)"
                )
            case .discard(let cause):
                outcome.discarded = (chosen.archive.generation, kept)
                let placement = kept.map { "kept as \($0)" } ?? "not kept (no state directory)"
                logger.notice(
                    "saved state generation \(chosen.archive.generation) discarded after \(cause.rawValue) ([Restoration] DiscardAfter=); \(placement)"
                )
            case .restore:
                break
            }
        } else if let chosen {
            outcome.archive = restorable(chosen, among: candidates)
            if let archive = outcome.archive {
                outcome.archive = understoodVersion(of: archive, bytes: chosen.bytes)
            }
        }
        if let choice = restoreSetAside, let (archive, file) = readSetAside(choice) {
            logger.notice(
                "restoring saved state generation \(archive.generation) set aside earlier, on purpose ([Restoration] RestoreSetAside=): \(file)"
            )
            outcome.archive = archive
            outcome.restoredSetAside = archive.generation
        } else if let choice = restoreSetAside {
            let which = if case .generation(let generation) = choice { "generation \(generation)" } else { "any generation" }
            logger.warning("[Restoration] RestoreSetAside= asks for \(which), but none valid is set aside in \(directory ?? "the state directory"); the switch does nothing")
        }
        if outcome.archive == nil, chosen == nil, rejections.isEmpty { logger.info("no saved state: launching fresh") }
        return outcome
    }

    /// The generation from which copies are set aside or discarded, and the file name's infix, for `decision`.
    private func asideFor(_ decision: LaunchDecision, chosen: Int) -> (generation: Int, infix: String)? {
        switch decision {
        case .restore: return nil
        case .setAside(let generation, _): return chosen >= generation ? (generation, Self.setAsideInfix) : nil
        case .discard: return (chosen, Self.discardedInfix)
        }
    }

    /// Logs which copy it takes and what the other had; lowers a generation that leaves no room to count saves.
    private func restorable(_ chosen: Candidate, among candidates: [Candidate]) -> Archive {
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

    /// The archive to restore of `archive` (the newest): itself when this build understands every value in it;
    /// otherwise (a rollback: a newer build wrote it) the newest generation this build's version wrote, which the
    /// newer build kept (`state.archive.written-by-<version>`). Keeps `archive` for a rollback when another version
    /// wrote it.
    private func understoodVersion(of archive: Archive, bytes: [UInt8]) -> Archive {
        let ours = Self.writerKey(version: writerVersion, build: BuildID.current)
        let theirs = Self.writerKey(version: archive.writerVersion, build: archive.writerBuildID)
        if let theirs, theirs != ours { keepForRollback(bytes, writer: theirs) }
        let newer = newerStateVersions(archive)
        guard !newer.isEmpty else { return archive }
        let written = "saved state generation \(archive.generation)" + (archive.writerVersion.map { " (written by \($0))" } ?? "")
        guard let ours, let path else {
            logger.notice("\(written) has values newer than this build's: \(newer.joined(separator: "; ")); they are not decoded")
            return archive
        }
        let file = path + Self.writtenByInfix + ours
        guard let bytes = try? RegularFile.readBytes(file, limit: RegularFile.stateLimit),
            var own = try? Archive.decodeState(bytes, source: file), newerStateVersions(own).isEmpty
        else {
            logger.notice(
                "\(written) has values newer than this build's: \(newer.joined(separator: "; ")); they are not decoded, and no generation this version wrote is kept (\(file))"
            )
            return archive
        }
        own.sourceName = file
        logger.notice(
            "\(written) has values newer than this build's (\(newer.joined(separator: "; "))): a rollback; restoring generation \(own.generation), the last this version wrote, from \(file)"
        )
        return own
    }

    /// `1.4.2`, or the build id without a version; only letters, digits, `.`, `-` and `_` (the rest as `_`).
    static func writerKey(version: String?, build: String?) -> String? {
        guard let key = version ?? build, !key.isEmpty else { return nil }
        return String(key.prefix(64).map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" })
    }

    /// Keeps `bytes`, a save another version wrote, as `state.archive.written-by-<writer>`: what a rollback to that
    /// version restores (the owner only; the newest `KeepRejected=` versions kept).
    func keepForRollback(_ bytes: [UInt8], writer: String) {
        guard isOwner, let path else { return }
        let file = path + Self.writtenByInfix + writer
        do {
            try DurableFile.write(bytes, to: file)
            logger.info("kept the saved state written by \(writer) as \(file), for a rollback to that version")
        } catch {
            logger.warning("cannot keep the saved state written by \(writer) as \(file): \(error)")
        }
    }

    /// Keeps what this process hands an upgrade's successor as the generation this version wrote, before the successor
    /// (perhaps another version) replaces it.
    func keepOwnForRollback(_ archive: Archive) {
        guard let ours = Self.writerKey(version: writerVersion, build: BuildID.current) else { return }
        keepForRollback(stamped(archive).encodedState(), writer: ours)
    }

    /// The state directory, when there is one.
    var directory: String? {
        path.map { path in
            let slash = path.lastIndex(of: "/")!
            return slash == path.startIndex ? "/" : String(path[..<slash])
        }
    }

    /// Keeps `chosen`'s bytes as `state.archive<infix><generation>` (the newest `KeepRejected=` of each kind kept) and
    /// removes every copy of generation `from` and newer: the file, and the store's memfds. Returns the file kept.
    private func keepAside(_ chosen: Candidate, infix: String, candidates: [Candidate], from generation: Int) -> String? {
        guard isOwner else { return nil }
        var kept: String?
        if let path {
            let aside = path + infix + String(chosen.archive.generation)
            do {
                try DurableFile.write(chosen.bytes, to: aside)
                kept = aside
                prune(around: path, infix: infix)
            } catch {
                logger.warning("cannot keep the saved state aside as \(aside): \(error)")
            }
        }
        for candidate in candidates where candidate.archive.generation >= generation {
            if let name = candidate.storeName {
                removeFromStore(name)
                storedNames.remove(name)
            } else if let path {
                _ = unlink(path)
            }
        }
        return kept
    }

    /// The generation set aside that `choice` names, and its file; nil when there is none valid.
    private func readSetAside(_ choice: SetAsideChoice) -> (Archive, String)? {
        guard let path, let directory else { return nil }
        let prefix = Self.fileName + Self.setAsideInfix
        let generations = DurableFile.directoryEntries(directory).filter { $0.hasPrefix(prefix) }
            .compactMap { Int($0.dropFirst(prefix.count)) }.sorted()
        let wanted: Int?
        switch choice {
        case .newest: wanted = generations.last
        case .generation(let generation): wanted = generations.contains(generation) ? generation : nil
        }
        guard let wanted else { return nil }
        let file = path + Self.setAsideInfix + String(wanted)
        do {
            let bytes = try RegularFile.readBytes(file, limit: RegularFile.stateLimit)
            var archive = try Archive.decodeState(bytes, source: file)
            archive.sourceName = file
            return (archive, file)
        } catch {
            logger.warning("the saved state set aside as \(file) cannot be restored: \(error)")
            return nil
        }
    }

    /// Keeps the newest `KeepRejected=` files of `path` with `infix` (at least one).
    private func prune(around path: String, infix: String) {
        guard let directory else { return }
        let prefix = Self.fileName + infix
        let kept = DurableFile.directoryEntries(directory)
            .filter { $0.hasPrefix(prefix) }
            .sorted { (Int64($0.dropFirst(prefix.count)) ?? 0) < (Int64($1.dropFirst(prefix.count)) ?? 0) }
        for name in kept.dropLast(max(1, keepRejected)) {
            _ = unlink(directory + "/" + name)
        }
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
        let bytes = stamped(archive).encodedState()
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

    /// The file an upgrade's predecessor leaves its final state in for its successor.
    func finalStatePath(of pid: Int32) -> String? { path.map { $0 + ".final-\(pid)" } }

    /// Writes the state a process that handed over saved as it terminated, for its successor (not the service's
    /// state: the successor's saves are).
    func saveFinalState(_ archive: Archive) {
        guard let file = finalStatePath(of: getpid()) else {
            logger.notice("the state saved after the hand-over is not kept: no state directory for the successor to read it from")
            return
        }
        do {
            try DurableFile.write(stamped(archive).encodedState(), to: file)
            logger.info("saved the state after the hand-over to \(file), for the successor")
        } catch {
            logger.warning("cannot leave the state saved after the hand-over in \(file): \(error)")
        }
    }

    /// The final state the predecessor `pid` left, removed from the directory; nil when there is none valid.
    func takeFinalState(of pid: Int32) -> Archive? {
        guard let file = finalStatePath(of: pid) else { return nil }
        defer { _ = unlink(file) }
        guard let bytes = try? RegularFile.readBytes(file, limit: RegularFile.stateLimit) else { return nil }
        do {
            return try Archive.decodeState(bytes, source: file)
        } catch {
            logger.warning("the state pid \(pid) left after the hand-over \(error.reason); not merged")
            return nil
        }
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
