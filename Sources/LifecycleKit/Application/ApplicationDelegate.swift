//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The application's delegate: every callback of docs/lifecycle.md §1, each with an empty default.
///
/// Entering events reach the delegate before the controller tree; leaving events reach it after the tree.
@MainActor
public protocol ApplicationDelegate: AnyObject {
    /// Launch has started; the application is `inactive`. Return false to report a failed launch (it still
    /// continues, as in UIKit).
    func application(_ application: Application, willFinishLaunchingWithOptions options: LaunchOptions) -> Bool
    /// Whether to restore the state saved by an earlier run (``LaunchOptions/restoredState``); default false.
    func application(_ application: Application, shouldRestoreApplicationState archive: Archive) -> Bool
    /// Makes the controller for a restoration path that the tree lacks (UIKit's
    /// `application(_:viewControllerWithRestorationIdentifierPath:coder:)`), with whatever it needs injected; nil (the
    /// default) lets the class registered under the archived class name make it with `init(coder:)`.
    func application(
        _ application: Application,
        viewControllerWithRestorationIdentifierPath identifierComponents: [String],
        coder: Coder
    ) -> ViewController?
    /// Restoration is done: read the values written in ``application(_:willEncodeRestorableStateWith:)``.
    func application(_ application: Application, didDecodeRestorableStateWith coder: StateCoder)
    /// An upgrade's predecessor, which handed this process its state and then drained, has exited: `predecessor` holds
    /// the values it saved as it terminated and those it handed over (what this process restored), so what it changed
    /// meanwhile — the requests it answered while it drained — is merged instead of lost. The default merges nothing.
    func application(_ application: Application, didReceiveFinalStateOf predecessor: PredecessorState)
    /// This process handed the service to an upgrade's successor and has drained: write the values the successor
    /// merges (``PredecessorState/finalApplicationValues``), as they are now, after the requests answered during the
    /// drain. Called once, right before the process exits, after the tree was torn down. The default writes nothing.
    func application(_ application: Application, willHandOverFinalStateWith coder: StateCoder)
    /// Whether to save the tree's state now (after `applicationDidEnterBackground`, before termination's teardown);
    /// default false. Asked only when the window's root controller has a restoration identifier.
    func application(_ application: Application, shouldSaveApplicationState coder: StateCoder) -> Bool
    /// The state is being saved: write the application's own values.
    func application(_ application: Application, willEncodeRestorableStateWith coder: StateCoder)
    /// Registers the controller and view classes that storyboards and saved states may name; called whenever the
    /// application needs them (before a storyboard loads, at restoration).
    func registerArchiveClasses(in registry: inout ArchiveClassRegistry)
    /// Launch is done: build the window and its root controller here.
    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool
    /// The application became active: serve.
    func applicationDidBecomeActive(_ application: Application)
    /// The application is about to stop being active.
    func applicationWillResignActive(_ application: Application)
    /// The application entered the background: pause work, save state.
    func applicationDidEnterBackground(_ application: Application)
    /// The application is about to return to the foreground.
    func applicationWillEnterForeground(_ application: Application)
    /// Memory is tight: drop caches.
    func applicationDidReceiveMemoryWarning(_ application: Application)
    /// The application is about to terminate; the controller tree is torn down after this returns.
    func applicationWillTerminate(_ application: Application)
    /// A reload (SIGHUP) is on offer: the host has read and validated the new configuration, and nothing has applied
    /// it yet. Throw, with the reason, to refuse it: the reload then applies to nobody (the tree is not asked), the
    /// application keeps running as it was, and `systemctl reload` fails naming the reason. The controllers are offered
    /// it next (``ViewController/validateReload(_:)``).
    func application(_ application: Application, validateReload proposal: ReloadProposal) throws
    /// A reload that everybody accepted starts; the configuration is applied after this and the tree's
    /// `applicationWillReload`.
    func applicationWillReload(_ application: Application)
    /// The reload is done: apply the configuration.
    func applicationDidReload(_ application: Application)
    /// A controller's lifecycle-bound task (or hosted service) failed; the controller heard it first. The main
    /// loop carries on, and the task's restart policy starts it again after a delay, or escalates.
    func application(_ application: Application, lifecycleTask task: LifecycleTask, didFailWithError error: any Error)
    /// A controller's task failed more often than its restart policy allows (the controller heard it first). The
    /// default terminates the application with a failure exit status
    /// (``Application/requestTermination(cause:failing:)``), so that systemd's `Restart=` restarts the service
    /// with its own backoff; override it to keep running without that task.
    func application(
        _ application: Application,
        lifecycleTask task: LifecycleTask,
        didExhaustRestartsWithError error: any Error
    )
    /// The application's adoption of scenes (UIKit's `UIApplicationSceneManifest`), read when the application is made
    /// and, while still nil, once more when its launch is asked for (after a daemon's `configure(options:settings:)`, so
    /// a configuration may choose it); fixed from the launch on. Nil (the default) keeps the one implicit window. With a manifest, the scene delegates hear the foreground
    /// and background transitions instead of this delegate, and the application's state follows its scenes.
    var sceneManifest: SceneManifest? { get }
    /// The configuration of a scene about to connect (each connection, a reconnection included); the default is
    /// `SceneConfiguration(name: "Default Configuration", sessionRole: session.role)`, a scene without a delegate.
    func application(
        _ application: Application,
        configurationForConnecting session: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration
    /// Scene sessions were deleted (their scenes have disconnected): release what belonged to them. Sessions deleted
    /// while the service was not running are reported right after `didFinishLaunching` of the next launch.
    func application(_ application: Application, didDiscardSceneSessions sessions: Set<SceneSession>)
}

extension ApplicationDelegate {
    public func application(_ application: Application, willFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        true
    }
    public func application(_ application: Application, shouldRestoreApplicationState archive: Archive) -> Bool {
        false
    }
    public func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        true
    }
    public func application(
        _ application: Application,
        viewControllerWithRestorationIdentifierPath identifierComponents: [String],
        coder: Coder
    ) -> ViewController? {
        nil
    }
    public func application(_ application: Application, didDecodeRestorableStateWith coder: StateCoder) {}
    public func application(_ application: Application, didReceiveFinalStateOf predecessor: PredecessorState) {}
    public func application(_ application: Application, willHandOverFinalStateWith coder: StateCoder) {}
    public func application(_ application: Application, shouldSaveApplicationState coder: StateCoder) -> Bool {
        false
    }
    public func application(_ application: Application, willEncodeRestorableStateWith coder: StateCoder) {}
    public func registerArchiveClasses(in registry: inout ArchiveClassRegistry) {}
    public func applicationDidBecomeActive(_ application: Application) {}
    public func applicationWillResignActive(_ application: Application) {}
    public func applicationDidEnterBackground(_ application: Application) {}
    public func applicationWillEnterForeground(_ application: Application) {}
    public func applicationDidReceiveMemoryWarning(_ application: Application) {}
    public func applicationWillTerminate(_ application: Application) {}
    public var sceneManifest: SceneManifest? { nil }
    public func application(
        _ application: Application,
        configurationForConnecting session: SceneSession,
        options: Scene.ConnectionOptions
    ) -> SceneConfiguration {
        SceneConfiguration(name: "Default Configuration", sessionRole: session.role)
    }
    public func application(_ application: Application, didDiscardSceneSessions sessions: Set<SceneSession>) {}
    public func application(_ application: Application, validateReload proposal: ReloadProposal) throws {}
    public func applicationWillReload(_ application: Application) {}
    public func applicationDidReload(_ application: Application) {}
    public func application(
        _ application: Application,
        lifecycleTask task: LifecycleTask,
        didFailWithError error: any Error
    ) {}
    public func application(
        _ application: Application,
        lifecycleTask task: LifecycleTask,
        didExhaustRestartsWithError error: any Error
    ) {
        application.requestTermination(
            cause: "supervision",
            failing: "\(task.name) failed more often than its restart policy allows: \(error)"
        )
    }
}

