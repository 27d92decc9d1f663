//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// As a container's first process (PID 1), the daemon is the init of its PID namespace: every orphan of the
/// container is re-parented to it, and a zombie stays in the process table until its parent reaps it. This reaps
/// them as SIGCHLD says, on the main loop, as an init does.
@MainActor
final class ChildReaper {
    /// SIGCHLD, blocked from the start of `main` when the process is PID 1.
    nonisolated static let signal = UnixSignal(rawValue: SIGCHLD)

    private let logger: Logger
    private var source: MainLoop.Source?
    /// How many children it has reaped.
    private(set) var reaped = 0

    private init(logger: Logger) {
        self.logger = logger
    }

    /// Starts reaping on `loop`.
    static func start(loop: MainLoop, logger: Logger) throws(SystemCallError) -> ChildReaper {
        MainLoop.blockSignals([signal])
        let reaper = ChildReaper(logger: logger)
        reaper.source = try loop.addSignal(signal) { [unowned reaper] _ in
            MainActor.assumeIsolated { reaper.reap() }
        }
        logger.debug("PID 1: reaping the children re-parented to this process")
        // Any that exited before the signal was watched.
        reaper.reap()
        return reaper
    }

    /// Reaps every child that has exited (SIGCHLD coalesces: one signal may stand for many).
    func reap() {
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            guard pid > 0 else { return }
            reaped += 1
            logger.debug(
                "PID 1: reaped pid \(pid) (wait status \(status))",
                metadata: [LogKey.reaped: .string("\(pid)")]
            )
        }
    }
}
