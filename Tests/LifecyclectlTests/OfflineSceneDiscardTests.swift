//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import Testing

@testable import lifecyclectl

#if canImport(Glibc)
import Glibc
#endif

/// `lifecyclectl scene discard ID --state-directory DIR` on a state directory of its own: the saved state's edit, what
/// it leaves alone, and when it refuses.
@Suite struct OfflineSceneDiscardTests {
    /// A state directory with a saved state of generation 7: alice connected with a tree, bob disconnected.
    private func stateDirectory() throws -> (directory: String, state: String, bytes: [UInt8]) {
        var template = Array("/tmp/lifecyclectl-discard-XXXXXX".utf8CString)
        let directory = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        var archive = Archive(sessions: [
            Archive.Session(
                identifier: "alice",
                role: "client",
                userInfo: ["address": "10.0.0.7"],
                configuration: "client",
                connected: "active",
                tree: Archive.Node(className: "ClientController", identifier: "client", restorationIdentifier: "client")
            ),
            Archive.Session(identifier: "bob", role: "client"),
        ])
        archive.generation = 7
        let bytes = archive.encodedState()
        let state = directory + "/state.archive"
        try DurableFile.write(bytes, to: state)
        return (directory, state, bytes)
    }

    private func remove(_ directory: String) {
        for name in DurableFile.directoryEntries(directory) { unlink(directory + "/" + name) }
        rmdir(directory)
    }

    private func read(_ path: String) throws -> [UInt8] {
        try RegularFile.readBytes(path, limit: RegularFile.stateLimit)
    }

    @Test func theSessionIsMarkedTheGenerationRaisedAndNothingElseChanges() throws {
        let (directory, state, _) = try stateDirectory()
        defer { remove(directory) }
        chmod(state, 0o640)
        let outcome = try OfflineSceneDiscard.discard("alice", inDirectory: directory + "/")
        #expect(outcome == .init(path: state, generation: 7, alreadyDiscarded: false))
        let edited = try Archive.decodeState(try read(state), source: state)
        #expect(edited.generation == 8)
        #expect(edited.sessions.map(\.identifier) == ["alice", "bob"])
        #expect(edited.sessions[0] == Archive.Session(identifier: "alice", role: "client", userInfo: ["address": "10.0.0.7"], configuration: "client", discarded: true))
        #expect(edited.sessions[1] == Archive.Session(identifier: "bob", role: "client"))
        // The file keeps its mode; no temporary file is left.
        var status = stat()
        #expect(lstat(state, &status) == 0 && status.st_mode & 0o7777 == 0o640)
        #expect(DurableFile.directoryEntries(directory) == ["state.archive"])
        // At Int.max the generation stays: no trap.
        var last = try Archive.decodeState(try read(state), source: state)
        last.generation = Int.max
        guard case .discarded(let edited, Int.max) = Archive.discardSession("bob", inSavedState: last.encodedState(), source: state)
        else { Issue.record("not discarded"); return }
        #expect(try Archive.decodeState(edited, source: state).generation == Int.max)
        // The launch reports it: covered by SceneTests' sessionsDiscardedWhileTheServiceWasNotRunning…; the bytes are
        // what Archive.discardSession(_:inSavedState:source:) makes of them.
        #expect(Archive.discardSession("alice", inSavedState: try read(state), source: state) == .alreadyDiscarded(generation: 8))
    }

    @Test func aSessionAlreadyMarkedAnUnknownOneOrAnUnreadableStateChangeNothing() throws {
        let (directory, state, bytes) = try stateDirectory()
        defer { remove(directory) }
        _ = try OfflineSceneDiscard.discard("bob", inDirectory: directory)
        let marked = try read(state)
        #expect(try OfflineSceneDiscard.discard("bob", inDirectory: directory).alreadyDiscarded)
        #expect(try read(state) == marked)

        let unknown = #expect(throws: OfflineSceneDiscard.Failure.self) {
            try OfflineSceneDiscard.discard("carol", inDirectory: directory)
        }
        #expect(unknown == .noSuchSession(identifier: "carol", path: state, sessions: 2))
        #expect(unknown?.exitCode == 65)
        #expect(try read(state) == marked)

