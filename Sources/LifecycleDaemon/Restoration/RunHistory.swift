//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives

/// What the daemon writes about its own run in the state directory (`run.record`): at launch (`phase=launching`), when
/// it is ready (`running`), and, replacing it, at a clean exit (`exited`, with the cause). A record still `launching`
/// or `running` at the next launch is a run that did not end cleanly; the stop record (`lifecyclectl record-stop`)
/// says how, where systemd ran it.
struct RunRecord: Sendable, Hashable {
    /// Where the run was when the record was last written.
    enum Phase: String, Sendable, Hashable {
        /// Launching and restoring: not ready yet.
        case launching
        /// Ready (`READY=1`), serving.
        case running
        /// Exited cleanly: the exit fields say why.
        case exited
    }

    var pid: Int32
    var boot: String?
    /// systemd's `$INVOCATION_ID` of the start: the stop record of the same start has it.
    var invocation: String?
    /// When it started, µs since the epoch.
    var started: Int64
    var version: String?
    var build: String?
    /// The generation of the saved state it restored.
    var restored: Int?
    /// Whether that generation was one set aside, restored on purpose (`[Restoration] RestoreSetAside=`).
    var restoredSetAside = false
    var phase: Phase = .launching
    /// When it became ready, µs since the epoch.
    var ready: Int64?
    /// Abnormal ends in a row before this run.
    var abnormal = 0
    /// Of those, the ends that came within `SafeLaunchWithinSec=` of a launch that restored ``quickGeneration``.
    var quickAbnormal = 0
    var quickGeneration: Int?
    /// The control group's OOM kill count at its start.
    var oomKills: Int?
    /// The clean exit: when, why, the signal that asked for it, the exit status.
    var ended: Int64?
    var exitCause: RunEnd.Cause?
    var exitSignal: String?
    var exitStatus: Int?

    static let fileName = "run.record"
    static let kind = "Run"

    var record: ServiceRecord {
        var record = ServiceRecord(kind: Self.kind)
        record["pid"] = String(pid)
        record["boot"] = boot
        record["invocation"] = invocation
        record["started"] = String(started)
        record["version"] = version
        record["build"] = build
        record["restored"] = restored.map(String.init)
        record["restored-set-aside"] = restoredSetAside ? "yes" : nil
        record["phase"] = phase.rawValue
        record["ready"] = ready.map(String.init)
        record["abnormal"] = String(abnormal)
        record["quick-abnormal"] = String(quickAbnormal)
        record["quick-generation"] = quickGeneration.map(String.init)
        record["oom-kills"] = oomKills.map(String.init)
        record["ended"] = ended.map(String.init)
        record["exit-cause"] = exitCause?.rawValue
        record["exit-signal"] = exitSignal
        record["exit-status"] = exitStatus.map(String.init)
        return record
    }

    init(pid: Int32, started: Int64) {
        self.pid = pid
        self.started = started
    }

    init?(_ record: ServiceRecord) {
        guard let pid = record.integer("pid").flatMap(Int32.init(exactly:)),
            let started = record["started"].flatMap({ Int64($0) }),
            let phase = record["phase"].flatMap(Phase.init(rawValue:))
        else { return nil }
        self.init(pid: pid, started: started)
        boot = record["boot"]
        invocation = record["invocation"]
        version = record["version"]
        build = record["build"]
        restored = record.integer("restored")
        restoredSetAside = record["restored-set-aside"] == "yes"
        self.phase = phase
        ready = record["ready"].flatMap { Int64($0) }
        abnormal = record.integer("abnormal") ?? 0
        quickAbnormal = record.integer("quick-abnormal") ?? 0
        quickGeneration = record.integer("quick-generation")
        oomKills = record.integer("oom-kills")
        ended = record["ended"].flatMap { Int64($0) }
        exitCause = record["exit-cause"].flatMap(RunEnd.Cause.init(rawValue:))
        exitSignal = record["exit-signal"]
        exitStatus = record.integer("exit-status")
    }

    static func read(inDirectory directory: String) -> RunRecord? {
        ServiceRecord.read(directory + "/" + fileName, kind: kind).flatMap(RunRecord.init)
    }
}

