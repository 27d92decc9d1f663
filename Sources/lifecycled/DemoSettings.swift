//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleDaemon

/// The demo's own section of the configuration file, `[Demo]`.
struct DemoSettings: ConfigurationSection {
    static let name = "Demo"
    static let keys: [ConfigurationKey<Self>] = [
        .duration("WorkIntervalSec", \.workInterval),
        ConfigurationKey("Mode") { settings, value throws(ConfigurationValueError) in
            guard !value.isEmpty, value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
                throw ConfigurationValueError("Mode=\(value) is not a mode name (letters, digits, '-')")
            }
            settings.mode = value
        },
        .duration("TerminationTaskSec", \.terminationTask),
        .duration("BackgroundTaskSec", \.backgroundTask),
        .integer("AllocateMiB", \.allocateMiB),
        .choice("ModeChange", \.modeChange, what: "a way to change modes"),
        .duration("FailEverySec", \.failEvery),
        .integer("MaxRestarts", \.maxRestarts, in: 0...1000),
    ]

    /// How often the worker does a job while active; zero: only when asked.
    var workInterval = Duration.seconds(5)
    /// The serving mode shown by the navigation stack; a reload that changes it hands over to a new controller.
    var mode = "serving"
    /// A background task of this length begun in `applicationWillTerminate` (termination waits for it).
    var terminationTask = Duration.zero
    /// A background task of this length begun in `applicationDidEnterBackground` (a sleep's inhibitor waits for it).
    var backgroundTask = Duration.zero
    /// Debug: allocate and touch this many MiB in the cache at launch (memory pressure tests).
    var allocateMiB = 0
    /// What a reload that changes `Mode=` does: replace the stack with the new mode, or push it (going back to it
    /// when it is on the stack already).
    var modeChange = ModeChange.replace
    /// The worker's feed (work that reads an upstream) fails this long after each start; zero: it never fails. For
    /// supervision: the feed is restarted after a growing delay, and past `MaxRestarts=` failures within a minute the
    /// daemon exits with status 75 for systemd to restart it.
    var failEvery = Duration.zero
    /// The feed's restarts allowed within a minute (its restart policy): 100 ms before the first, doubling up to 10 s.
    var maxRestarts = 5
}

/// How the modes stack follows `Mode=`.
enum ModeChange: String, CaseIterable, Sendable {
    /// The new mode replaces the stack (a hand-over).
    case replace
    /// The new mode is pushed over the current one; a mode already on the stack is popped back to.
    case push
}
