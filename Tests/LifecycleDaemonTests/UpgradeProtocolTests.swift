//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
import LifecycleIPC
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("What an upgrade's two processes tell each other")
struct UpgradeProtocolTests {
    @Test func theListenersTravelInOneVariableWithTheirStateAndWhatCannotBeReadIsLeftOut() {
        let text = UpgradeEnvironment.encode([
            ListenerHandOver(name: "http", descriptor: 3, origin: .socketUnit),
            ListenerHandOver(name: "admin", descriptor: 4, origin: .bound, isShutDown: true, address: "127.0.0.1:41234"),
            ListenerHandOver(name: "unix", descriptor: 5, origin: .fileDescriptorStore, isShutDown: true, address: "/run/a,b:c=d%"),
        ])
        #expect(text == "http=socket-unit,admin=bound:closed:127.0.0.1%3A41234,unix=fd-store:closed:/run/a%2Cb%3Ac%3Dd%25")
        #expect(
            UpgradeEnvironment.decodeListeners(text) == [
                "http": .init(origin: .socketUnit),
                "admin": .init(origin: .bound, isShutDown: true, address: "127.0.0.1:41234"),
                "unix": .init(origin: .fileDescriptorStore, isShutDown: true, address: "/run/a,b:c=d%"),
            ]
        )
        #expect(
            UpgradeEnvironment.decodeListeners("http=socket-unit,broken,x=elsewhere,=bound,y=bound:open")
                == ["http": .init(origin: .socketUnit)]
        )
    }

    @Test func theVariablesSystemdSetForTheRunningProcessAreReplacedNotPassedOn() {
        for name in ["LISTEN_FDS", "LISTEN_FDNAMES", "LISTEN_PID", "WATCHDOG_PID", UpgradeEnvironment.previousPID] {
            #expect(UpgradeEnvironment.replaced.contains(name), "\(name)")
        }
        #expect(!UpgradeEnvironment.replaced.contains("NOTIFY_SOCKET"))
        #expect(!UpgradeEnvironment.replaced.contains("WATCHDOG_USEC"))
    }

    @Test func messagesCrossTheChannelOneWordAtATimeAndAnEndIsSeen() throws {
        let (ours, theirs) = try channelPair()
        #expect(UpgradeMessage.read(from: theirs) == .nothing)
        #expect(UpgradeMessage.ready.send(on: ours))
        #expect(UpgradeMessage.main(nil).send(on: ours))
        #expect(UpgradeMessage.main(.background).send(on: ours))
        #expect(UpgradeMessage.read(from: theirs) == .message(.ready))
        #expect(UpgradeMessage.read(from: theirs) == .message(.main(nil)))
        #expect(UpgradeMessage.read(from: theirs) == .message(.main(.background)))
        for garbled in ["readiness", "main asleep", "main background now", "main ", "ready background"] {
            _ = garbled.withCString { send(ours, $0, strlen($0), 0) }
            #expect(UpgradeMessage.read(from: theirs) == .garbled(garbled))
        }
        close(ours)
        #expect(UpgradeMessage.read(from: theirs) == .closed)
        #expect(!UpgradeMessage.abort.send(on: theirs))
        close(theirs)
    }

    /// The state the running process was in when the upgrade began decides the launch, not `[Launch] Into=`: the
    /// service was running (an active service must not come back in the background, nor one in the background come
    /// back active). The state at the hand-over then follows with the `main` message.
    @Test func theNewProcessLaunchesAsTheRunningOneWasNotAsConfigured() {
        #expect(UpgradeFromPredecessor.launchTarget(forRunningState: "background") == .background)
        #expect(UpgradeFromPredecessor.launchTarget(forRunningState: "active") == .active)
        #expect(UpgradeFromPredecessor.launchTarget(forRunningState: "inactive") == .active)
        #expect(UpgradeFromPredecessor.launchTarget(forRunningState: "notRunning") == nil)
        #expect(UpgradeFromPredecessor.launchTarget(forRunningState: "asleep") == nil)
        #expect(UpgradeFromPredecessor.launchTarget(forRunningState: nil) == nil)
    }

    /// What `ExecStart=` names is what an upgrade starts, a `current` symlink switched to a new release included; a
    /// relative name (a terminal's `./lifecycled`) would depend on the working directory, so the executed file is.
    @MainActor
    @Test func anUpgradeStartsWhatTheServiceNamesNotTheFileItResolvedTo() {
        #expect(Daemon.upgradePath(arguments: ["/opt/app/current/bin/app", "--config", "x"]) == "/opt/app/current/bin/app")
        let executed = Daemon.readExecutablePath()
        #expect(executed?.hasPrefix("/") == true)
        #expect(Daemon.upgradePath(arguments: ["./app"]) == executed)
        #expect(Daemon.upgradePath(arguments: []) == executed)
    }

    /// The hand-over blocks the main loop while systemd confirms the new pid: never long enough to miss a watchdog
    /// ping.
    @Test func theWaitForSystemdToConfirmTheNewMainProcessFitsTheWatchdog() {
        #expect(UpgradeToSuccessor.barrierTimeout(watchdog: nil) == .seconds(5))
        #expect(UpgradeToSuccessor.barrierTimeout(watchdog: .seconds(60)) == .seconds(5))
        #expect(UpgradeToSuccessor.barrierTimeout(watchdog: .seconds(4)) == .seconds(1))
        #expect(UpgradeToSuccessor.barrierTimeout(watchdog: .milliseconds(20)) == .milliseconds(10))
    }

    /// Every kind names the exit status lifecyclectl ends with (docs/control.md), and its sentence says what the
    /// daemon does now.
    @Test func everyFailureKindHasItsExitStatusAndItsSentenceEndsWithWhatTheDaemonDoes() {
        for kind in UpgradeFailureKind.allCases {
            #expect([1, 69, 75].contains(kind.exitStatus), "\(kind)")
            var error = UpgradeError(kind, path: "/x", pid: 9, errno: .noSuchFileOrDirectory, exitStatus: 3, timeout: .seconds(2))
            #expect(error.description.hasSuffix("; the daemon serves on as it was"), "\(kind)")
            error.servesOn = false
            #expect(error.description.hasSuffix("; the daemon is terminating"), "\(kind)")
        }
        #expect(UpgradeError(.exitedBeforeReady, pid: 9, exitStatus: 137).reason == "the new process (pid 9) was killed by signal 9 before it was ready")
        #expect(UpgradeError(.exitedBeforeReady, pid: 9, exitStatus: 3).reason == "the new process (pid 9) exited with status 3 before it was ready")
        #expect(UpgradeError(.notReadyInTime, pid: 9, timeout: .seconds(3)).reason == "the new process (pid 9) was not ready within 3 s; it was stopped")
        #expect(UpgradeError(.previousStillStopping, pid: 9).reason == "the new process of the last upgrade (pid 9) is still being stopped; ask again once it has exited")
    }
}