/// How the last run ended, from what it and systemd left (docs/restoration.md, "Why the last run ended"): a pure
/// function of the records, the boot's id and the clock, so every cause is tested without a process.
enum RunEndDetermination {
    /// The last run's end: nil at a first launch (no record of either kind). `upgradedFrom`: this process was started
    /// by an upgrade from that pid (the hand-over says why, whatever the records say).
    static func determine(
        previous: RunRecord?,
        stop: StopRecord?,
        bootID: String?,
        now: Int64,
        upgradedFrom: Int32?,
        restartGap: Duration
    ) -> RunEnd? {
        if upgradedFrom != nil {
            var end = RunEnd(cause: .upgrade)
            end.restoredGeneration = previous?.restored
            end.version = previous?.version
            end.lifetime = previous.map { micros(now - $0.started) }
            return end
        }
        guard let previous else {
            // No run record (an older LifecycleKit, or a state directory the daemon could not write): systemd's word.
            guard let stop else { return nil }
            var end = fromStopRecord(stop, previous: nil)
            end.timeSinceEnd = micros(max(0, now - stop.at))
            end.abnormalEndsInARow = end.isAbnormal ? 1 : 0
            return end
        }
        // systemd's record of the same start (the invocation id), or, outside systemd, one written after this run
        // began in the same boot.
        let stopOfThisRun = stop.flatMap { stop -> StopRecord? in
            if let invocation = previous.invocation, let stopped = stop.invocation { return invocation == stopped ? stop : nil }
            return stop.at >= previous.started && stop.boot == previous.boot ? stop : nil
        }
        var end: RunEnd
        var endedAt: Int64?
        let abnormalStop = stopOfThisRun.map { ["timeout", "watchdog", "oom-kill", "core-dump", "signal"].contains($0.result ?? "") } ?? false
        if previous.phase == .exited, let cause = previous.exitCause, !abnormalStop {
            end = RunEnd(cause: cause)
            end.signal = previous.exitSignal
            end.exitStatus = previous.exitStatus
            endedAt = previous.ended
            if cause == .stop || cause == .terminate {
                if let bootID, let boot = previous.boot, bootID != boot {
                    end.cause = .reboot
                } else if cause == .stop, let ended = previous.ended, now - ended <= Int64(restartGap.microseconds) {
                    end.cause = .restart
                }
            }
        } else if let stop = stopOfThisRun {
            // No exit record, or one systemd contradicts (killed after it was written: a stop that timed out).
            end = fromStopRecord(stop, previous: previous)
            endedAt = stop.at
        } else if let bootID, let boot = previous.boot, bootID != boot {
            // Not stopped cleanly, and the machine started again: a power cut, a kernel crash, a hard reset.
            end = RunEnd(cause: .reboot)
        } else {
            end = RunEnd(cause: .unknown)
        }
        end.endedDuringLaunch = previous.phase == .launching && end.cause != .reboot
        end.restoredGeneration = previous.restored
        end.version = previous.version
        if let endedAt {
            end.timeSinceEnd = micros(max(0, now - endedAt))
            end.lifetime = micros(max(0, endedAt - previous.started))
        }
        // A run that started long ago ended a loop if there was one: the count starts again with its end.
        let longLived = now - previous.started > Int64(streakWindow.microseconds)
        end.abnormalEndsInARow = end.isAbnormal ? (longLived ? 1 : previous.abnormal + 1) : 0
        return end
    }

    /// Abnormal ends count as in a row only while each run started within this of the next launch: a service that
    /// crashes once a day is not in a loop.
    static let streakWindow = Duration.seconds(600)

    /// The end systemd's `$SERVICE_RESULT`, `$EXIT_CODE` and `$EXIT_STATUS` describe (and the OOM kill count, which
    /// names an OOM kill systemd 252 reports as a `SIGKILL` on a cgroup v1 memory controller).
    static func fromStopRecord(_ stop: StopRecord, previous: RunRecord?) -> RunEnd {
        let signal = stop.code == "exited" ? nil : stop.status.map { $0.hasPrefix("SIG") ? $0 : "SIG" + $0 }
        let status = stop.code == "exited" ? stop.status.flatMap { Int($0) } : nil
        let oomKilled: Bool = {
            guard let after = stop.oomKills, after > 0 else { return false }
            return after > (previous?.oomKills ?? 0)
        }()
        var end: RunEnd
        switch stop.result {
        case "watchdog":
            end = RunEnd(cause: .watchdog)
        case "oom-kill":
            end = RunEnd(cause: .outOfMemory)
        case "timeout":
            end = RunEnd(cause: .stopTimeout)
        case _ where oomKilled:
            end = RunEnd(cause: .outOfMemory)
        case "core-dump":
            end = RunEnd(cause: .crash)
            end.coreDumped = true
        case "signal":
            end = RunEnd(cause: faultSignals.contains(signal ?? "") ? .crash : .kill)
        case "exit-code":
            end = RunEnd(cause: status == Int(ExitStatus.temporaryFailure.rawValue) ? .failure : .exit)
        case "success":
            // Exited 0 (or by a clean signal) without the daemon's record of a clean exit.
            end = RunEnd(cause: .exit)
        default:
            end = RunEnd(cause: .unknown)
        }
        if stop.code == "dumped" { end.coreDumped = true }
        end.signal = signal
        end.exitStatus = status
        return end
    }

