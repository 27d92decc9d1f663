//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The configuration file: text → ConfigurationFile (the INI syntax) → DaemonConfiguration, the daemon's sections and
// an application's own ([Demo], FuzzSettings), as `lifecycled` reads /etc/lifecycled.conf at start and on reload. The
// checks are FuzzSupport's checkConfiguration, which the package's unit tests run on the seeds too.
import FuzzSupport

@main
enum ConfigurationFuzzer: FuzzTarget {
    static func test(_ bytes: [UInt8]) {
        checkConfiguration(bytes)
    }
}
