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

/// A daemon whose every effect is a stand-in of ``Stage``: the manual clock and timers, recorded notifications,
/// the terminal it was started from, process stops and exits.
@MainActor
final class DaemonHarness {
    let stage = Stage()
    let log = RecordedLog()
    let delegate: BackgroundWorkDelegate
    let application: Application
    let daemon: Daemon

    var timeline: Timeline { stage.timeline }

    init(
        configuration: DaemonConfiguration = DaemonConfiguration(),
        options: DaemonOptions = DaemonOptions(programName: "test"),
        terminal: TerminalProbe? = nil,
        underSystemd: Bool = false,
        containerInit: Bool = false,
        upgradeEffects: ((Stage) -> UpgradeEffects)? = nil,
        applicationDelegate: (any ApplicationDelegate)? = nil
    ) {
        if let terminal { stage.terminal = terminal }
        stage.isContainerInit = containerInit
        if underSystemd {
            stage.underSystemd = true
            stage.environment["NOTIFY_SOCKET"] = "/run/systemd/notify"
        }
        delegate = BackgroundWorkDelegate(timeline: stage.timeline)
        // Another delegate (one that uses scenes) runs the application instead, when a test gives one.
        application = Application(delegate: applicationDelegate ?? delegate, logger: log.logger())
        var configuration = configuration
        configuration.watchLogind = false
        configuration.watchMemoryPressure = false
        daemon = try! Daemon(
            configuration: configuration,
            options: options,
            application: application,
            applicationSection: nil,
            loop: nil,
            effects: stage.effects(),
            upgradeEffects: upgradeEffects?(stage),
            logger: log.logger(),
            configure: { _ in }
        )
        application.trace.observe { [timeline = stage.timeline] event in
            guard event.target == "delegate" else { return }
            timeline.append("\(event.event) \(event.cause)")
        }
    }

    func launch() {
        application.launch(options: LaunchOptions(reason: .test))
        application.runEndOfTurn()
        timeline.clear()
        stage.notified.removeAll()
    }

    /// Delivers a signal as the loop does, then ends the turn.
    func signal(_ signal: UnixSignal) {
        daemon.handle(signal)
        application.runEndOfTurn()
    }
}

/// A terminal a test can hang up.
@MainActor
final class TerminalState {
    var hungUp = false
}

extension TerminalProbe {
    /// Started by hand in a terminal that is still there.
    static var liveTerminal: TerminalProbe {
        TerminalProbe(startedOnTerminal: true, stdinIsTerminal: { true }, hasHungUp: { false })
    }
}

@MainActor
@Suite("The daemon's policy, with every effect a stand-in")
struct DaemonPolicyTests {
    static let background = [
        "applicationWillResignActive signal:SIGTSTP", "applicationDidEnterBackground signal:SIGTSTP",
    ]

    /// docs/lifecycle.md §7: nobody outside hears of a state before journald has the lines of the callbacks that led
    /// there — every notification waits for the logs first.
    @Test func everyNotificationComesAfterJournaldTookTheLogs() {
        let harness = DaemonHarness()
        harness.launch()
        harness.stage.deliveries.removeAll()
        harness.signal(.terminalStop)
        harness.signal(.continue)
        harness.signal(.terminate)
        let notifications = harness.stage.deliveries.indices.filter { harness.stage.deliveries[$0] == "notify" }
        #expect(notifications.count >= 3, "\(harness.stage.deliveries)")
        for index in notifications {
            #expect(index > 0 && harness.stage.deliveries[index - 1] == "logs delivered", "\(harness.stage.deliveries)")
        }
    }

    @Test func underSystemdCtrlZOnlyBackgrounds() {
        let harness = DaemonHarness()
        harness.launch()
        harness.signal(.terminalStop)
        #expect(harness.timeline.lines == Self.background)
        #expect(harness.stage.stops == 0)
    }

