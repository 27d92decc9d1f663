//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// An upgrade, seen from the running process (docs/operations.md, "Restarts, upgrades and the background without
/// dropping a connection"): it starts the service's binary as it is now on disk beside itself, with the listening
/// sockets, the control socket and the saved state; waits until the new process has launched, restored and serves;
/// makes it systemd's main process (`MAINPID=`, then `BARRIER=1`); and only then stops accepting, drains and exits.
/// A new process that exits first, or is not ready within the deadline, is stopped, and this one serves on as if
/// nothing had been asked.
@MainActor
final class UpgradeCoordinator {
    /// An upgrade that handed over.
    struct HandOver: Sendable, Hashable {
        /// This process.
        var previousPID: Int32
        /// The new main process.
        var pid: Int32
        /// From its start to its report that it serves.
        var readyAfter: Duration
    }

    private unowned let daemon: Daemon
    private let loop: MainLoop
    private let logger: Logger
    private let timeout: Duration
    private var completion: ((Result<HandOver, UpgradeFailure>) -> Void)?
    private var child: KeptProcess?
    private var channel: Int32 = -1
    private var channelSource: MainLoop.Source?
    private var exitSource: MainLoop.Source?
    private var deadline: MainLoop.Source?
    private var killTimer: MainLoop.Source?
    private var startedAt = ContinuousClock.now
    /// Set once the upgrade is over, either way; a failed one still waits for the child to exit (to reap it).
    private var failure: UpgradeFailure?
    private(set) var isFinished = false
    /// The pid of a new process that failed and is being stopped (`SIGTERM`, then `SIGKILL` 2 s later), until it exits.
    var pidBeingStopped: Int32? { failure != nil && !isFinished ? child?.pid : nil }

    private init(
        daemon: Daemon,
        loop: MainLoop,
        timeout: Duration,
        completion: @escaping (Result<HandOver, UpgradeFailure>) -> Void
    ) {
        self.daemon = daemon
        self.loop = loop
        self.logger = daemon.logger
        self.timeout = timeout
        self.completion = completion
    }

    /// Starts an upgrade; `completion` runs once: after the hand-over, or with why it failed.
    static func start(
        daemon: Daemon,
        loop: MainLoop,
        timeout: Duration,
        completion: @escaping (Result<HandOver, UpgradeFailure>) -> Void
    ) -> UpgradeCoordinator {
        let upgrade = UpgradeCoordinator(daemon: daemon, loop: loop, timeout: timeout, completion: completion)
        upgrade.begin()
        return upgrade
    }