/// Makes a connected pair for the upgrade channel (non-blocking, as the daemon's).
func channelPair() throws -> (Int32, Int32) {
    var pair: [Int32] = [-1, -1]
    let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    try #require(socketpair(AF_UNIX, type, 0, &pair) == 0)
    return (pair[0], pair[1])
}

// MARK: - The running process's side, as a value

@Suite("An upgrade's state machine, the running process's side")
struct UpgradeToSuccessorStateMachineTests {
    typealias Machine = UpgradeToSuccessor.StateMachine
    let start = ContinuousClock.now

    @Test func aSuccessorThatSaysItServesIsNamedConfirmedToldAndHandedOver() {
        var machine = Machine()
        #expect(machine.spawned(pid: 7, at: start) == .watch(pid: 7))
        #expect(machine.received(.nothing, at: start) == .none)
        #expect(machine.received(.message(.ready), at: start + .milliseconds(40)) == .nameMainPID(7))
        #expect(machine.state == .handingOver(pid: 7, readyAfter: .milliseconds(40)))
        #expect(machine.mainPIDNamed(error: nil) == .confirmMainPID(7))
        #expect(machine.confirmed(error: nil) == .tellMain(7, unconfirmed: nil))
        let handOver = UpgradeToSuccessor.HandOver(previousPID: 1, pid: 7, readyAfter: .milliseconds(40))
        #expect(machine.toldMain(delivered: true, previousPID: 1) == .complete(handOver))
        #expect(machine.isFinished && machine.successor == 7)
        // Nothing that comes late changes it.
        #expect(machine.exited(status: 0) == .none)
        #expect(machine.cancel(.terminationRequested) == .none)
        #expect(machine.deadlinePassed(timeout: .seconds(1)) == .none)
    }

