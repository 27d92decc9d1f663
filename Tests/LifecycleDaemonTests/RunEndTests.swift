//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging
import Testing

/// How the last run ended, from the records it and systemd left (docs/restoration.md, "Why the last run ended").
@Suite("Why the last run ended")
struct RunEndDeterminationTests {
    static let boot = "boot-a"
    static let started: Int64 = 1_000_000_000
    static let second: Int64 = 1_000_000

    static func run(phase: RunRecord.Phase, restored: Int? = 7, abnormal: Int = 0, invocation: String? = "inv-1") -> RunRecord {
        var record = RunRecord(pid: 812, started: started)
        record.boot = boot
        record.invocation = invocation
        record.phase = phase
        record.restored = restored
        record.abnormal = abnormal
        record.version = "1.4.2"
        record.oomKills = 0
        return record
    }

    static func exited(_ cause: RunEnd.Cause, signal: String? = "SIGTERM", after seconds: Int64 = 10) -> RunRecord {
        var record = run(phase: .exited)
        record.ended = started + seconds * second
        record.exitCause = cause
        record.exitSignal = signal
        record.exitStatus = 0
        return record
    }

    static func stop(_ result: String, code: String, status: String, oomKills: Int = 0, after seconds: Int64 = 10) -> StopRecord {
        StopRecord(invocation: "inv-1", boot: boot, at: started + seconds * second, result: result, code: code, status: status, oomKills: oomKills)
    }

    static func determine(
        _ previous: RunRecord?,
        _ stop: StopRecord? = nil,
        boot: String = boot,
        now: Int64 = started + 11 * second,
        upgradedFrom: Int32? = nil
    ) -> RunEnd? {
        RunEndDetermination.determine(
            previous: previous,
            stop: stop,
            bootID: boot,
            now: now,
            upgradedFrom: upgradedFrom,
            restartGap: .seconds(2)
        )
    }

    @Test func aFirstLaunchHasNoLastRun() {
        #expect(Self.determine(nil) == nil)
    }

    @Test func aCleanStopFollowedBySoonByAStartIsARestartAndLaterAStop() {
        let restart = Self.determine(Self.exited(.stop), now: Self.started + 11 * Self.second)
        #expect(restart?.cause == .restart)
        #expect(restart?.isAbnormal == false)
        let stop = Self.determine(Self.exited(.stop), now: Self.started + 60 * Self.second)
        #expect(stop?.cause == .stop)
        #expect(stop?.signal == "SIGTERM")
        #expect(stop?.timeSinceEnd == .seconds(50))
        #expect(stop?.lifetime == .seconds(10))
    }

    @Test func aCleanStopInAnotherBootIsAReboot() {
        #expect(Self.determine(Self.exited(.stop), boot: "boot-b")?.cause == .reboot)
    }

    @Test func aRunThatLeftNoExitRecordInAnotherBootEndedWithTheMachine() {
        let end = Self.determine(Self.run(phase: .running), boot: "boot-b")
        #expect(end?.cause == .reboot)
        #expect(end?.isAbnormal == false)
    }

    @Test func aRunThatLeftNoExitRecordAndNoStopRecordEndedUnknownAbnormally() {
        let end = Self.determine(Self.run(phase: .running, abnormal: 2))
        #expect(end?.cause == .unknown)
        #expect(end?.abnormalEndsInARow == 3)
        #expect(end?.restoredGeneration == 7)
    }

