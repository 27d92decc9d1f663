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
        let outcome = try OfflineSceneDiscard.discard("alice", inDirectory: directory + "/", isRunning: { _ in false })
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
        // The launch reports it: covered by SceneTests' sessionsDiscardedWhileTheServiceWasNotRunning…; the bytes are
        // what Archive.discardSession(_:inSavedState:source:) makes of them.
        #expect(Archive.discardSession("alice", inSavedState: try read(state), source: state) == .alreadyDiscarded(generation: 8))
    }

    @Test func aSessionAlreadyMarkedAnUnknownOneOrAnUnreadableStateChangeNothing() throws {
        let (directory, state, bytes) = try stateDirectory()
        defer { remove(directory) }
        _ = try OfflineSceneDiscard.discard("bob", inDirectory: directory, isRunning: { _ in false })
        let marked = try read(state)
        #expect(try OfflineSceneDiscard.discard("bob", inDirectory: directory, isRunning: { _ in false }).alreadyDiscarded)
        #expect(try read(state) == marked)

        let unknown = #expect(throws: OfflineSceneDiscard.Failure.self) {
            try OfflineSceneDiscard.discard("carol", inDirectory: directory, isRunning: { _ in false })
        }
        #expect(unknown == .noSuchSession(identifier: "carol", path: state, sessions: 2))
        #expect(unknown?.exitCode == 65)
        #expect(try read(state) == marked)

        // A torn write (the body cut short): refused by the checksum, left as it was.
        let torn = Array(bytes.dropLast(5))
        try DurableFile.write(torn, to: state)
        let unreadable = #expect(throws: OfflineSceneDiscard.Failure.self) {
            try OfflineSceneDiscard.discard("alice", inDirectory: directory, isRunning: { _ in false })
        }
        #expect(unreadable?.exitCode == 65)
        #expect(unreadable?.description.hasSuffix("; nothing was changed") == true)
        #expect(try read(state) == torn)

        unlink(state)
        let none = #expect(throws: OfflineSceneDiscard.Failure.self) {
            try OfflineSceneDiscard.discard("alice", inDirectory: directory, isRunning: { _ in false })
        }
        #expect(none?.exitCode == 66)
        #expect(none?.description.hasPrefix("no saved state at \(state) (") == true)
    }

    @Test func aRunRecordOfALiveRunRefusesTheEditAndOneOfAnEndedRunOrAnotherProcessDoesNot() throws {
        let (directory, state, bytes) = try stateDirectory()
        defer { remove(directory) }
        let now = WallClock.microseconds()
        let started = try #require(OfflineSceneDiscard.processStart(getpid()))
        // This test process is "the service": started when /proc says it did, a few ms off at most.
        #expect(started <= now && now - started < 1_800_000_000)
        var run = ServiceRecord(kind: "Run", fields: ["pid": "\(getpid())", "started": "\(started)", "phase": "running"])
        if let boot = ServiceFacts.bootID() { run["boot"] = boot }
        try run.write(to: directory + "/run.record")
        #expect(OfflineSceneDiscard.isRunning(run))
        let refused = #expect(throws: OfflineSceneDiscard.Failure.self) {
            try OfflineSceneDiscard.discard("alice", inDirectory: directory)
        }
        #expect(refused == .serviceRunning(pid: getpid(), directory: directory))
        #expect(refused?.exitCode == 75)
        #expect(try read(state) == bytes)

        // The same pid, but a process that started an hour later than the run: the kernel gave the pid away.
        run["started"] = "\(started - 3_600_000_000)"
        #expect(!OfflineSceneDiscard.isRunning(run))
        // Another boot's run, and a run that exited cleanly, are over.
        run["started"] = "\(started)"
        run["boot"] = "00000000-0000-0000-0000-000000000000"
        #expect(!OfflineSceneDiscard.isRunning(run))
        run["boot"] = ServiceFacts.bootID()
        run["phase"] = "exited"
        #expect(!OfflineSceneDiscard.isRunning(run))
        try run.write(to: directory + "/run.record")
        #expect(try !OfflineSceneDiscard.discard("alice", inDirectory: directory).alreadyDiscarded)
    }
}
