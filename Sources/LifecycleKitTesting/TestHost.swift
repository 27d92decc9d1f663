//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecycleKit
public import Logging

/// Hosts an application in a test as the daemon hosts it under systemd, without a main loop, a signal or systemd:
/// the test drives it with requests and signals, every driven step ends its main-loop turn (layout, display, the
/// did-callbacks), the time of background work is a ``TestClock`` the test advances, and what the daemon would tell
/// systemd is kept in ``notifications``.
///
/// ```swift
/// @Test @MainActor func theFeedPausesInTheBackground() {
///     let host = TestHost(delegate: AppDelegate())
///     host.launch()
///     host.recorder.clear()
///     host.signal("SIGUSR1")
///     #expect(host.recorder.lines(events: ["applicationDidEnterBackground"]) == [
///         "root/feed applicationDidEnterBackground", "root applicationDidEnterBackground",
///         "delegate applicationDidEnterBackground",
///     ])
///     #expect(host.notifications.last == "STATUS=background")
/// }
/// ```
@MainActor
public final class TestHost {
    /// The application under test.
    public let application: Application
    /// Every callback of the application since the host was made.
    public let recorder: CallbackRecorder
    /// The time of the application's background work (background time, termination's budget).
    public let clock: TestClock
    /// What the daemon would have sent systemd, in order: `READY=1`, `STATUS=…`, `RELOADING=1`, `STOPPING=1`.
    public private(set) var notifications: [String] = []
    /// Whether the application has terminated (its tree is torn down).
    public private(set) var isTerminated = false
    /// Runs where the daemon applies the configuration a reload read (between `applicationWillReload` and
    /// `applicationDidReload`): only for a reload every participant accepted.
    public var onReloadConfiguration: (@MainActor () -> Void)?
    /// The application's settings a reload offers (`ReloadProposal.settings`), as the daemon offers
    /// those its configuration file holds.
    public var reloadSettings: (any Sendable)?
    /// When set, the next reloads find the configuration invalid with this reason (as the daemon says
    /// `file:line: what is wrong`) and are refused before anybody is offered them.
    public var reloadConfigurationError: String?
    /// Every state the application saved, in order, as the daemon would have written them (pass the last one to
    /// another host's ``launch(into:options:)`` in `LaunchOptions(restoredState:)` to test a restart).
    public private(set) var savedStates: [Archive] = []

    private var bridge: Bridge?
    /// The instant the ``clock``'s zero stands for.
    private let origin = ContinuousClock.now

    /// An application with `delegate`, hosted by this test host; its logs go to `logger` (silent by default: a test
    /// reads the ``recorder``).
    public init(
        delegate: any ApplicationDelegate,
        logger: Logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        application = Application(delegate: delegate, logger: logger)
        recorder = CallbackRecorder(application)
        clock = TestClock()
        let bridge = Bridge(owner: self)
        self.bridge = bridge
        application.host = bridge
    }

    /// Launches the application (into the foreground by default) and ends the turn.
    public func launch(into target: LaunchTarget = .active, options: LaunchOptions = LaunchOptions()) {
        application.launch(into: target, options: options)
        endTurn()
    }

    /// Submits `request` with `cause`, ends the turn, and returns what became of it (nil when it is still queued
    /// behind another, which cannot happen between turns).
    @discardableResult
    public func send(_ request: LifecycleRequest, cause: Cause = "test") -> RequestOutcome? {
        var outcome: RequestOutcome?
        application.submit(request, cause: cause) { outcome = $0 }
        endTurn()
        return outcome
    }

    /// Delivers a signal as the daemon maps it by default (docs/lifecycle.md §6: `SIGUSR1` backgrounds, `SIGUSR2` and
    /// `SIGCONT` return to the foreground, `SIGHUP` reloads, `SIGTERM` and `SIGINT` terminate, `SIGRTMIN+2` is a memory
    /// warning, `SIGRTMIN+3` an interruption), with the cause `signal:NAME`, and ends the turn.
    ///
    /// A name the default map does not hold stops the test with a message listing the ones it does.
    @discardableResult
    public func signal(_ name: String) -> RequestOutcome? {
        guard let request = standardSignalRequests.first(where: { $0.name == name })?.request else {
            preconditionFailure(
                "\(name) is not in the default signal map; use one of "
                    + standardSignalRequests.map(\.name).joined(separator: ", ")
            )
        }
        return send(request, cause: .signal(named: name))
    }

