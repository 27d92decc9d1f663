//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKitTesting
import LifecyclePrimitives
import Testing

@testable import LifecycleKit

/// Work that fails on every run until told otherwise, counting its runs (from whichever thread it runs on).
private final class Flaky: Sendable {
    struct Outage: Error, CustomStringConvertible {
        var description: String { "upstream unreachable" }
    }

    private let state = ConditionLock((runs: 0, fails: true))
    var runs: Int { state.withLock { $0.runs } }
    func heal() { state.withLock { $0.fails = false } }

    func run() async throws {
        let fails = state.withLock { state in
            state.runs += 1
            return state.fails
        }
        if fails { throw Outage() }
        while !Task.isCancelled { try await Task.sleep(for: .milliseconds(5)) }
    }
}

@MainActor
private final class Worker: ViewController {
    let flaky = Flaky()
    let policy: RestartPolicy
    var exhausted: [String] = []
    private(set) var work: LifecycleTask!

    init(policy: RestartPolicy) {
        self.policy = policy
        super.init(identifier: "worker")
    }

    required init(coder: Coder) throws { fatalError("not decoded") }

    override func viewDidLoad() {
        let flaky = flaky
        work = task("poll", restartPolicy: policy) { try await flaky.run() }
    }

    override func lifecycleTask(_ task: LifecycleTask, didExhaustRestartsWithError error: any Error) {
        exhausted.append("\(task.name): \(error)")
    }
}

@MainActor
private final class Delegate: ApplicationDelegate {
    let worker: Worker
    var keepsRunning = false
    var exhausted: [String] = []

    init(policy: RestartPolicy) { worker = Worker(policy: policy) }

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: worker)
        return true
    }

    func application(_ application: Application, lifecycleTask task: LifecycleTask, didExhaustRestartsWithError error: any Error) {
        exhausted.append("\(task.name): \(error)")
        // The default terminates the application as a failure; a delegate that keeps running says so.
        if !keepsRunning { application.requestTermination(cause: "supervision", failing: "\(task.name) exhausted") }
    }
}

@MainActor
@Suite("Supervision: restart policies on a manual clock")
struct SupervisionTests {
    private static let fivePerMinute = RestartPolicy.onFailure(
        maxRestarts: 5, within: .seconds(60), backoff: .exponential(initial: .milliseconds(100), maximum: .seconds(1))
    )