    @Test func systemdsResultsNameEachCause() {
        let running = Self.run(phase: .running)
        let cases: [(StopRecord, RunEnd.Cause, String?, Int?, Bool)] = [
            (Self.stop("signal", code: "killed", status: "SEGV"), .crash, "SIGSEGV", nil, false),
            (Self.stop("core-dump", code: "dumped", status: "ABRT"), .crash, "SIGABRT", nil, true),
            (Self.stop("signal", code: "killed", status: "KILL"), .kill, "SIGKILL", nil, false),
            (Self.stop("signal", code: "killed", status: "KILL", oomKills: 1), .outOfMemory, "SIGKILL", nil, false),
            (Self.stop("oom-kill", code: "killed", status: "KILL"), .outOfMemory, "SIGKILL", nil, false),
            (Self.stop("watchdog", code: "killed", status: "ABRT"), .watchdog, "SIGABRT", nil, false),
            (Self.stop("timeout", code: "killed", status: "KILL"), .stopTimeout, "SIGKILL", nil, false),
            (Self.stop("exit-code", code: "exited", status: "3"), .exit, nil, 3, false),
            (Self.stop("exit-code", code: "exited", status: "75"), .failure, nil, 75, false),
        ]
        for (stop, cause, signal, status, core) in cases {
            let end = Self.determine(running, stop)
            #expect(end?.cause == cause, "\(stop)")
            #expect(end?.signal == signal, "\(stop)")
            #expect(end?.exitStatus == status, "\(stop)")
            #expect(end?.coreDumped == core, "\(stop)")
            #expect(end?.isAbnormal == true)
            #expect(end?.timeSinceEnd == .seconds(1))
        }
    }

    @Test func anAbnormalEndAfterALongRunStartsTheCountAgain() {
        let running = Self.run(phase: .running, abnormal: 5)
        let quick = Self.determine(running, Self.stop("signal", code: "killed", status: "SEGV"))
        #expect(quick?.abnormalEndsInARow == 6)
        let daily = Self.determine(running, Self.stop("signal", code: "killed", status: "SEGV", after: 86_400), now: Self.started + 86_401 * Self.second)
        #expect(daily?.abnormalEndsInARow == 1)
    }

    @Test func anOOMKillCountedBeforeTheRunStartedIsNotThisRunsEnd() {
        var running = Self.run(phase: .running)
        running.oomKills = 1
        #expect(Self.determine(running, Self.stop("signal", code: "killed", status: "KILL", oomKills: 1))?.cause == .kill)
    }

    @Test func aStopRecordOfAnotherInvocationIsNotTrusted() {
        let running = Self.run(phase: .running, invocation: "inv-2")
        #expect(Self.determine(running, Self.stop("signal", code: "killed", status: "SEGV"))?.cause == .unknown)
    }

    @Test func theDaemonsExitRecordWinsOverSystemdsSuccess() {
        let end = Self.determine(Self.exited(.terminate, signal: nil), Self.stop("success", code: "exited", status: "0"), now: Self.started + 60 * Self.second)
        #expect(end?.cause == .terminate)
        #expect(end?.isAbnormal == false)
        #expect(end?.abnormalEndsInARow == 0)
    }

    @Test func systemdsWordWinsOverAnExitRecordWrittenBeforeTheProcessWasKilled() {
        let end = Self.determine(Self.exited(.stop), Self.stop("timeout", code: "killed", status: "KILL"))
        #expect(end?.cause == .stopTimeout)
        #expect(end?.isAbnormal == true)
    }

    @Test func aCrashDuringLaunchIsMarkedSo() {
        let end = Self.determine(Self.run(phase: .launching), Self.stop("signal", code: "killed", status: "SEGV"))
        #expect(end?.endedDuringLaunch == true)
        #expect(end?.description == "a crash (SIGSEGV)")
    }

    @Test func anUpgradesSuccessorLearnsItFromTheHandOver() {
        let end = Self.determine(Self.run(phase: .running), upgradedFrom: 812)
        #expect(end?.cause == .upgrade)
        #expect(end?.isAbnormal == false)
    }

    @Test func theRecordsReadBackAsWritten() {
        var record = Self.exited(.failure, signal: nil)
        record.quickAbnormal = 2
        record.quickGeneration = 7
        record.restoredSetAside = true
        let bytes = record.record.encoded()
        #expect(ServiceRecord.decode(bytes, kind: "Run").flatMap(RunRecord.init) == record)
        let stop = Self.stop("watchdog", code: "killed", status: "ABRT", oomKills: 3)
        #expect(ServiceRecord.decode(stop.record.encoded(), kind: "Stop").flatMap(StopRecord.init) == stop)
        #expect(ServiceRecord.decode(bytes, kind: "Stop") == nil, "a run record is not a stop record")
        #expect(ServiceRecord.decode(Array("garbage\n".utf8), kind: "Run") == nil)
        #expect(ServiceRecord.decode(Array("LifecycleKit-Run 2\npid=1\n".utf8), kind: "Run") == nil, "another format")
    }
}