    private func begin() {
        guard let executable = daemon.executablePath else {
            fail("the path of this program is unknown (/proc/self/exe could not be read at start)")
            return
        }
        // Checked before anything is saved or handed over: the common mistake (a path that is not there yet, or not
        // executable) costs nothing.
        guard access(executable, X_OK) == 0 else {
            fail("cannot start \(executable): \(String(cString: strerror(errno)))")
            return
        }
        let application = daemon.application
        // The tree as it is now, for the new process to restore: saved as any save is (the state directory and the file
        // descriptor store), and handed over in a memfd, as systemd would hand over the store.
        daemon.lastSavedArchive = nil
        application.preserveState(cause: UpgradeCoordinator.cause)
        daemon.stateStore?.finishWrites(within: .seconds(2))
        var passed: [(name: String, descriptor: Int32)] = []
        var closeAfterSpawn: [Int32] = []
        defer { for descriptor in closeAfterSpawn { close(descriptor) } }
        let listeners = application.listeners.descriptorsToHandOver
        for listener in listeners { passed.append((listener.name, listener.descriptor)) }
        if let control = daemon.controlSocketToHandOver { passed.append((ListenerNames.control, control)) }
        if let archive = daemon.lastSavedArchive, daemon.stateStore?.usesFileDescriptorStore == true {
            let name = StateStore.storePrefix + String(archive.generation)
            do {
                let memfd = try FileDescriptorStore.sealedMemfd(archive.encodedState(), name: name)
                closeAfterSpawn.append(memfd)
                passed.append((name, memfd))
            } catch {
                logger.warning(
                    "upgrade: the saved state cannot be handed over in memory (\(error)); the new process reads it from the state directory"
                )
            }
        }
        var pair: [Int32] = [-1, -1]
        let socketType = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        guard socketpair(AF_UNIX, socketType, 0, &pair) == 0 else {
            fail("cannot make the channel to the new process: \(String(cString: strerror(errno)))")
            return
        }
        channel = pair[0]
        closeAfterSpawn.append(pair[1])
        passed.append((UpgradeEnvironment.channelName, pair[1]))

        var environment = daemon.effects.environment.filter { !UpgradeEnvironment.replaced.contains($0.key) }
        environment["LISTEN_FDS"] = String(passed.count)
        environment["LISTEN_FDNAMES"] = passed.map(\.name).joined(separator: ":")
        environment[UpgradeEnvironment.previousPID] = String(getpid())
        environment[UpgradeEnvironment.listenerOrigins] = UpgradeEnvironment.encode(
            origins: listeners.map { ($0.name, $0.origin) }
        )
        if let path = daemon.controlSocketPath { environment[UpgradeEnvironment.controlPath] = path }
        environment[UpgradeEnvironment.applicationState] = application.applicationState.rawValue
        var pidVariables = ["LISTEN_PID"]
        if environment["WATCHDOG_USEC"] != nil { pidVariables.append("WATCHDOG_PID") }

        logger.info(
            "upgrade: starting \(executable) beside this process (pid \(getpid())), handing over \(listeners.count) listener(s)",
            metadata: [LogKey.upgrade: "start", LogKey.upgradePath: .string(executable)]
        )
        startedAt = .now
        do {
            child = try KeptProcess(
                path: executable,
                arguments: CommandLine.arguments,
                environment: environment,
                pidVariables: pidVariables,
                descriptors: passed.map(\.descriptor)
            )
        } catch {
            close(channel)
            channel = -1
            fail("cannot start \(executable): \(error.errno)")
            return
        }
        guard let child else { return }
        logger.info(
            "upgrade: pid \(child.pid) started; waiting until it serves (at most \(timeout.formattedForLog))",
            metadata: [LogKey.upgrade: "started"]
        )
        do {
            channelSource = try loop.addIO(fd: channel, events: .readable) { [unowned self] _ in
                MainActor.assumeIsolated { readChannel() }
            }
            exitSource = try loop.addIO(fd: child.statusDescriptor, events: .readable) { [unowned self] _ in
                MainActor.assumeIsolated { childExited() }
            }
            deadline = try loop.addTimer(after: timeout) { [unowned self] in
                MainActor.assumeIsolated { deadlinePassed() }
            }
        } catch {
            stopChild(because: "cannot watch the new process (\(error)); pid \(child.pid) was stopped")
        }
    }

    /// Why the new process is stopped, once known; the process is then stopped, and the failure reported.
    private func stopChild(because reason: String) {
        guard failure == nil, !isFinished else { return }
        failure = UpgradeFailure(reason: reason)
        channelSource?.cancel()
        channelSource = nil
        deadline?.cancel()
        deadline = nil
        if channel >= 0 {
            UpgradeMessage.abort.send(on: channel)
            close(channel)
            channel = -1
        }
        child?.signal(SIGTERM)
        // A process that ignores SIGTERM (stuck in its launch) is killed.
        killTimer = try? loop.addTimer(after: .seconds(2)) { [weak self] in
            MainActor.assumeIsolated { self?.child?.signal(SIGKILL) }
        }
        report(failure!)
        if child?.isReleased != false {
            // Released to the service manager already: its exit is not this process's to see.
            isFinished = true
            daemon.upgradeDidEnd(self)
        }
    }

    /// Calls the upgrade off before it handed over: the new process is stopped.
    func cancel(because reason: String) {
        guard !isFinished, failure == nil else { return }
        stopChild(because: "\(reason); the new process (pid \(child?.pid ?? 0)) was stopped")
    }

    private func readChannel() {
        switch UpgradeMessage.read(from: channel) {
        case .nothing:
            return
        case .message(.ready):
            handOver()
        case .message(let other):
            stopChild(
                because: "the new process sent \"\(other.text)\" where \"ready\" was expected; it was stopped"
            )
        case .garbled(let text):
            stopChild(
                because: "the new process sent \(text.debugDescription) where \"ready\" was expected; it was stopped"
            )
        case .closed:
            // It exited, or closed its end: its exit says which.
            channelSource?.cancel()
            channelSource = nil
        }
    }