    /// Moves the ``clock`` forward, running the background work that falls due, and ends the turn.
    public func advance(by duration: Duration) {
        clock.advance(by: duration)
        endTurn()
    }

    /// Ends the current main-loop turn as the daemon's loop does: the layout and display passes, the did-callbacks and
    /// the work they defer, until nothing is left. Call it after changing the tree outside a driven step (an `embed`,
    /// a `push` from the test itself).
    public func endTurn() {
        // Bounded: a turn whose work keeps scheduling more is cut by the application itself (32 rounds).
        for _ in 0..<64 {
            guard bridge?.needsEndOfTurn == true else { return }
            bridge?.needsEndOfTurn = false
            application.runEndOfTurn()
        }
    }

    /// Waits (in real time, up to `timeout`) until `condition` holds, ending turns meanwhile: for work that runs in
    /// Swift tasks (a `LifecycleTask`, hosted services). Returns whether it held in time.
    ///
    /// The time-out counts the time this host had the main actor for. Every `@MainActor` test of a process shares the
    /// one main actor: while another test holds it (a long synchronous test, in a parallel run on a slow or
    /// sanitized build), neither this wait nor the work it waits for can run, so each pause of the wait longer than
    /// 10 ms (it asks for 1 ms) moves the deadline by what it overran rather than counting against the host.
    @discardableResult
    public func waitUntil(
        timeout: Duration = .seconds(30),
        _ condition: @MainActor () -> Bool
    ) async -> Bool {
        let clock = ContinuousClock()
        let slack = Duration.milliseconds(10)
        var deadline = clock.now + timeout
        while !condition() {
            guard clock.now < deadline else { return false }
            endTurn()
            let asleep = clock.now
            try? await Task.sleep(for: .milliseconds(1))
            let overrun = clock.now - asleep - slack
            if overrun > .zero { deadline += overrun }
        }
        endTurn()
        return true
    }

    fileprivate func record(_ notification: String) {
        notifications.append(notification)
    }

    fileprivate func applicationDidTerminate() {
        isTerminated = true
    }

    fileprivate func save(_ archive: Archive) {
        savedStates.append(archive)
    }

    /// The application's host: it holds the test host weakly (the test host owns the application).
    private final class Bridge: ApplicationHost {
        weak var owner: TestHost?
        var needsEndOfTurn = true

        init(owner: TestHost) {
            self.owner = owner
        }

        func applicationDidFinishLaunching(_ application: Application) {
            owner?.record("READY=1")
        }

        func application(_ application: Application, didChangeStatus status: String) {
            owner?.record("STATUS=\(status)")
        }

        func applicationWillBeginReload(_ application: Application) {
            owner?.record("RELOADING=1")
        }

        func applicationPrepareReload(_ application: Application) -> ReloadPreparation {
            if let error = owner?.reloadConfigurationError { return .refused(error) }
            return .ready(ReloadProposal(settings: owner?.reloadSettings))
        }

        func applicationReloadConfiguration(_ application: Application) {
            owner?.onReloadConfiguration?()
        }

        func applicationDidFinishReload(_ application: Application) {
            owner?.record("READY=1")
        }

        func applicationWillBeginTermination(_ application: Application) {
            owner?.record("STOPPING=1")
        }

        func applicationDidTerminate(_ application: Application) {
            owner?.applicationDidTerminate()
        }

        func application(_ application: Application, didEncodeRestorableState archive: Archive) {
            owner?.save(archive)
        }

        func applicationNeedsEndOfTurn(_ application: Application) {
            needsEndOfTurn = true
        }

        func currentTime(of application: Application) -> ContinuousClock.Instant {
            guard let owner else { return .now }
            return owner.origin + owner.clock.now
        }

        func application(
            _ application: Application,
            schedule work: @escaping @MainActor () -> Void,
            after delay: Duration
        ) -> (any ScheduledWork)? {
            owner?.clock.schedule(after: delay, work)
        }
    }
}