    @Test func inATerminalCtrlZBackgroundsThenStopsTheProcessAsJobControlDoes() {
        let harness = DaemonHarness(terminal: .liveTerminal)
        harness.launch()
        harness.signal(.terminalStop)
        #expect(harness.timeline.lines == Self.background + ["process stopped"])
        // `fg` sends SIGCONT: back to the foreground.
        harness.timeline.clear()
        harness.signal(.continue)
        #expect(harness.timeline.lines == [
            "applicationWillEnterForeground signal:SIGCONT", "applicationDidBecomeActive signal:SIGCONT",
        ])
    }

    @Test func inATerminalCtrlZStopsTheProcessOnlyOnceItsBackgroundTasksHaveEnded() {
        let harness = DaemonHarness(terminal: .liveTerminal)
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.signal(.terminalStop)
        // A server draining in the background holds a task like this one: stopped now, it would freeze the drain.
        #expect(harness.timeline.lines.contains("task began"))
        #expect(harness.stage.stops == 0)
        #expect(harness.log.messages(.info).contains { $0.hasPrefix("stopping once 1 background task(s) end") })
        harness.timeline.clear()
        harness.delegate.endTask(harness.application)
        // The task may end inside a callback: the stop waits for the end of the turn.
        #expect(harness.stage.stops == 0)
        harness.application.runEndOfTurn()
        #expect(harness.timeline.lines == ["task ended", "process stopped"])
        harness.timeline.clear()
        harness.signal(.continue)
        #expect(harness.timeline.lines == [
            "applicationWillEnterForeground signal:SIGCONT", "applicationDidBecomeActive signal:SIGCONT",
        ])
    }

    @Test func aCtrlZWaitingForBackgroundTasksStopsOnceTheBackgroundTimeHasExpiredThem() {
        var configuration = DaemonConfiguration()
        configuration.backgroundTime = .seconds(10)
        let harness = DaemonHarness(configuration: configuration, terminal: .liveTerminal)
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.signal(.terminalStop)
        harness.timeline.clear()
        harness.stage.advance(by: .seconds(9))
        #expect(harness.stage.stops == 0)
        harness.stage.advance(by: .seconds(1))
        harness.application.runEndOfTurn()
        #expect(harness.timeline.lines == ["expirationHandler api", "task expired", "process stopped"])
    }

    @Test func returningToTheForegroundOrTerminatingCancelsACtrlZThatWaitsForBackgroundTasks() {
        let harness = DaemonHarness(terminal: .liveTerminal)
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.signal(.terminalStop)
        harness.signal(.user2)
        harness.delegate.endTask(harness.application)
        harness.application.runEndOfTurn()
        #expect(harness.stage.stops == 0)
        #expect(harness.application.applicationState == .active)

        harness.signal(.terminalStop)
        harness.signal(.terminate)
        harness.delegate.endTask(harness.application)
        harness.application.runEndOfTurn()
        #expect(harness.stage.stops == 0)
        #expect(harness.stage.exits == [0])
    }

    /// As PID 1 of a PID namespace (a container with a terminal) a stop the process sends itself is dropped by the
    /// kernel: Ctrl-Z backgrounds, says so, and neither waits for the background tasks nor claims a stop.
    @Test func asPID1InATerminalCtrlZOnlyBackgroundsAndSaysTheProcessCannotStopItself() {
        let harness = DaemonHarness(
            terminal: TerminalProbe(startedOnTerminal: true, stdinIsTerminal: { true }, hasHungUp: { false }, canStopItself: false)
        )
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.signal(.terminalStop)
        #expect(harness.timeline.lines.filter { $0 != "task began" } == Self.background)
        #expect(harness.timeline.lines.contains("task began"))
        #expect(harness.stage.stops == 0)
        #expect(harness.log.messages(.notice).contains { $0.contains("as PID 1 of its PID namespace this process cannot stop itself") })
        let info = harness.log.messages(.info)
        #expect(!info.contains { $0.hasPrefix("stopping once") || $0.hasPrefix("stopped by SIGTSTP") }, "\(info)")
        harness.delegate.endTask(harness.application)
        harness.application.runEndOfTurn()
        #expect(harness.stage.stops == 0)
        harness.timeline.clear()
        harness.signal(.continue)
        #expect(harness.timeline.lines == [
            "applicationWillEnterForeground signal:SIGCONT", "applicationDidBecomeActive signal:SIGCONT",
        ])
    }

    @Test func ctrlZDoesNotStopAProcessWhoseStdinIsNoLongerATerminal() {
        let harness = DaemonHarness(
            terminal: TerminalProbe(startedOnTerminal: true, stdinIsTerminal: { false }, hasHungUp: { false })
        )
        harness.launch()
        harness.signal(.terminalStop)
        #expect(harness.stage.stops == 0)
    }

    @Test func aHangupReloadsUnlessTheTerminalTheDaemonRunsInHasHungUp() {
        let terminal = TerminalState()
        let harness = DaemonHarness(
            terminal: TerminalProbe(startedOnTerminal: true, stdinIsTerminal: { true }, hasHungUp: { terminal.hungUp })
        )
        harness.launch()
        harness.signal(.hangup)
        #expect(
            harness.timeline.lines == [
                "application(_:validateReload:) signal:SIGHUP", "applicationWillReload signal:SIGHUP",
                "applicationDidReload signal:SIGHUP",
            ]
        )
        harness.timeline.clear()
        terminal.hungUp = true
        harness.signal(.hangup)
        #expect(harness.timeline.lines.contains("applicationWillTerminate signal:SIGHUP"))
        #expect(harness.stage.exits == [0])
    }

    @Test func underSystemdAHangupAlwaysReloads() {
        let harness = DaemonHarness(
            terminal: TerminalProbe(startedOnTerminal: false, stdinIsTerminal: { false }, hasHungUp: { true })
        )
        harness.launch()
        harness.signal(.hangup)
        #expect(
            harness.timeline.lines == [
                "application(_:validateReload:) signal:SIGHUP", "applicationWillReload signal:SIGHUP",
                "applicationDidReload signal:SIGHUP",
            ]
        )
    }

    @Test func terminationExtendsTheStopTimeoutAsSoonAsItWaitsAndEverySecondAfter() {
        var configuration = DaemonConfiguration()
        configuration.backgroundTaskBudget = .seconds(30)
        let harness = DaemonHarness(configuration: configuration)
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.signal(.terminate)
        // The task began in applicationDidEnterBackground, inside termination: the wait starts with it, before the
        // tree is torn down, so systemd hears it before its stop timeout could fire.
        let sent = harness.stage.notified
        let firstExtension = sent.firstIndex { if case .extendTimeout = $0 { true } else { false } }
        #expect(sent.first == .stopping)
        #expect(firstExtension != nil && sent[firstExtension!] == .extendTimeout(.seconds(3)))
        #expect(firstExtension! < sent.firstIndex(of: .status("terminated"))!)
        #expect(harness.stage.exits.isEmpty)
        harness.stage.advance(by: .seconds(3))
        #expect(harness.stage.notified.filter { if case .extendTimeout = $0 { true } else { false } }.count == 4)
        harness.delegate.endTask(harness.application)
        #expect(harness.stage.exits == [0])
        // No extension after the exit.
        let count = harness.stage.notified.count
        harness.stage.advance(by: .seconds(5))
        #expect(harness.stage.notified.count == count)
    }

    @Test func terminationExpiresTasksWhenItsBudgetRunsOutThenExits() {
        var configuration = DaemonConfiguration()
        configuration.backgroundTaskBudget = .seconds(5)
        let harness = DaemonHarness(configuration: configuration)
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.signal(.terminate)
        harness.timeline.clear()
        harness.stage.advance(by: .milliseconds(4999))
        #expect(harness.stage.exits.isEmpty)
        harness.stage.advance(by: .milliseconds(1))
        #expect(harness.timeline.lines == ["expirationHandler api", "task expired", "exit 0"])
        // The last extension never reaches past the budget by more than systemd's two seconds of slack.
        let extensions = harness.stage.notified.compactMap { if case .extendTimeout(let d) = $0 { d } else { nil } }
        #expect(extensions.allSatisfy { $0 <= .seconds(3) })
    }

    @Test func terminationWithoutBackgroundTasksExitsAtOnceWithoutExtending() {
        let harness = DaemonHarness()
        harness.launch()
        harness.signal(.terminate)
        #expect(harness.stage.exits == [0])
        #expect(harness.stage.notified == [.stopping, .status("inactive"), .status("background"), .status("terminated")])
    }

    // Issue 26: the delegate let go of the window in applicationWillTerminate, and the daemon exited before the root
    // finished disappearing and was released (its viewDidDisappear and deinit never ran). It exits after them now.
    @Test func theDaemonExitsOnlyAfterTheTeardownEvenWhenApplicationWillTerminateLetsGoOfTheWindow() {
        let harness = DaemonHarness()
        harness.delegate.dropsWindowOnTermination = true
        harness.launch()
        let observation = harness.application.trace.observe { [timeline = harness.timeline] event in
            if event.target == "root" { timeline.append("root \(event.event)") }
        }
        defer { observation.cancel() }

        harness.signal(.terminate)

        #expect(
            harness.timeline.lines.suffix(5) == [
                "applicationWillTerminate signal:SIGTERM", "root viewWillDisappear", "root viewDidDisappear",
                "root deinit", "exit 0",
            ]
        )
    }

    @Test func backgroundTasksExpireWhenTheBackgroundTimeRunsOutAndTheDaemonKeepsRunning() {
        var configuration = DaemonConfiguration()
        configuration.backgroundTime = .seconds(10)
        let harness = DaemonHarness(configuration: configuration)
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.signal(.user1)
        harness.timeline.clear()
        harness.stage.advance(by: .seconds(9))
        #expect(harness.timeline.lines.isEmpty)
        harness.stage.advance(by: .seconds(1))
        #expect(harness.timeline.lines == ["expirationHandler api", "task expired"])
        #expect(harness.application.backgroundTasks.isEmpty)
        #expect(harness.application.applicationState == .background)
        #expect(harness.stage.exits.isEmpty)
    }

    @Test func returningToTheForegroundStopsTheBackgroundTime() {
        var configuration = DaemonConfiguration()
        configuration.backgroundTime = .seconds(10)
        let harness = DaemonHarness(configuration: configuration)
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        harness.signal(.user1)
        harness.signal(.user2)
        harness.timeline.clear()
        harness.stage.advance(by: .seconds(60))
        #expect(harness.timeline.lines.isEmpty)
        #expect(harness.application.backgroundTasks.count == 1)
    }
}