/// What hosts the application: the daemon's main loop, which tells the service manager what happens.
///
/// Every method has an empty default; a test can run an application with no host at all.
@MainActor
package protocol ApplicationHost: AnyObject {
    /// Launch is over (after `applicationDidBecomeActive`, or `applicationDidEnterBackground` for a background
    /// launch): report readiness (`READY=1`).
    func applicationDidFinishLaunching(_ application: Application)
    /// The status text changed (a state change, or a display pass): report it (`STATUS=`).
    func application(_ application: Application, didChangeStatus status: String)
    /// A reload starts, before any callback: report it (`RELOADING=1`).
    func applicationWillBeginReload(_ application: Application)
    /// Apply the configuration ``applicationPrepareReload(_:)`` read, between `applicationWillReload` and
    /// `applicationDidReload`: only for a reload every participant accepted.
    func applicationReloadConfiguration(_ application: Application)
    /// The reload is over, applied or refused (``Application/reloadRefusal``): report readiness again (`READY=1`).
    func applicationDidFinishReload(_ application: Application)
    /// Termination starts, before any callback: report it (`STOPPING=1`).
    func applicationWillBeginTermination(_ application: Application)
    /// The tree is torn down: finish background tasks, then exit.
    func applicationDidTerminate(_ application: Application)
    /// The tree's state was preserved: store the archive (``Archive/encodedState()``) where the next launch finds it.
    func application(_ application: Application, didEncodeRestorableState archive: Archive)
    /// The set of running background tasks changed.
    func application(_ application: Application, backgroundTasksDidChange tasks: [BackgroundTask])
    /// A run of lifecycle-bound work ended (``Application/runsInProgress`` is shorter).
    func applicationRunsDidChange(_ application: Application)
    /// Runs `work` on the main actor after `delay` (the background time, budgets); nil when the host has no timers,
    /// in which case nothing expires by time.
    func application(
        _ application: Application,
        schedule work: @escaping @MainActor () -> Void,
        after delay: Duration
    ) -> (any ScheduledWork)?
    /// A reload begins (after ``applicationWillBeginReload(_:)``): read and validate the configuration, keep it for
    /// ``applicationReloadConfiguration(_:)``, and return what to offer — or why it cannot be used.
    func applicationPrepareReload(_ application: Application) -> ReloadPreparation
    /// The time now on the host's clock (a test's clock moves only when the test says): what restart periods are
    /// measured on.
    func currentTime(of application: Application) -> ContinuousClock.Instant
    /// Work was deferred to the end of the turn (a layout mark, a did-callback) outside an end of turn: make sure
    /// ``Application/runEndOfTurn()`` runs before the loop sleeps, even if nothing else happens in this turn.
    func applicationNeedsEndOfTurn(_ application: Application)
}

extension ApplicationHost {
    package func applicationDidFinishLaunching(_ application: Application) {}
    package func application(_ application: Application, didChangeStatus status: String) {}
    package func applicationWillBeginReload(_ application: Application) {}
    package func applicationReloadConfiguration(_ application: Application) {}
    package func applicationDidFinishReload(_ application: Application) {}
    package func applicationWillBeginTermination(_ application: Application) {}
    package func applicationDidTerminate(_ application: Application) {}
    package func application(_ application: Application, didEncodeRestorableState archive: Archive) {}
    package func application(_ application: Application, backgroundTasksDidChange tasks: [BackgroundTask]) {}
    package func applicationRunsDidChange(_ application: Application) {}
    package func applicationNeedsEndOfTurn(_ application: Application) {}
    package func currentTime(of application: Application) -> ContinuousClock.Instant { .now }
    package func applicationPrepareReload(_ application: Application) -> ReloadPreparation { .ready(ReloadProposal()) }
    package func application(
        _ application: Application,
        schedule work: @escaping @MainActor () -> Void,
        after delay: Duration
    ) -> (any ScheduledWork)? {
        nil
    }
}
