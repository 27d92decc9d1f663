//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Foundation
import FuzzSupport
@_spi(Internal) import LifecycleDaemon
import Testing

/// fuzz-configuration's checks, on the seeds whose lines are easy to miscount: a failed check traps as it does under
/// libFuzzer, so each seed runs in an exit test (a process of its own) and the check's message is the failure's.
@Suite struct ConfigurationChecksTests {
    /// Fuzzing/Corpus/configuration, beside this package's Tests.
    static let corpus = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Corpus/configuration")

    /// Every seed of fuzz-configuration, by name.
    static let seeds: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []).sorted()

    static func seed(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: corpus.appending(path: name)))
    }

    @Test func theCorpusHasTheSeedsWithCRLFALoneCRAndAByteOrderMark() {
        for name in ["crlf.conf", "lone-cr.conf", "bom.conf", "bom-inside.conf"] {
            #expect(Self.seeds.contains(name))
        }
    }

    @Test func aCRLFFileHasALineForEachLFAsTheParserNumbersThem() throws {
        let text = text(try Self.seed("crlf.conf"))
        #expect(text == "[Launch]\r\nInto=background\r\n")
        // What the check counted before: "\r\n" is one Character, not the Character "\n".
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false).count == 1)
        #expect(configurationLines(text) == ["[Launch]", "Into=background", ""])
        let file = try ConfigurationFile(text: text, source: "crlf.conf")
        #expect(file.entries.map(\.line) == [2])
    }

    @Test func aLoneCREndsNoLineAndACRBeforeAnLFIsNotPartOfTheLine() throws {
        let text = text(try Self.seed("lone-cr.conf"))
        #expect(
            configurationLines(text) == ["[Launch]", "# a lone CR ends no line:\rInto=sideways", "Into=background", ""]
        )
        let file = try ConfigurationFile(text: text, source: "lone-cr.conf")
        #expect(file.entries.map { [$0.key, $0.value] } == [["Into", "background"]])
        #expect(file.entries.map(\.line) == [3])
        #expect(configurationLines("a\r\r\nb\rc") == ["a\r", "b\rc"])
    }

    @Test func aByteOrderMarkBeforeTheFirstLineIsNoPartOfItAndOneLaterIs() throws {
        let text = text(try Self.seed("bom.conf"))
        #expect(text.unicodeScalars.first == "\u{FEFF}")
        #expect(configurationLines(text).first == "# saved by an editor that writes a byte order mark")
        #expect(configurationLines(text).count == 4)
        #expect(try ConfigurationFile(text: text, source: "bom.conf").entries.map(\.line) == [3])

        let inside = FuzzSupport.text(try Self.seed("bom-inside.conf"))
        #expect(configurationLines(inside) == ["[Launch]", "\u{FEFF}Into=background", ""])
        let error = #expect(throws: ConfigurationError.self) {
            var configuration = DaemonConfiguration()
            try configuration.apply(text: inside, source: "bom-inside.conf")
        }
        #expect(error?.line == 2)
    }

    @Test func splitLinesEndsALineAtLFOrCRLFAndKeepsAByteOrderMark() {
        #expect(splitLines("") == [""])
        #expect(splitLines("\u{FEFF}USR1\r\nSIGHUP=reload\rx\n") == ["\u{FEFF}USR1", "SIGHUP=reload\rx", ""])
    }

    @Test(arguments: seeds)
    func theSeedPassesTheConfigurationChecks(_ name: String) async throws {
        let bytes = try Self.seed(name)
        let passed = await #expect(processExitsWith: .success, "\(name)") { [bytes = bytes as [UInt8]] in
            checkConfiguration(bytes)
        }
        // A failed expectation gives no result to read: once more, for the failed check's message.
        guard passed == nil else { return }
        let failure = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [bytes = bytes as [UInt8]] in
            checkConfiguration(bytes)
        }
        if let failure {
            Issue.record("\(name): \(String(decoding: failure.standardErrorContent, as: UTF8.self))")
        }
    }

    @Test func anEntryNumberedOneLineOffFailsTheCheck() async throws {
        let text = text(try Self.seed("crlf.conf"))
        let file = try ConfigurationFile(text: text, source: "crlf.conf")
        #expect(file.entries.map(\.line) == [2])
        // Line 1 is the section's header, line 3 the empty line after the last CR LF.
        for line in [1, 3] {
            await #expect(processExitsWith: .failure, "entry on line \(line)") {
                [text = text as String, line = line as Int] in
                let file = try ConfigurationFile(text: text, source: "crlf.conf")
                var entries = file.entries
                entries[0].line = line
                checkConfigurationLines(entries: entries, sections: file.sections, of: text)
            }
        }
    }
}
