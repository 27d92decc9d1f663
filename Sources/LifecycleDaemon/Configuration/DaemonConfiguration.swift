//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecycleKit
import LifecycleSystemd

/// Everything the daemon reads from its configuration file and flags, plus the application's own section.
@_spi(Internal) public struct DaemonConfiguration: Sendable {
    /// Which signal asks for what.
    @_spi(Internal) public var signalMap = SignalMap.standard
    /// Launch into the foreground or the background.
    @_spi(Internal) public var launchInto = LaunchTarget.active
    /// Log controller and view events at info too.
    @_spi(Internal) public var traceAll = false
    /// Where log records go and in what form (`[Logging] Format=`, `--log-format`); read at start only.
    @_spi(Internal) public var logFormat = LogFormat.auto
    /// How long termination waits for background tasks before their expiration handlers run.
    @_spi(Internal) public var backgroundTaskBudget = Duration.seconds(30)
    /// How long background tasks may run once the application is in the background (UIKit's background time).
    @_spi(Internal) public var backgroundTime = Duration.seconds(30)
    /// The lame-duck delay (`[Termination] LameDuckSec=`): on a termination request the application first stops
    /// being ready and serves on this long, while an orchestrator stops routing to it; 0 (the default) terminates
    /// at once.
    @_spi(Internal) public var lameDuck = Duration.zero
    /// The stop budget the operator gives the service (`[Termination] StopTimeoutSec=`: Kubernetes'
    /// `terminationGracePeriodSeconds`, systemd's `TimeoutStopSec=`): the lame-duck delay and the drain stay inside it.
    /// nil: none is known.
    @_spi(Internal) public var stopTimeout: Duration?
    /// Memory pressure: the stall (`some`) that triggers a warning, within ``memoryPressureWindow``.
    @_spi(Internal) public var memoryPressureThreshold = Duration.milliseconds(200)
    /// Memory pressure: the window the stall is measured over.
    @_spi(Internal) public var memoryPressureWindow = Duration.seconds(2)
    /// At most one memory warning from pressure per this interval.
    @_spi(Internal) public var memoryWarningMinimumInterval = Duration.seconds(10)
    /// Whether to watch memory pressure at all.
    @_spi(Internal) public var watchMemoryPressure = true
    /// Whether to watch logind's sleep and shutdown announcements.
    @_spi(Internal) public var watchLogind = true
    /// A test's switch (`LIFECYCLE_HANG_IN`): the callback that blocks the main thread when it first fires.
    @_spi(Internal) public var hangIn: String?
    /// A test's switch (`LIFECYCLE_CRASH_IN`): the callback in which the process crashes (or exits) when it first fires.
    @_spi(Internal) public var crashIn: String?
    /// Whether to give back, after launch, the pages only starting needed (``StartupMemory``). Off by default: the
    /// first signal after idle pays for faulting them back in (docs/configuration.md).
    @_spi(Internal) public var releaseStartupMemory = false
    /// Whether a thread watches for a callback that blocks the main loop (``StallDetector``).
    @_spi(Internal) public var watchStalls = true
    /// When the stall detector first warns; nil: a quarter of the watchdog interval, else one second.
    @_spi(Internal) public var stallWarning: Duration?
    /// State restoration and storyboards (RestorationSettings.swift).
    @_spi(Internal) public var restoration = RestorationSettings()
    /// The control socket (`[Control]`, docs/control.md): whether it is served, where, and which group may use it
    /// besides the service's own user and root.
    @_spi(Internal) public var control = ControlSettings()
    /// The application's own section (see ``ConfigurationSection``), as read; nil when it has none.
    @_spi(Internal) public var applicationSettings: (any ConfigurationSection)?

    /// The defaults of the lifecycle contract and this project's docs.
    @_spi(Internal) public init() {}

    /// The daemon's own sections and their keys: the one table that parses, validates and lists them.
    static let sections: [(name: String, keys: [ConfigurationKey<DaemonConfiguration>])] = [
        ("Launch", [.choice("Into", \.launchInto, what: "a launch target"), storyboardKey]),
        ("State", stateKeys),
        ("Restoration", restorationKeys),
        ("Trace", [.boolean("All", \.traceAll)]),
        ("Logging", loggingKeys),
        (
            "BackgroundTasks",
            [.duration("BudgetSec", \.backgroundTaskBudget), .duration("BackgroundTimeSec", \.backgroundTime)]
        ),
        ("MemoryPressure", memoryPressureKeys),
        ("Logind", [.boolean("Watch", \.watchLogind)]),
        ("Memory", [.boolean("ReleaseStartupPages", \.releaseStartupMemory)]),
        (
            "Stall",
            [
                .boolean("Watch", \.watchStalls),
                .positiveSeconds("WarningSec", \.stallWarning),
            ]
        ),
        ("Control", ControlSettings.keys),
        (
            "Termination",
            [
                .duration("LameDuckSec", \.lameDuck),
                .positiveSeconds("StopTimeoutSec", \.stopTimeout),
            ]
        ),
    ]

