//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleSystemd
import Logging

/// What the control service needs of the daemon it serves, and nothing else: the application, the settings in force,
/// a way to submit a request with the cause `control` and to get the trace lines of its events to the journal, and the
/// facts of the status page. ``Daemon`` is the one host; the service holds it weakly.
@MainActor
protocol ControlHost: AnyObject {
    /// The application served.
    var application: Application { get }
    /// The configuration in force (a reload replaces it).
    var configuration: DaemonConfiguration { get }
    /// Where the service logs.
    var logger: Logger { get }
    /// The program's name and version, for `GetStatus`.
    var programName: String { get }
    var programVersion: String? { get }
    /// Now, on the clock the daemon's budgets count with.
    var now: ContinuousClock.Instant { get }
    /// What logind and memory pressure look like now, if the daemon watches them.
    var systemStatus: (any SystemEventsStatus)? { get }
    /// What is left of termination's budget while the daemon terminates.
    var terminationRemaining: Duration? { get }
    /// The process environment and systemd's watchdog interval, as the daemon read them at start.
    var environment: [String: String] { get }
    var watchdogInterval: Duration? { get }
    /// Submits a request as the daemon routes every source's, with the cause `control`.
    func submitControlRequest(_ request: LifecycleRequest, completion: @escaping RequestCompletion)
    /// Submits a request about one scene session, with the cause `control`; throws when it cannot be made.
    func submitControlSceneRequest(_ request: SceneRequest, completion: @escaping RequestCompletion) throws(SceneError)
    /// Returns once journald has taken the lines of the events traced so far (within the writer's budget).
    func deliverTraceLines()
    /// Upgrades to the service's binary as it is on disk now; `completion` runs once, after the hand-over or with why
    /// there was none.
    func startUpgrade(
        timeout: Duration?,
        completion: @escaping (Result<UpgradeToSuccessor.HandOver, UpgradeError>) -> Void
    )
}

/// The status of the system events the daemon watches, as the control service reports it.
@MainActor
protocol SystemEventsStatus: AnyObject {
    var isWatchingLogind: Bool { get }
    var phase: SystemEvents.Phase { get }
    var heldLocks: Set<Logind.LockType> { get }
    var isWatchingMemoryPressure: Bool { get }
    var memoryPressureSource: MemoryPressureSource? { get }
    /// When a sleep's wait for background tasks runs out, while one waits.
    var sleepDeadline: ContinuousClock.Instant? { get }
}

extension SystemEvents: SystemEventsStatus {}

extension Daemon: ControlHost {
    var programName: String { options.programName }
    var programVersion: String? { options.version }
    var now: ContinuousClock.Instant { effects.now() }
    var systemStatus: (any SystemEventsStatus)? { systemEvents }
    var terminationRemaining: Duration? { termination.remaining }
    var environment: [String: String] { effects.environment }
    var watchdogInterval: Duration? { effects.watchdogInterval }

    func submitControlRequest(_ request: LifecycleRequest, completion: @escaping RequestCompletion) {
        router.route(request, from: .control, completion: completion)
    }

    func submitControlSceneRequest(_ request: SceneRequest, completion: @escaping RequestCompletion) throws(SceneError) {
        try router.route(request, from: .control, completion: completion)
    }
}
