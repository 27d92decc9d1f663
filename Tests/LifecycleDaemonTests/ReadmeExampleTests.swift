//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
@_spi(Internal) import LifecycleKit
import LifecycleServices
import Logging
import Testing

@_spi(Internal) @testable import LifecycleDaemon
@testable import ReadmeExample

/// The README's example is the ReadmeExample target's one file, printed verbatim; this suite checks both that the
/// README shows exactly that file (so the printed code compiles) and that it behaves as the README says.
@Suite("The README example")
struct ReadmeExampleTests {
    /// The repository root, from this file's path: the test passes from any checkout.
    static let root: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    static func read(_ path: String) throws -> String {
        let url = root + "/" + path
        guard let file = fopen(url, "r") else { throw ReadError(path: url) }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    struct ReadError: Error { let path: String }

    @Test func theReadmeShowsTheExampleAsItCompiles() throws {
        let readme = try Self.read("README.md")
        // The file opens with the licence header (comment lines, then a blank line), which the README leaves out.
        let file = try Self.read("Tests/ReadmeExample/ReadmeExample.swift")
        #expect(file.hasPrefix("//\n// This source file is part of LifecycleKit\n"), "ReadmeExample.swift lost its licence header")
        let lines = file.split(separator: "\n", omittingEmptySubsequences: false)
        let headerLength = lines.prefix { $0.hasPrefix("//") }.count + 1
        let example = lines.dropFirst(headerLength).joined(separator: "\n")
        #expect(readme.contains("```swift\n" + example + "```\n"), "README.md's example differs from Tests/ReadmeExample/ReadmeExample.swift")
    }

    /// The benchmark section shows the plot `scripts/bench` writes and points at its table: a figure copied into the
    /// README (a number with a unit or a ratio) would be that of one run and fall behind the next.
    @Test func theReadmeQuotesNoBenchmarkFigure() throws {
        let readme = try Self.read("README.md")
        let start = try #require(readme.firstRange(of: "\n## Benchmarks\n"))
        let rest = readme[start.upperBound...]
        let section = rest[..<(rest.firstRange(of: "\n## ")?.lowerBound ?? rest.endIndex)]
        #expect(section.contains("docs/benchmarks/results.md") && section.contains("docs/benchmarks/latency.png"))
        let figure = /\d[\d,.]*\s?(ns|µs|us|ms|s|KiB|MiB|GiB|kB|MB|B|×|x|%|\/s)(?!\w)/
        let quoted = section.matches(of: figure).map { String(section[$0.range]) }
        #expect(quoted.isEmpty, "README.md's benchmark section quotes figures: \(quoted)")
    }

    /// Its program says what it is: its `commandConfiguration` is the default, which has no abstract.
    @Test func itsHelpOpensWithTheStandardOverviewAndListsEveryExitCode() {
        let help = DaemonCommand<AppDelegate>.helpMessage(columns: 10_000)
        #expect(help.hasPrefix("OVERVIEW: \(DaemonOptions.processName), a LifecycleKit daemon: "), "\(help.prefix(120))")
        #expect(help.contains("Exit codes: 0 clean termination, 64 usage, 71 the main loop cannot run, 75 terminated as a failure"))
    }

    @MainActor
    @Test func theFeedServesWhileOnScreenAndHandsOverToTheDetail() async {
        let delegate = AppDelegate()
        let app = Application(delegate: delegate, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        app.launch()
        let navigation = app.window!.rootViewController as! NavigationController
        let feed = navigation.topViewController as! FeedController
        let api = feed.children.first as! ServiceController
        #expect(api.services.isActive)
        feed.openDetail()
        app.runEndOfTurn()
        // The feed left the screen: its service drains (a background task holds termination and sleep meanwhile).
        #expect(!api.services.isActive)
        #expect(navigation.topViewController is DetailController)
        navigation.popViewController(animated: false)
        app.runEndOfTurn()
        #expect(api.services.isActive)
        app.requestEnterBackground()
        #expect(!api.services.isActive)
    }
}

#if canImport(Glibc)
import Glibc
#endif
