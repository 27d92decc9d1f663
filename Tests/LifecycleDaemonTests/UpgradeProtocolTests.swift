//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import LifecycleSystemd
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("What an upgrade's two processes tell each other")
struct UpgradeProtocolTests {
    @Test func theListenersOriginsTravelInOneVariableAndWhatCannotBeReadIsLeftOut() {
        let text = UpgradeEnvironment.encode(origins: [
            ("http", .socketUnit), ("admin", .bound), ("metrics", .fileDescriptorStore),
        ])
        #expect(text == "http=socket-unit,admin=bound,metrics=fd-store")
        #expect(
            UpgradeEnvironment.decodeOrigins(text) == [
                "http": .socketUnit, "admin": .bound, "metrics": .fileDescriptorStore,
            ]
        )
        #expect(UpgradeEnvironment.decodeOrigins("http=socket-unit,broken,x=elsewhere,=bound") == ["http": .socketUnit])
    }

    @Test func theVariablesSystemdSetForTheRunningProcessAreReplacedNotPassedOn() {
        for name in ["LISTEN_FDS", "LISTEN_FDNAMES", "LISTEN_PID", "WATCHDOG_PID", UpgradeEnvironment.previousPID] {
            #expect(UpgradeEnvironment.replaced.contains(name), "\(name)")
        }
        #expect(!UpgradeEnvironment.replaced.contains("NOTIFY_SOCKET"))
        #expect(!UpgradeEnvironment.replaced.contains("WATCHDOG_USEC"))
    }

    @Test func messagesCrossTheChannelOneWordAtATimeAndAnEndIsSeen() {
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #expect(socketpair(AF_UNIX, type, 0, &pair) == 0)
        #expect(UpgradeMessage.read(from: pair[1]) == .nothing)
        #expect(UpgradeMessage.ready.send(on: pair[0]))
        #expect(UpgradeMessage.main(nil).send(on: pair[0]))
        #expect(UpgradeMessage.main(.background).send(on: pair[0]))
        #expect(UpgradeMessage.read(from: pair[1]) == .message(.ready))
        #expect(UpgradeMessage.read(from: pair[1]) == .message(.main(nil)))
        #expect(UpgradeMessage.read(from: pair[1]) == .message(.main(.background)))
        for garbled in ["readiness", "main asleep", "main background now", "main ", "ready background"] {
            _ = garbled.withCString { send(pair[0], $0, strlen($0), 0) }
            #expect(UpgradeMessage.read(from: pair[1]) == .garbled(garbled))
        }
        close(pair[0])
        #expect(UpgradeMessage.read(from: pair[1]) == .closed)
        #expect(!UpgradeMessage.abort.send(on: pair[1]))
        close(pair[1])
    }

    /// The state the running process was in when the upgrade began decides the launch, not `[Launch] Into=`: the
    /// service was running (an active service must not come back in the background, nor one in the background come
    /// back active). The state at the hand-over then follows with the `main` message.
    @Test func theNewProcessLaunchesAsTheRunningOneWasNotAsConfigured() {
        #expect(UpgradeHandOver.launchTarget(forRunningState: "background") == .background)
        #expect(UpgradeHandOver.launchTarget(forRunningState: "active") == .active)
        #expect(UpgradeHandOver.launchTarget(forRunningState: "inactive") == .active)
        #expect(UpgradeHandOver.launchTarget(forRunningState: "notRunning") == nil)
        #expect(UpgradeHandOver.launchTarget(forRunningState: "asleep") == nil)
        #expect(UpgradeHandOver.launchTarget(forRunningState: nil) == nil)
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
        #expect(UpgradeCoordinator.barrierTimeout(watchdog: nil) == .seconds(5))
        #expect(UpgradeCoordinator.barrierTimeout(watchdog: .seconds(60)) == .seconds(5))
        #expect(UpgradeCoordinator.barrierTimeout(watchdog: .seconds(4)) == .seconds(1))
        #expect(UpgradeCoordinator.barrierTimeout(watchdog: .milliseconds(20)) == .milliseconds(10))
    }

    @MainActor
    @Test func anUpgradeIsRefusedWithTheReasonWhereItCannotWork() {
        let harness = DaemonHarness()
        var failures: [UpgradeFailure] = []
        func ask() {
            harness.daemon.startUpgrade(timeout: nil) { result in
                if case .failure(let failure) = result { failures.append(failure) }
            }
        }
        ask()
        harness.launch()
        ask()
        harness.signal(.terminate)
        ask()
        #expect(
            failures.map(\.reason) == [
                "the application has not launched yet",
                "an upgrade needs systemd (a Type=notify unit): no NOTIFY_SOCKET",
                "the application is terminating",
            ]
        )
        // What the daemon does now ends the message lifecyclectl prints.
        #expect(failures.map(\.servesOn) == [true, true, false])
        #expect(failures[1].description.hasSuffix("; the daemon serves on as it was"))
        #expect(failures[2].description.hasSuffix("; the daemon is terminating"))
        #expect(harness.log.messages(.error).filter { $0.hasPrefix("upgrade refused: ") }.count == 3)
    }

    /// Found by probing the daemon: an upgrade during the lame-duck delay handed over, the old process exited, and the
    /// new one never heard of the termination (systemd sends `SIGTERM` once): the service ran on until killed.
    @MainActor
    @Test func noUpgradeStartsDuringTheLameDuckDelay() {
        var configuration = DaemonConfiguration()
        configuration.lameDuck = .seconds(30)
        let harness = DaemonHarness(configuration: configuration)
        harness.launch()
        harness.signal(.terminate)
        #expect(harness.daemon.isStopping && !harness.application.isTerminating)
        var failure: UpgradeFailure?
        harness.daemon.startUpgrade(timeout: nil) { result in
            if case .failure(let reason) = result { failure = reason }
        }
        #expect(failure?.reason == "a termination was requested: the daemon is in its lame-duck delay")
        #expect(failure?.servesOn == false)
    }
}
