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
import Testing

@MainActor
@Suite("The lame-duck stop and the probes, with every effect a stand-in")
struct StopAndProbeTests {
    private func harness(lameDuck: Duration, stopTimeout: Duration? = nil) -> DaemonHarness {
        var configuration = DaemonConfiguration()
        configuration.lameDuck = lameDuck
        configuration.stopTimeout = stopTimeout
        let harness = DaemonHarness(configuration: configuration)
        harness.launch()
        return harness
    }

    @Test func withoutADelayTerminationBeginsAtOnce() {
        let harness = harness(lameDuck: .zero)
        harness.signal(.terminate)
        #expect(harness.timeline.lines.first == "applicationWillResignActive signal:SIGTERM")
        #expect(harness.application.applicationState == .terminated)
    }

    @Test func theLameDuckStopsBeingReadyServesForTheDelayThenTerminates() {
        let harness = harness(lameDuck: .seconds(5))
        #expect(harness.application.check(.ready).passed)
        harness.signal(.terminate)
        // Not ready at once, still active and serving: nothing of the lifecycle has moved yet.
        #expect(harness.timeline.lines.isEmpty)
        #expect(harness.application.applicationState == .active)
        let ready = harness.application.check(.ready)
        #expect(!ready.passed && ready.reason == "stopping (lame duck, not ready)")
        #expect(harness.application.check(.live).passed && harness.application.check(.started).passed)
        #expect(harness.stage.notified.contains(.stopping))
        #expect(harness.stage.notified.contains(.status("active, stopping (lame duck, not ready)")))
        harness.stage.advance(by: .milliseconds(4_999))
        harness.application.runEndOfTurn()
        #expect(harness.application.applicationState == .active)
        harness.stage.advance(by: .milliseconds(1))
        harness.application.runEndOfTurn()
        // Then termination as always, with the request's cause.
        #expect(
            harness.timeline.lines == [
                "applicationWillResignActive signal:SIGTERM", "applicationDidEnterBackground signal:SIGTERM",
                "applicationWillTerminate signal:SIGTERM", "exit 0",
            ]
        )
        #expect(harness.application.applicationState == .terminated)
    }

    @Test func aSecondTerminationRequestDuringTheDelayTerminatesAtOnce() {
        let harness = harness(lameDuck: .seconds(30))
        harness.signal(.terminate)
        harness.stage.advance(by: .seconds(1))
        #expect(harness.application.applicationState == .active)
        harness.signal(.interrupt)
        #expect(harness.timeline.lines.first == "applicationWillResignActive signal:SIGINT")
        #expect(harness.application.applicationState == .terminated)
        // The delay's timer does nothing once it has been cut short.
        harness.stage.advance(by: .seconds(30))
        #expect(harness.stage.exits == [0])
    }

    @Test func theDelayIsTakenFromTheDrainWithinTheStopBudget() {
        let harness = harness(lameDuck: .seconds(5), stopTimeout: .seconds(20))
        harness.signal(.terminate)
        harness.stage.advance(by: .seconds(5))
        // 20 s in all, 5 s of it spent serving as a lame duck, 1 s kept for the teardown and the exit.
        #expect(harness.daemon.lameDuck.drainBudget(configured: .seconds(30)) == .seconds(14))
        #expect(harness.daemon.lameDuck.drainBudget(configured: .seconds(10)) == .seconds(10))
    }

    @Test func aConfigurationThatCannotFitItsStopBudgetIsNamedWithWhatWouldBeLeft() {
        #expect(LameDuckStop.fitWarning(delay: .seconds(5), drain: .seconds(30), stopTimeout: nil) == nil)
        #expect(LameDuckStop.fitWarning(delay: .seconds(5), drain: .seconds(20), stopTimeout: .seconds(30)) == nil)
        let warning = LameDuckStop.fitWarning(delay: .seconds(10), drain: .seconds(30), stopTimeout: .seconds(30))
        #expect(warning?.contains("exceed [Termination] StopTimeoutSec=30 s") == true, "\(warning ?? "")")
        #expect(warning?.contains("drains for at most 19 s") == true, "\(warning ?? "")")
    }

    @Test func theProbesFollowTheLifecycle() {
        var configuration = DaemonConfiguration()
        configuration.watchLogind = false
        let harness = DaemonHarness(configuration: configuration)
        #expect(
            harness.application.check(.started) == HealthCheck(probe: .started, passed: false, reason: "not launched")
        )
        #expect(!harness.application.check(.ready).passed)
        harness.launch()
        #expect(harness.application.check(.started).passed)
        #expect(harness.application.check(.ready) == HealthCheck(probe: .ready, passed: true, reason: "active"))
        harness.signal(.user1)
        #expect(
            harness.application.check(.ready) == HealthCheck(probe: .ready, passed: false, reason: "in the background")
        )
        #expect(harness.application.check(.live).passed)
        harness.signal(.user2)
        #expect(harness.application.check(.ready).passed)
    }

    @Test func theTerminationSectionIsReadAndItsMistakesNamed() throws {
        var configuration = DaemonConfiguration()
        try configuration.apply(text: "[Termination]\nLameDuckSec=5\nStopTimeoutSec=30\n", source: "t.conf")
        #expect(configuration.lameDuck == .seconds(5) && configuration.stopTimeout == .seconds(30))
        #expect(throws: ConfigurationError.self) {
            try configuration.apply(text: "[Termination]\nStopTimeoutSec=0\n", source: "t.conf")
        }
        do {
            try configuration.apply(text: "[Termination]\nLameDuckSec=soon\n", source: "t.conf")
            Issue.record("LameDuckSec=soon was accepted")
        } catch {
            #expect("\(error)".hasPrefix("t.conf:2:"), "\(error)")
        }
    }
}
