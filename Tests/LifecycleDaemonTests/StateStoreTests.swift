//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under /tmp.
func temporaryDirectory() -> String {
    var template = Array("/tmp/lifecycled-state-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed")
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

@MainActor
@Suite("The state store")
struct StateStoreTests {
    let directory = temporaryDirectory()
    let log = StallLog()

    func store(keep: Int = 3) -> StateStore {
        var settings = RestorationSettings()
        settings.stateDirectory = directory
        settings.keepRejectedFiles = keep
        settings.fileDescriptorStore = .no
        return StateStore(settings: settings, notifier: .disabled, environment: [:], logger: log.logger())
    }

    static func archive(generation: Int) -> Archive {
        var archive = Archive(root: Archive.Node(className: "ViewController", identifier: "root", restorationIdentifier: "root", state: ["g": .integer(generation)]))
        archive.generation = generation
        return archive
    }

    var path: String { directory + "/state.archive" }

    func warnings() -> [String] { log.all.filter { $0.level == .warning }.map(\.message) }

    @Test func aSavedStateIsLoadedAtTheNextLaunch() throws {
        store().save(Self.archive(generation: 4))
        let loaded = try #require(store().load())
        #expect(loaded.generation == 4)
        #expect(loaded.root.state == ["g": .integer(4)])
        #expect(warnings().isEmpty)
        #expect(DurableFile.directoryEntries(directory) == ["state.archive"], "no temporary file is left")
    }

    @Test func aStateDirectoryNamedByHandIsMadeAtTheFirstSave() throws {
        var settings = RestorationSettings()
        settings.stateDirectory = directory + "/new"
        settings.fileDescriptorStore = .no
        StateStore(settings: settings, notifier: .disabled, environment: [:], logger: log.logger()).save(Self.archive(generation: 1))
        #expect(DurableFile.directoryEntries(directory + "/new") == ["state.archive"])
        #expect(warnings().isEmpty)
    }

    @Test func aTruncatedArchiveIsKeptAsideWithOneWarningAndTheLaunchIsFresh() throws {
        let bytes = Self.archive(generation: 2).encodedState()
        writeFile(path, Array(bytes.prefix(bytes.count - 5)))
        #expect(store().load() == nil)
        let warning = try #require(warnings().first)
        #expect(warnings().count == 1)
        #expect(warning.hasPrefix("the saved state in \(path) is truncated: the header announces"))
        #expect(warning.contains("launching without saved state; the file is kept aside as \(path).rejected-"))
        let names = DurableFile.directoryEntries(directory)
        #expect(names.count == 1 && names[0].hasPrefix("state.archive.rejected-"))
    }

    @Test func atMostTheConfiguredNumberOfRejectedFilesIsKept() {
        for round in 0..<5 {
            writeFile(path, Array("garbage \(round)".utf8))
            #expect(store(keep: 2).load() == nil)
            usleep(2000)
        }
        let rejected = DurableFile.directoryEntries(directory).filter { $0.hasPrefix("state.archive.rejected-") }.sorted()
        #expect(rejected.count == 2)
        let newest = rejected.last.map { (try? SystemFiles.readText(directory + "/" + $0)) ?? "" }
        #expect(newest == "garbage 4")
    }

    @Test func anUnfinishedSaveIsRemovedAndNeverLoaded() throws {
        store().save(Self.archive(generation: 1))
        writeFile(DurableFile.temporaryPrefix(for: path) + "12345", Array(Self.archive(generation: 9).encodedState().prefix(20)))
        let loaded = try #require(store().load())
        #expect(loaded.generation == 1)
        #expect(DurableFile.directoryEntries(directory) == ["state.archive"])
        #expect(log.all.contains { $0.message.hasPrefix("removed 1 unfinished save(s) of the state, never loaded") })
    }

    @Test func aNewerFormatIsRefusedSayingSo() throws {
        var bytes = Self.archive(generation: 1).encodedState()
        bytes[19] = UInt8(ascii: "7")
        writeFile(path, bytes)
        #expect(store().load() == nil)
        #expect(try #require(warnings().first).contains("was written in format 7, newer than this build reads"))
    }

    @Test func aReadOnlyDirectoryIsOneWarningAndTheLaunchGoesOn() {
        var settings = RestorationSettings()
        settings.stateDirectory = "/proc/self"
        settings.fileDescriptorStore = .no
        let store = StateStore(settings: settings, notifier: .disabled, environment: [:], logger: log.logger())
        store.save(Self.archive(generation: 1))
        store.save(Self.archive(generation: 2))
        #expect(warnings().count == 1)
        #expect(warnings().first?.hasPrefix("cannot save the state to /proc/self/state.archive") == true)
    }

    @Test func aFailedSaveIsOneWarningKeepsThePreviousArchiveAndASaveThatWorksAgainSaysSo() throws {
        let store = store()
        store.save(Self.archive(generation: 1))
        let first = try SystemFiles.readBytes(path)
        // The save's temporary file cannot be made (a directory holds its name): every save fails as a full
        // directory's does, after the previous archive was left alone.
        let blocker = DurableFile.temporaryPrefix(for: path) + "\(getpid())"
        #expect(mkdir(blocker, 0o700) == 0)
        store.save(Self.archive(generation: 2))
        store.save(Self.archive(generation: 3))
        #expect(warnings().count == 1)
        let warning = try #require(warnings().first)
        #expect(warning.hasPrefix("cannot save the state to \(path): "))
        #expect(warning.hasSuffix("; the previous save stays there"))
        #expect(try SystemFiles.readBytes(path) == first, "the previous archive, byte for byte")
        #expect(log.all.filter { $0.level == .debug && $0.message.hasPrefix("cannot save the state to \(path)") }.count == 1)

        rmdir(blocker)
        store.save(Self.archive(generation: 4))
        #expect(try #require(self.store().load()).generation == 4)
        #expect(log.all.filter { $0.level == .notice }.map(\.message) == [
            "the state is saved to \(path) again, after 2 failed saves"
        ])
        // A later failure is a new outage: one warning again.
        #expect(mkdir(blocker, 0o700) == 0)
        store.save(Self.archive(generation: 5))
        rmdir(blocker)
        #expect(warnings().count == 2)
    }

    @Test func theSlowWriteStillWritesEverythingInPieces() throws {
        var settings = RestorationSettings()
        settings.stateDirectory = directory
        settings.stateWriteDelay = .milliseconds(16)
        settings.fileDescriptorStore = .no
        let started = ContinuousClock.now
        StateStore(settings: settings, notifier: .disabled, environment: [:], logger: log.logger()).save(Self.archive(generation: 5))
        #expect(ContinuousClock.now - started >= .milliseconds(14))
        #expect(try #require(store().load()).generation == 5)
    }

    @Test func aSlowDiskHoldsTheMainLoopNoLongerThanTheBudgetAndTheSaveEndsInTheBackground() async throws {
        var settings = RestorationSettings()
        settings.stateDirectory = directory
        // The write takes 2 s (16 pieces, a pause between each): a disk that stalls.
        settings.stateWriteDelay = .seconds(2)
        settings.fileDescriptorStore = .no
        let store = StateStore(settings: settings, notifier: .disabled, environment: [:], logger: log.logger())
        var started = ContinuousClock.now
        store.save(Self.archive(generation: 1))
        #expect(ContinuousClock.now - started < StateStore.diskWaitBudget + .milliseconds(500))
        // A save while the disk is still busy does not wait at all, and replaces nothing being written.
        started = ContinuousClock.now
        store.save(Self.archive(generation: 2))
        #expect(ContinuousClock.now - started < .milliseconds(200))
        #expect(log.all.filter { $0.level == .notice }.map(\.message).allSatisfy { $0.contains("goes on in the background") })
        // Both end on disk, in order, and say so when they do. The deadline only stops a hung test: the outcome is
        // logged on the main actor, which every @MainActor test of the process shares (under the sanitizers, with
        // the whole suite on 2 cores, it came after more than 15 s).
        let deadline = ContinuousClock.now + .seconds(120)
        while !log.all.contains(where: { $0.message.hasPrefix("saved state generation 2 ") }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(log.all.map(\.message).filter { $0.hasPrefix("saved state generation") }.map { String($0.prefix(24)) } == [
            "saved state generation 1", "saved state generation 2",
        ])
        #expect(try #require(self.store().load()).generation == 2)
    }

    @Test func theDaemonWaitsForAWriteInProgressBeforeItExits() throws {
        var settings = RestorationSettings()
        settings.stateDirectory = directory
        settings.stateWriteDelay = .seconds(1)
        settings.fileDescriptorStore = .no
        let store = StateStore(settings: settings, notifier: .disabled, environment: [:], logger: log.logger())
        store.save(Self.archive(generation: 7))
        store.finishWrites(within: .seconds(10))
        #expect(try #require(self.store().load()).generation == 7)
        #expect(warnings().isEmpty)
    }

    @Test func aSafeLaunchSetsTheGenerationAsideKeepsItAndLaunchesWithout() throws {
        let saving = store()
        saving.save(Self.archive(generation: 41))
        saving.finishWrites(within: .seconds(5))
        let outcome = store().load(decision: .setAside(generation: 41, reason: "it crashed the launch"))
        #expect(outcome.archive == nil)
        #expect(outcome.newestGeneration == 41)
        #expect(outcome.setAside?.generation == 41)
        #expect(outcome.setAside?.keptAs == path + ".set-aside-41")
        #expect(DurableFile.directoryEntries(directory).sorted() == ["state.archive.set-aside-41"])
        #expect(warnings().contains { $0.hasPrefix("safe launch: saved state generation 41 is set aside, not restored: it crashed the launch;") && $0.hasSuffix("RestoreSetAside=41") })
        // The next launch finds nothing to restore, unless asked for the generation set aside.
        #expect(store().load(decision: .restore).archive == nil)
        let restored = store().load(decision: .restore, restoreSetAside: .generation(41))
        #expect(restored.archive?.generation == 41)
        #expect(restored.restoredSetAside == 41)
        #expect(store().load(decision: .restore, restoreSetAside: .newest).archive?.generation == 41)
    }

    @Test func aSetAsideForAnOlderGenerationLeavesANewerSaveAlone() {
        let saving = store()
        saving.save(Self.archive(generation: 5))
        saving.finishWrites(within: .seconds(5))
        #expect(store().load(decision: .setAside(generation: 9, reason: "x")).archive?.generation == 5)
    }

    @Test func theDiscardPolicyKeepsTheGenerationAsDiscarded() {
        let saving = store()
        saving.save(Self.archive(generation: 3))
        saving.finishWrites(within: .seconds(5))
        let outcome = store().load(decision: .discard(.terminate))
        #expect(outcome.archive == nil)
        #expect(outcome.discarded?.generation == 3)
        #expect(DurableFile.directoryEntries(directory) == ["state.archive.discarded-3"])
    }

    @Test func askingForAGenerationNotSetAsideIsOneWarningAndRestoresTheNewest() {
        let saving = store()
        saving.save(Self.archive(generation: 2))
        saving.finishWrites(within: .seconds(5))
        #expect(store().load(decision: .restore, restoreSetAside: .generation(1)).archive?.generation == 2)
        #expect(warnings().contains { $0.contains("RestoreSetAside= asks for generation 1, but none valid is set aside") })
    }

    @Test func aRollbackRestoresTheGenerationThisVersionWroteNotANewerBuildsSave() throws {
        let old = store()
        old.writerVersion = "1.0"
        old.save(Self.archive(generation: 3))
        old.finishWrites(within: .seconds(5))
        // 2.0 restores it (and keeps it for a rollback), then saves values 1.0 does not understand.
        let new = store()
        new.writerVersion = "2.0"
        #expect(new.load()?.generation == 3)
        #expect(DurableFile.directoryEntries(directory).contains("state.archive.written-by-1.0"))
        new.save(Self.archive(generation: 4))
        new.finishWrites(within: .seconds(5))
        let back = store()
        back.writerVersion = "1.0"
        back.newerStateVersions = { archive in archive.generation == 4 ? ["root (ViewController) version 2, this build's 1"] : [] }
        let restored = try #require(back.load())
        #expect(restored.generation == 3)
        #expect(restored.writerVersion == "1.0")
        #expect(log.all.contains { $0.message.contains("a rollback; restoring generation 3, the last this version wrote") })
    }

    @Test func aSaveRecordsWhoWroteItAndWhen() throws {
        let saving = store()
        saving.writerVersion = "1.4.2"
        saving.save(Self.archive(generation: 1))
        saving.finishWrites(within: .seconds(5))
        let loaded = try #require(store().load())
        #expect(loaded.writerVersion == "1.4.2")
        #expect(loaded.savedAt != nil)
    }

}

