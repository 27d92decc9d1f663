//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import Logging

/// Job control for a daemon run by hand in a terminal: Ctrl-Z (`SIGTSTP`) backgrounds the application, then stops
/// the process as a shell job stops — once the turn's work is over and the background tasks running after the
/// transition have ended (or expired), as iOS suspends an application only then. A server draining in the background
/// has closed its listener by then, so a stopped server refuses connections instead of queueing them. `fg` (`SIGCONT`)
/// brings it back.
///
/// As the init (PID 1) of a PID namespace — a container run with a terminal — the process cannot stop itself: the
/// kernel drops a stop signal an init sends itself. Ctrl-Z then only backgrounds, as under systemd, and a notice says
/// why the process runs on; SIGCONT or SIGUSR2 brings the application back.
///
/// The router asks for a stop; the host tells it when background tasks change or termination begins. It never ends a
/// loop turn itself: the stop runs as end-of-turn work.
@MainActor
final class JobControl {
    private let application: Application
    private let terminal: TerminalProbe
    private let stopProcess: @MainActor () -> Void
    private let logger: Logger
    /// A Ctrl-Z waiting for the turn, or for the background tasks, before the process stops.
    private var stopPending = false

    init(application: Application, effects: DaemonEffects, logger: Logger) {
        self.application = application
        self.terminal = effects.terminal
        self.stopProcess = effects.stopProcess
        self.logger = logger
    }

    /// Whether SIGTSTP stops the process after backgrounding: in a terminal, outside systemd, unless it is PID 1.
    var stopsOnTerminalStop: Bool {
        isJobInTerminal && terminal.canStopItself
    }

    /// Whether the process runs as a job of a terminal, where Ctrl-Z is expected to stop it.
    private var isJobInTerminal: Bool {
        terminal.startedOnTerminal && terminal.stdinIsTerminal()
    }

    /// Whether a SIGHUP means the terminal went away rather than "reload".
    var terminalHungUp: Bool {
        terminal.startedOnTerminal && terminal.hasHungUp()
    }

    /// Ctrl-Z backgrounded the application: stop the process at the end of this turn, once no background task runs.
    func stopAfterBackground() {
        guard isJobInTerminal else { return }
        guard terminal.canStopItself else {
            // Said after the transition, once the turn's lines are out: whoever pressed Ctrl-Z waits for a stop.
            application.scheduleTurnEndWork { [weak self] in self?.explainWhyItRunsOn() }
            return
        }
        guard !stopPending else { return }
        stopPending = true
        application.scheduleTurnEndWork { [weak self] in self?.stopIfDone(announcing: true) }
    }

    /// A return to the foreground: a stop still waiting is called off.
    func cancelStop() {
        stopPending = false
    }

    /// The set of background tasks changed: a stop waiting for them happens once none runs, at the end of the turn
    /// (a task can end inside a callback).
    func tasksDidChange() {
        guard stopPending, application.backgroundTasks.isEmpty else { return }
        application.scheduleTurnEndWork { [weak self] in self?.stopIfDone(announcing: false) }
    }

    /// Termination began: a Ctrl-Z still waiting for background tasks no longer stops the process.
    func terminationDidBegin() {
        stopPending = false
    }

    private func explainWhyItRunsOn() {
        guard application.applicationState == .background else { return }
        logger.notice(
            """
            in the background, not stopped: as PID 1 of its PID namespace this process cannot stop itself (the kernel \
            drops a stop signal an init sends itself); SIGCONT or SIGUSR2 brings it back to the foreground
            """
        )
    }

    private func stopIfDone(announcing: Bool) {
        guard stopPending else { return }
        guard application.applicationState == .background else {
            stopPending = false
            return
        }
        let tasks = application.backgroundTasks
        guard tasks.isEmpty else {
            if announcing {
                logger.info(
                    """
                    stopping once \(tasks.count) background task(s) end, within the background time of \
                    \(application.backgroundTime.formattedForLog)
                    """,
                    metadata: [LogKey.tasks: .string(tasks.map(\.name).joined(separator: ","))]
                )
            }
            return
        }
        stopPending = false
        logger.info("stopped by SIGTSTP; `fg` or SIGCONT resumes")
        // Stopped, the process writes nothing: the lines of the transition go out first.
        application.trace.flush()
        stopProcess()
    }
}