    /// The signals that report a fault of the process itself.
    static let faultSignals: Set<String> = ["SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGSYS", "SIGTRAP"]

    private static func micros(_ value: Int64) -> Duration { .microseconds(value) }
}

/// What a launch does about the saved state, given how the last run ended: the policy per cause
/// (`[Restoration] DiscardAfter=`) and the safe launch (docs/restoration.md, "A safe launch").
enum LaunchDecision: Sendable, Hashable {
    /// Restore the newest valid saved state.
    case restore
    /// Discard it (set it aside as discarded): the policy says so for this cause.
    case discard(RunEnd.Cause)
    /// Set aside generation `generation` (and anything newer the runs that restored it saved) and launch without it:
    /// the runs that restored it ended abnormally, `reason` says how.
    case setAside(generation: Int, reason: String)

    /// The decision for a launch after `end` (nil: a first launch), whose previous run record is `previous`.
    static func decide(end: RunEnd?, previous: RunRecord?, settings: RestorationSettings, now: Int64) -> LaunchDecision {
        guard let end else { return .restore }
        if end.cause == .upgrade { return .restore }
        if let previous, end.isAbnormal, let generation = previous.restored {
            if end.endedDuringLaunch {
                return .setAside(
                    generation: generation,
                    reason: "the run that restored it ended in its launch, before it was ready (\(end))"
                )
            }
            let quick = quickAbnormalEnds(end: end, previous: previous, settings: settings, now: now)
            if settings.safeLaunchAfter > 0, quick.count >= settings.safeLaunchAfter, quick.generation == generation {
                return .setAside(
                    generation: generation,
                    reason: "\(quick.count) runs in a row that restored it ended abnormally within \(settings.safeLaunchWithin.formattedForLog) of their launch (the last: \(end))"
                )
            }
        }
        if settings.discardAfter.contains(end.cause) { return .discard(end.cause) }
        return .restore
    }

    /// How many abnormal ends in a row came within `SafeLaunchWithinSec=` of a launch that restored the same
    /// generation, counting the last run's; the generation.
    static func quickAbnormalEnds(
        end: RunEnd?,
        previous: RunRecord?,
        settings: RestorationSettings,
        now: Int64
    ) -> (count: Int, generation: Int?) {
        guard let end, let previous, end.isAbnormal, let generation = previous.restored else { return (0, nil) }
        // Without a time of its end, the run lasted at most until now.
        let lifetime = end.lifetime ?? .microseconds(max(0, now - previous.started))
        guard lifetime <= settings.safeLaunchWithin else { return (0, nil) }
        let before = previous.quickGeneration == generation ? previous.quickAbnormal : 0
        return (before + 1, generation)
    }
}

/// The wait before a launch after abnormal ends in a row, and when to give up (docs/restoration.md, "Crash loops").
enum LaunchBackoff {
    /// What a launch does before it starts.
    enum Action: Sendable, Hashable {
        /// Launch now.
        case launch
        /// Wait this long, then launch.
        case wait(Duration)
        /// Exit with ``ExitStatus/unavailable`` (69), which the shipped units' `RestartPreventExitStatus=` names: systemd
        /// stops restarting, and a socket unit keeps listening.
        case giveUp
    }

    /// The action after `end`: the first abnormal end restarts at once, each one after waits twice as long as the
    /// one before (from `initial`, at most `maximum`); at `giveUpAfter` in a row (0: never) the process gives up; a
    /// start after a give-up waits `maximum` and tries once more. A new build, or a last end older than
    /// ``forgetAfter``, starts afresh (and a run that lived longer than ``RunEndDetermination/streakWindow`` restarts
    /// the count).
    static func action(end: RunEnd?, sameBuild: Bool, settings: RestorationSettings) -> Action {
        guard let end, sameBuild else { return .launch }
        if let since = end.timeSinceEnd, since > forgetAfter { return .launch }
        if end.cause == .gaveUp { return .wait(settings.backoffMaximum) }
        guard end.isAbnormal else { return .launch }
        let count = end.abnormalEndsInARow
        if settings.giveUpAfter > 0, count >= settings.giveUpAfter { return .giveUp }
        guard count >= 2, settings.backoffInitial > .zero else { return .launch }
        var delay = settings.backoffInitial
        for _ in 2..<count {
            delay = delay * 2
            if delay >= settings.backoffMaximum { break }
        }
        return .wait(min(delay, settings.backoffMaximum))
    }

    /// A last end older than this is not part of a loop.
    static let forgetAfter = Duration.seconds(600)
}

extension Duration {
    /// Whole microseconds.
    var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