/// What a launch does with the saved state after the last run's end: the policy per cause and the safe launch.
@Suite("The launch decision")
struct LaunchDecisionTests {
    typealias T = RunEndDeterminationTests

    static func decide(_ previous: RunRecord, _ stop: StopRecord? = nil, settings: RestorationSettings = RestorationSettings(), now: Int64 = T.started + 11 * T.second) -> LaunchDecision {
        let end = T.determine(previous, stop, now: now)
        return LaunchDecision.decide(end: end, previous: previous, settings: settings, now: now)
    }

    @Test func everyCauseButATerminationRestoresByDefault() {
        #expect(Self.decide(T.exited(.stop)) == .restore)
        #expect(Self.decide(T.exited(.stop), now: T.started + 600 * T.second) == .restore)
        #expect(Self.decide(T.exited(.terminate, signal: nil)) == .discard(.terminate))
        #expect(Self.decide(T.run(phase: .running), T.stop("signal", code: "killed", status: "KILL"), now: T.started + 100 * T.second) == .restore)
    }

    @Test func thePolicyDiscardsAfterTheCausesTheConfigurationNames() throws {
        var settings = RestorationSettings()
        settings.discardAfter = [.stop, .crash]
        #expect(Self.decide(T.exited(.stop), settings: settings, now: T.started + 600 * T.second) == .discard(.stop))
        #expect(Self.decide(T.exited(.terminate, signal: nil), settings: settings) == .restore)
    }

    @Test func aCrashDuringALaunchThatRestoredAGenerationSetsItAside() {
        let decision = Self.decide(T.run(phase: .launching, restored: 41), T.stop("signal", code: "killed", status: "SEGV"))
        guard case .setAside(let generation, let reason) = decision else {
            Issue.record("expected a set-aside, got \(decision)")
            return
        }
        #expect(generation == 41)
        #expect(reason.contains("before it was ready"))
    }

    @Test func aCrashDuringALaunchWithoutSavedStateSetsNothingAside() {
        #expect(Self.decide(T.run(phase: .launching, restored: nil), T.stop("signal", code: "killed", status: "SEGV")) == .restore)
    }

    @Test func twoQuickAbnormalEndsAfterRestoringTheSameGenerationSetItAside() {
        // The first: a crash 10 s after a launch that restored 7; the run record of the next launch counts it.
        var first = T.run(phase: .running, restored: 7)
        #expect(Self.decide(first, T.stop("signal", code: "killed", status: "SEGV")) == .restore)
        let end = T.determine(first, T.stop("signal", code: "killed", status: "SEGV"))
        let quick = LaunchDecision.quickAbnormalEnds(end: end, previous: first, settings: RestorationSettings(), now: T.started)
        #expect(quick.count == 1 && quick.generation == 7)
        first.quickAbnormal = quick.count
        first.quickGeneration = quick.generation
        first.abnormal = 1
        guard case .setAside(7, _) = Self.decide(first, T.stop("signal", code: "killed", status: "SEGV")) else {
            Issue.record("the second quick crash after restoring 7 sets it aside")
            return
        }
    }

    @Test func aCrashLongAfterTheLaunchDoesNotCountTowardsTheSafeLaunch() {
        var previous = T.run(phase: .running, restored: 7)
        previous.quickAbnormal = 1
        previous.quickGeneration = 7
        let late = T.stop("signal", code: "killed", status: "SEGV", after: 3600)
        #expect(Self.decide(previous, late, now: T.started + 3601 * T.second) == .restore)
    }

    @Test func anUpgradeAlwaysRestores() {
        var settings = RestorationSettings()
        settings.discardAfter = Set(DaemonConfiguration.discardableCauses)
        let end = T.determine(T.run(phase: .running), upgradedFrom: 812)
        #expect(LaunchDecision.decide(end: end, previous: T.run(phase: .running), settings: settings, now: T.started) == .restore)
    }
}

/// The wait before a launch after abnormal ends in a row, and the give-up.
@Suite("The crash loop's backoff")
struct LaunchBackoffTests {
    static func end(_ cause: RunEnd.Cause, inARow count: Int, ago: Duration = .seconds(1)) -> RunEnd {
        var end = RunEnd(cause: cause)
        end.abnormalEndsInARow = count
        end.timeSinceEnd = ago
        return end
    }

