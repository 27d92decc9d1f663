//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import Testing

// READY=1 waits for logind's subscriptions and delay inhibitors (a sleep announced before them would be missed, or
// would not wait for the application), for at most SystemEvents.readinessBudget.
@MainActor
@Suite("Readiness at launch")
struct LaunchReadinessTests {
    @Test func readyComesOnceTheSubscriptionsAndBothInhibitorsAreInPlace() throws {
        let harness = SystemEventsHarness()
        harness.launch()
        let logind = try #require(harness.logind)
        logind.awaiting = ["the subscription to PrepareForSleep", "the sleep delay inhibitor", "the shutdown delay inhibitor"]
        var readiness: [[String]] = []
        harness.events.whenReadyForAnnouncements(within: .seconds(3)) { readiness.append($0) }
        #expect(readiness.isEmpty)
        logind.setUp(leaving: ["the sleep delay inhibitor", "the shutdown delay inhibitor"])
        logind.setUp(leaving: ["the shutdown delay inhibitor"])
        #expect(readiness.isEmpty)
        logind.setUp(leaving: [])
        #expect(readiness == [[]])
        // Once only: neither later progress nor the budget's end says it again.
        logind.setUp(leaving: [])
        harness.stage.advance(by: .seconds(5))
        #expect(readiness == [[]])
    }

    @Test func afterTheBudgetReadyComesWithWhatIsStillMissing() throws {
        let harness = SystemEventsHarness()
        harness.launch()
        let logind = try #require(harness.logind)
        logind.awaiting = ["the owner of org.freedesktop.login1", "the sleep delay inhibitor"]
        var readiness: [[String]] = []
        harness.events.whenReadyForAnnouncements(within: .seconds(3)) { readiness.append($0) }
        logind.setUp(leaving: ["the sleep delay inhibitor"])
        harness.stage.advance(by: .milliseconds(2_999))
        #expect(readiness.isEmpty)
        harness.stage.advance(by: .milliseconds(1))
        #expect(readiness == [["the sleep delay inhibitor"]])
        logind.setUp(leaving: [])
        #expect(readiness.count == 1)
    }

    @Test func withNothingMissingOrLogindNotWatchedReadyComesAtOnce() throws {
        let harness = SystemEventsHarness()
        harness.launch()
        var readiness: [[String]] = []
        harness.events.whenReadyForAnnouncements(within: .seconds(3)) { readiness.append($0) }
        #expect(readiness == [[]])

        var configuration = DaemonConfiguration()
        configuration.watchLogind = false
        let unwatched = SystemEventsHarness(configuration: configuration)
        unwatched.launch()
        unwatched.events.whenReadyForAnnouncements(within: .seconds(3)) { readiness.append($0) }
        #expect(readiness == [[], []])
    }
}
