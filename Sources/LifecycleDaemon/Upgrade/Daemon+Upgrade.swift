//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

extension Daemon {
    /// The path an upgrade starts: the program's own name when it is absolute — what `ExecStart=` names, so a
    /// `current` symlink switched to a new release leads to the new release — and otherwise the file that was
    /// executed, as `/proc/self/exe` names it at start (a relative name depends on a directory the daemon may have
    /// left).
    static func upgradePath(arguments: [String] = CommandLine.arguments) -> String? {
        if let first = arguments.first, first.hasPrefix("/") { return first }
        return readExecutablePath()
    }

    /// The program's path, as `/proc/self/exe` names it now (at start: the file that was executed).
    static func readExecutablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        var path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // Replaced on disk since: the kernel appends this to the old file's name; the path names the new one.
        if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
        return path
    }

    /// Whether this process is on its way out: terminating, or in the lame-duck delay before it.
    var isStopping: Bool { application.isTerminating || lameDuck.isDelaying }

    // MARK: The running process's side

    /// Upgrades to the service's binary as it is on disk now (``UpgradeToSuccessor``); `completion` runs once, after
    /// the hand-over or with why there was none (the process then serves on, unchanged, unless it is terminating).
    func startUpgrade(
        timeout: Duration?,
        completion: @escaping (Result<UpgradeToSuccessor.HandOver, UpgradeError>) -> Void
    ) {
        if var refusal = reasonAnUpgradeCannotStart() {
            refusal.servesOn = !isStopping
            logger.error("upgrade refused: \(refusal)", metadata: [LogKey.upgrade: "failed"])
            return completion(.failure(refusal))
        }
        guard let upgradeEffects else { return }
        let started = UpgradeToSuccessor.start(
            handing: handingForUpgrade(executable: upgradeEffects.executablePath),
            effects: upgradeEffects,
            timeout: timeout ?? ControlProtocol.defaultUpgradeTimeout,
            watchdogInterval: effects.watchdogInterval,
            logger: logger,
            host: UpgradeToSuccessor.Host(
                applicationState: { [unowned self] in application.applicationState },
                isStopping: { [unowned self] in isStopping },
                didStart: { [unowned self] pid in role = .predecessor(of: pid) },
                didHandOver: { [unowned self] handOver in upgradeDidHandOver(to: handOver) },
                didFail: { [unowned self] _ in if case .predecessor = role { role = .main } },
                didEnd: { [unowned self] in upgradeDidEnd() }
            ),
            completion: completion
        )
        // One that failed at once (nothing could be started) is over already.
        upgrade = started.isFinished ? nil : started
    }

    /// Why this process cannot start an upgrade now, or nil.
    func reasonAnUpgradeCannotStart() -> UpgradeError? {
        if let upgrade, !upgrade.isFinished {
            if let pid = upgrade.pidBeingStopped { return UpgradeError(.previousStillStopping, pid: pid) }
            return UpgradeError(.inProgress)
        }
        switch role {
        case .handedOver: return UpgradeError(.handedOver)
        case .successor: return UpgradeError(.notMainProcess)
        case .main, .mainDraining, .predecessor: break
        }
        if application.isTerminating { return UpgradeError(.terminating) }
        // The new process would never hear of the termination asked for: systemd sends SIGTERM once.
        if lameDuck.isDelaying { return UpgradeError(.lameDuck) }
        if application.applicationState == .notRunning { return UpgradeError(.notLaunched) }
        // Without a service manager nobody would supervise the new process, nor could it take over as the main one.
        if !effects.underSystemd || effects.environment["NOTIFY_SOCKET"] == nil {
            return UpgradeError(.noServiceManager)
        }
        // A container's init: the kernel ends every process of the namespace with it, the new one included.
        if effects.isContainerInit { return UpgradeError(.containerInit) }
        if upgradeEffects == nil { return UpgradeError(.noMainLoop) }
        return nil
    }

    /// What the successor is handed: the tree's state saved now (as any save is: the state directory and the file
    /// descriptor store, and in a sealed in-memory file for the successor), the listening sockets, the control socket.
    private func handingForUpgrade(executable: String?) -> UpgradeToSuccessor.Handing {
        let archive = application.preserveState(cause: UpgradeToSuccessor.cause)
        // The generation this version wrote stays for a rollback: the successor may be a newer version, whose saves
        // this one could not read.
        if let archive { stateStore?.keepOwnForRollback(archive) }
        stateStore?.finishWrites(within: .seconds(2))
        let savedState = archive.flatMap { stateStore?.stateToHandOver($0) }
        return UpgradeToSuccessor.Handing(
            executable: executable,
            arguments: CommandLine.arguments,
            environment: effects.environment,
            listeners: listenersToHandOver(),
            controlSocket: control?.listeningSocket,
            controlPath: control?.boundPath,
            savedState: savedState,
            applicationState: application.applicationState
        )
    }

    /// The successor is the main process now: this one tells systemd nothing more, stops accepting control
    /// connections (the successor accepts on its copy), leaves the saved state and the listeners' state to it, and
    /// terminates: its servers stop accepting and drain, as in any termination.
    private func upgradeDidHandOver(to handOver: UpgradeToSuccessor.HandOver) {
        role = .handedOver(to: handOver.pid)
        loop?.disableWatchdog()
        control?.handOver()
        application.listeners.handOver()
        logger.info(
            "upgrade: pid \(handOver.pid) is the service's main process; this process (pid \(handOver.previousPID)) stops accepting, drains and exits",
            metadata: [LogKey.upgrade: "handed-over"]
        )
        application.requestTermination(cause: UpgradeToSuccessor.cause)
    }

    /// An upgrade is over and its successor reaped, or it never started one.
    private func upgradeDidEnd() {
        if case .handedOver = role { return }
        upgrade = nil
    }

    // MARK: The new process's side

    /// Started by an upgrade: this process is its predecessor's successor until the predecessor hands over.
    func followUpgrade(_ incoming: UpgradeFromPredecessor) throws(SystemCallError) {
        guard let upgradeEffects else { return }
        logger.info(
            "started by an upgrade from pid \(incoming.previousPID): launching, then taking over once it serves",
            metadata: [LogKey.upgrade: "launching"]
        )
        try incoming.start(effects: upgradeEffects) { [unowned self] runningState in
            becomeMainProcess(runningState: runningState)
        } onAbandon: { [unowned self] why in
            logger.warning("upgrade called off: \(why); terminating", metadata: [LogKey.upgrade: "abandoned"])
            application.requestTermination(cause: UpgradeToSuccessor.cause)
        } onPredecessorExit: { [unowned self] in
            predecessorDidExit()
        }
    }

    /// Launched as an upgrade's successor: reports that it serves once every listener it opened has a server
    /// accepting on it (none need to in the background).
    func reportReadyWhenServing(_ incoming: UpgradeFromPredecessor) {
        let table = application.listeners
        var observation: ListenerTable.Observation?
        let check: @MainActor () -> Void = { [unowned self, unowned incoming] in
            guard incoming.machine.state == .launching else { return }
            let serving =
                application.applicationState == .background
                || table.listeners.allSatisfy { $0.servers > 0 || $0.isShutDown }
            guard serving else { return }
            observation?.cancel()
            logger.info(
                "upgrade: launched and serving; waiting for pid \(incoming.previousPID) to hand over",
                metadata: [LogKey.upgrade: "ready"]
            )
            deliverTraceLines()
            incoming.serving()
        }
        observation = table.observe { _ in check() }
        check()
    }

    /// The predecessor made this one the main process: from now on systemd hears from it (`READY=1`, the status,
    /// the watchdog), what it bound is kept in the file descriptor store, the state is saved by it and the control
    /// socket's file is its to remove. `runningState`, the state the predecessor was in at the hand-over, is taken:
    /// what was asked of it while this one launched is not lost. Until the predecessor has drained and exited, a
    /// background task holds a stop: systemd's `KillMode=mixed` kills what is left of the service once the main
    /// process exits, and the predecessor's requests would go with it.
    private func becomeMainProcess(runningState: ApplicationState?) {
        guard let incoming else { return }
        role = incoming.predecessorIsGone ? .main : .mainDraining(incoming.previousPID)
        if control?.takeOver() == false { control = nil }
        if effects.watchdogInterval != nil {
            do {
                _ = try loop?.enableWatchdog()
            } catch {
                logger.warning("upgrade: cannot start the watchdog's pings: \(error)")
            }
        }
        listenerStore?.becameMain()
        logger.info(
            "upgrade: this process (pid \(getpid())) is the service's main process, after pid \(incoming.previousPID)",
            metadata: [LogKey.upgrade: "main"]
        )
        runKeeper?.becameMain(restored: launchOutcome?.archive?.generation, settings: configuration.restoration)
        var assignments: [NotifyAssignment] = [.ready, .status(statusLine)]
        if effects.watchdogInterval != nil { assignments.append(.watchdog) }
        deliverTraceLines()
        notifications.send(assignments)
        if case .mainDraining(let draining) = role {
            if incoming.watchesPredecessor {
                predecessorDrain = application.beginBackgroundTask(withName: "upgrade: pid \(draining) drains") {
                    [unowned self] in
                    logger.warning("upgrade: pid \(draining) still drains; no longer waiting for it")
                    endPredecessorDrain()
                }
            } else {
                logger.warning(
                    "upgrade: pid \(draining) cannot be watched (no pidfd): a stop now does not wait for it to drain"
                )
                endPredecessorDrain()
            }
        } else {
            self.incoming = nil
            receivePredecessorFinalState(incoming.previousPID)
        }
        takeState(runningState, from: incoming.previousPID)
    }

    /// The predecessor exited: its drain is over.
    private func predecessorDidExit() {
        guard case .mainDraining(let draining) = role else { return }
        logger.info("upgrade: pid \(draining) has drained and exited", metadata: [LogKey.upgrade: "drained"])
        receivePredecessorFinalState(draining)
        endPredecessorDrain()
    }

    private func endPredecessorDrain() {
        role = .main
        incoming = nil
        let task = predecessorDrain
        predecessorDrain = .invalid
        application.endBackgroundTask(task)
    }

    /// Moves the application to the state the predecessor was in at the hand-over, through the same requests a
    /// signal or `lifecyclectl` makes, with the upgrade's cause.
    private func takeState(_ state: ApplicationState?, from previousPID: Int32) {
        guard let state, state != application.applicationState else { return }
        let request: LifecycleRequest? =
            switch state {
            case .background: .enterBackground
            case .inactive: .resignActive
            case .active: .becomeActive
            case .notRunning, .terminated: nil
            }
        guard let request else { return }
        logger.info(
            "upgrade: pid \(previousPID) was \(state) at the hand-over; this process follows",
            metadata: [LogKey.upgrade: "state"]
        )
        application.submit(request, cause: UpgradeToSuccessor.cause)
    }
}
