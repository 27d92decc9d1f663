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
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// This process's run record in the state directory (``RunRecord``), and what its launch learnt of the last run: read
/// once at start, written at launch (before restoration, so a crash in it is known next time), when ready, and at a
/// clean exit (on a thread of its own, beside the saved state's last write, so the exit is not longer for it).
@MainActor
final class RunKeeper {
    /// The state directory; nil: nothing is recorded (and nothing is known of earlier runs).
    let directory: String?
    /// The last run's record, as found.
    let previous: RunRecord?
    /// How the last run ended; nil at a first launch.
    let end: RunEnd?
    /// This run's record, as last written.
    private(set) var record: RunRecord
    private let logger: Logger
    /// The write of the exit record, until it is on disk.
    private var exitWrite: ConditionLock<Bool>?

    init(directory: String?, environment: [String: String], upgradedFrom: Int32?, version: String?, settings: RestorationSettings, logger: Logger) {
        self.directory = directory
        self.logger = logger
        let now = WallClock.microseconds()
        let boot = ServiceFacts.bootID()
        previous = directory.flatMap(RunRecord.read(inDirectory:))
        let stop = directory.flatMap(StopRecord.read(inDirectory:))
        end = RunEndDetermination.determine(
            previous: previous,
            stop: stop,
            bootID: boot,
            now: now,
            upgradedFrom: upgradedFrom,
            restartGap: settings.restartGap
        )
        var record = RunRecord(pid: getpid(), started: now)
        record.boot = boot
        record.invocation = environment["INVOCATION_ID"]
        record.version = version
        record.build = BuildID.current
        record.oomKills = ServiceFacts.oomKillCount()
        record.abnormal = end?.abnormalEndsInARow ?? 0
        if end?.cause == .upgrade, let previous {
            // The hand-over continues the run of the service: its counts go on.
            record.abnormal = previous.abnormal
        }
        self.record = record
    }

    /// Whether this process runs the build the last run ran (a new build starts the crash loop's count afresh).
    var isSameBuild: Bool {
        guard let previous else { return true }
        return previous.build == record.build && previous.version == record.version
    }

    /// The decision for this launch: restore, discard, or set aside (``LaunchDecision``).
    func decision(settings: RestorationSettings) -> LaunchDecision {
        LaunchDecision.decide(end: end, previous: previous, settings: settings, now: record.started)
    }

    /// Writes the record of the launch, before restoration: the generation it restores.
    func launching(restored: Int?, restoredSetAside: Bool, settings: RestorationSettings) {
        record.restored = restored
        record.restoredSetAside = restoredSetAside
        let quick = LaunchDecision.quickAbnormalEnds(end: end, previous: previous, settings: settings, now: record.started)
        record.quickAbnormal = quick.count
        record.quickGeneration = quick.generation
        record.phase = .launching
        write(record)
    }

    /// An upgrade's successor became the service's main process: its record is the service's from now on.
    func becameMain(restored: Int?, settings: RestorationSettings) {
        launching(restored: restored, restoredSetAside: false, settings: settings)
        ready()
    }

    /// Writes that the run is ready (on a thread: the loop does not wait for the disk).
    func ready() {
        guard record.phase == .launching else { return }
        record.phase = .running
        record.ready = WallClock.microseconds()
        let record = record
        guard let path else { return }
        _ = SystemThread.start(blockingSignals: true) {
            try? record.record.write(to: path)
        }
    }

    /// Starts writing the exit record: the run ended cleanly, for `cause`. The write runs on a thread of its own;
    /// ``finishExit(within:)`` waits for it.
    func exited(cause: RunEnd.Cause, signal: String?, status: Int32) {
        record.phase = .exited
        record.ended = WallClock.microseconds()
        record.exitCause = cause
        record.exitSignal = signal
        record.exitStatus = Int(status)
        let record = record
        guard let path else { return }
        let done = ConditionLock(false)
        exitWrite = done
        let started = SystemThread.start(blockingSignals: true) {
            try? record.record.write(to: path)
            done.withLock { $0 = true }
            done.notifyAll()
        }
        if case .failure = started {
            try? record.record.write(to: path)
            exitWrite = nil
        }
    }

    /// Waits up to `budget` for the exit record to be on disk.
    func finishExit(within budget: Duration) {
        guard let done = exitWrite else { return }
        let deadline = MonotonicClock.deadline(after: budget)
        let written = done.withLock(waiting: { written -> ConditionLock<Bool>.Step<Bool> in
            if written { return .done(true) }
            return MonotonicClock.now() >= deadline ? .done(false) : .wait(until: deadline)
        })
        if !written, let path { logger.warning("the exit record \(path) was not written within \(budget.formattedForLog)") }
    }

    private var path: String? { directory.map { $0 + "/" + RunRecord.fileName } }

    private func write(_ record: RunRecord) {
        guard let path, let directory else { return }
        // A directory named by hand may not exist yet (systemd makes StateDirectory=): make it, private.
        _ = mkdir(directory, 0o700)
        do {
            try record.record.write(to: path)
        } catch {
            logger.warning("cannot write the run record \(path): \(error); the next launch will not know how this run ended")
        }
    }
}