    @Test func aLateConfirmationStillHandsOverWithAWarning() {
        var machine = Machine()
        _ = machine.spawned(pid: 7, at: start)
        _ = machine.received(.message(.ready), at: start)
        _ = machine.mainPIDNamed(error: nil)
        #expect(machine.confirmed(error: "timed out") == .tellMain(7, unconfirmed: "timed out"))
    }

    @Test func eachFailureBeforeTheReleaseStopsTheSuccessorAndWaitsForItsExit() {
        let causes: [(String, (inout Machine) -> Machine.Action, UpgradeError)] = [
            ("deadline", { $0.deadlinePassed(timeout: .seconds(3)) }, UpgradeError(.notReadyInTime, pid: 7, timeout: .seconds(3))),
            ("termination", { $0.cancel(.terminationRequested) }, UpgradeError(.terminationRequested, pid: 7)),
            ("lame duck", { $0.cancel(.lameDuckBegan) }, UpgradeError(.lameDuckBegan, pid: 7)),
            ("garbled", { $0.received(.garbled("hello"), at: start) }, UpgradeError(.protocolViolation, pid: 7, detail: "\"hello\"")),
            ("main", { $0.received(.message(.main(.active)), at: start) }, UpgradeError(.protocolViolation, pid: 7, detail: "\"main active\"")),
            ("abort", { $0.received(.message(.abort), at: start) }, UpgradeError(.protocolViolation, pid: 7, detail: "\"abort\"")),
            ("watch", { $0.couldNotWatch("EMFILE") }, UpgradeError(.cannotWatch, pid: 7, detail: "EMFILE")),
        ]
        for (name, event, error) in causes {
            var machine = Machine()
            _ = machine.spawned(pid: 7, at: start)
            #expect(event(&machine) == .stop(pid: 7, error, awaitExit: true), "\(name)")
            #expect(machine.pidBeingStopped == 7 && !machine.isFinished, "\(name)")
            // Deaf to SIGTERM: killed; then its exit ends the upgrade.
            #expect(machine.killTimerFired() == .kill(7), "\(name)")
            #expect(machine.received(.message(.ready), at: start) == .none, "\(name)")
            #expect(machine.exited(status: 137) == .ended, "\(name)")
            #expect(machine.state == .failed(error) && machine.isFinished, "\(name)")
        }
    }

    @Test func aSuccessorThatExitsBeforeItIsReadyFailsWithItsStatus() {
        for status: Int32? in [3, 137, nil] {
            var machine = Machine()
            _ = machine.spawned(pid: 7, at: start)
            #expect(machine.received(.closed, at: start) == .none)
            let error = UpgradeError(.exitedBeforeReady, pid: 7, exitStatus: status)
            #expect(machine.exited(status: status) == .fail(error))
            #expect(machine.isFinished && machine.pidBeingStopped == nil)
        }
    }

    @Test func aFailureAfterTheReleaseEndsTheUpgradeAtOnceForItsExitIsSystemdsToSee() {
        var machine = Machine()
        _ = machine.spawned(pid: 7, at: start)
        _ = machine.received(.message(.ready), at: start)
        let refused = UpgradeError(.mainPIDRefused, pid: 7, detail: "ECONNREFUSED")
        #expect(machine.mainPIDNamed(error: "ECONNREFUSED") == .stop(pid: 7, refused, awaitExit: false))
        #expect(machine.isFinished)

        var vanished = Machine()
        _ = vanished.spawned(pid: 7, at: start)
        _ = vanished.received(.message(.ready), at: start)
        _ = vanished.mainPIDNamed(error: nil)
        _ = vanished.confirmed(error: nil)
        #expect(vanished.toldMain(delivered: false, previousPID: 1) == .stop(pid: 7, UpgradeError(.successorVanished, pid: 7), awaitExit: false))
        #expect(vanished.isFinished)
    }

    @Test func anUpgradeThatCannotStartFailsWithoutASuccessor() {
        var machine = Machine()
        let error = UpgradeError(.cannotExecute, path: "/x", errno: .noSuchFileOrDirectory)
        #expect(machine.couldNotStart(error) == .fail(error))
        #expect(machine.isFinished && machine.successor == nil)
    }
}

