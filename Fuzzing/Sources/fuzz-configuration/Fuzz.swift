//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The configuration file: text → ConfigurationFile (the INI syntax) → DaemonConfiguration, the daemon's sections and
// an application's own ([Demo], FuzzSettings), as `lifecycled` reads /etc/lifecycled.conf at start and on reload.
import FuzzSupport
@_spi(Internal) import LifecycleDaemon

@main
enum ConfigurationFuzzer: FuzzTarget {
    static func test(_ bytes: [UInt8]) {
        let text = text(bytes)
        let lineCount = text.split(separator: "\n", omittingEmptySubsequences: false).count

        let file: ConfigurationFile
        do throws(ConfigurationError) {
            file = try ConfigurationFile(text: text, source: "fuzz.conf")
        } catch {
            check(
                error.line.map { (1...lineCount).contains($0) } ?? false,
                "a syntax error names no line of the file: \(error)"
            )
            return
        }
        var previous = 0
        for entry in file.entries {
            check(entry.line > previous && entry.line <= lineCount, "entry lines out of order: \(file.entries)")
            check(
                entry.key == entry.key.trimmingSpaces && entry.value == entry.value.trimmingSpaces,
                "untrimmed \(entry)"
            )
            previous = entry.line
        }

        var configuration = DaemonConfiguration()
        configuration.applicationSettings = FuzzSettings()
        do throws(ConfigurationError) {
            try configuration.apply(file, applicationSection: FuzzSettings.self)
        } catch {
            check(
                error.line.map { (1...lineCount).contains($0) } ?? true,
                "an error names no line of the file: \(error)"
            )
            check(!error.message.isEmpty, "an error without a message at line \(error.line ?? 0)")
            return
        }
        check(configuration.applicationSettings is FuzzSettings, "the application's section was not read")
        check(
            configuration.memoryPressureThreshold <= configuration.memoryPressureWindow,
            "the threshold exceeds the window"
        )
        for duration in [
            configuration.backgroundTaskBudget, configuration.backgroundTime, configuration.memoryPressureWindow,
            configuration.memoryWarningMinimumInterval, configuration.restoration.stateWriteDelay,
        ] {
            check(duration >= .zero, "a negative duration was accepted: \(duration)")
        }
        check((0...100).contains(configuration.restoration.keepRejectedFiles), "KeepRejected out of range")

        // A reload reads the same file over the values it made: the same text is accepted again.
        do throws(ConfigurationError) {
            try configuration.apply(text: text, source: "fuzz.conf", applicationSection: FuzzSettings.self)
        } catch {
            check(false, "a configuration accepted once is refused on reload: \(error)")
        }
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice = slice.dropFirst() }
        while let last = slice.last, last.isWhitespace { slice = slice.dropLast() }
        return String(slice)
    }
}
