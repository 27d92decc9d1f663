//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import Testing

@_spi(Testing) @testable import LifecycleDaemon

#if canImport(Glibc)
import Glibc
#endif

@Suite("The standard command line")
struct CommandLineTests {
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
