//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// What a source asks the application for: a Unix signal, logind, memory pressure, a control request
/// (`lifecyclectl`), a service group, or the application's own code. The one vocabulary of requests: the raw values
/// are the names used in `[Signals]` of the configuration, on the `--signal` and `lifecyclectl` command lines and in
/// control requests.
public enum LifecycleRequest: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Enter the background (from active: `applicationWillResignActive`, then `applicationDidEnterBackground`).
    case enterBackground = "background"
    /// Return to the foreground and become active.
    case becomeActive = "foreground"
    /// Become inactive: in the foreground, not serving (an interruption).
    case resignActive = "inactive"
    /// Reload: `applicationWillReload`, the host reads its configuration again, `applicationDidReload`.
    case reload
    /// Terminate; final.
    case terminate
    /// Deliver a memory warning down the tree; changes no state.
    case memoryWarning = "memory-warning"

    public var description: String { rawValue }
}

extension ApplicationStateMachine.Request {
    /// The state machine's step for a source's request.
    init(_ request: LifecycleRequest) {
        switch request {
        case .enterBackground: self = .enterBackground
        case .becomeActive: self = .becomeActive
        case .resignActive: self = .resignActive
        case .reload: self = .reload
        case .terminate: self = .terminate
        case .memoryWarning: self = .memoryWarning
        }
    }
}
