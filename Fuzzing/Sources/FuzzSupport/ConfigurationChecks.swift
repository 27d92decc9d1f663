//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleDaemon

/// The lines of configuration text as `ConfigurationFile` numbers them: ``splitLines(_:)``, less a UTF-8 byte order
/// mark before the first line.
package func configurationLines(_ text: String) -> [Substring] {
    var scalars = Substring(text).unicodeScalars
    if scalars.first == "\u{FEFF}" { scalars = scalars.dropFirst() }
    return splitLines(scalars)
}

/// Reads a configuration file from the bytes as `lifecycled` reads /etc/lifecycled.conf at start and on reload (the
/// INI syntax, then `DaemonConfiguration` with the daemon's sections and an application's own, ``FuzzSettings``) and
/// checks it: errors name a line of the file and say why; sections and entries are on the lines they name
/// (``checkConfigurationLines(entries:sections:of:)``) and trimmed; what is accepted is within range and is accepted
/// again on reload.
package func checkConfiguration(_ bytes: [UInt8]) {
    let text = text(bytes)
    let lineCount = configurationLines(text).count

    let file: ConfigurationFile
    do throws(ConfigurationError) {
        file = try ConfigurationFile(text: text, source: "fuzz.conf")
    } catch {
        check(
            error.line.map { (1...lineCount).contains($0) } ?? false,
            "a syntax error names no line of the file (\(lineCount) lines): \(error)"
        )
        return
    }
    checkConfigurationLines(entries: file.entries, sections: file.sections, of: text)
    for entry in file.entries {
        check(
            entry.key == entry.key.trimmingSpaces && entry.value == entry.value.trimmingSpaces,
            "untrimmed \(entry)"
        )
    }

    var configuration = DaemonConfiguration()
    configuration.applicationSettings = FuzzSettings()
    do throws(ConfigurationError) {
        try configuration.apply(file, applicationSection: FuzzSettings.self)
    } catch {
        check(
            error.line.map { (1...lineCount).contains($0) } ?? true,
            "an error names no line of the file (\(lineCount) lines): \(error)"
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

/// What must hold of the lines `ConfigurationFile` gave the sections and entries of `text`: in file order, within the
/// file (``configurationLines(_:)``), and each the line it was read from — a header's line alone reads as that
/// section, an entry's line alone (under a header of its own) as that key and value, and the header before it is its
/// section's. Linear in the text: no line is read twice.
package func checkConfigurationLines(
    entries: [ConfigurationFile.Entry],
    sections: [(name: String, line: Int)],
    of text: String
) {
    let lines = configurationLines(text)
    func checkInOrder(_ numbers: [Int], _ what: @autoclosure () -> String) {
        check(
            zip([0] + numbers, numbers).allSatisfy { $0 < $1 } && (numbers.last ?? 0) <= lines.count,
            "\(what()) out of order or past the end (\(lines.count) lines)"
        )
    }
    checkInOrder(sections.map { $0.line }, "section lines: \(sections)")
    checkInOrder(entries.map(\.line), "entry lines: \(entries)")

    for section in sections {
        let alone = try? ConfigurationFile(text: String(lines[section.line - 1]) + "\n", source: "line.conf")
        check(
            alone?.sections.map { $0.name } == [section.name],
            "line \(section.line), \(lines[section.line - 1].debugDescription), is not the header of [\(section.name)]"
        )
    }

    var header: (name: String, line: Int)?
    var nextSection = 0
    for entry in entries {
        while nextSection < sections.count, sections[nextSection].line < entry.line {
            header = sections[nextSection]
            nextSection += 1
        }
        check(
            header?.name == entry.section,
            "line \(entry.line) is under \(header.map { "[\($0.name)] (line \($0.line))" } ?? "no header"): \(entry)"
        )
        let alone = try? ConfigurationFile(text: "[S]\n" + String(lines[entry.line - 1]) + "\n", source: "line.conf")
        check(
            alone?.entries.map { [$0.key, $0.value] } == [[entry.key, entry.value]],
            "line \(entry.line), \(lines[entry.line - 1].debugDescription), does not read as \(entry)"
        )
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