    private func handOver() {
        guard let child, failure == nil, !isFinished else { return }
        let readyAfter = ContinuousClock.now - startedAt
        deadline?.cancel()
        deadline = nil
        logger.info(
            "upgrade: pid \(child.pid) serves after \(readyAfter.wholeMilliseconds) ms; making it the main process",
            metadata: [LogKey.upgrade: "ready"]
        )
        // No longer this process's grandchild but the service manager's child: systemd supervises a main process fully
        // only when it is its own (it waits for its exit, and sends it SIGTERM on stop).
        exitSource?.cancel()
        exitSource = nil
        child.release()
        do {
            try daemon.effects.notify([.mainPID(child.pid)])
        } catch {
            // Not sent: systemd still has this process as the main one.
            stopChild(because: "cannot tell systemd that pid \(child.pid) is the main process (\(error)); it was stopped")
            return
        }
        let barrierTimeout = Self.barrierTimeout(watchdog: daemon.effects.watchdogInterval)
        do {
            try daemon.effects.notifyBarrier(barrierTimeout)
        } catch {
            // Sent, but not confirmed in time (a busy service manager): systemd reads its notification socket in order,
            // so it takes the new pid when it gets there, and what the new process sends from now on comes after. To
            // call the upgrade off now would stop the process systemd is about to take as the main one, and the service
            // would end with it: this process could not claim it back, as its own MAINPID= would come after and, with
            // NotifyAccess=main, be refused. So the hand-over goes on.
            logger.warning(
                "upgrade: systemd did not confirm pid \(child.pid) as the main process within \(barrierTimeout.formattedForLog) (\(error)); it has the message, handing over",
                metadata: [LogKey.upgrade: "unconfirmed"]
            )
        }
        // The state this process is in now, not when the upgrade began: a request it took while the new process
        // launched (SIGUSR1, a sleep, `lifecyclectl inactive`) carries over.
        guard UpgradeMessage.main(daemon.application.applicationState).send(on: channel) else {
            // Gone between its report and now: systemd's MAINPID names a process that has exited, which systemd
            // treats as the service's end; nothing this process can undo.
            stopChild(because: "pid \(child.pid) went away while it was made the main process")
            return
        }
        isFinished = true
        channelSource?.cancel()
        channelSource = nil
        close(channel)
        channel = -1
        let result = HandOver(previousPID: getpid(), pid: child.pid, readyAfter: readyAfter)
        completion?(.success(result))
        completion = nil
        daemon.upgradeDidHandOver(to: result)
    }

    private func childExited() {
        guard let child, child.readStatus() else { return }
        exitSource?.cancel()
        exitSource = nil
        killTimer?.cancel()
        killTimer = nil
        if failure == nil, !isFinished {
            let status =
                child.exitCode.map { $0 > 128 ? "was killed by signal \($0 - 128)" : "exited with status \($0)" }
                ?? "exited"
            stopChild(because: "the new process (pid \(child.pid)) \(status) before it was ready")
        }
        isFinished = true
        daemon.upgradeDidEnd(self)
    }

    private func deadlinePassed() {
        deadline = nil
        stopChild(
            because:
                "the new process (pid \(child?.pid ?? 0)) was not ready within \(timeout.formattedForLog); it was stopped"
        )
    }

    private func fail(_ reason: String) {
        failure = UpgradeFailure(reason: reason)
        isFinished = true
        report(failure!)
        daemon.upgradeDidEnd(self)
    }

    private func report(_ failure: UpgradeFailure) {
        var failure = failure
        failure.servesOn = !daemon.isStopping
        logger.error("upgrade failed: \(failure)", metadata: [LogKey.upgrade: "failed"])
        completion?(.failure(failure))
        completion = nil
    }

    /// How long the hand-over waits for systemd to confirm the new main process (`BARRIER=1`): 5 s, and at most a
    /// quarter of the watchdog's interval, since the main loop and its pings wait with it (systemd answers in a
    /// millisecond or two).
    nonisolated static func barrierTimeout(watchdog: Duration?) -> Duration {
        guard let watchdog else { return .seconds(5) }
        return max(.milliseconds(10), min(.seconds(5), watchdog / 4))
    }

    /// The cause the running process's events carry from the upgrade on (the state it saves, its termination).
    static let cause = Cause(rawValue: "upgrade")
}
