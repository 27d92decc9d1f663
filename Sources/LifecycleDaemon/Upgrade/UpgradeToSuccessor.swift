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

/// An upgrade, seen from the running process (docs/operations.md, "Restarts, upgrades and the background without
/// dropping a connection"): it starts the service's binary as it is now on disk beside itself, with the listening
/// sockets, the control socket and the saved state; waits until the successor has launched, restored and serves;
/// makes it systemd's main process (`MAINPID=`, then `BARRIER=1`); and only then stops accepting, drains and exits.
/// A successor that exits first, or is not ready within the deadline, is stopped, and this process serves on as if
/// nothing had been asked. The other side is ``UpgradeFromPredecessor``.
///
/// What happens when is decided by ``StateMachine``, a value; this object performs its actions through
/// ``UpgradeEffects`` and feeds back what came of them.
@MainActor
final class UpgradeToSuccessor {
    /// An upgrade that handed over.
    struct HandOver: Sendable, Hashable {
        /// This process.
        var previousPID: Int32
        /// The new main process.
        var pid: Int32
        /// From its start to its report that it serves.
        var readyAfter: Duration
    }

    /// What the successor is given, taken from the daemon when the upgrade begins.
    struct Handing {
        /// The program to start (``Daemon/upgradePath(arguments:)``), nil when unknown.
        var executable: String?
        /// Its command line: this process's.
        var arguments: [String]
        /// This process's environment as systemd set it; the upgrade replaces what names this process.
        var environment: [String: String]
        /// The listening sockets, by name, with where each came from and whether it is shut down.
        var listeners: [ListenerHandOver]
        /// The control socket's listening descriptor, and the path of its file, if any.
        var controlSocket: Int32?
        var controlPath: String?
        /// The state saved for the successor, if any, and its generation.
        var savedState: (bytes: [UInt8], generation: Int)?
        /// The application state now: the successor launches into the background if this process is there.
        var applicationState: ApplicationState
    }

    /// How the daemon hears of the upgrade's progress.
    struct Host {
        /// The application state now (told to the successor at the hand-over).
        var applicationState: @MainActor () -> ApplicationState
        /// Whether this process is on its way out (a failure's message says it will not serve on).
        var isStopping: @MainActor () -> Bool
        /// The successor runs: the process is its predecessor now.
        var didStart: @MainActor (Int32) -> Void
        /// The successor is the main process.
        var didHandOver: @MainActor (HandOver) -> Void
        /// The upgrade failed (the successor may still be being stopped).
        var didFail: @MainActor (UpgradeError) -> Void
        /// The upgrade is over, either way, and nothing is left to reap.
        var didEnd: @MainActor () -> Void
    }

    private let effects: UpgradeEffects
    private let logger: Logger
    private let timeout: Duration
    private let watchdogInterval: Duration?
    private let host: Host
    private var completion: ((Result<HandOver, UpgradeError>) -> Void)?
    private(set) var machine = StateMachine()
    private var successor: (any SuccessorProcess)?
    private var channel: Int32 = -1
    private var channelWatch: (any ScheduledWork)?
    private var exitWatch: (any ScheduledWork)?
    private var deadline: (any ScheduledWork)?
    private var killTimer: (any ScheduledWork)?
    /// Whether the host heard the end.
    private var hasEnded = false

    /// How long a successor that was called off has to exit after `SIGTERM` before it is killed.
    static let stopGrace = Duration.seconds(2)
    /// The cause the running process's events carry from the upgrade on (the state it saves, its termination).
    static let cause = Cause(rawValue: "upgrade")

    private init(
        effects: UpgradeEffects,
        timeout: Duration,
        watchdogInterval: Duration?,
        logger: Logger,
        host: Host,
        completion: @escaping (Result<HandOver, UpgradeError>) -> Void
    ) {
        self.effects = effects
        self.timeout = timeout
        self.watchdogInterval = watchdogInterval
        self.logger = logger
        self.host = host
        self.completion = completion
    }

    /// Starts an upgrade handing the successor `handing`; `completion` runs once: after the hand-over, or with why it
    /// failed. `timeout` bounds the wait for the successor to serve; the hand-over's wait for systemd fits
    /// `watchdogInterval`.
    static func start(
        handing: Handing,
        effects: UpgradeEffects,
        timeout: Duration,
        watchdogInterval: Duration?,
        logger: Logger,
        host: Host,
        completion: @escaping (Result<HandOver, UpgradeError>) -> Void
    ) -> UpgradeToSuccessor {
        let upgrade = UpgradeToSuccessor(
            effects: effects,
            timeout: timeout,
            watchdogInterval: watchdogInterval,
            logger: logger,
            host: host,
            completion: completion
        )
        upgrade.begin(handing)
        return upgrade
    }

