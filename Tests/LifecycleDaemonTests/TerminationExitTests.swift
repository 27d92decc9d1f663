//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging
import Testing

/// docs/lifecycle.md §7: "terminated cleanly" is the last line of a clean exit. A run of hosted work that the end of
/// the drain budget cancels is still ending (a server closes its socket and says so) when its background task is
/// ended: the exit waits for it, within a short grace.
@MainActor
@Suite("The exit waits for the runs the end of the budget cancelled")
struct TerminationExitTests {
    /// A daemon on stand-ins whose root controller hosts work that, asked to stop, ends only when `gate` opens.
    private func harness(gate: ExitGate, ended: ConditionLock<Bool>) async -> DaemonHarness {
        let harness = DaemonHarness()
        harness.launch()
        let started = ConditionLock(false)
        harness.application.window?.rootViewController?.task("server") {
            started.withLock { $0 = true }
            // Deaf to cancellation until the gate opens: a drain that outlives the budget.
            await gate.wait()
            ended.withLock { $0 = true }
        }
        await settleExit { started.withLock { $0 } }
        return harness
    }

    @Test func aRunCancelledWhenTheBudgetRunsOutEndsBeforeTheProcessExits() async {
        let gate = ExitGate()
        let ended = ConditionLock(false)
        let harness = await harness(gate: gate, ended: ended)
        harness.signal(.terminate)
        #expect(harness.application.backgroundTasks.map(\.name) == ["root: server"])
        // The budget runs out: the run's background task expires and is ended; its work is cancelled, not over.
        harness.stage.advance(by: .seconds(30))
        #expect(harness.application.backgroundTasks.isEmpty)
        #expect(harness.stage.exits.isEmpty, "exited while a cancelled run was still ending")
        #expect(harness.application.runsInProgress == ["root: server"])
        await gate.open()
        await settleExit { !harness.stage.exits.isEmpty }
        #expect(ended.withLock { $0 })
        #expect(harness.stage.exits == [0])
        #expect(harness.application.runsInProgress.isEmpty)
    }

    @Test func aRunThatDoesNotEndWithinTheGraceIsNamedAndTheProcessExits() async {
        let gate = ExitGate()
        let harness = await harness(gate: gate, ended: ConditionLock(false))
        harness.signal(.terminate)
        harness.stage.advance(by: .seconds(30))
        #expect(harness.stage.exits.isEmpty)
        #expect(harness.stage.notified.contains(.extendTimeout(TerminationWait.cancellationGrace + .seconds(2))))
        harness.stage.advance(by: TerminationWait.cancellationGrace)
        #expect(harness.stage.exits == [0])
        let warnings = harness.log.messages(.warning)
        #expect(warnings.contains { $0.contains("did not end within") && $0.contains("root: server") }, "\(warnings)")
        await gate.open()
    }

    @Test func aRunThatEndsWithinTheBudgetAddsNoWait() async {
        let gate = ExitGate()
        let harness = await harness(gate: gate, ended: ConditionLock(false))
        harness.signal(.terminate)
        await gate.open()
        await settleExit { !harness.stage.exits.isEmpty }
        #expect(harness.stage.exits == [0])
        #expect(!harness.log.messages(.info).contains { $0.contains("cancelled run") })
    }
}

/// A one-shot gate: `wait()` returns once `open()` was called.
actor ExitGate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
    }
}

/// Lets the main actor and the tasks run until `condition` holds; the deadline only stops a test that would hang (the
/// main thread is shared by every @MainActor test, and slow under a sanitizer).
@MainActor
func settleExit(until condition: @MainActor () -> Bool) async {
    let deadline = ContinuousClock.now + .seconds(120)
    while !condition(), ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(1))
    }
}
