//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import Testing

@Suite("A storyboard in an application that uses scenes")
struct SceneConfigurationCheckTests {
    @Test func theFlagIsRefusedNamingTheOptionAndWhatWouldBeValid() {
        var options = DaemonOptions(programName: "test")
        options.storyboardPath = "/srv/main.storyboard"
        var configuration = DaemonConfiguration()
        configuration.restoration.storyboard = "/srv/main.storyboard"
        #expect(options.scenesProblem(in: configuration, usesScenes: false) == nil)
        #expect(options.scenesProblem(in: DaemonConfiguration(), usesScenes: true) == nil)
        let problem = options.scenesProblem(in: configuration, usesScenes: true)
        #expect(problem?.source == "--storyboard" && problem?.line == nil)
        #expect(problem?.description.hasPrefix("--storyboard: /srv/main.storyboard cannot be used: the application uses scenes") == true)
        #expect(problem?.description.hasSuffix("; run without --storyboard") == true)
    }

    @Test func theFilesKeyIsRefusedNamingTheFileAndLine() throws {
        let directory = temporaryDirectory()
        let path = directory + "/test.conf"
        writeFile(path, Array("[Trace]\nAll=no\n\n[Launch]\nStoryboard=/srv/main.storyboard\n".utf8))
        var options = DaemonOptions(programName: "test")
        options.configurationPath = path
        let configuration = try options.resolveConfiguration()
        let problem = options.scenesProblem(in: configuration, usesScenes: true)
        #expect(problem?.source == path && problem?.line == 5)
        #expect(problem?.message.hasPrefix("[Launch] Storyboard=/srv/main.storyboard cannot be used: the application uses scenes") == true)
        #expect(problem?.message.hasSuffix("; remove Storyboard= from [Launch]") == true)
    }

    @MainActor
    @Test func aReloadThatAddsAStoryboardIsRefusedAndTheScenesStayAsTheyAre() throws {
        let directory = temporaryDirectory()
        let path = directory + "/test.conf"
        writeFile(path, Array("[Trace]\nAll=no\n".utf8))
        var options = DaemonOptions(programName: "test")
        options.configurationPath = path
        let harness = DaemonHarness(options: options, applicationDelegate: ControlSceneDelegate())
        harness.launch()
        try harness.application.requestSceneSessionActivation(persistentIdentifier: "a")
        harness.application.runEndOfTurn()
        writeFile(path, Array("[Launch]\nStoryboard=/srv/main.storyboard\n".utf8))
        var outcome: RequestOutcome?
        harness.daemon.router.route(.reload, from: .control) { outcome = $0 }
        harness.application.runEndOfTurn()
        guard case .refused(let reason, _)? = outcome else {
            Issue.record("the reload was not refused: \(String(describing: outcome))")
            return
        }
        #expect(reason.hasPrefix("the configuration: \(path):2: [Launch] Storyboard=/srv/main.storyboard cannot be used"))
        #expect(harness.daemon.configuration.restoration.storyboard == nil)
        #expect(harness.application.connectedScenes.map(\.activationState) == [.foregroundActive])
    }
}
