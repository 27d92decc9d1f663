//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The default signal map (docs/lifecycle.md §6) by signal name: the daemon's `[Signals]` defaults, the test kit's
/// `TestHost.signal(_:)` and `ApplicationService.defaultSignals` (by number, without termination and `SIGTSTP`) read
/// this one table. `SIGRTMIN+2` and `SIGRTMIN+3` are named as the configuration names them.
// By name, in the core: the core never imports C, so it has no signal numbers; each reader resolves the names (the
// daemon through UnixSignal, ApplicationService itself). A module below both that names signals would hold it.
package let standardSignalRequests: [(name: String, request: LifecycleRequest)] = [
    ("SIGUSR1", .enterBackground),
    ("SIGTSTP", .enterBackground),
    ("SIGUSR2", .becomeActive),
    ("SIGCONT", .becomeActive),
    ("SIGHUP", .reload),
    ("SIGTERM", .terminate),
    ("SIGINT", .terminate),
    ("SIGRTMIN+2", .memoryWarning),
    ("SIGRTMIN+3", .resignActive),
]