// MARK: - The new process's side, as a value

@Suite("An upgrade's state machine, the new process's side")
struct UpgradeFromPredecessorStateMachineTests {
    typealias Machine = UpgradeFromPredecessor.StateMachine

    @Test func itSaysItServesOnceAndBecomesMainWithThePredecessorsState() {
        var machine = Machine(previousPID: 5)
        #expect(machine.received(.nothing) == .none)
        #expect(machine.serving() == .sendReady)
        #expect(machine.serving() == .none)
        #expect(machine.received(.message(.main(.background))) == .becomeMain(.background))
        #expect(machine.state == .main)
        #expect(machine.received(.closed) == .none)
    }

    @Test func everyWayThePredecessorFailsIsAnAbandonmentWithItsReason() {
        let cases: [(Bool, UpgradeMessage.Reading, UpgradeFromPredecessor.Abandonment)] = [
            (true, .message(.abort), .calledOff(5)),
            (false, .message(.abort), .calledOff(5)),
            (true, .closed, .predecessorGone(5)),
            (false, .message(.main(nil)), .madeMainTooEarly(5)),
            (true, .message(.ready), .unexpected(5, "ready")),
            (true, .garbled("hi"), .unexpected(5, "hi")),
        ]
        for (saidReady, reading, why) in cases {
            var machine = Machine(previousPID: 5)
            if saidReady { _ = machine.serving() }
            #expect(machine.received(reading) == .abandon(why), "\(reading)")
            #expect(machine.state == .abandoned(why))
            #expect(machine.received(.message(.main(nil))) == .none)
            #expect(machine.serving() == .none)
        }
        var unheard = Machine(previousPID: 5)
        _ = unheard.serving()
        #expect(unheard.readyNotDelivered() == .abandon(.predecessorGone(5)))
        #expect(UpgradeFromPredecessor.Abandonment.madeMainTooEarly(5).description.contains("pid 5"))
    }
}

// MARK: - Both sides driven through the seam, without a process

/// A successor that exists only in the test.
@MainActor
final class FakeSuccessor: SuccessorProcess {
    let pid: Int32
    /// The successor's end of the channel, kept by the test (a copy of what the daemon passed it).
    let channel: Int32
    var signals: [Int32] = []
    var isReleased = false

    init(pid: Int32, channel: Int32) {
        self.pid = pid
        self.channel = channel
    }

    func release() { isReleased = true }
    func signal(_ signal: Int32) { signals.append(signal) }
}

/// The operating system and systemd as an upgrade sees them, in the test's hands.
@MainActor
final class UpgradeWorld {
    var executablePath: String? = "/usr/local/bin/app"
    var cannotExecute: Errno?
    var channelFailure: SystemCallError?
    var spawnFailure: SystemCallError?
    var watchFailure: SystemCallError?
    var mainPIDFailure: SystemCallError?
    var confirmFailure: SystemCallError?
    var launches: [SuccessorLaunch] = []
    var successor: FakeSuccessor?
    var namedMainPIDs: [Int32] = []
    var confirmations: [Duration] = []
    private var readable: [Int32: @MainActor () -> Void] = [:]
    private var exit: (@MainActor (Int32?) -> Void)?
    private var processes: [Int32: @MainActor () -> Void] = [:]
    /// Whether a predecessor's exit can be watched (a pidfd).
    var canWatchProcesses = true

