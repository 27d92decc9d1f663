//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import LifecycleDaemon

/// The demo's own command-line options; each overrides its `[Demo]` key.
struct DemoOptions: ParsableArguments {
    @Option(name: .customLong("work-interval"), help: "Seconds between the demo worker's jobs while active (0: none).")
    var workInterval: Double?

    @Option(
        name: .customLong("termination-task-seconds"),
        help: "Begin a background task of this length in applicationWillTerminate."
    )
    var terminationTaskSeconds: Double?

    func validate() throws {
        for value in [workInterval, terminationTaskSeconds].compactMap({ $0 }) where Duration(setting: value) == nil {
            throw ValidationError("durations must be non-negative numbers of seconds (at most 292 years), not \(value)")
        }
    }

    /// The settings with these options applied over them.
    func applied(to settings: DemoSettings) -> DemoSettings {
        var settings = settings
        if let interval = workInterval.flatMap({ Duration(setting: $0) }) { settings.workInterval = interval }
        if let task = terminationTaskSeconds.flatMap({ Duration(setting: $0) }) { settings.terminationTask = task }
        return settings
    }
}
