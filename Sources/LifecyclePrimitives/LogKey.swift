//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The log metadata keys the package writes, named once for the code that writes them and for every reader. The
/// journal handler writes each as a field in capitals (`lifecycle.seq` is `LIFECYCLE_SEQ`), the text and JSON
/// formats as they are; docs/operations.md and docs/notification-sources.md say what each means to an operator.
package enum LogKey {
    // MARK: A trace event (TraceRecord)

    /// `LIFECYCLE_EVENT`: the callback, such as `applicationDidEnterBackground`.
    package static let event = "lifecycle.event"
    /// `LIFECYCLE_TARGET`: `delegate`, or the path of a controller or view.
    package static let target = "lifecycle.target"
    /// `LIFECYCLE_STATE`: the application state when the callback fired.
    package static let state = "lifecycle.state"
    /// `LIFECYCLE_SEQ`: the event's sequence number.
    package static let sequence = "lifecycle.seq"
    /// `LIFECYCLE_CAUSE`: what asked for the transition (also on a request's and a failure's records).
    package static let cause = "lifecycle.cause"
    /// `LIFECYCLE_DETAIL`: the callback's argument, when it matters.
    package static let detail = "lifecycle.detail"
    /// `LIFECYCLE_SCENE`: the persistent identifier of the scene an event belongs to (``TraceEvent/scene``).
    package static let scene = "lifecycle.scene"

    // MARK: Requests and background tasks

    /// `LIFECYCLE_REQUEST`: a request the application was asked for (`LifecycleRequest`'s name).
    package static let request = "lifecycle.request"
    /// `LIFECYCLE_TASK`: a background task's name.
    package static let task = "lifecycle.task"
    /// `LIFECYCLE_TASK_ID`: a background task's identifier.
    package static let taskID = "lifecycle.task_id"
    /// `LIFECYCLE_TASKS`: the names of the background tasks still running, comma-separated.
    package static let tasks = "lifecycle.tasks"

    // MARK: The daemon

    /// `LIFECYCLE_STALL_EVENT`: the callback that runs too long.
    package static let stallEvent = "lifecycle.stall_event"
    /// `LIFECYCLE_STALL_TARGET`: the target of the callback that runs too long.
    package static let stallTarget = "lifecycle.stall_target"
    /// `LIFECYCLE_STALL_SEQ`: the sequence number of the callback that runs too long.
    package static let stallSequence = "lifecycle.stall_seq"
    /// `LIFECYCLE_STALL_MS`: how long the callback has run, in milliseconds.
    package static let stallMilliseconds = "lifecycle.stall_ms"
    /// `LIFECYCLE_LAME_DUCK`: how long the lame-duck delay before termination lasts.
    package static let lameDuck = "lifecycle.lame_duck"
    /// `LIFECYCLE_UPGRADE`: a step of an upgrade (`requested`, `start`, `started`, `ready`, `handed-over`, …).
    package static let upgrade = "lifecycle.upgrade"
    /// `LIFECYCLE_UPGRADE_PATH`: the executable an upgrade starts.
    package static let upgradePath = "lifecycle.upgrade.path"
    /// `LIFECYCLE_CONTROL`: where the control socket listens.
    package static let control = "lifecycle.control"
    /// `LIFECYCLE_REAPED`: a child process reaped as PID 1.
    package static let reaped = "lifecycle.reaped"
    /// `LIFECYCLE_LOGIND`: the logind event the daemon acts on.
    package static let logind = "lifecycle.logind"
    /// `LIFECYCLE_INHIBIT_HELD_MS`: how long logind's delay inhibitors were held, in milliseconds.
    package static let inhibitHeldMilliseconds = "lifecycle.inhibit_held_ms"
    /// `LIFECYCLE_PSI_SOURCE`: which memory-pressure source is watched (`environment`, `cgroup`, `system-wide`).
    package static let psiSource = "lifecycle.psi_source"
    /// `LIFECYCLE_PSI_SKIPPED`: the memory-pressure sources tried before it, and why each was skipped.
    package static let psiSkipped = "lifecycle.psi_skipped"
    /// `LIFECYCLE_LAST_RUN`: how the last run of the service ended (a `RunEnd.Cause`: `crash`, `stop`, …; `none` at a first launch).
    package static let lastRun = "lifecycle.last_run"
    /// `LIFECYCLE_RESTORED_GENERATION`: the generation of the saved state a launch restored.
    package static let restoredGeneration = "lifecycle.restored_generation"
    /// `LIFECYCLE_SET_ASIDE`: the generation of the saved state a safe launch set aside.
    package static let setAside = "lifecycle.set_aside"
    /// `LIFECYCLE_FAILED_SAVES`: how many saves of the state failed in a row.
    package static let failedSaves = "lifecycle.failed_saves"
    /// `LIFECYCLE_STATE_FILE`: the state file a save could not write.
    package static let stateFile = "lifecycle.state_file"
    /// `LIFECYCLE_ERRNO`: the error number of a failed system call.
    package static let errno = "lifecycle.errno"

    // MARK: Listening sockets (LifecycleServices)

    /// `LIFECYCLE_LISTENER`: a listening socket's name.
    package static let listener = "lifecycle.listener"
    /// `LIFECYCLE_LISTENER_ORIGIN`: where a listening socket came from (`socket-unit`, `fd-store`, `bound`).
    package static let listenerOrigin = "lifecycle.listener.origin"

    // MARK: systemd: logind, memory pressure, the journal

    /// `LIFECYCLE_IGNORED_SIGNALS`: how many bus signals from strangers were ignored so far.
    package static let ignoredSignals = "lifecycle.ignored_signals"
    /// `LIFECYCLE_INHIBIT_WHAT`: what a logind inhibitor is for (`sleep`, `shutdown`).
    package static let inhibitWhat = "lifecycle.inhibit_what"
    /// `LIFECYCLE_INHIBIT_FD`: the descriptor that holds a logind inhibitor.
    package static let inhibitFD = "lifecycle.inhibit_fd"
    /// `LIFECYCLE_OUTAGE_MS`: how long logind or the bus was gone, in milliseconds.
    package static let outageMilliseconds = "lifecycle.outage_ms"
    /// `LIFECYCLE_OUTAGE_CAUSE`: what was gone, `bus` or `logind`.
    package static let outageCause = "lifecycle.outage_cause"
    /// `LIFECYCLE_PSI_EVENTS`: the memory-pressure events seen so far.
    package static let psiEvents = "lifecycle.psi_events"
    /// `LIFECYCLE_PSI_SUPPRESSED`: the memory-pressure events the rate limit dropped so far.
    package static let psiSuppressed = "lifecycle.psi_suppressed"
    /// `LIFECYCLE_PSI_NEXT_IN`: how long until the rate limit lets the next memory warning through.
    package static let psiNextIn = "lifecycle.psi_next_in"
    /// `LIFECYCLE_JOURNAL_DELAYED`: the log lines that reached journald late during an outage.
    package static let journalDelayed = "lifecycle.journal_delayed"
    /// `LIFECYCLE_JOURNAL_DROPPED`: the log lines dropped during an outage of journald.
    package static let journalDropped = "lifecycle.journal_dropped"
    /// `LIFECYCLE_JOURNAL_OUTAGE_MS`: how long journald did not take log lines at once, in milliseconds.
    package static let journalOutageMilliseconds = "lifecycle.journal_outage_ms"
}