    func effects(_ stage: Stage) -> UpgradeEffects {
        UpgradeEffects(
            executablePath: executablePath,
            cannotExecute: { [unowned self] _ in cannotExecute },
            makeChannel: { [unowned self] () throws(SystemCallError) -> (Int32, Int32) in
                if let channelFailure { throw channelFailure }
                var pair: [Int32] = [-1, -1]
                let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                _ = socketpair(AF_UNIX, type, 0, &pair)
                return (pair[0], pair[1])
            },
            sealedFile: { bytes, name throws(SystemCallError) in try FileDescriptorStore.sealedMemfd(bytes, name: name) },
            spawn: { [unowned self] launch throws(SystemCallError) in
                if let spawnFailure { throw spawnFailure }
                launches.append(launch)
                // The daemon closes its copy of what it passed once the successor runs: the test keeps one.
                let fake = FakeSuccessor(pid: 4242, channel: dup(launch.descriptors.last!))
                successor = fake
                return fake
            },
            watchExit: { [unowned self] _, handler throws(SystemCallError) in
                if let watchFailure { throw watchFailure }
                exit = handler
                return FakeTimer(delay: .zero, work: {})
            },
            watchReadable: { [unowned self] descriptor, handler throws(SystemCallError) in
                if let watchFailure { throw watchFailure }
                readable[descriptor] = handler
                let watch = FakeTimer(delay: .zero, work: {})
                return watch
            },
            watchProcess: { [unowned self] pid, handler in
                guard canWatchProcesses else { return nil }
                processes[pid] = handler
                return FakeTimer(delay: .zero, work: {})
            },
            schedule: stage.effects().schedule,
            now: { [unowned stage] in stage.now },
            nameMainPID: { [unowned self] pid in
                if let mainPIDFailure { throw mainPIDFailure }
                namedMainPIDs.append(pid)
            },
            confirm: { [unowned self] timeout in
                confirmations.append(timeout)
                if let confirmFailure { throw confirmFailure }
            },
            pid: 1000
        )
    }

