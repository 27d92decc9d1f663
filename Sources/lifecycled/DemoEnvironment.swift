//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleDaemon
import LifecycleKit
import Logging

/// What the demo's controllers share: the settings (replaced on reload) and the logger.
@MainActor
final class DemoEnvironment {
    /// The current settings; a reload replaces them before `applicationDidReload`.
    var settings = DemoSettings()
    /// The settings before the last valid reload: what changed is what a reload applies.
    var previousSettings = DemoSettings()
    /// Where the demo logs what it does.
    let logger = Logger(label: DaemonOptions.processName)
    /// Memory held on purpose (debug `AllocateMiB`), so memory pressure persists.
    var ballast: [[UInt8]] = []
}

extension ViewController {
    /// The demo's shared environment, reached through the application this controller belongs to (its delegate):
    /// controllers made by a storyboard or by restoration find it the same way as the ones built in code.
    var environment: DemoEnvironment {
        guard let delegate = application?.delegate as? DemoDelegate else {
            preconditionFailure("\(path) reads the demo's environment before it joined the application")
        }
        return delegate.environment
    }
}