    /// Whether the upgrade is over.
    var isFinished: Bool { machine.isFinished }
    /// The pid of a successor that failed and is being stopped (`SIGTERM`, then `SIGKILL`), until it exits.
    var pidBeingStopped: Int32? { machine.pidBeingStopped }

    /// Calls the upgrade off before it handed over (`kind`: the termination, or its lame-duck delay, that came first):
    /// the successor is stopped.
    func cancel(_ kind: UpgradeError.Kind) {
        perform(machine.cancel(kind))
    }

    // MARK: Starting

    private func begin(_ handing: Handing) {
        guard let executable = handing.executable else {
            return perform(machine.couldNotStart(UpgradeError(.executableUnknown)))
        }
        // Checked before anything is handed over: the common mistake (a path that is not there yet, or not
        // executable) costs nothing.
        if let problem = effects.cannotExecute(executable) {
            return perform(machine.couldNotStart(UpgradeError(.cannotExecute, path: executable, errno: problem)))
        }
        var passed: [(name: String, descriptor: Int32)] = []
        var closeAfterSpawn: [Int32] = []
        defer { for descriptor in closeAfterSpawn { close(descriptor) } }
        for listener in handing.listeners { passed.append((listener.name, listener.descriptor)) }
        if let control = handing.controlSocket { passed.append((ListenerNames.control, control)) }
        if let (bytes, generation) = handing.savedState {
            let name = StateStore.storePrefix + String(generation)
            do {
                let file = try effects.sealedFile(bytes, name)
                closeAfterSpawn.append(file)
                passed.append((name, file))
            } catch {
                logger.warning(
                    "upgrade: the saved state cannot be handed over in memory (\(error)); the new process reads it from the state directory"
                )
            }
        }
        let theirs: Int32
        do {
            (channel, theirs) = try effects.makeChannel()
        } catch {
            return perform(machine.couldNotStart(UpgradeError(.channelFailed, errno: error.errno)))
        }
        closeAfterSpawn.append(theirs)
        passed.append((UpgradeEnvironment.channelName, theirs))

        var environment = handing.environment.filter { !UpgradeEnvironment.replaced.contains($0.key) }
        environment["LISTEN_FDS"] = String(passed.count)
        environment["LISTEN_FDNAMES"] = passed.map(\.name).joined(separator: ":")
        environment[UpgradeEnvironment.previousPID] = String(effects.pid)
        environment[UpgradeEnvironment.listeners] = UpgradeEnvironment.encode(handing.listeners)
        if let path = handing.controlPath { environment[UpgradeEnvironment.controlPath] = path }
        environment[UpgradeEnvironment.applicationState] = handing.applicationState.rawValue
        var pidVariables = ["LISTEN_PID"]
        if environment["WATCHDOG_USEC"] != nil { pidVariables.append("WATCHDOG_PID") }

        logger.info(
            "upgrade: starting \(executable) beside this process (pid \(effects.pid)), handing over \(handing.listeners.count) listener(s)",
            metadata: [LogKey.upgrade: "start", LogKey.upgradePath: .string(executable)]
        )
        let launch = SuccessorLaunch(
            path: executable,
            arguments: handing.arguments,
            environment: environment,
            pidVariables: pidVariables,
            descriptors: passed.map(\.descriptor)
        )
        let process: any SuccessorProcess
        do {
            process = try effects.spawn(launch)
        } catch {
            closeChannel()
            return perform(machine.couldNotStart(UpgradeError(.cannotExecute, path: executable, errno: error.errno)))
        }
        successor = process
        perform(machine.spawned(pid: process.pid, at: effects.now()))
    }

    // MARK: Actions

