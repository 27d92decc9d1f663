//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The part this process plays for its service: the one value that says whether systemd takes its notifications,
/// whether it owns the saved state and the file descriptor store, and whether it answers on the control socket. The
/// daemon changes it at the steps of an upgrade (docs/operations.md, "Upgrade"); everything else reads it.
///
/// ```
/// main ──upgrade──▶ predecessor ──hand-over──▶ handedOver          (the running process)
///                        └──failure──▶ main
/// successor ──made main──▶ mainDraining ──the predecessor exits──▶ main
/// ```
enum ProcessRole: Sendable, Hashable, CustomStringConvertible {
    /// The service's main process.
    case main
    /// The service's main process, while the process with this pid, which handed the service to this one, still
    /// finishes its requests: a stop waits for it to exit (systemd's `KillMode=mixed` would kill it once this one exits).
    case mainDraining(Int32)
    /// The main process, with an upgrade under way: its successor (this pid) launches beside it.
    case predecessor(of: Int32)
    /// Started by an upgrade from the process with this pid: not the main process until that one hands over.
    case successor(of: Int32)
    /// Was the main process, and handed the service to the process with this pid: it drains and exits.
    case handedOver(to: Int32)

    /// Whether systemd takes this process's notifications (`NotifyAccess=main`): it owns the service's saved state,
    /// its file descriptor store and its control socket.
    var isMain: Bool {
        switch self {
        case .main, .mainDraining, .predecessor: true
        case .successor, .handedOver: false
        }
    }

    /// `main`, `main (pid 812 drains)`, `predecessor of pid 977`, …: for the log.
    var description: String {
        switch self {
        case .main: "main"
        case .mainDraining(let pid): "main (pid \(pid) drains)"
        case .predecessor(let pid): "predecessor of pid \(pid)"
        case .successor(let pid): "successor of pid \(pid)"
        case .handedOver(let pid): "handed over to pid \(pid)"
        }
    }
}
