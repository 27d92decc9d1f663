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
/// clean exit.
///
/// Each write replaces the file atomically (``DurableFile``) without flushing it to the disk: a crash of the process,
/// which is what the record is for, loses nothing the page cache holds, and a power loss changes the boot's id, which
/// names the end by itself (a reboot). So a record costs tens of microseconds, not two `fsync`s, at launch and at exit.
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

    /// Writes that the run is ready: its launch and restoration are over.
    func ready() {
        guard record.phase == .launching else { return }
        record.phase = .running
        record.ready = WallClock.microseconds()
        write(record)
    }

    /// Writes the exit record: the run ended cleanly, for `cause`. Not flushed to the disk (``write(_:)``): it adds
    /// tens of microseconds to the exit. In a container whose runtime provides `/dev/termination-log` (Kubernetes:
    /// `lastState.terminated.message`), `message` goes there too.
    func exited(cause: RunEnd.Cause, signal: String?, status: Int32, message: String? = nil) {
        if let message { Self.writeTerminationMessage(message) }
        record.phase = .exited
        record.ended = WallClock.microseconds()
        record.exitCause = cause
        record.exitSignal = signal
        record.exitStatus = Int(status)
        write(record)
    }

    private var path: String? { directory.map { $0 + "/" + RunRecord.fileName } }

    /// Where Kubernetes (and a runtime told to) takes a container's last words from.
    static let terminationLog = "/dev/termination-log"

    /// Writes `message` to ``terminationLog`` when it exists and may be written (at most 4 KiB, Kubernetes' limit).
    static func writeTerminationMessage(_ message: String, path: String = terminationLog) {
        guard access(path, W_OK) == 0 else { return }
        let descriptor = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(message.utf8.prefix(4095))
        _ = try? FileDescriptor(rawValue: descriptor).writeAll(bytes + [0x0A])
    }

    private func write(_ record: RunRecord) {
        guard let path, let directory else { return }
        // A directory named by hand may not exist yet (systemd makes StateDirectory=): make it, private.
        _ = mkdir(directory, 0o700)
        do {
            try record.record.write(to: path, flush: false)
        } catch {
            logger.warning("cannot write the run record \(path): \(error); the next launch will not know how this run ended")
        }
    }
}
