//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An adopter's delegate that says nothing of its command line: the default `commandConfiguration`.
@MainActor
final class DefaultCommandDelegate: ApplicationMain {}

/// An adopter's delegate that names its program but gives no abstract.
@MainActor
final class NamedCommandDelegate: ApplicationMain {
    nonisolated static var commandConfiguration: CommandConfiguration {
        CommandConfiguration(commandName: "hello-service")
    }
}

/// An adopter's delegate with an abstract and a discussion of its own.
@MainActor
final class DescribedCommandDelegate: ApplicationMain {
    nonisolated static var commandConfiguration: CommandConfiguration {
        CommandConfiguration(commandName: "feed", abstract: "Serves the feed.", discussion: "See feed(8).")
    }
}

@Suite("The standard command line")
struct CommandLineTests {
    /// The program's `--help`, unwrapped.
    private func help<Delegate: ApplicationMain>(_ delegate: Delegate.Type) -> String {
        DaemonCommand<Delegate>.helpMessage(columns: 10_000)
    }

    @Test func helpOpensWithAnOverviewThatNamesTheProgramWhenTheAdopterGaveNoAbstract() {
        let text = help(DefaultCommandDelegate.self)
        let program = DaemonOptions.processName
        #expect(text.hasPrefix("OVERVIEW: \(program), a LifecycleKit daemon: "), "\(text.prefix(200))")
        #expect(help(NamedCommandDelegate.self).hasPrefix(
            "OVERVIEW: hello-service, a LifecycleKit daemon: an application lifecycle driven by Unix signals and systemd.\n"
        ))
        // An adopter's own abstract and discussion are kept as they are.
        let described = help(DescribedCommandDelegate.self)
        #expect(described.hasPrefix("OVERVIEW: Serves the feed.\n\nSee feed(8).\n"))
        #expect(!described.contains("LifecycleKit daemon"))
    }

    @Test func theStandardDiscussionListsEveryExitCodeTheDaemonReturns() {
        let text = help(NamedCommandDelegate.self)
        for code in [ExitStatus.osError, .temporaryFailure, .configuration] {
            #expect(text.contains(" \(code.rawValue) "), "exit code \(code.rawValue) is missing from --help")
        }
        #expect(text.contains("Exit codes: 0 clean termination, 64 usage, 71 the main loop cannot run, 75 terminated as a "
            + "failure (restarts exhausted; systemd's Restart= takes over), 78 configuration."))
        #expect(text.contains("--log-format <log-format>"))
    }

    @Test func theLogFormatFlagTakesAFormatByNameOverTheFile() throws {
        #expect(try StandardOptions.parse(["--log-format", "json"]).daemonOptions(programName: "p", environment: [:])
            .logFormat == .json)
        #expect(try StandardOptions.parse([]).daemonOptions(programName: "p", environment: [:]).logFormat == nil)
        let path = temporaryFile("[Logging]\nFormat=text\n")
        defer { unlink(path) }
        var options = try StandardOptions.parse(["--config", path]).daemonOptions(programName: "p", environment: [:])
        #expect(try options.resolveConfiguration().logFormat == .text)
        options.logFormat = .journal
        #expect(try options.resolveConfiguration().logFormat == .journal)
    }

    @Test func anUnknownLogFormatIsAUsageErrorNamingTheValidOnes() {
        do {
            _ = try StandardOptions.parse(["--log-format", "yaml"])
            Issue.record("--log-format yaml was accepted")
        } catch {
            #expect(StandardOptions.message(for: error) == "--log-format yaml is not a log format; use auto, journal, json, text")
            #expect(StandardOptions.exitCode(for: error).rawValue == 64)
        }
    }
}