    /// The successor sends `text` on the channel; the daemon reads it.
    func successorSays(_ text: String, thenCloses: Bool = false) {
        guard let successor else { return }
        _ = text.withCString { send(successor.channel, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        if thenCloses { close(successor.channel) }
        for handler in readable.values { handler() }
    }

    /// What the daemon told the successor last, if anything.
    func successorReads() -> UpgradeMessage.Reading? {
        guard let successor else { return nil }
        return UpgradeMessage.read(from: successor.channel)
    }

    /// The successor exits (before it was released).
    func successorExits(status: Int32?) {
        exit?(status)
    }

    /// The process `pid` (a predecessor) exits.
    func processExits(_ pid: Int32) {
        processes.removeValue(forKey: pid)?()
    }

    /// Feeds `reading` to every channel handler (an incoming process's).
    func channelReadable() {
        for handler in readable.values { handler() }
    }
}

@MainActor
@Suite("Upgrades driven through their seam, with every effect a stand-in")
struct UpgradeDriverTests {
    private func harness(
        _ world: UpgradeWorld,
        configuration: DaemonConfiguration = DaemonConfiguration(),
        underSystemd: Bool = true
    ) -> DaemonHarness {
        let harness = DaemonHarness(configuration: configuration, underSystemd: underSystemd) { world.effects($0) }
        harness.launch()
        return harness
    }

    /// Starts an upgrade and returns a box its outcome lands in.
    private func upgrade(_ harness: DaemonHarness, timeout: Duration = .seconds(3)) -> Outcome {
        let outcome = Outcome()
        harness.daemon.startUpgrade(timeout: timeout) { outcome.result = $0 }
        return outcome
    }

    final class Outcome {
        var result: Result<UpgradeToSuccessor.HandOver, UpgradeError>?
        var error: UpgradeError? {
            if case .failure(let error) = result { return error }
            return nil
        }
    }

    @Test func aSuccessorThatServesIsMadeTheMainProcessAndThisOneTerminates() throws {
        let world = UpgradeWorld()
        let harness = harness(world)
        let outcome = upgrade(harness)
        let launch = try #require(world.launches.first)
        #expect(launch.path == "/usr/local/bin/app")
        #expect(launch.environment[UpgradeEnvironment.previousPID] == "1000")
        #expect(launch.environment[UpgradeEnvironment.applicationState] == "active")
        #expect(launch.environment["LISTEN_FDNAMES"] == UpgradeEnvironment.channelName)
        #expect(launch.pidVariables == ["LISTEN_PID"])
        #expect(harness.daemon.role == .predecessor(of: 4242))
        #expect(harness.daemon.role.isMain)
        world.successorSays("ready")
        #expect(world.namedMainPIDs == [4242])
        #expect(world.confirmations == [.seconds(5)])
        #expect(world.successor?.isReleased == true)
        #expect(world.successorReads() == .message(.main(.active)))
        #expect(try outcome.result?.get().pid == 4242)
        #expect(harness.daemon.role == .handedOver(to: 4242))
        #expect(!harness.daemon.role.isMain)
        #expect(harness.application.listeners.isHandedOver)
        // It drains and exits: its termination carries the upgrade's cause, and systemd hears none of it.
        #expect(harness.timeline.lines.contains("applicationWillTerminate upgrade"))
        #expect(!harness.stage.notified.contains(.stopping))
        #expect(UpgradeError(.handedOver) == harness.daemon.reasonAnUpgradeCannotStart())
    }

    @Test func aLateConfirmationHandsOverWithAWarning() throws {
        let world = UpgradeWorld()
        world.confirmFailure = SystemCallError(operation: "sd_notify_barrier", errno: .timedOut)
        let harness = harness(world)
        let outcome = upgrade(harness)
        world.successorSays("ready")
        #expect(try outcome.result?.get().pid == 4242)
        #expect(harness.log.messages(.warning).contains { $0.contains("did not confirm pid 4242") })
    }

    @Test func everyRefusalIsNamedAndNothingStarts() {
        var cases: [(UpgradeError.Kind, Bool)] = []
        func check(_ harness: DaemonHarness, _ world: UpgradeWorld, _ kind: UpgradeError.Kind, servesOn: Bool = true) {
            let outcome = upgrade(harness)
            #expect(outcome.error?.kind == kind, "\(kind): \(String(describing: outcome.error))")
            #expect(outcome.error?.servesOn == servesOn, "\(kind)")
            cases.append((kind, outcome.error?.kind == kind))
        }
        do {
            let world = UpgradeWorld()
            let harness = DaemonHarness(underSystemd: true) { world.effects($0) }
            check(harness, world, .notLaunched)
            #expect(world.launches.isEmpty)
        }
        do {
            let world = UpgradeWorld()
            check(harness(world, underSystemd: false), world, .noServiceManager)
        }
        do {
            let world = UpgradeWorld()
            let harness = DaemonHarness(underSystemd: true, containerInit: true) { world.effects($0) }
            harness.launch()
            check(harness, world, .containerInit)
        }
        do {
            let harness = DaemonHarness(underSystemd: true)
            harness.launch()
            check(harness, UpgradeWorld(), .noMainLoop)
        }
        do {
            let world = UpgradeWorld()
            let harness = harness(world)
            harness.signal(.terminate)
            check(harness, world, .terminating, servesOn: false)
        }
        do {
            var configuration = DaemonConfiguration()
            configuration.lameDuck = .seconds(30)
            let world = UpgradeWorld()
            let harness = harness(world, configuration: configuration)
            harness.signal(.terminate)
            check(harness, world, .lameDuck, servesOn: false)
        }
        do {
            let world = UpgradeWorld()
            let harness = harness(world)
            _ = upgrade(harness)
            check(harness, world, .inProgress)
            #expect(world.launches.count == 1)
        }
        do {
            let world = UpgradeWorld()
            let harness = harness(world)
            harness.daemon.role = .successor(of: 5)
            check(harness, world, .notMainProcess)
        }
        #expect(cases.count == 8 && cases.allSatisfy { $0.1 })
    }

    @Test func aBinaryThatCannotBeExecutedOrStartedFailsWithoutASuccessor() {
        let missing = UpgradeWorld()
        missing.cannotExecute = .noSuchFileOrDirectory
        var outcome = upgrade(harness(missing))
        #expect(outcome.error == UpgradeError(.cannotExecute, path: "/usr/local/bin/app", errno: .noSuchFileOrDirectory))
        #expect(missing.launches.isEmpty)

        let unknown = UpgradeWorld()
        unknown.executablePath = nil
        outcome = upgrade(harness(unknown))
        #expect(outcome.error?.kind == .executableUnknown)

        let noChannel = UpgradeWorld()
        noChannel.channelFailure = SystemCallError(operation: "socketpair", errno: .tooManyOpenFiles)
        outcome = upgrade(harness(noChannel))
        #expect(outcome.error == UpgradeError(.channelFailed, errno: .tooManyOpenFiles))

        let execFails = UpgradeWorld()
        execFails.spawnFailure = SystemCallError(operation: "exec", errno: .permissionDenied)
        let failing = harness(execFails)
        outcome = upgrade(failing)
        #expect(outcome.error == UpgradeError(.cannotExecute, path: "/usr/local/bin/app", errno: .permissionDenied))
        #expect(failing.daemon.role == .main && failing.daemon.upgrade == nil)
        #expect(failing.log.messages(.error).contains { $0.hasPrefix("upgrade failed: cannot start /usr/local/bin/app") })
    }

    @Test func aSuccessorThatExitsBeforeItIsReadyFailsAndThisOneServesOn() {
        let world = UpgradeWorld()
        let harness = harness(world)
        let outcome = upgrade(harness)
        world.successorExits(status: 3)
        #expect(outcome.error == UpgradeError(.exitedBeforeReady, pid: 4242, exitStatus: 3))
        #expect(outcome.error?.servesOn == true)
        #expect(harness.daemon.role == .main && harness.daemon.upgrade == nil)
        #expect(world.successor?.signals == [])
        #expect(harness.application.applicationState == .active)
    }

    @Test func aSuccessorNotReadyInTimeIsStoppedThenKilledAndTheNextUpgradeWaitsForIt() {
        let world = UpgradeWorld()
        let harness = harness(world)
        let outcome = upgrade(harness, timeout: .seconds(3))
        harness.stage.advance(by: .seconds(3))
        #expect(outcome.error == UpgradeError(.notReadyInTime, pid: 4242, timeout: .seconds(3)))
        #expect(world.successor?.signals == [SIGTERM])
        #expect(world.successorReads() == .message(.abort))
        #expect(harness.daemon.role == .main)
        // Until it has exited, the next upgrade is refused: its pid is named.
        #expect(upgrade(harness).error == UpgradeError(.previousStillStopping, pid: 4242))
        harness.stage.advance(by: UpgradeToSuccessor.stopGrace)
        #expect(world.successor?.signals == [SIGTERM, SIGKILL])
        world.successorExits(status: 137)
        #expect(harness.daemon.upgrade == nil)
    }

    @Test func aSuccessorThatSaysSomethingElseIsStopped() {
        let world = UpgradeWorld()
        let harness = harness(world)
        let outcome = upgrade(harness)
        world.successorSays("main active")
        #expect(outcome.error == UpgradeError(.protocolViolation, pid: 4242, detail: "\"main active\""))
        #expect(world.successor?.signals == [SIGTERM])
        #expect(world.namedMainPIDs.isEmpty)
    }

    @Test func theWatchesFailingStopsTheSuccessor() {
        let world = UpgradeWorld()
        world.watchFailure = SystemCallError(operation: "sd_event_add_io", errno: .tooManyOpenFiles)
        let harness = harness(world)
        let outcome = upgrade(harness)
        #expect(outcome.error?.kind == .cannotWatch)
        #expect(world.successor?.signals == [SIGTERM])
    }

    @Test func systemdRefusingTheNewMainPIDStopsTheSuccessorAndThisOneServesOn() {
        let world = UpgradeWorld()
        world.mainPIDFailure = SystemCallError(operation: "sd_notify", errno: .connectionRefused)
        let harness = harness(world)
        let outcome = upgrade(harness)
        world.successorSays("ready")
        #expect(outcome.error?.kind == .mainPIDRefused)
        #expect(outcome.error?.servesOn == true)
        #expect(world.successor?.signals == [SIGTERM])
        // Released to systemd already: its exit is not this process's to see, so the upgrade is over at once.
        #expect(harness.daemon.upgrade == nil && harness.daemon.role == .main)
        #expect(harness.application.applicationState == .active)
    }

    @Test func aSuccessorGoneWhenItIsToldItIsMainFailsTheUpgrade() {
        let world = UpgradeWorld()
        let harness = harness(world)
        let outcome = upgrade(harness)
        world.successorSays("ready", thenCloses: true)
        #expect(outcome.error == UpgradeError(.successorVanished, pid: 4242))
    }

    @Test func aTerminationOrALameDuckDelayFirstCallsTheUpgradeOff() {
        let world = UpgradeWorld()
        let first = harness(world)
        let outcome = upgrade(first)
        first.signal(.terminate)
        #expect(outcome.error?.kind == .terminationRequested && outcome.error?.pid == 4242)
        #expect(outcome.error?.servesOn == false)
        #expect(world.successor?.signals == [SIGTERM])

        var configuration = DaemonConfiguration()
        configuration.lameDuck = .seconds(10)
        let delayed = UpgradeWorld()
        let second = harness(delayed, configuration: configuration)
        let called = upgrade(second)
        second.signal(.terminate)
        #expect(called.error?.kind == .lameDuckBegan && called.error?.pid == 4242)
        #expect(called.error?.servesOn == false)
    }

    @Test func aSuccessorTakesTheStateThisProcessIsInAtTheHandOver() {
        let world = UpgradeWorld()
        let harness = harness(world)
        _ = upgrade(harness)
        // A SIGUSR1 while the successor launched.
        harness.signal(.user1)
        world.successorSays("ready")
        #expect(world.successorReads() == .message(.main(.background)))
    }
}

// MARK: - The new process's side, driven

@MainActor
@Suite("An upgrade's successor, with every effect a stand-in")
struct UpgradeSuccessorTests {
    /// A daemon started by an upgrade from pid 77, whose channel the test holds the predecessor's end of.
    private func successor(_ world: UpgradeWorld) throws -> (DaemonHarness, predecessor: Int32) {
        let (predecessor, ours) = try channelPair()
        let harness = DaemonHarness(underSystemd: true) { world.effects($0) }
        var passed = [SocketActivation.Socket(name: UpgradeEnvironment.channelName, descriptor: ours)]
        let environment = [UpgradeEnvironment.previousPID: "77", UpgradeEnvironment.applicationState: "active"]
        let incoming = try #require(UpgradeFromPredecessor(environment: environment, passed: &passed))
        #expect(passed.isEmpty)
        harness.daemon.role = .successor(of: 77)
        harness.daemon.incoming = incoming
        try harness.daemon.followUpgrade(incoming)
        harness.launch()
        return (harness, predecessor)
    }

    @Test func itSaysNothingToSystemdUntilItIsMainThenTakesTheStateAndWaitsForThePredecessorToDrain() throws {
        let world = UpgradeWorld()
        let (harness, predecessor) = try successor(world)
        defer { close(predecessor) }
        // Launched and serving (no listener): it told its predecessor, and systemd nothing.
        #expect(UpgradeMessage.read(from: predecessor) == .message(.ready))
        #expect(!harness.stage.notified.contains(.ready))
        // Made main while the predecessor was in the background.
        #expect(UpgradeMessage.main(.background).send(on: predecessor))
        world.channelReadable()
        #expect(harness.daemon.role == .mainDraining(77))
        #expect(harness.stage.notified.contains(.ready))
        #expect(harness.application.applicationState == .background)
        #expect(harness.application.backgroundTasks.map(\.name) == ["upgrade: pid 77 drains"])
        // Issue 30, defect 1: a stop now waits for the predecessor's drain; systemd's KillMode=mixed would kill it
        // once this process exits.
        harness.signal(.terminate)
        #expect(harness.stage.exits.isEmpty)
        #expect(harness.stage.notified.contains { if case .extendTimeout = $0 { true } else { false } })
        world.processExits(77)
        #expect(harness.daemon.role == .main)
        #expect(harness.stage.exits == [0])
    }

    @Test func withoutAWayToWatchThePredecessorAStopDoesNotWaitAndSaysSo() throws {
        let world = UpgradeWorld()
        world.canWatchProcesses = false
        let (harness, predecessor) = try successor(world)
        defer { close(predecessor) }
        _ = UpgradeMessage.read(from: predecessor)
        #expect(UpgradeMessage.main(.active).send(on: predecessor))
        world.channelReadable()
        #expect(harness.daemon.role == .main)
        #expect(harness.application.backgroundTasks.isEmpty)
        #expect(harness.log.messages(.warning).contains { $0.contains("cannot be watched (no pidfd)") })
    }

    @Test func aPredecessorThatCallsItOffOrGoesAwayMakesItTerminate() throws {
        let world = UpgradeWorld()
        let (harness, predecessor) = try successor(world)
        _ = UpgradeMessage.read(from: predecessor)
        close(predecessor)
        world.channelReadable()
        #expect(harness.application.applicationState == .terminated)
        #expect(harness.log.messages(.warning).contains { $0.hasPrefix("upgrade called off: the process that started the upgrade (pid 77) went away") })
        #expect(harness.daemon.role == .successor(of: 77))
    }
}