    @Test func theWaitDoublesFromTheSecondAbnormalEndUpToTheMaximumThenGivesUp() {
        let settings = RestorationSettings()
        let actions = (1...7).map { LaunchBackoff.action(end: Self.end(.crash, inARow: $0), sameBuild: true, settings: settings) }
        #expect(actions == [.launch, .wait(.seconds(1)), .wait(.seconds(2)), .wait(.seconds(4)), .wait(.seconds(8)), .giveUp, .giveUp])
    }

    @Test func aCleanEndANewBuildOrAnOldEndLaunchesAtOnce() {
        let settings = RestorationSettings()
        #expect(LaunchBackoff.action(end: Self.end(.stop, inARow: 0), sameBuild: true, settings: settings) == .launch)
        #expect(LaunchBackoff.action(end: Self.end(.crash, inARow: 4), sameBuild: false, settings: settings) == .launch)
        #expect(LaunchBackoff.action(end: Self.end(.crash, inARow: 4, ago: .seconds(3600)), sameBuild: true, settings: settings) == .launch)
        #expect(LaunchBackoff.action(end: nil, sameBuild: true, settings: settings) == .launch)
    }

    @Test func aStartAfterAGiveUpWaitsTheMaximumAndTriesOnce() {
        var settings = RestorationSettings()
        settings.backoffMaximum = .seconds(20)
        #expect(LaunchBackoff.action(end: Self.end(.gaveUp, inARow: 6), sameBuild: true, settings: settings) == .wait(.seconds(20)))
    }

    @Test func theWaitIsCappedAndGivingUpCanBeTurnedOff() {
        var settings = RestorationSettings()
        settings.giveUpAfter = 0
        settings.backoffMaximum = .seconds(5)
        #expect(LaunchBackoff.action(end: Self.end(.crash, inARow: 30), sameBuild: true, settings: settings) == .wait(.seconds(5)))
    }
}

/// `[Restoration]` in the configuration file.
@Suite("The restoration settings")
struct RestorationConfigurationTests {
    @Test func theKeysAreReadAndChecked() throws {
        var configuration = DaemonConfiguration()
        try configuration.apply(
            text: "[Restoration]\nDiscardAfter=stop crash\nSafeLaunchAfter=3\nSafeLaunchWithinSec=20\nRestartGapSec=1\nBackoffSec=0.5\nBackoffMaxSec=10\nGiveUpAfter=0\nRestoreSetAside=41\n",
            source: "/etc/x.conf"
        )
        let settings = configuration.restoration
        #expect(settings.discardAfter == [.stop, .crash])
        #expect(settings.safeLaunchAfter == 3)
        #expect(settings.safeLaunchWithin == .seconds(20))
        #expect(settings.restartGap == .seconds(1))
        #expect(settings.backoffInitial == .milliseconds(500))
        #expect(settings.backoffMaximum == .seconds(10))
        #expect(settings.giveUpAfter == 0)
        #expect(settings.restoreSetAside == .generation(41))
        try configuration.apply(text: "[Restoration]\nDiscardAfter=\nRestoreSetAside=newest\n", source: "/etc/x.conf")
        #expect(configuration.restoration.discardAfter.isEmpty)
        #expect(configuration.restoration.restoreSetAside == .newest)
    }

    @Test func aCauseItDoesNotTakeIsAnErrorNamingTheLineAndTheValidCauses() {
        var configuration = DaemonConfiguration()
        #expect {
            try configuration.apply(text: "[Restoration]\n\nDiscardAfter=crash upgrade\n", source: "/etc/x.conf")
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("/etc/x.conf:3: DiscardAfter= names \"upgrade\"") && text.contains("always restores")
                && text.contains("valid: stop, restart, terminate, reboot, crash")
        }
        #expect {
            try configuration.apply(text: "[Restoration]\nRestoreSetAside=last\n", source: "/etc/x.conf")
        } throws: { error in
            "\(error)".hasPrefix("/etc/x.conf:2: RestoreSetAside=last is not a generation")
        }
    }
}