    @Test func theBackoffDoublesFromItsInitialDelayUpToItsMaximum() {
        let backoff = RestartPolicy.Backoff.exponential(initial: .milliseconds(100), maximum: .seconds(1))
        #expect((1...7).map { backoff.delay(afterFailures: $0) } == [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1),
            .seconds(1),
        ])
        #expect(RestartPolicy.Backoff.exponential(initial: .seconds(1), maximum: .seconds(30)).delay(afterFailures: 10_000) == .seconds(30))
    }

    @Test func theRecordRestartsUpToTheLimitWithinThePeriodThenEscalates() {
        var record = RestartRecord()
        let start = ContinuousClock.now
        let decisions = (0..<6).map { record.failure(at: start + .seconds($0), policy: Self.fivePerMinute) }
        #expect(decisions == [
            .restart(after: .milliseconds(100), restart: 1, limit: 5), .restart(after: .milliseconds(200), restart: 2, limit: 5),
            .restart(after: .milliseconds(400), restart: 3, limit: 5), .restart(after: .milliseconds(800), restart: 4, limit: 5),
            .restart(after: .seconds(1), restart: 5, limit: 5), .escalate(failures: 6, within: .seconds(60)),
        ])
        // Failures older than the period no longer count: a failure a minute after the first five restarts again.
        var spread = RestartRecord()
        for second in [0, 10, 20, 30, 40] { _ = spread.failure(at: start + .seconds(second), policy: Self.fivePerMinute) }
        #expect(spread.failure(at: start + .seconds(61), policy: Self.fivePerMinute) == .restart(after: .seconds(1), restart: 5, limit: 5))
        var never = RestartRecord()
        #expect(never.failure(at: start, policy: .never) == .wait)
    }

    @Test func aFailingTaskIsStartedOnePlusMaxRestartsTimesWithGrowingDelaysThenTheApplicationTerminatesAsAFailure() async {
        let delegate = Delegate(policy: Self.fivePerMinute)
        let host = TestHost(delegate: delegate)
        host.launch()
        let work = delegate.worker.work!
        for (failure, delay) in zip(1...5, [100, 200, 400, 800, 1000]) {
            #expect(await host.waitUntil { work.failureCount == failure })
            // Not a moment before its delay.
            host.advance(by: .milliseconds(delay - 1))
            #expect(work.runCount == failure)
            host.advance(by: .milliseconds(1))
            #expect(work.runCount == failure + 1)
        }
        #expect(await host.waitUntil { host.isTerminated })
        #expect(delegate.worker.flaky.runs == 6)
        #expect(work.failureCount == 6 && work.restartCount == 5 && work.hasExhaustedRestarts)
        #expect(delegate.worker.exhausted == ["poll: upstream unreachable"])
        #expect(delegate.exhausted == ["poll: upstream unreachable"])
        #expect(host.application.terminationFailure == "poll exhausted")
        let supervision = host.recorder.events.filter {
            ["taskDidStart", "lifecycleTask(_:didFailWithError:)", "taskWillRestart",
             "lifecycleTask(_:didExhaustRestartsWithError:)", "application(_:lifecycleTask:didExhaustRestartsWithError:)"]
                .contains($0.event)
        }.map { "\($0.target) \($0.event) \($0.detail ?? "")" }
        #expect(Array(supervision.prefix(4)) == [
            "worker taskDidStart poll",
            "worker lifecycleTask(_:didFailWithError:) poll: upstream unreachable",
            "worker taskWillRestart poll in 100 ms (restart 1 of 5): upstream unreachable",
            "worker taskDidStart poll",
        ])
        #expect(supervision.filter { $0.contains("taskWillRestart") }.map { $0.components(" in ", " (") } == [
            "100 ms", "200 ms", "400 ms", "800 ms", "1 s",
        ])
        #expect(Array(supervision.suffix(2)) == [
            "worker lifecycleTask(_:didExhaustRestartsWithError:) poll: 6 failures within 60 s: upstream unreachable",
            "delegate application(_:lifecycleTask:didExhaustRestartsWithError:) poll: upstream unreachable",
        ])
    }

    @Test func aRestartCalledOffByTheBackgroundIsNotAFailureAndTheWorkStartsAgainInTheForeground() async {
        let delegate = Delegate(policy: Self.fivePerMinute)
        let host = TestHost(delegate: delegate)
        host.launch()
        let work = delegate.worker.work!
        #expect(await host.waitUntil { work.failureCount == 1 })
        #expect(host.clock.pendingWork == 1)
        host.signal("SIGUSR1")
        // The restart waiting for its delay is called off: the clock has nothing left to run, nothing more failed.
        #expect(host.clock.pendingWork == 0)
        host.advance(by: .seconds(5))
        #expect(work.runCount == 1 && work.failureCount == 1 && work.restartCount == 0)
        delegate.worker.flaky.heal()
        host.signal("SIGUSR2")
        // Back in the foreground the work starts at once, as at any return (not a restart).
        #expect(work.runCount == 2 && work.restartCount == 0)
        #expect(await host.waitUntil { delegate.worker.flaky.runs == 2 })
        #expect(work.isActive && work.failureCount == 1)
    }

    @Test func withNeverAFailureWaitsForTheNextForeground() async {
        let delegate = Delegate(policy: .never)
        let host = TestHost(delegate: delegate)
        host.launch()
        let work = delegate.worker.work!
        #expect(await host.waitUntil { work.failureCount == 1 })
        host.advance(by: .seconds(3600))
        #expect(work.runCount == 1 && !work.isRunning && host.clock.pendingWork == 0)
        #expect(host.recorder.lines(events: ["taskWillRestart"]).isEmpty)
        host.signal("SIGUSR1")
        host.signal("SIGUSR2")
        #expect(work.runCount == 2)
    }

    @Test func aDelegateThatKeepsRunningLeavesTheExhaustedTaskStoppedUntilItsActivityBeginsAgain() async {
        let delegate = Delegate(policy: .onFailure(maxRestarts: 1, within: .seconds(60), backoff: .exponential(initial: .milliseconds(10), maximum: .milliseconds(10))))
        delegate.keepsRunning = true
        let host = TestHost(delegate: delegate)
        host.launch()
        let work = delegate.worker.work!
        #expect(await host.waitUntil { work.failureCount == 1 })
        host.advance(by: .milliseconds(10))
        #expect(await host.waitUntil { work.failureCount == 2 })
        #expect(work.hasExhaustedRestarts && !work.isRunning)
        #expect(host.application.applicationState == .active && host.application.terminationFailure == nil)
        host.advance(by: .seconds(60))
        #expect(work.runCount == 2)
        delegate.worker.flaky.heal()
        host.signal("SIGUSR1")
        host.signal("SIGUSR2")
        #expect(!work.hasExhaustedRestarts && work.runCount == 3)
        #expect(await host.waitUntil { delegate.worker.flaky.runs == 3 })
    }
}

extension String {
    /// The text between the first `start` and the next `end` after it.
    fileprivate func components(_ start: String, _ end: String) -> String {
        guard let afterStart = split(separator: start, maxSplits: 1).dropFirst().first else { return "" }
        return String(afterStart.split(separator: end, maxSplits: 1).first ?? "")
    }
}
