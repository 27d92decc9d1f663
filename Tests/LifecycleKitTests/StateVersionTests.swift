//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleKit
import LifecycleKitTesting
import Logging
import Testing

/// A counter whose version 1 saved `served` and version 2 saves `requests` (docs/restoration.md, "Versioned state").
@MainActor
final class CounterV2: ViewController {
    var count = 0
    var decodedVersion: Int?

    init() {
        super.init(identifier: "counter")
        restorationIdentifier = "counter"
    }

    required init(coder: Coder) throws { try super.init(coder: coder) }

    override class var restorableStateVersion: Int { 2 }

    override func migrateRestorableState(with coder: StateCoder, fromVersion version: Int) {
        if version < 2, let served = coder.decodeInteger(forKey: "served") { coder.encode(served, forKey: "requests") }
    }

    override func encodeRestorableState(with coder: StateCoder) { coder.encode(count, forKey: "requests") }
    override func decodeRestorableState(with coder: StateCoder) { count = coder.decodeInteger(forKey: "requests") ?? 0 }
}

@MainActor
@Suite("Versioned controller state")
struct StateVersionTests {
    static func archive(version: Int?, values: [String: StateValue]) -> Archive {
        var node = Archive.Node(className: "CounterV2", identifier: "counter", restorationIdentifier: "counter", state: values)
        node.stateVersion = version
        var archive = Archive(root: node)
        archive.generation = 4
        return archive
    }

    static func restore(_ archive: Archive) -> (CounterV2, [String]) {
        let delegate = StateRestoringDelegate(build: { $0.window = Window(rootViewController: CounterV2()) })
        let (app, _, recorder) = restoringApplication(delegate)
        app.launch(options: LaunchOptions(restoredState: archive))
        let lines = recorder.lines(events: ["migrateRestorableState(with:fromVersion:)", "decodeRestorableState(with:)"])
        return (app.window!.rootViewController as! CounterV2, lines)
    }

    @Test func valuesOfAnOlderVersionAreMigratedRightBeforeTheyAreDecoded() {
        let (counter, lines) = Self.restore(Self.archive(version: nil, values: ["served": .integer(41)]))
        #expect(counter.count == 41)
        #expect(lines == ["counter migrateRestorableState(with:fromVersion:)", "counter decodeRestorableState(with:)"])
    }

    @Test func valuesOfTheClasssVersionAreDecodedWithoutAMigration() {
        let (counter, lines) = Self.restore(Self.archive(version: 2, values: ["requests": .integer(7)]))
        #expect(counter.count == 7)
        #expect(lines == ["counter decodeRestorableState(with:)"])
    }

    @Test func valuesOfANewerVersionAreNeverDecoded() {
        let (counter, lines) = Self.restore(Self.archive(version: 3, values: ["requests": .integer(7)]))
        #expect(counter.count == 0)
        #expect(lines.isEmpty)
    }

    @Test func theSavedStateRecordsAVersionOtherThanOneAndReadsItBack() throws {
        let delegate = StateRestoringDelegate(build: { app in
            let counter = CounterV2()
            counter.count = 5
            app.window = Window(rootViewController: counter)
        })
        let (app, host, _) = restoringApplication(delegate)
        app.launch()
        app.requestEnterBackground()
        let archive = try #require(host.archives.last)
        #expect(archive.root.stateVersion == 2)
        let read = try Archive.decodeState(archive.encodedState(), source: "test")
        #expect(read.root.stateVersion == 2)
        #expect(read.root.state == ["requests": .integer(5)])
    }

    @Test func aControllerThatNeverVersionsItsValuesSavesNoVersion() throws {
        let delegate = StateRestoringDelegate(build: { $0.window = Window(rootViewController: Probe("root")) })
        let (app, host, _) = restoringApplication(delegate)
        app.launch()
        app.requestEnterBackground()
        let archive = try #require(host.archives.last)
        #expect(archive.root.stateVersion == nil)
        #expect(!String(decoding: archive.encodedState(), as: UTF8.self).contains("\"version\""))
    }

    @Test func theApplicationNamesTheControllersANewerBuildSaved() {
        let delegate = StateRestoringDelegate()
        delegate.extraClasses = [CounterV2.self]
        let (app, _, _) = restoringApplication(delegate)
        #expect(app.newerStateVersions(in: Self.archive(version: 3, values: [:])) == ["counter (CounterV2) version 3, this build's 2"])
        #expect(app.newerStateVersions(in: Self.archive(version: 2, values: [:])).isEmpty)
    }
}
