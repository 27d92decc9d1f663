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
import LifecyclePrimitives
import LifecycleSystemd
import Testing

/// What the fuzz targets (Fuzzing/, docs/testing.md "Fuzzing") found, each input as the fuzzer left it (minimized)
/// and its neighbours; each input is in the seed corpus too (Fuzzing/Corpus/TARGET/finding-*).
@Suite("Fuzzing findings")
struct FuzzFindingsTests {
    private func error(_ text: String) -> String? {
        var configuration = DaemonConfiguration()
        do {
            try configuration.apply(text: text, source: "fuzz.conf", applicationSection: ModeSettings.self)
            return nil
        } catch {
            return error.description
        }
    }

    /// fuzz-configuration, finding-duration-overflow.conf: a duration past Duration's range trapped in `unit * number`
    /// ("Double value cannot be converted to _Int128 because it is outside the representable range").
    @Test func aDurationPastItsRangeIsAnErrorNotATrap() {
        #expect(
            error("[BackgroundTasks]\nBudgetSec=2666666666666606666660")
                == "fuzz.conf:2: BudgetSec=2666666666666606666660 is not a non-negative number (at most 292 years)"
        )
        for (section, key) in [
            ("BackgroundTasks", "BudgetSec"), ("BackgroundTasks", "BackgroundTimeSec"), ("MemoryPressure", "WindowSec"),
            ("MemoryPressure", "MinimumIntervalSec"), ("Stall", "WarningSec"), ("Demo", "DrainSec"),
        ] {
            for value in ["1e300", "1.7976931348623157e308", "2e20", "9223372037"] {
                #expect(
                    error("[\(section)]\n\(key)=\(value)")?.hasPrefix("fuzz.conf:2: \(key)=\(value) is not a") == true
                )
            }
        }
    }

    /// The bound is 292 years, not Duration's own: a value between the two parsed, then trapped where it was used
    /// (`[Stall] WarningSec=1e10` in the stall detector's nanoseconds, `wholeNanoseconds`).
    @Test func everyAcceptedDurationConvertsToNanosecondsAndMicroseconds() throws {
        func within(_ a: Duration, _ b: Duration) -> Bool { a - b < .microseconds(1) && b - a < .microseconds(1) }
        var configuration = DaemonConfiguration()
        try configuration.apply(
            text:
                "[BackgroundTasks]\nBudgetSec=9223372036\n[Stall]\nWarningSec=9223372036.8\n",
            source: "fuzz.conf"
        )
        var options = DaemonOptions()
        options.applyEnvironment(["LIFECYCLE_STATE_WRITE_DELAY_MS": "9223372036854"])
        let durations = [
            configuration.backgroundTaskBudget, try #require(configuration.stallWarning),
            try options.resolveConfiguration().restoration.stateWriteDelay,
        ]
        for duration in durations {
            #expect(duration <= Duration.longestSetting)
            #expect(duration.wholeNanoseconds >= 9_223_372_036_000_000_000)
            #expect(duration.microsecondsRoundedUp >= 9_223_372_036_000_000)
        }
        #expect(
            error("[Stall]\nWarningSec=1e10")?.contains("WarningSec=1e10 is not a positive number of seconds") == true
        )
        // Near the bound, `Duration * Double` is as exact as a Double of attoseconds: to well within a microsecond.
        let top = try #require(Duration(setting: 9_223_372_036))
        #expect(within(top, .seconds(9_223_372_036)))
        let topInMilliseconds = try #require(Duration(setting: 9_223_372_036_854, unit: .milliseconds(1)))
        #expect(within(topInMilliseconds, .milliseconds(9_223_372_036_854)))
        #expect(Duration(setting: 0.25) == .milliseconds(250))
        for number in [-1, .infinity, -.infinity, .nan, 9_223_372_037, 1e300] {
            #expect(Duration(setting: number) == nil, "\(number)")
        }
    }

    /// The same bound holds for the tests' switch that takes a duration (an environment variable, not a flag).
    @Test func theStateWriteDelaySwitchRefusesADurationPastTheBound() throws {
        func resolved(_ value: String) throws(ConfigurationError) -> Duration {
            var options = DaemonOptions()
            options.applyEnvironment(["LIFECYCLE_STATE_WRITE_DELAY_MS": value])
            return try options.resolveConfiguration().restoration.stateWriteDelay
        }
        for value in ["1e300", "1e16", "-1", "soon"] {
            #expect(throws: ConfigurationError.self) { try resolved(value) }
        }
        #expect(throws: ConfigurationError(
            source: "LIFECYCLE_STATE_WRITE_DELAY_MS", line: nil,
            message: "1e300 is not a non-negative number of milliseconds (at most 292 years)"
        )) { try resolved("1e300") }
        #expect(try resolved("2.5") == .microseconds(2500))
        // A flag no more: the shipped command line has no debug switches.
        #expect(throws: (any Error).self) { try StandardOptions.parse(["--state-write-delay-ms", "2.5"]) }
        #expect(throws: (any Error).self) { try StandardOptions.parse(["--hang-in", "applicationDidEnterBackground"]) }
    }

    /// fuzz-signal-name, finding-rtmin-overflow: `RTMIN+2147483647` overflowed `SIGRTMIN + offset` and trapped, from
    /// `--signal` and from `[Signals]` alike.
    @Test func aRealTimeOffsetPastInt32IsNotASignal() {
        #expect(
            error("[Signals]\nRTMIN+2147483647=reload")
                == "fuzz.conf:2: \"RTMIN+2147483647\" is not a signal; use a name such as SIGUSR1, SIGHUP or SIGRTMIN+2"
        )
        #expect(throws: ConfigurationError.self) { try SignalMap.parseEntry("RTMIN+2147483647=reload") }
        var options = DaemonOptions()
        options.configurationPath = "/dev/null"
        options.signalOverrides = ["SIGRTMIN+2147483647=background"]
        #expect(throws: ConfigurationError.self) { try options.resolveConfiguration() }
    }
}