    private func perform(_ action: StateMachine.Action) {
        switch action {
        case .none:
            return
        case .watch(let pid):
            host.didStart(pid)
            logger.info(
                "upgrade: pid \(pid) started; waiting until it serves (at most \(timeout.formattedForLog))",
                metadata: [LogKey.upgrade: "started"]
            )
            watch()
        case .nameMainPID(let pid):
            cancelDeadline()
            logger.info(
                "upgrade: pid \(pid) serves after \(readyAfter.wholeMilliseconds) ms; making it the main process",
                metadata: [LogKey.upgrade: "ready"]
            )
            // No longer this process's grandchild but the service manager's child: systemd supervises a main process
            // fully only when it is its own (it waits for its exit, and sends it SIGTERM on stop).
            exitWatch?.cancel()
            exitWatch = nil
            successor?.release()
            perform(machine.mainPIDNamed(error: Self.failure { try effects.nameMainPID(pid) }))
        case .confirmMainPID:
            perform(machine.confirmed(error: Self.failure { try effects.confirm(barrierTimeout) }))
        case .tellMain(let pid, let unconfirmed):
            if let unconfirmed {
                logger.warning(
                    "upgrade: systemd did not confirm pid \(pid) as the main process within \(barrierTimeout.formattedForLog) (\(unconfirmed)); it has the message, handing over",
                    metadata: [LogKey.upgrade: "unconfirmed"]
                )
            }
            // The state this process is in now, not when the upgrade began: a request it took while the successor
            // launched (SIGUSR1, a sleep, `lifecyclectl inactive`) carries over.
            let delivered = UpgradeMessage.main(host.applicationState()).send(on: channel)
            perform(machine.toldMain(delivered: delivered, previousPID: effects.pid))
        case .complete(let handOver):
            closeChannel()
            completion?(.success(handOver))
            completion = nil
            host.didHandOver(handOver)
            end()
        case .stop(_, let error, let awaitExit):
            cancelDeadline()
            if channel >= 0 { UpgradeMessage.abort.send(on: channel) }
            closeChannel()
            successor?.signal(SIGTERM)
            if awaitExit {
                // A process that ignores SIGTERM (stuck in its launch) is killed.
                killTimer = effects.schedule(Self.stopGrace) { [weak self] in
                    guard let self else { return }
                    perform(machine.killTimerFired())
                }
            }
            report(error)
            if !awaitExit { end() }
        case .fail(let error):
            cancelDeadline()
            closeChannel()
            exitWatch?.cancel()
            exitWatch = nil
            report(error)
            end()
        case .ended:
            killTimer?.cancel()
            killTimer = nil
            exitWatch?.cancel()
            exitWatch = nil
            end()
        case .kill:
            successor?.signal(SIGKILL)
        }
    }

    private func watch() {
        guard let successor else { return }
        do {
            channelWatch = try effects.watchReadable(channel) { [weak self] in self?.readChannel() }
            exitWatch = try effects.watchExit(successor) { [weak self] status in
                guard let self else { return }
                perform(machine.exited(status: status))
            }
        } catch {
            return perform(machine.couldNotWatch("\(error)"))
        }
        deadline = effects.schedule(timeout) { [weak self] in
            guard let self else { return }
            deadline = nil
            perform(machine.deadlinePassed(timeout: timeout))
        }
    }

    private func readChannel() {
        let reading = UpgradeMessage.read(from: channel)
        if reading == .closed {
            // It exited, or closed its end: its exit says which.
            channelWatch?.cancel()
            channelWatch = nil
        }
        perform(machine.received(reading, at: effects.now()))
    }

    private var readyAfter: Duration {
        if case .handingOver(_, let readyAfter) = machine.state { return readyAfter }
        return .zero
    }

    /// How long the hand-over waits for systemd's confirmation: it must fit the watchdog's interval.
    private var barrierTimeout: Duration { Self.barrierTimeout(watchdog: watchdogInterval) }

    private func report(_ error: UpgradeError) {
        var error = error
        error.servesOn = !host.isStopping()
        logger.error("upgrade failed: \(error)", metadata: [LogKey.upgrade: "failed"])
        completion?(.failure(error))
        completion = nil
        host.didFail(error)
    }

    private func end() {
        guard !hasEnded else { return }
        hasEnded = true
        channelWatch?.cancel()
        channelWatch = nil
        host.didEnd()
    }

    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }

    private func closeChannel() {
        channelWatch?.cancel()
        channelWatch = nil
        if channel >= 0 {
            close(channel)
            channel = -1
        }
    }

    /// What a call to systemd's notification socket failed with, or nil when it succeeded.
    private static func failure(of call: () throws -> Void) -> String? {
        do {
            try call()
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// How long the hand-over waits for systemd to confirm the new main process (`BARRIER=1`): 5 s, and at most a
    /// quarter of the watchdog's interval, since the main loop and its pings wait with it (systemd answers in a
    /// millisecond or two).
    nonisolated static func barrierTimeout(watchdog: Duration?) -> Duration {
        guard let watchdog else { return .seconds(5) }
        return max(.milliseconds(10), min(.seconds(5), watchdog / 4))
    }
}

/// A listening socket as an upgrade hands it to the successor: its name and descriptor, where it came from, and
/// whether it is shut down (the close policy, in the background), so the successor keeps it as it is.
struct ListenerHandOver: Sendable, Hashable {
    var name: String
    var descriptor: Int32
    var origin: ListenerOrigin
    /// Shut down: the successor keeps it refusing connections until a server claims it.
    var isShutDown = false
    /// Where it listened before it was shut down, for a successor that must bind it again (a port the kernel picked
    /// is lost when a socket shuts down).
    var address: String?
}