    /// The windows a PSI trigger may have: the kernel refuses one shorter than 500 ms or longer than 10 s with EINVAL
    /// (kernel/sched/psi.c, `psi_trigger_create`).
    static let memoryPressureWindows = Duration.milliseconds(500)...Duration.seconds(10)

    /// `[MemoryPressure]`: the trigger's threshold and window are held to what the kernel accepts (a window of 500 ms
    /// to 10 s, a threshold above 0 and at most the window), so a trigger that could never be armed is a
    /// configuration error naming the line, at start and on reload, not a warning once the daemon runs.
    private static let memoryPressureKeys: [ConfigurationKey<DaemonConfiguration>] = [
        .boolean("Watch", \.watchMemoryPressure),
        ConfigurationKey("ThresholdMSec") { configuration, value throws(ConfigurationValueError) in
            guard let threshold = ConfigurationParsing.duration(value, unit: .milliseconds(1)), threshold > .zero else {
                throw ConfigurationValueError(
                    "ThresholdMSec=\(value) is not a positive number of milliseconds (the kernel refuses a PSI trigger "
                        + "threshold of 0); valid: above 0, at most the window, WindowSec="
                )
            }
            configuration.memoryPressureThreshold = threshold
        },
        ConfigurationKey("WindowSec") { configuration, value throws(ConfigurationValueError) in
            guard let window = ConfigurationParsing.duration(value, unit: .seconds(1)), memoryPressureWindows.contains(window)
            else {
                throw ConfigurationValueError(
                    "WindowSec=\(value) is not a number of seconds from 0.5 to 10 (the windows the kernel accepts for a "
                        + "PSI trigger)"
                )
            }
            configuration.memoryPressureWindow = window
        },
        .duration("MinimumIntervalSec", \.memoryWarningMinimumInterval),
    ]

    /// `[Signals]`: its keys are signal names, so it is read apart from the table.
    static let signalsSection = "Signals"

    /// The sections the daemon itself reads.
    static var sectionNames: [String] { [signalsSection] + sections.map(\.name) }

    /// Reads a configuration file over the current values; errors name the file and line.
    @_spi(Internal) public mutating func load(
        file path: String,
        applicationSection: (any ConfigurationSection.Type)? = nil
    ) throws(ConfigurationError) {
        try apply(ConfigurationFile(contentsOf: path), applicationSection: applicationSection)
    }

    /// Applies configuration text (systemd's INI style: `[Section]`, `Key=Value`, `#` comments).
    @_spi(Internal) public mutating func apply(
        text: String,
        source: String,
        applicationSection: (any ConfigurationSection.Type)? = nil
    ) throws(ConfigurationError) {
        try apply(ConfigurationFile(text: text, source: source), applicationSection: applicationSection)
    }

    /// Applies a file's entries: unknown sections are errors listing the valid ones (the daemon's and the
    /// application's), then each section is read through its key table.
    @_spi(Internal) public mutating func apply(
        _ file: ConfigurationFile,
        applicationSection: (any ConfigurationSection.Type)? = nil
    ) throws(ConfigurationError) {
        var known = Self.sectionNames
        if let applicationSection, !applicationSection.name.isEmpty { known.append(applicationSection.name) }
        for (name, line) in file.sections where !known.contains(name) {
            throw ConfigurationError(
                source: file.source,
                line: line,
                message: "unknown section [\(name)]; valid: " + known.sorted().map { "[\($0)]" }.joined(separator: ", ")
            )
        }
        try applySignals(file)
        for section in Self.sections {
            try file.apply(section: section.name, keys: section.keys, to: &self) { configuration throws(ConfigurationValueError) in
                if section.name == "MemoryPressure", configuration.memoryPressureThreshold > configuration.memoryPressureWindow {
                    throw ConfigurationValueError("the memory pressure threshold must not exceed its window")
                }
            }
        }
        if let applicationSection {
            applicationSettings = try Self.read(applicationSection, from: file, over: applicationSettings)
        }
    }

    private static func read<Section: ConfigurationSection>(
        _ type: Section.Type,
        from file: ConfigurationFile,
        over current: (any ConfigurationSection)?
    ) throws(ConfigurationError) -> Section {
        var section = current as? Section ?? Section()
        try file.apply(section: Section.name, keys: Section.keys, to: &section) { section throws(ConfigurationValueError) in
            try section.validate()
        }
        return section
    }

    private mutating func applySignals(_ file: ConfigurationFile) throws(ConfigurationError) {
        var seen: [UnixSignal: Int] = [:]
        for entry in file.entries where entry.section == Self.signalsSection {
            let signal = try SignalMap.parseSignal(entry.key, source: file.source, line: entry.line)
            if let first = seen[signal] {
                throw ConfigurationError(
                    source: file.source,
                    line: entry.line,
                    message: "\(signal.name) is mapped twice (first on line \(first)); map each signal once"
                )
            }
            seen[signal] = entry.line
            signalMap.set(signal, to: try SignalMap.parseAction(entry.value, source: file.source, line: entry.line))
        }
    }
}
