//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import LifecycleKit
import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// What the command line (and the environment) say, before the configuration file is read.
package struct DaemonOptions: Sendable, Hashable {
    /// The program's name: the log label, the journal's `SYSLOG_IDENTIFIER`, the default configuration file's name.
    package var programName: String
    /// The configuration file, re-read on every reload; without one, ``defaultConfigurationPath`` if it exists.
    package var configurationPath: String?
    /// `--trace` or `LIFECYCLE_TRACE=all`: every callback at info.
    package var traceAll = false
    /// `--launch-into`.
    package var launchInto: LaunchTarget?
    /// `--log-format`, over `[Logging] Format=`.
    package var logFormat: LogFormat?
    /// `--signal SIG=ACTION`, applied over the file.
    package var signalOverrides: [String] = []
    /// `LIFECYCLE_HANG_IN=CALLBACK[=SECONDS]`, a test's switch (docs/testing.md): block the main thread when the
    /// callback first fires, forever (the watchdog test) or that long (the stall detector's).
    package var hangIn: String?
    /// `LIFECYCLE_CRASH_IN=CALLBACK[=SIGNAL|exit:N]`, a test's switch (docs/testing.md): when the callback first fires,
    /// the process kills itself with the signal (`SIGSEGV` by default) or exits with the status — the causes of the end
    /// the next launch names, provoked for real.
    package var crashIn: String?
    /// `--storyboard FILE`.
    package var storyboardPath: String?
    /// `--state-directory DIR`.
    package var stateDirectory: String?
    /// `$STATE_DIRECTORY` (the first of its directories): systemd's `StateDirectory=`, used when neither the flag nor
    /// the file names one.
    package var serviceStateDirectory: String?
    /// `LIFECYCLE_STATE_WRITE_DELAY_MS=MS`, a test's switch (docs/testing.md): spread writing the saved state over at
    /// least this long, so the crash test can kill the daemon in the middle of a write. Checked when the
    /// configuration is resolved.
    package var stateWriteDelaySetting: String?
    /// The program's version (its `--version`), for whoever asks the control socket.
    package var version: String?

    /// No options: the defaults, for a program called `programName`.
    package init(programName: String = "lifecycled") {
        self.programName = programName
    }

    /// The environment variables of the daemon's own that ``applyEnvironment(_:)`` reads.
    package enum Variable {
        /// `LIFECYCLE_TRACE=all`, as `--trace`.
        package static let trace = "LIFECYCLE_TRACE"
        /// `LIFECYCLE_HANG_IN`, a test's switch (``hangIn``).
        package static let hangIn = "LIFECYCLE_HANG_IN"
        /// `LIFECYCLE_CRASH_IN`, a test's switch (``crashIn``).
        package static let crashIn = "LIFECYCLE_CRASH_IN"
        /// `LIFECYCLE_STATE_WRITE_DELAY_MS`, a test's switch (``stateWriteDelaySetting``).
        package static let stateWriteDelay = "LIFECYCLE_STATE_WRITE_DELAY_MS"
    }

    /// Read when no `--config` is given and the file exists: `/etc/<program>.conf`.
    package var defaultConfigurationPath: String { "/etc/\(programName).conf" }

    /// The name this process was started as (the last component of `argv[0]`).
    package static var processName: String {
        let path = CommandLine.arguments.first ?? "lifecycled"
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return name.isEmpty ? "lifecycled" : name
    }

    /// Reads `LIFECYCLE_TRACE`, `STATE_DIRECTORY` and the tests' switches (`LIFECYCLE_HANG_IN`,
    /// `LIFECYCLE_STATE_WRITE_DELAY_MS`) from the environment into options the flags left unset.
    package mutating func applyEnvironment(_ environment: [String: String]) {
        if environment[Variable.trace] == "all" { traceAll = true }
        if let hang = environment[Variable.hangIn], !hang.isEmpty { hangIn = hang }
        if let crash = environment[Variable.crashIn], !crash.isEmpty { crashIn = crash }
        if let delay = environment[Variable.stateWriteDelay], !delay.isEmpty { stateWriteDelaySetting = delay }
        if let directories = environment["STATE_DIRECTORY"],
            let first = directories.split(separator: ":").first, !first.isEmpty
        {
            serviceStateDirectory = String(first)
        }
    }

    /// The configuration these options make: the defaults, then the file (with the application's own section),
    /// then the flags.
    package func resolveConfiguration(
        applicationSection: (any ConfigurationSection.Type)? = nil
    ) throws(ConfigurationError) -> DaemonConfiguration {
        var configuration = DaemonConfiguration()
        if let applicationSection, !applicationSection.name.isEmpty {
            configuration.applicationSettings = applicationSection.init()
        }
        if let configurationPath {
            try configuration.load(file: configurationPath, applicationSection: applicationSection)
        } else if access(defaultConfigurationPath, F_OK) == 0 {
            try configuration.load(file: defaultConfigurationPath, applicationSection: applicationSection)
        }
        var seen: [UnixSignal: String] = [:]
        for entry in signalOverrides {
            let (signal, action) = try SignalMap.parseEntry(entry)
            if let first = seen[signal] {
                throw ConfigurationError(
                    source: "--signal",
                    line: nil,
                    message: "\(signal.name) is mapped twice (\"\(first)\" and \"\(entry)\"); map each signal once"
                )
            }
            seen[signal] = entry
            configuration.signalMap.set(signal, to: action)
        }
        if traceAll { configuration.traceAll = true }
        if let launchInto { configuration.launchInto = launchInto }
        if let logFormat { configuration.logFormat = logFormat }
        if let hangIn { configuration.hangIn = hangIn }
        if let crashIn { configuration.crashIn = crashIn }
        if let storyboardPath { configuration.restoration.storyboard = storyboardPath }
        if let stateDirectory { configuration.restoration.stateDirectory = stateDirectory }
        if configuration.restoration.stateDirectory == nil {
            configuration.restoration.stateDirectory = serviceStateDirectory
        }
        if let stateWriteDelaySetting {
            guard let delay = ConfigurationParsing.duration(stateWriteDelaySetting, unit: .milliseconds(1)) else {
                throw ConfigurationError(
                    source: Variable.stateWriteDelay,
                    line: nil,
                    message: "\(stateWriteDelaySetting) is not a non-negative number of milliseconds (at most 292 years)"
                )
            }
            configuration.restoration.stateWriteDelay = delay
        }
        return configuration
    }
}
