//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleSystemd
import Logging

/// Sends sd_notify messages through the effects, while the process is the service's main process (an upgrade's new
/// process is not, until it is handed over; the running one is no more once it has handed over). The first failure to reach systemd's notification socket, from
/// sd_notify or from the file descriptor store, is one warning for both; later ones are silent: a socket that is not
/// there (`$NOTIFY_SOCKET` naming nothing) fails every time, immediately, and costs nothing else.
@MainActor
final class Notifications {
    let effects: DaemonEffects
    private let logger: Logger
    private var failureLogged = false
    /// Whether systemd takes this process's notifications (the process's ``ProcessRole``); when not, they are not
    /// sent (systemd would log a warning for each).
    private let isMain: @MainActor () -> Bool

    init(effects: DaemonEffects, logger: Logger, isMain: @escaping @MainActor () -> Bool) {
        self.effects = effects
        self.logger = logger
        self.isMain = isMain
    }

    func send(_ assignments: [NotifyAssignment]) {
        guard isMain() else { return }
        do {
            try effects.notify(assignments)
        } catch {
            reportFailure(error)
        }
    }

    /// One warning for the first failure to reach the notification socket; nothing for the later ones.
    func reportFailure(_ error: any Error) {
        guard !failureLogged else { return }
        failureLogged = true
        let socket = effects.environment["NOTIFY_SOCKET"].map { " (NOTIFY_SOCKET=\($0))" } ?? ""
        logger.warning(
            """
            cannot reach systemd's notification socket\(socket): \(error) systemd does not hear about this service's \
            readiness, state, reloads or stop, and keeps no copy of its saved state
            """
        )
    }
}
