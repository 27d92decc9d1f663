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
import LifecycleSystemd
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

@MainActor
@Suite("The daemon: reloads as transactions, failures as exit status 75")
struct ReloadAndSupervisionTests {
    private let directory = temporaryDirectory()

    private func harness(file text: String) -> (DaemonHarness, String) {
        let path = directory + "/test.conf"
        writeFile(path, Array(text.utf8))
        var options = DaemonOptions(programName: "test")
        options.configurationPath = path
        var configuration = DaemonConfiguration()
        try! configuration.load(file: path, applicationSection: nil)
        return (DaemonHarness(configuration: configuration, options: options), path)
    }

    @Test func aBrokenFileRefusesTheReloadAndTheDaemonKeepsItsConfigurationStillReady() {
        let (harness, path) = harness(file: "[BackgroundTasks]\nBudgetSec=5\n")
        harness.launch()
        writeFile(path, Array("[BackgroundTasks]\nBudgetSec=soon\n".utf8))
        var outcome: RequestOutcome?
        harness.daemon.router.route(.reload, from: .control) { outcome = $0 }
        harness.application.runEndOfTurn()
        let reason = "the configuration: \(path):2: BudgetSec=soon is not a non-negative number (at most 292 years)"
        #expect(outcome == .refused(reason: reason, events: outcome?.events ?? 0..<0))
        // Nobody was offered it or let go of anything: the journal names the file and line.
        #expect(harness.timeline.lines.isEmpty)
        #expect(harness.daemon.configuration.backgroundTaskBudget == .seconds(5))
        #expect(harness.log.messages(.error).contains("reload refused by \(reason); keeping the previous configuration"))
        // RELOADING=1, then READY=1 with a status saying so.
        #expect(harness.stage.notified.first == .reloading)
        #expect(harness.stage.notified.contains(.ready))
        #expect(harness.stage.notified.contains { assignment in
            if case .status(let text) = assignment { return text.hasSuffix("(reload refused by \(reason))") }
            return false
        })
        // Mended, the same daemon reloads it.
        writeFile(path, Array("[BackgroundTasks]\nBudgetSec=7\n".utf8))
        harness.daemon.router.route(.reload, from: .control) { outcome = $0 }
        harness.application.runEndOfTurn()
        #expect(outcome.map { "\($0)" }?.hasPrefix("performed") == true)
        #expect(harness.daemon.configuration.backgroundTaskBudget == .seconds(7))
    }

    /// A reload to a PSI trigger the kernel refuses is refused like any invalid file: the trigger in force stays.
    @Test func aReloadToAMemoryPressureWindowTheKernelRefusesKeepsTheTriggerInForce() {
        let (harness, path) = harness(file: "[MemoryPressure]\nWindowSec=4\n")
        harness.launch()
        writeFile(path, Array("[MemoryPressure]\nWindowSec=4\nThresholdMSec=0\n".utf8))
        var outcome: RequestOutcome?
        harness.daemon.router.route(.reload, from: .control) { outcome = $0 }
        harness.application.runEndOfTurn()
        let reason = "the configuration: \(path):3: ThresholdMSec=0 is not a positive number of milliseconds (the kernel "
            + "refuses a PSI trigger threshold of 0); valid: above 0, at most the window, WindowSec="
        #expect(outcome == .refused(reason: reason, events: outcome?.events ?? 0..<0))
        #expect(harness.daemon.configuration.memoryPressureWindow == .seconds(4))
        #expect(harness.daemon.configuration.memoryPressureThreshold == .milliseconds(200))
    }

    @Test func theControlSocketAnswersARefusedReloadWithReloadRefused() {
        let (harness, path) = harness(file: "")
        harness.launch()
        writeFile(path, Array("[Nonsense]\n".utf8))
        for method in ["io.lifecyclekit.Lifecycle.Request", "io.systemd.service.Reload"] {
            let call = RecordedCall(method, method.hasSuffix("Request") ? ["request": .string("reload")] : [:])
            ControlService(daemon: harness.daemon, socketDescription: "test", serviceUID: 0).handle(call)
            guard case .failure(let error)? = call.final else {
                Issue.record("\(method): a refused reload answers with an error, not \(String(describing: call.final))")
                continue
            }
            #expect(error.name == "io.lifecyclekit.Lifecycle.ReloadRefused")
            #expect(error.parameters["reason"]?.stringValue?.hasPrefix("the configuration: \(path):1:") == true)
        }
    }

    @Test func aTerminationAsAFailureExitsWithStatus75() {
        let harness = DaemonHarness()
        harness.launch()
        harness.application.requestTermination(failing: "poll failed more often than its restart policy allows")
        harness.application.runEndOfTurn()
        #expect(harness.stage.exits == [75])
        #expect(harness.application.terminationFailure?.hasPrefix("poll failed") == true)
        // "terminated as a failure (exit status 75): …" is the daemon's last line, written once the loop has returned
        // (docs/lifecycle.md §7): Tests/EndToEnd/test_supervision_and_reload.py reads it in the journal.
        #expect(!harness.log.messages(.error).contains { $0.hasPrefix("terminated as a failure") })
    }
}
