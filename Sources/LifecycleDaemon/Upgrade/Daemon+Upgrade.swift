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

#if canImport(Glibc)
import Glibc
#endif

extension Daemon {
    /// The longest an upgrade waits for the new process to serve, unless the request says otherwise.
    static let defaultUpgradeTimeout = Duration.seconds(30)

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

    /// The control socket's listening descriptor, for an upgrade to hand over.
    var controlSocketToHandOver: Int32? { control?.listeningSocket }
    /// The control socket file this process is to remove when it stops, if it bound one.
    var controlSocketPath: String? { control?.boundPath }

    /// Upgrades to the service's binary as it is on disk now (``UpgradeCoordinator``); `completion` runs once, after
    /// the hand-over or with why there was none (the process then serves on, unchanged).
    func startUpgrade(
        timeout: Duration?,
        completion: @escaping (Result<UpgradeCoordinator.HandOver, UpgradeFailure>) -> Void
    ) {
        if let upgrade, !upgrade.isFinished {
            return completion(.failure(UpgradeFailure(reason: "an upgrade is already in progress")))
        }
        guard handedOverTo == nil else {
            return completion(.failure(UpgradeFailure(reason: "this process has handed over to another one already")))
        }
        guard isMainProcess else {
            return completion(
                .failure(
                    UpgradeFailure(reason: "this process is not the main process yet: an upgrade is handing over to it")
                )
            )
        }
        guard !application.isTerminating else {
            return completion(.failure(UpgradeFailure(reason: "the application is terminating")))
        }
        guard application.applicationState != .notRunning else {
            return completion(.failure(UpgradeFailure(reason: "the application has not launched yet")))
        }
        guard effects.underSystemd, effects.environment["NOTIFY_SOCKET"] != nil else {
            // Without a service manager nobody would supervise the new process, nor could it take over as the main one.
            return completion(
                .failure(UpgradeFailure(reason: "an upgrade needs systemd (a Type=notify unit): no NOTIFY_SOCKET"))
            )
        }
        guard let loop else { return completion(.failure(UpgradeFailure(reason: "this daemon has no main loop"))) }
        upgrade = UpgradeCoordinator.start(
            daemon: self,
            loop: loop,
            timeout: timeout ?? Self.defaultUpgradeTimeout,
            completion: completion
        )
    }

    /// The new process is the main process now: this one tells systemd nothing more, stops accepting control
    /// connections (the new one accepts on its copy), leaves the saved state to it, and terminates: its servers stop
    /// accepting and drain, as in any termination.
    func upgradeDidHandOver(to handOver: UpgradeCoordinator.HandOver) {
        handedOverTo = handOver
        isMainProcess = false
        notifications.isMainProcess = false
        loop?.disableWatchdog()
        stateStore?.isOwner = false
        control?.handOver()
        logger.info(
            "upgrade: pid \(handOver.pid) is the service's main process; this process (pid \(handOver.previousPID)) stops accepting, drains and exits",
            metadata: [LogKey.upgrade: "handed-over"]
        )
        application.requestTermination(cause: UpgradeCoordinator.cause)
    }

    /// An upgrade is over and its new process reaped, or it never started one.
    func upgradeDidEnd(_ ended: UpgradeCoordinator) {
        if upgrade === ended, handedOverTo == nil { upgrade = nil }
    }

    /// Launched as an upgrade's new process: reports that it serves once every listener it opened has a server
    /// accepting on it (none need to in the background).
    func reportReadyWhenServing(_ handOver: UpgradeHandOver) {
        let table = application.listeners
        let check: @MainActor () -> Void = { [unowned self, unowned handOver] in
            guard handOver.phase == .launching else { return }
            let serving =
                application.applicationState == .background
                || table.listeners.allSatisfy { $0.servers > 0 || $0.isShutDown }
            guard serving else { return }
            table.didChange = nil
            logger.info(
                "upgrade: launched and serving; waiting for pid \(handOver.previousPID) to hand over",
                metadata: [LogKey.upgrade: "ready"]
            )
            deliverTraceLines()
            handOver.reportReady()
        }
        table.didChange = check
        check()
    }

    /// The running process made this one the main process: from now on systemd hears from it (`READY=1`, the status,
    /// the watchdog), and what it bound is kept in the file descriptor store.
    func becomeMainProcess() {
        guard let handOver else { return }
        isMainProcess = true
        notifications.isMainProcess = true
        self.handOver = nil
        if effects.watchdogInterval != nil {
            do {
                _ = try loop?.enableWatchdog()
            } catch {
                logger.warning("upgrade: cannot start the watchdog's pings: \(error)")
            }
        }
        let store = FileDescriptorStore(notifier: .fromEnvironment())
        for listener in pendingListenerStores { storeListener(listener, in: store) }
        pendingListenerStores = []
        logger.info(
            "upgrade: this process (pid \(getpid())) is the service's main process, after pid \(handOver.previousPID)",
            metadata: [LogKey.upgrade: "main"]
        )
        var assignments: [NotifyAssignment] = [.ready, .status(application.statusText)]
        if effects.watchdogInterval != nil { assignments.append(.watchdog) }
        deliverTraceLines()
        notifications.send(assignments)
    }
}
