//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

extension Daemon {
    /// Waits `delay` before the launch (the crash loop's backoff), on the main thread, telling systemd to extend the
    /// start's timeout (`EXTEND_TIMEOUT_USEC=`) and feeding the watchdog meanwhile, so connections wait in a socket
    /// unit's backlog instead of the unit failing. Returns false when `SIGTERM` or `SIGINT` came: a stop meanwhile ends
    /// the process at once.
    func waitBeforeLaunch(_ delay: Duration, end: RunEnd?) -> Bool {
        logger.notice(
            "waiting \(delay.formattedForLog) before launching: \(end?.abnormalEndsInARow ?? 0) runs in a row ended abnormally (the last by \(end?.description ?? "?"))"
        )
        let stops = [SIGTERM, SIGINT].filter { configuration.signalMap.requests[UnixSignal(rawValue: $0)] == .terminate }
        let deadline = MonotonicClock.deadline(after: delay)
        while true {
            let now = MonotonicClock.now()
            guard now < deadline else { return true }
            let left = Duration.nanoseconds(Int64(deadline - now))
            var assignments: [NotifyAssignment] = [
                .extendTimeout(left + .seconds(5)),
                .status("waiting \(left.formattedForLog) before launching (\(end?.description ?? "restart backoff"))"),
            ]
            if effects.watchdogInterval != nil { assignments.append(.watchdog) }
            notifications.send(assignments)
            let step = min(left, .seconds(1))
            if stops.isEmpty {
                SystemThread.sleep(for: step)
            } else if SystemThread.takeSignal(stops, waitingUpTo: step) != nil {
                return false
            }
        }
    }

    /// The one line a launch logs about what came back and why: `restored generation 41 written by 1.4.2, 3.2 s before a
    /// crash (SIGSEGV, core dumped)`.
    func logLaunch(_ outcome: StateStore.LoadOutcome, end: RunEnd?) {
        let text = Self.launchLine(outcome: outcome, end: end)
        var metadata: Logger.Metadata = [LogKey.lastRun: .string(end?.cause.rawValue ?? "none")]
        if let generation = outcome.archive?.generation { metadata[LogKey.restoredGeneration] = .string(String(generation)) }
        if let (generation, _) = outcome.setAside { metadata[LogKey.setAside] = .string(String(generation)) }
        if outcome.setAside != nil {
            logger.warning("\(text)", metadata: metadata)
        } else {
            logger.notice("\(text)", metadata: metadata)
        }
    }

    /// The launch line's text (see ``logLaunch(_:end:)``).
    static func launchLine(outcome: StateStore.LoadOutcome, end: RunEnd?) -> String {
        var head: String
        var writtenAt: Int64?
        if let archive = outcome.archive {
            head = "restored generation \(archive.generation)"
            if outcome.restoredSetAside != nil { head += " (set aside earlier, restored on purpose)" }
            if let version = archive.writerVersion { head += " written by \(version)" }
            writtenAt = archive.savedAt
        } else if let (generation, kept) = outcome.setAside {
            head = "safe launch: generation \(generation) set aside, launching without saved state"
            if let kept { head += " (kept as \(kept))" }
        } else if let (generation, _) = outcome.discarded {
            head = "generation \(generation) discarded, launching without saved state"
        } else {
            head = "launching without saved state"
        }
        guard let end else { return head + "; no record of an earlier run" }
        var why = end.description
        if end.endedDuringLaunch { why += " during its launch" }
        if end.abnormalEndsInARow > 1 { why += ", \(end.abnormalEndsInARow) abnormal ends in a row" }
        if let writtenAt, let since = end.timeSinceEnd, outcome.archive != nil {
            // The end's moment on the wall clock is now less how long ago it was.
            let ended = WallClock.microseconds() - since.microseconds
            let before = Duration.microseconds(max(0, ended - writtenAt))
            return head + ", \(Self.readable(before)) before \(why)"
        }
        let ago = end.timeSinceEnd.map { " \(Self.readable($0)) ago" } ?? ""
        return head + "; the last run ended by \(why)\(ago)"
    }

    /// A duration as a person reads it in the launch line: `3.2 s`, `899 ms`, `0.4 ms`.
    static func readable(_ duration: Duration) -> String {
        let micros = duration.microseconds
        if micros >= 1_000_000 { return duration.formattedForLog }
        if micros >= 1000 { return "\((micros + 500) / 1000) ms" }
        return "0.\(max(1, micros / 100)) ms"
    }

    /// What `STATUS=` adds while a generation is set aside: the reason readiness came without the saved state.
    var statusNote: String {
        guard let (generation, _) = launchOutcome?.setAside else { return "" }
        return " (safe launch: saved state generation \(generation) set aside)"
    }

    /// The status line systemd shows.
    var statusLine: String { application.statusText + statusNote }

    /// Writes the exit record once the tree is torn down (``RunKeeper/exited(cause:signal:status:)``): why this process
    /// ended cleanly. A process that handed over, or a successor that never became main, writes nothing:
    /// the record is the service's main process's.
    func recordCleanExit() {
        guard let runKeeper, role.isMain else { return }
        let cause = terminationCause?.rawValue ?? ""
        let uptime = Duration.microseconds(WallClock.microseconds() - runKeeper.record.started).formattedForLog
        let saved = application.restorationGeneration > 0 ? "; saved state generation \(application.restorationGeneration)" : ""
        if let failure = application.terminationFailure {
            let message = "\(options.programName) terminated as a failure (exit status 75) after \(uptime): \(failure)\(saved)"
            runKeeper.exited(cause: .failure, signal: nil, status: ExitStatus.temporaryFailure.rawValue, message: message)
        } else if cause == "control" {
            let message = "\(options.programName) terminated cleanly (lifecyclectl terminate) after \(uptime)\(saved)"
            runKeeper.exited(cause: .terminate, signal: nil, status: 0, message: message)
        } else {
            let signal = cause.hasPrefix("signal:") ? String(cause.dropFirst("signal:".count)) : nil
            let message = "\(options.programName) terminated cleanly (\(signal ?? cause)) after \(uptime)\(saved)"
            runKeeper.exited(cause: .stop, signal: signal, status: 0, message: message)
        }
    }

    /// `GetStatus`'s `lastRun`: how the last run ended and what this launch did with the saved state.
    var lastRunStatus: JSONObject? {
        guard let runKeeper else { return nil }
        var object: JSONObject = [:]
        if let end = runKeeper.end {
            object["cause"] = .string(end.cause.rawValue)
            object["description"] = .string(end.description)
            object["abnormalInARow"] = .int(end.abnormalEndsInARow)
            object["duringLaunch"] = .bool(end.endedDuringLaunch)
            if let signal = end.signal { object["signal"] = .string(signal) }
            if let status = end.exitStatus { object["exitStatus"] = .int(status) }
            if let since = end.timeSinceEnd { object["endedSecBeforeLaunch"] = .seconds(since) }
            if let version = end.version { object["version"] = .string(version) }
        } else {
            object["cause"] = "none"
            object["description"] = "no record of an earlier run"
            object["abnormalInARow"] = 0
            object["duringLaunch"] = false
        }
        if let outcome = launchOutcome {
            if let generation = outcome.archive?.generation { object["restoredGeneration"] = .int(generation) }
            if let (generation, kept) = outcome.setAside {
                object["setAsideGeneration"] = .int(generation)
                if let kept { object["setAsideFile"] = .string(kept) }
            }
            if let (generation, _) = outcome.discarded { object["discardedGeneration"] = .int(generation) }
        }
        return object
    }
}