@Suite("Restoration settings")
struct RestorationSettingsTests {
    @Test func theStateDirectoryComesFromTheFlagThenTheFileThenStateDirectory() throws {
        var options = DaemonOptions()
        options.applyEnvironment(["STATE_DIRECTORY": "/var/lib/lifecycled:/var/lib/other"])
        #expect(try options.resolveConfiguration().restoration.stateDirectory == "/var/lib/lifecycled")
        options.configurationPath = temporaryFile("[State]\nDirectory=/srv/state\nKeepRejected=5\n\n[Launch]\nStoryboard=/etc/tree.storyboard\n")
        let fromFile = try options.resolveConfiguration().restoration
        #expect(fromFile.stateDirectory == "/srv/state")
        #expect(fromFile.keepRejectedFiles == 5)
        #expect(fromFile.storyboard == "/etc/tree.storyboard")
        options.stateDirectory = "/tmp/by-hand"
        options.storyboardPath = "/tmp/other.storyboard"
        let fromFlags = try options.resolveConfiguration().restoration
        #expect(fromFlags.stateDirectory == "/tmp/by-hand")
        #expect(fromFlags.storyboard == "/tmp/other.storyboard")
    }

    @Test func badValuesNameTheLineAndWhatIsValid() {
        var configuration = DaemonConfiguration()
        #expect(throws: ConfigurationError.self) {
            try configuration.apply(text: "[State]\nFileDescriptorStore=maybe\n", source: "c.conf")
        }
        do {
            try configuration.apply(text: "[State]\nFileDescriptorStore=maybe\n", source: "c.conf")
        } catch {
            #expect(error.description == "c.conf:2: FileDescriptorStore=maybe is not a file descriptor store setting; valid: auto, yes, no")
        }
        do {
            try configuration.apply(text: "[State]\nDirectry=/x\n", source: "c.conf")
        } catch {
            #expect(error.description == "c.conf:2: unknown key Directry= in [State]; valid: Directory=, KeepRejected=, FileDescriptorStore=")
        }
    }
}
