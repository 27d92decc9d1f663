//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The names of the callbacks the trace records (``TraceEvent/event``, the journal's `LIFECYCLE_EVENT`), named once
/// for the code that records them and for every reader; a name is the callback as UIKit spells it, with its argument
/// labels where it has arguments.
///
/// Constants, not an enum: an event stays a `String` in ``TraceEvent``, in the journal and on the control socket, and
/// the fan-out passes the name it is given to every controller without converting it.
package enum TraceEventName {
    // MARK: The application delegate

    /// `application(_:willFinishLaunchingWithOptions:)`.
    package static let willFinishLaunching = "willFinishLaunching"
    /// `application(_:didFinishLaunchingWithOptions:)`.
    package static let didFinishLaunching = "didFinishLaunching"
    /// The application became active (the delegate's, then every controller's).
    package static let applicationDidBecomeActive = "applicationDidBecomeActive"
    /// The application is about to become inactive (every controller's, then the delegate's).
    package static let applicationWillResignActive = "applicationWillResignActive"
    /// The application entered the background (every controller's, then the delegate's).
    package static let applicationDidEnterBackground = "applicationDidEnterBackground"
    /// The application is about to return to the foreground (the delegate's, then every controller's).
    package static let applicationWillEnterForeground = "applicationWillEnterForeground"
    /// The application is about to terminate (every controller's, then the delegate's).
    package static let applicationWillTerminate = "applicationWillTerminate"
    /// The delegate's memory warning (the controllers hear ``didReceiveMemoryWarning`` first).
    package static let applicationDidReceiveMemoryWarning = "applicationDidReceiveMemoryWarning"
    /// A reload is about to apply (every controller's, then the delegate's).
    package static let applicationWillReload = "applicationWillReload"
    /// A reload has applied (the delegate's, then every controller's).
    package static let applicationDidReload = "applicationDidReload"
    /// The delegate is offered a reload to validate.
    package static let applicationValidateReload = "application(_:validateReload:)"
    /// The delegate hears that a controller's lifecycle task failed.
    package static let applicationLifecycleTaskDidFail = "application(_:lifecycleTask:didFailWithError:)"
    /// The delegate hears that a controller's lifecycle task ran out of restarts.
    package static let applicationLifecycleTaskDidExhaustRestarts =
        "application(_:lifecycleTask:didExhaustRestartsWithError:)"
    /// The delegate is asked whether to save the state.
    package static let applicationShouldSaveState = "application(_:shouldSaveApplicationState:)"
    /// The delegate adds its own values to the saved state.
    package static let applicationWillEncodeState = "application(_:willEncodeRestorableStateWith:)"
    /// The delegate is asked whether to restore the saved state.
    package static let applicationShouldRestoreState = "application(_:shouldRestoreApplicationState:)"
    /// The delegate reads its own values from the restored state.
    package static let applicationDidDecodeState = "application(_:didDecodeRestorableStateWith:)"
    /// The delegate receives the state an upgrade's predecessor saved as it exited, after the hand-over.
    package static let applicationDidReceivePredecessorState = "application(_:didReceiveFinalStateOf:)"
    /// The delegate of an upgrade's predecessor writes its final values for the successor, after the drain.
    package static let applicationWillHandOverFinalState = "application(_:willHandOverFinalStateWith:)"
    /// The delegate is asked for a controller the restored state names and the tree lacks.
    package static let applicationViewControllerForRestoration =
        "application(_:viewControllerWithRestorationIdentifierPath:coder:)"
    /// The delegate is asked for the configuration of a scene being connected.
    package static let applicationConfigurationForConnecting = "application(_:configurationForConnecting:options:)"
    /// The delegate hears that scene sessions were deleted (`LIFECYCLE_DETAIL`: their identifiers).
    package static let applicationDidDiscardSceneSessions = "application(_:didDiscardSceneSessions:)"

    // MARK: A scene delegate

    /// A scene is being connected to its session.
    package static let sceneWillConnect = "scene(_:willConnectTo:options:)"
    /// A scene was disconnected.
    package static let sceneDidDisconnect = "sceneDidDisconnect"
    /// A scene is about to enter the foreground (the scene delegate's, then its tree's `applicationWillEnterForeground`).
    package static let sceneWillEnterForeground = "sceneWillEnterForeground"
    /// A scene became active (the scene delegate's, then its tree's `applicationDidBecomeActive`).
    package static let sceneDidBecomeActive = "sceneDidBecomeActive"
    /// A scene is about to stop being active (its tree's `applicationWillResignActive`, then the scene delegate's).
    package static let sceneWillResignActive = "sceneWillResignActive"
    /// A scene entered the background (its tree's `applicationDidEnterBackground`, then the scene delegate's).
    package static let sceneDidEnterBackground = "sceneDidEnterBackground"

    /// A background task's expiration handler runs.
    package static let expirationHandler = "expirationHandler"
    /// A reload was refused: by the delegate, a controller, or the configuration itself.
    package static let reloadRefused = "reloadRefused"

    // MARK: A view controller

    /// The controller was made in code (traced when it joins an application).
    package static let initialize = "init"
    /// The controller was made from an archive or a saved state.
    package static let initWithCoder = "init(coder:)"
    /// The controller or view is released.
    package static let deinitialize = "deinit"
    /// `awakeFromArchive()`: a controller an archive made, once the archive's whole tree is made.
    package static let awakeFromArchive = "awakeFromArchive"
    /// `loadView()`.
    package static let loadView = "loadView"
    /// `viewDidLoad()`.
    package static let viewDidLoad = "viewDidLoad"
    /// `willMove(toParent:)`.
    package static let willMoveToParent = "willMove(toParent:)"
    /// `didMove(toParent:)`.
    package static let didMoveToParent = "didMove(toParent:)"
    /// `viewWillAppear(_:)`.
    package static let viewWillAppear = "viewWillAppear"
    /// `viewDidAppear(_:)`.
    package static let viewDidAppear = "viewDidAppear"
    /// `viewWillDisappear(_:)`.
    package static let viewWillDisappear = "viewWillDisappear"
    /// `viewDidDisappear(_:)`.
    package static let viewDidDisappear = "viewDidDisappear"
    /// `viewWillLayoutSubviews()`.
    package static let viewWillLayoutSubviews = "viewWillLayoutSubviews"
    /// `viewDidLayoutSubviews()`.
    package static let viewDidLayoutSubviews = "viewDidLayoutSubviews"
    /// A controller's memory warning (before the delegate's ``applicationDidReceiveMemoryWarning``).
    package static let didReceiveMemoryWarning = "didReceiveMemoryWarning"
    /// A controller is offered a reload to validate.
    package static let validateReload = "validateReload(_:)"
    /// A controller writes its values into the saved state.
    package static let encodeRestorableState = "encodeRestorableState(with:)"
    /// A controller brings values saved by an older version of its class up to its own, before it reads them.
    package static let migrateRestorableState = "migrateRestorableState(with:fromVersion:)"
    /// A controller reads its values from the restored state.
    package static let decodeRestorableState = "decodeRestorableState(with:)"
    /// Restoration has finished: every restored controller hears it.
    package static let applicationFinishedRestoringState = "applicationFinishedRestoringState"

    // MARK: A controller's lifecycle task

    /// A run of the task's work started.
    package static let taskDidStart = "taskDidStart"
    /// The task's work is asked to stop (its controller disappeared, or the application left the foreground).
    package static let taskWillStop = "taskWillStop"
    /// A run of the task's work ended.
    package static let taskDidEnd = "taskDidEnd"
    /// The task's work failed and is restarted after its backoff.
    package static let taskWillRestart = "taskWillRestart"
    /// The task's work failed, and its restart policy does not restart it (the controller's callback).
    package static let lifecycleTaskDidFail = "lifecycleTask(_:didFailWithError:)"
    /// The task's work failed more often than its restart policy allows (the controller's callback).
    package static let lifecycleTaskDidExhaustRestarts = "lifecycleTask(_:didExhaustRestartsWithError:)"

    // MARK: A view

    /// `layoutSubviews()`.
    package static let layoutSubviews = "layoutSubviews"
    /// `draw(in:)`.
    package static let draw = "draw"
    /// `willMove(toWindow:)`.
    package static let willMoveToWindow = "willMove(toWindow:)"
    /// `didMoveToWindow()`.
    package static let didMoveToWindow = "didMoveToWindow"
    /// `willMove(toSuperview:)`.
    package static let willMoveToSuperview = "willMove(toSuperview:)"
    /// `didMoveToSuperview()`.
    package static let didMoveToSuperview = "didMoveToSuperview"
    /// `didAddSubview(_:)`.
    package static let didAddSubview = "didAddSubview(_:)"
    /// `willRemoveSubview(_:)`.
    package static let willRemoveSubview = "willRemoveSubview(_:)"
}
