//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleDaemon

/// An application's own configuration section, as an application writes one: the demo's `[Demo]` (so the repository's
/// lifecycled.conf reads whole) with a key of every kind `ConfigurationKey` has and a whole-section check.
package struct FuzzSettings: ConfigurationSection {
    package enum ModeChange: String, Sendable, CaseIterable {
        case replace, push
    }

    package static let name = "Demo"
    package static let keys: [ConfigurationKey<Self>] = [
        .duration("WorkIntervalSec", \.workInterval),
        ConfigurationKey("Mode") { settings, value throws(ConfigurationValueError) in
            guard !value.isEmpty, value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
                throw ConfigurationValueError("Mode=\(value) is not a mode name (letters, digits, '-')")
            }
            settings.mode = value
        },
        .duration("TerminationTaskSec", \.terminationTask),
        .duration("BackgroundTaskSec", \.backgroundTask),
        .duration("JobMSec", \.job, unit: .milliseconds(1)),
        .integer("AllocateMiB", \.allocateMiB),
        .integer("Port", \.port, in: 1...65535),
        .boolean("Verbose", \.verbose),
        .text("Greeting", \.greeting),
        .choice("ModeChange", \.modeChange, what: "a way to change modes"),
    ]

    package var workInterval = Duration.seconds(5)
    package var mode = "serving"
    package var terminationTask = Duration.zero
    package var backgroundTask = Duration.zero
    package var job = Duration.milliseconds(10)
    package var allocateMiB = 0
    package var port = 8080
    package var verbose = false
    package var greeting: String?
    package var modeChange = ModeChange.replace

    package init() {}

    package func validate() throws(ConfigurationValueError) {
        if backgroundTask > terminationTask, terminationTask > .zero {
            throw ConfigurationValueError("BackgroundTaskSec= must not exceed TerminationTaskSec=")
        }
    }
}