        // A torn write (the body cut short): refused by the checksum, left as it was.
        let torn = Array(bytes.dropLast(5))
        try DurableFile.write(torn, to: state)
        let unreadable = #expect(throws: OfflineSceneDiscard.Failure.self) {
            try OfflineSceneDiscard.discard("alice", inDirectory: directory)
        }
        #expect(unreadable?.exitCode == 65)
        #expect(unreadable?.description.hasSuffix("; nothing was changed") == true)
        #expect(try read(state) == torn)

        unlink(state)
        let none = #expect(throws: OfflineSceneDiscard.Failure.self) {
            try OfflineSceneDiscard.discard("alice", inDirectory: directory)
        }
        #expect(none?.exitCode == 66)
        #expect(none?.description.hasPrefix("no saved state at \(state) (") == true)
    }

    @Test func aProcessOfTheServiceHoldingTheDirectoryRefusesTheEditAndALaunchWaitsForOne() throws {
        let (directory, state, bytes) = try stateDirectory()
        defer { remove(directory) }
        // A process of the service holds it shared, as StateStore does from before its load until it exits.
        do {
            let service = try #require(try StateDirectoryLock.take(directory, .shared))
            let refused = #expect(throws: OfflineSceneDiscard.Failure.self) {
                try OfflineSceneDiscard.discard("alice", inDirectory: directory)
            }
            #expect(refused == .serviceRunning(directory: directory))
            #expect(refused?.exitCode == 75)
            #expect(try read(state) == bytes)
            // An upgrade's second process shares it.
            #expect(try StateDirectoryLock.take(directory, .shared) != nil)
            withExtendedLifetime(service) {}
        }
        // An editor holding it makes a launch wait, then go on without it.
        do {
            let editor = try #require(try StateDirectoryLock.take(directory, .exclusive))
            let waited = ContinuousClock().measure {
                let (lock, problem) = StateDirectoryLock.shared(directory, patience: .milliseconds(100))
                #expect(lock == nil)
                #expect(problem?.contains("held \(directory) exclusively") == true)
            }
            #expect(waited >= .milliseconds(100))
            withExtendedLifetime(editor) {}
        }
        // The editor is done: the lock is the service's again.
        #expect(StateDirectoryLock.shared(directory).lock != nil)
        // No directory: nothing to lock, and nothing to say.
        #expect(StateDirectoryLock.shared(directory + "/missing").problem == nil)
        #expect(try !OfflineSceneDiscard.discard("alice", inDirectory: directory).alreadyDiscarded)
    }

    @Test func aStateThisBuildWouldNotWriteBackAsItIsOrASymbolicLinkIsRefused() throws {
        let (directory, state, bytes) = try stateDirectory()
        defer { remove(directory) }
        // A member a newer LifecycleKit writes: read (readers ignore it), but a rewrite would drop it.
        var text = String(decoding: bytes, as: UTF8.self)
        let body = String(text[text.index(after: text.firstIndex(of: "\n")!)...])
        let newer = "{\"future\":1," + body.dropFirst()
        let checksum = String(CRC32.checksum(Array(newer.utf8)), radix: 16)
        let header = "LifecycleKit-State 2 \(newer.utf8.count) \(String(repeating: "0", count: 8 - checksum.count) + checksum)\n"
        text = header + newer
        let written = try #require(Archive.decodeState(Array(text.utf8), source: "test").sessions.first).identifier
        #expect(written == "alice")
        try DurableFile.write(Array(text.utf8), to: state)
        let refused = #expect(throws: OfflineSceneDiscard.Failure.self) {
            try OfflineSceneDiscard.discard("alice", inDirectory: directory)
        }
        #expect(refused?.exitCode == 65)
        #expect(refused?.description.contains("would not write back as it is") == true)
        #expect(try read(state) == Array(text.utf8))

        unlink(state)
        try DurableFile.write(bytes, to: directory + "/elsewhere")
        symlink(directory + "/elsewhere", state)
        let link = #expect(throws: OfflineSceneDiscard.Failure.self) {
            try OfflineSceneDiscard.discard("alice", inDirectory: directory)
        }
        #expect(link?.description.contains("is a symbolic link") == true)
        #expect(try read(directory + "/elsewhere") == bytes)
    }

    @Test func theOwnerAndModeOfTheFileAreKept() throws {
        let (directory, state, _) = try stateDirectory()
        defer { remove(directory) }
        chmod(state, 0o604)
        // As root (CI, the end-to-end tests), the file of a service's user: nobody's here.
        let someoneElse = geteuid() == 0
        if someoneElse { chown(state, 65534, 65534) }
        _ = try OfflineSceneDiscard.discard("alice", inDirectory: directory)
        var status = stat()
        #expect(lstat(state, &status) == 0)
        #expect(status.st_mode & 0o7777 == 0o604)
        if someoneElse { #expect(status.st_uid == 65534 && status.st_gid == 65534) }
    }

    @Test func aUnitThatIsNotStoppedOrWhoseStoreHoldsDescriptorsIsRefused() throws {
        func check(_ show: String?) -> OfflineSceneDiscard.Failure? {
            do {
                try OfflineSceneDiscard.checkStopped(unit: "app.service", show: show)
                return nil
            } catch {
                return error
            }
        }
        #expect(check("ActiveState=inactive\nSubState=dead\nNFileDescriptorStore=0\n") == nil)
        #expect(check("ActiveState=failed\nSubState=failed\nNFileDescriptorStore=0\n") == nil)
        #expect(check(nil) == nil)
        #expect(check("ActiveState=active\nSubState=running\n") == .unitNotStopped(unit: "app.service", state: "active (running)"))
        // A crash's automatic restart waits in activating.
        #expect(check("ActiveState=activating\nSubState=auto-restart\nNFileDescriptorStore=3\n")?.exitCode == 75)
        #expect(
            check("ActiveState=inactive\nSubState=dead\nNFileDescriptorStore=2\n")
                == .unitNotStopped(unit: "app.service", state: "stopped with 2 descriptor(s) in its file descriptor store")
        )
    }
}
