//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
public import Logging

/// The application object: its state, its delegate, its window, and the requests that move it between states.
///
/// Hosts (the daemon, a `TestHost` of LifecycleKitTesting) create it, call ``launch(into:options:cause:)``, feed it
/// requests, and end every main-loop turn (layout, display, the did-callbacks). It coordinates five parts, each with
/// one job: the state machine (which callbacks a request fires, and the one queue of requests), the fan-out (every
/// controller hears each application event), the turn scheduler (layout, display and did-callbacks at the end of a
/// turn), the tree's moves in progress (edits made meanwhile wait for them) and the background tasks; the status text
/// is composed from the visible views.
///
/// Nothing in the framework reads a global: a window knows its application, and every controller and view reaches
/// it through the tree it joined, so two applications in one process keep separate trees and traces.
@MainActor
public final class Application {
    /// The application most recently created in this process: a convenience for application code, as UIKit's
    /// `UIApplication.shared`. The framework itself never reads it.
    ///
    /// Weak: an application released off the main actor waits for its (main-actor) deinit, and a weak reference
    /// reads nil meanwhile where an unowned one would trap.
    public private(set) static weak var current: Application?

    /// The application of this process; it must have been created (see ``current``).
    public static var shared: Application {
        guard let current else { preconditionFailure("no Application has been created in this process") }
        return current
    }

    /// The state the application is in; during a callback, the state that callback fires in.
    public internal(set) var applicationState: ApplicationState = .notRunning
    /// The delegate, held strongly: a daemon has nobody else to keep it.
    public let delegate: any ApplicationDelegate
    /// The window, usually set by the delegate in `application(_:didFinishLaunchingWithOptions:)`.
    ///
    /// Replacing it once the application has been in the foreground makes the old window's controllers disappear
    /// and the new one's appear; the old window is released at the end of the turn, after its did-callbacks.
    public var window: Window? {
        get { windowStorage }
        set { replaceWindow(with: newValue) }
    }
    /// The host that reports to the service manager; weak, the host owns the application.
    package weak var host: (any ApplicationHost)?
    /// Every callback, in order.
    public let trace: Trace
    /// The logger for the application's own lines (requests queued, dropped, background tasks).
    public var logger: Logger
    /// The options the application was launched with.
    public private(set) var launchOptions = LaunchOptions()
    /// The last status text reported to the host.
    public var statusText: String { status.text }
    /// How long background tasks may run once the application is in the background (UIKit's background time):
    /// when it runs out, their expiration handlers run. The budget starts when the application reaches the
    /// background with tasks running, or when the first task begins there; termination replaces it with its own.
    public var backgroundTime: Duration {
        get { backgroundTasksCoordinator.backgroundTime }
        set { backgroundTasksCoordinator.backgroundTime = newValue }
    }
    /// Why the application terminates as a failure (``requestTermination(cause:failing:)``), or nil: the daemon then
    /// exits with status 75 (`EX_TEMPFAIL`) instead of 0, so that systemd's `Restart=` restarts it.
    public internal(set) var terminationFailure: String?
    /// Who refused the reload in progress, and why (`root/http: port 80 needs privileges`), or nil: set between its
    /// offer and its end, read by the host when it reports the end.
    package private(set) var reloadRefusal: String?

    /// The listening sockets the application's hosted servers accept on (LifecycleServices opens them; the host
    /// adds what it inherited and reports them).
    package let listeners = ListenerTable()
    /// Whether termination has begun (or is waiting to): hosted work stops for good rather than for a background.
    package var isTerminating: Bool { machine.isTerminating }
    /// The cause of the transition running now (`api` between transitions): a host reads the termination's when it
    /// begins.
    package var transitionCause: Cause { currentCause }
    /// Whether launch is over (its last step, after `applicationDidBecomeActive` or a background launch's
    /// `applicationDidEnterBackground`): the `started` probe.
    package private(set) var hasFinishedLaunching = false
    /// Why the application is stopping though it still serves (a lame-duck delay before termination), or nil: the
    /// `ready` probe fails with it, and the status text says it.
    package var stoppingReason: String? {
        didSet {
            status.stopping = stoppingReason
            updateStatus()
        }
    }

    private var windowStorage: Window?
    var machine = ApplicationStateMachine()
    let fanOut = FanOut()
    /// The delegate's adoption of scenes (nil: the one implicit window): read when the application is made, and once
    /// more when its launch is asked for, so that a daemon's configuration (read after the application is made) can
    /// decide it; fixed from the launch on.
    private(set) var sceneManifest: SceneManifest?
    /// The scene sessions and the connected scenes (Application+Scenes.swift).
    var sceneTable = SceneTable()

    /// The controller tree changed (children, presentations, the window or its root): the fan-out takes its list
    /// again at the next event.
    func controllerTreeDidChange() {
        fanOut.invalidate()
    }
    let turns = TurnScheduler()
    /// The tree's moves in progress; tree edits made meanwhile wait for them (docs/lifecycle.md, "Re-entrancy").
    let edits = TreeEdits()
    private var status = StatusComposer()
    lazy var backgroundTasksCoordinator = BackgroundTaskCoordinator(application: self)
    /// Views leaving the window in push order, laid out once more in the next pass.
    private var leavingLayouts: [View] = []
    /// The machine's requests in its order, for their completions.
    private var requestTracker = RequestTracker()
    /// The cause of the transition running now (`api` between transitions); every event it fires carries it.
    var currentCause: Cause = .api
    private var isRunningTransitions = false
    /// The runs of lifecycle-bound work in progress, oldest first (``runsInProgress``).
    var runningTasks: [(task: ObjectIdentifier, name: String)] = []
    /// The refusal of the reload that just ended, for its request's outcome.
    private var finishedReloadRefusal: String?
    /// Moves on whenever a view joins a superview in this application's tree: a walk that calls out (the
    /// will-callbacks of an appearance) compares it to learn whether the tree changed under it.
    var treeGeneration = 0

    /// Creates the application; it becomes ``current``.
    public init(delegate: any ApplicationDelegate, logger: Logger = Logger(label: "lifecycle")) {
        self.delegate = delegate
        self.logger = logger
        self.trace = Trace(logger: logger)
        adoptSceneManifest()
        Self.current = self
        turns.onWorkScheduled = { [unowned self] in
            host?.applicationNeedsEndOfTurn(self)
        }
    }

    /// Reads the delegate's scene manifest, until the launch begins: a daemon hands the delegate its configuration after
    /// the application is made, and the configuration may decide whether it uses scenes.
    private func adoptSceneManifest() {
        guard sceneManifest == nil, sceneTable.sessions.isEmpty, let manifest = delegate.sceneManifest else { return }
        sceneManifest = manifest
        machine.scenes = SceneStateMachine(maximumBackgroundScenes: manifest.maximumBackgroundScenes)
        trace.tracesScenes = true
    }

    private func replaceWindow(with newWindow: Window?) {
        if usesScenes, newWindow != nil {
            preconditionFailure(
                "the application uses scenes: a window belongs to a scene; set scene.window.rootViewController in scene(_:willConnectTo:options:)"
            )
        }
        TreeEdits.edit(
            in: edits,
            touchingWindow: true,
            again: { [unowned self] in replaceWindow(with: newWindow) },
            now: { replaceWindowNow(with: newWindow) }
        )
    }

    /// Replaces the window now (an edit in progress, or termination's teardown).
    func replaceWindowNow(with newWindow: Window?) {
        let old = windowStorage
        guard old !== newWindow else { return }
        // Assign first and release the old window only afterwards: its controllers' deinits read their window.
        windowStorage = newWindow
        controllerTreeDidChange()
        newWindow?.attach(to: self)
        if machine.hasShownWindow, applicationState != .terminated {
            old?.hide()
            newWindow?.show()
        }
        if let old {
            scheduleTurnEndWork { withExtendedLifetime(old) {} }
        }
    }

    // MARK: Requests

    /// Launches the application: `willFinishLaunching`, restoration, `didFinishLaunching`, then the root controller
    /// appears and the application becomes active — or, into the background, `applicationDidEnterBackground`.
    public func launch(into target: LaunchTarget = .active, options: LaunchOptions = LaunchOptions(), cause: Cause = .launch) {
        // The options belong to the launch that runs: a dropped second launch must not change them.
        if applicationState == .notRunning, !machine.isTransitioning {
            launchOptions = options
            adoptSceneManifest()
        }
        enqueue(.launch(target), cause: cause)
    }

    /// Asks for the application to become active (from the background: `applicationWillEnterForeground`, then
    /// `applicationDidBecomeActive`).
    public func requestBecomeActive(cause: Cause = .api) { submit(.becomeActive, cause: cause) }

    /// Asks for the application to be inactive (in the foreground, not serving).
    public func requestResignActive(cause: Cause = .api) { submit(.resignActive, cause: cause) }

    /// Asks for the application to enter the background (from active: `applicationWillResignActive`, then
    /// `applicationDidEnterBackground`).
    public func requestEnterBackground(cause: Cause = .api) { submit(.enterBackground, cause: cause) }

    /// Asks for termination: the path to the background, `applicationWillTerminate`, then the tree is torn down.
    /// Final: later requests are dropped.
    public func requestTermination(cause: Cause = .api) { submit(.terminate, cause: cause) }

    /// Delivers a memory warning down the tree; one that arrives while another is delivered is folded into it.
    public func requestMemoryWarning(cause: Cause = .api) { submit(.memoryWarning, cause: cause) }

    /// Reloads: `applicationWillReload`, the host re-reads its configuration, `applicationDidReload`.
    public func requestReload(cause: Cause = .api) { submit(.reload, cause: cause) }

    /// Submits a request and reports what became of it: `completion` runs once, with ``RequestOutcome/performed(events:)``
    /// right after the request's last step (a queued request's when its turn has come and gone), or at once when it
    /// changes nothing or is dropped. A host that waits for a request it was asked to make (a control command) uses
    /// it; the events it caused are the numbered ones the outcome names. The named methods above are shorthands.
    public func submit(_ request: LifecycleRequest, cause: Cause, completion: RequestCompletion? = nil) {
        enqueue(ApplicationStateMachine.Request(request), cause: cause, completion: completion)
    }

    /// Hands any request, launch included, to the state machine (see ``submit(_:cause:completion:)``).
    func enqueue(_ request: ApplicationStateMachine.Request, cause: Cause, completion: RequestCompletion? = nil) {
        // Made from a view move's callbacks or from end-of-turn work (a did-callback, a completion, a layout pass), a
        // request waits in the machine's queue until that work is over, so a transition never runs inside a move or
        // the turn's passes; made during a transition, the machine queues it behind that transition.
        let waits = !isRunningTransitions && (turns.isRunning || edits.isInProgress)
        switch machine.request(request, cause: cause) {
        case .start:
            requestTracker.started(request, completion: completion)
            if waits {
                logger.debug(
                    "request waits for the end of the turn",
                    metadata: [LogKey.request: "\(request)", LogKey.cause: "\(cause)"]
                )
                if !turns.isRunning { host?.applicationNeedsEndOfTurn(self) }
            } else {
                runTransitions()
            }
        case .queued:
            requestTracker.queued(request, completion: completion)
            logger.debug(
                "request queued behind the running transition",
                metadata: [LogKey.request: "\(request)", LogKey.cause: "\(cause)"]
            )
        case .coalesced:
            requestTracker.coalesced(request, completion: completion)
            logger.debug(
                "request coalesced with one already pending",
                metadata: [LogKey.request: "\(request)", LogKey.cause: "\(cause)"]
            )
        case .noChange:
            logger.debug(
                "request changes nothing: the application is already \(applicationState)",
                metadata: [LogKey.request: "\(request)", LogKey.cause: "\(cause)"]
            )
            completion?(.noChange)
        case .dropped(let reason):
            logger.notice(
                "request dropped: \(reason)",
                metadata: [LogKey.request: "\(request)", LogKey.cause: "\(cause)"]
            )
            completion?(.dropped(reason: reason))
        }
        // Made from outside while requests wait for the end of the turn: those run now, then this one.
        if !waits, hasWaitingRequests { runTransitions() }
    }

    /// Whether requests accepted by the machine wait for the end of the turn (made from a move or end-of-turn work).
    private var hasWaitingRequests: Bool { machine.isTransitioning && !isRunningTransitions }

    private func runTransitions() {
        // Transitions never nest: a request made from a callback was queued by the machine and runs here next.
        guard !isRunningTransitions else { return }
        isRunningTransitions = true
        defer {
            isRunningTransitions = false
            currentCause = .api
        }
        while true {
            switch machine.nextStep() {
            case .idle:
                return
            case .noChange(let request, let cause):
                logger.debug(
                    "queued request changes nothing: the application is already \(applicationState)",
                    metadata: [LogKey.request: "\(request)", LogKey.cause: "\(cause)"]
                )
                requestTracker.headChangedNothing()?(.noChange)
            case .step(let step):
                requestTracker.stepWillStart(sequence: trace.sequence)
                currentCause = step.cause
                perform(step)
                if machine.isBetweenRequests,
                    let (completion, outcome) = requestTracker.finishCurrent(
                        sequence: trace.sequence,
                        refusal: finishedReloadRefusal.take()
                    )
                {
                    completion(outcome)
                }
            }
        }
    }

    private func perform(_ step: ApplicationStateMachine.Step) {
        let before = applicationState
        applicationState = observedState(step.stateWhileFiring)
        // With scenes, the scenes' steps and the gate's moves are the scenes' business (Application+Scenes.swift).
        if !usesScenes || !performSceneModeStep(step) { performApplicationStep(step) }
        applicationState = observedState(step.stateAfter)
        if usesScenes { sceneModeStateDidChange(from: before) }
        if applicationState != before { updateStatus() }
        if step.callback == .tearDown {
            host?.applicationDidTerminate(self)
        }
    }

    /// One step of §1 (or, with scenes, one the scenes do not take over).
    private func performApplicationStep(_ step: ApplicationStateMachine.Step) {
        switch step.callback {
        case .willFinishLaunching:
            traceDelegateEvent(TraceEventName.willFinishLaunching)
            _ = delegate.application(self, willFinishLaunchingWithOptions: launchOptions)
        case .restoreState:
            restoreSavedState()
        case .didFinishLaunching:
            traceDelegateEvent(TraceEventName.didFinishLaunching)
            _ = delegate.application(self, didFinishLaunchingWithOptions: launchOptions)
            checkRestoredWindowKept()
            if usesScenes { reportSessionsDiscardedWhileNotRunning() }
        case .showWindow:
            window?.show()
            runEndOfTurn()
        case .didBecomeActive:
            deliverEntering(TraceEventName.applicationDidBecomeActive, delegate.applicationDidBecomeActive) {
                $0.applicationDidBecomeActive()
            }
        case .willResignActive:
            deliverLeaving(TraceEventName.applicationWillResignActive, delegate.applicationWillResignActive) {
                $0.applicationWillResignActive()
            }
        case .didEnterBackground:
            deliverLeaving(TraceEventName.applicationDidEnterBackground, delegate.applicationDidEnterBackground) {
                $0.applicationDidEnterBackground()
                $0.updateLifecycleTasks(foreground: false, reason: .background)
            }
            backgroundTasksCoordinator.applicationDidEnterBackground()
        case .saveState:
            preserveState()
        case .willEnterForeground:
            backgroundTasksCoordinator.applicationWillEnterForeground()
            deliverEntering(TraceEventName.applicationWillEnterForeground, delegate.applicationWillEnterForeground) {
                $0.applicationWillEnterForeground()
                // Fired in the state being left (background): the work's foreground begins with this event.
                $0.updateLifecycleTasks(foreground: true, reason: .background)
            }
        case .beginTermination:
            // From STOPPING=1 on, termination's own budget bounds the background tasks.
            backgroundTasksCoordinator.terminationDidBegin()
            host?.applicationWillBeginTermination(self)
        case .willTerminate:
            deliverLeaving(TraceEventName.applicationWillTerminate, delegate.applicationWillTerminate) {
                $0.applicationWillTerminate()
            }
        case .tearDown:
            tearDown()
        case .didReceiveMemoryWarning:
            deliverLeaving(
                TraceEventName.applicationDidReceiveMemoryWarning,
                delegate.applicationDidReceiveMemoryWarning,
                controllerEvent: TraceEventName.didReceiveMemoryWarning
            ) {
                $0.didReceiveMemoryWarning()
                $0.releaseViewAfterMemoryWarning()
            }
        case .beginReload:
            host?.applicationWillBeginReload(self)
            // A transaction: read and validate, offer, and only then apply, to everybody or to nobody.
            reloadRefusal = prepareReload()
        case .willReload:
            if reloadRefusal == nil {
                deliverLeaving(TraceEventName.applicationWillReload, delegate.applicationWillReload) {
                    $0.applicationWillReload()
                }
            }
        case .reloadConfiguration:
            if reloadRefusal == nil { host?.applicationReloadConfiguration(self) }
        case .didReload:
            if reloadRefusal == nil {
                deliverEntering(TraceEventName.applicationDidReload, delegate.applicationDidReload) {
                    $0.applicationDidReload()
                }
            }
        case .finishLaunch:
            // With scenes, the status counts them: it says what launch connected before readiness is reported.
            if usesScenes { updateStatus() }
            hasFinishedLaunching = true
            host?.applicationDidFinishLaunching(self)
        case .finishReload:
            // The status says the last reload was refused (by whom) until a reload is accepted.
            status.note = reloadRefusal.map { "reload refused by \($0)" }
            _ = status.update(state: applicationState, window: window)
            host?.applicationDidFinishReload(self)
            finishedReloadRefusal = reloadRefusal
            reloadRefusal = nil
        case .scene, .connectScenesAtLaunch, .sceneMemoryPolicy, .disconnectScenes:
            // Planned only for an application that uses scenes, whose steps performSceneModeStep takes.
            preconditionFailure("a scene step (\(step.callback)) reached an application without scenes")
        }
    }

    // MARK: Propagation (the lifecycle's §2)

    /// Makes a controller that is not in the window yet (and everything below it) belong to this application: its
    /// events reach this application's trace from now on, and the ones it had are recorded now.
    ///
    /// A controller joins its application by itself when it enters the window's tree; this is for trees built
    /// apart first whose events should be traced as they happen.
    package func adopt(_ controller: ViewController) {
        controller.adopt(self)
    }

    /// Makes a view that is not in the window yet (and its subtree) belong to this application, as
    /// ``adopt(_:)-(ViewController)`` does for a controller.
    package func adopt(_ view: View) {
        view.adopt(self)
    }

    /// Every controller reachable from the window, pre-order: root, children in the order added, presented ones.
    package func controllersInTreeOrder() -> [ViewController] {
        var list: [ViewController] = []
        // Presented controllers hang from their presenters, so the root's walk reaches every layer.
        window?.rootViewController?.appendPreOrder(to: &list)
        // Then each scene's tree, in the order the scenes connected.
        for scene in connectedScenes { scene.window.rootViewController?.appendPreOrder(to: &list) }
        return list
    }

    @inline(__always)
    private func deliverEntering(
        _ event: String,
        _ delegateCallback: (Application) -> Void,
        _ controllerCallback: (ViewController) -> Void
    ) {
        // The list is taken when the event starts: a controller the delegate adds gets the next event (§2).
        let list = fanOut.controllers(under: window?.rootViewController)
        traceDelegateEvent(event)
        delegateCallback(self)
        fanOut.deliver(event, to: list, reversed: false, application: self, controllerCallback)
    }

    @inline(__always)
    private func deliverLeaving(
        _ event: String,
        _ delegateCallback: (Application) -> Void,
        controllerEvent: String? = nil,
        _ controllerCallback: (ViewController) -> Void
    ) {
        fanOut.deliver(
            controllerEvent ?? event,
            to: fanOut.controllers(under: window?.rootViewController),
            reversed: true,
            application: self,
            controllerCallback
        )
        traceDelegateEvent(event)
        delegateCallback(self)
    }

    /// Every visible controller disappears, then the tree is released; the host hears "terminated" only after that.
    ///
    /// Whatever the stop's callbacks did to the tree is torn down with it (docs/lifecycle.md §2): a window or a root
    /// `applicationWillTerminate` removed is still disappearing and goes at the end of the turn, and a window set by
    /// the teardown's own callbacks (a deinit among them) is released in its turn, hidden, until no window is left.
    private func tearDown() {
        defer { listeners.applicationWillExit() }
        // Bounded as an end of turn is: each round only tears down what the previous one's callbacks put in place.
        for _ in 0..<TurnScheduler.maximumRounds {
            if let window {
                window.hide()
                runEndOfTurn()
                // Releasing the window's controllers runs their deinits, root first, each view tree after its
                // controller.
                window.releaseContent()
                replaceWindowNow(with: nil)
            }
            runEndOfTurn()
            guard window != nil || turns.hasWork else { break }
        }
        if window != nil {
            let rounds = TurnScheduler.maximumRounds
            logger.warning("the teardown's callbacks kept setting a new window; after \(rounds) rounds, one is left")
        }
    }

    /// Controller classes that archives may name, by class name (beside what the delegate registers).
    public var archiveClasses = ArchiveClassRegistry()
    /// State restoration's bookkeeping (Restoration.swift).
    var restoration = RestorationRecord()

    // MARK: The end of a main-loop turn

    /// Marks that a layout or display pass is due at the end of the turn.
    func setNeedsTurnEnd() {
        turns.setNeedsPasses()
    }

    /// Runs the work deferred to the end of the current main-loop turn: one layout pass, one display pass, then
    /// the `viewDidAppear`/`viewDidDisappear` completions, repeated until nothing is left. Hosts call it once per
    /// loop turn; tests call it to end a turn.
    ///
    /// Requests made from that work start once it is over, and whatever their transitions defer (did-callbacks,
    /// layout) runs in this same call: every transition completes within its own turn.
    package func runEndOfTurn() {
        // Bounded: each round only runs what the previous one's requests deferred.
        for _ in 0..<TurnScheduler.maximumRounds {
            let settled = turns.run { [unowned self] in runPasses() }
            if !settled {
                logger.warning(
                    "layout did not settle after \(TurnScheduler.maximumRounds) passes in one turn; the rest waits for the next turn"
                )
            }
            if status.isStale { updateStatus() }
            // Nested in another end of turn (a transition's own, inside one), or in a move: the outer one carries on.
            guard !turns.isRunning, !edits.isInProgress else { return }
            // The requests made from that work (or from a move's callbacks this turn), in arrival order.
            if hasWaitingRequests { runTransitions() }
            guard settled, turns.hasWork || status.isStale || hasWaitingRequests else { return }
        }
    }

    /// One layout pass, then one display pass, over what is in the window; views leaving it in push order are laid
    /// out once more after the visible ones.
    private func runPasses() {
        guard window != nil || !leavingLayouts.isEmpty || !sceneTable.scenes.isEmpty else { return }
        // A pass is a move: what its callbacks (layout, draw) edit waits until it is over, then the turn goes on.
        edits.begin()
        defer { edits.end() }
        for layer in window?.visibleLayers ?? [] {
            if let view = layer.controller.viewIfLoaded, view.isLayoutDirty { view.layoutPass() }
        }
        let sceneWindows = sceneTable.scenes.isEmpty ? [] : connectedScenes.map(\.window)
        for layer in sceneWindows.lazy.flatMap(\.visibleLayers) {
            if let view = layer.controller.viewIfLoaded, view.isLayoutDirty { view.layoutPass() }
        }
        if !leavingLayouts.isEmpty {
            // Even when the window went meanwhile (termination's delegate let go of it): the views are not kept.
            let leaving = leavingLayouts
            leavingLayouts.removeAll()
            for view in leaving where view.window == nil && view.needsLayout { view.layoutPass() }
        }
        for layer in window?.visibleLayers ?? [] {
            if let view = layer.controller.viewIfLoaded, view.isDisplayDirty, view.displayPass() {
                status.isStale = true
            }
        }
        for layer in sceneWindows.lazy.flatMap(\.visibleLayers) {
            if let view = layer.controller.viewIfLoaded, view.isDisplayDirty { _ = view.displayPass() }
        }
    }

    /// A controller's view leaving the window in push order (a navigation push, a full-screen presentation) is laid
    /// out once more, after the incoming views and before its `viewDidDisappear`, as UIKit lays out the outgoing
    /// controller during the transition.
    func layOutBeforeLeaving(_ view: View) {
        view.needsLayout = true
        leavingLayouts.append(view)
        turns.setNeedsPasses()
    }

    /// Queues the did-callbacks of an appearance transition; `controllers` is in post-order, so the did-callbacks
    /// bracket the will-callbacks (children before their parent).
    ///
    /// `container`: the controller whose view the moved subtree joined. When that controller's own appearance is the
    /// last one under way (a child its `viewWillAppear` embeds joins once that move is over), the subtree's
    /// `viewDidAppear` callbacks come right before the container's, so its bracket holds theirs (§3).
    func scheduleAppearanceCompletion(
        for controllers: [ViewController],
        appearing: Bool,
        inside container: ViewController? = nil
    ) {
        status.isStale = true
        turns.setNeedsPasses()
        guard !controllers.isEmpty else { return }
        if appearing, let container, container.appearance == .appearing,
            lastAppearance.appearing, lastAppearance.controllers.contains(where: { $0 === container })
        {
            nestedAppearances[ObjectIdentifier(container), default: []].append(controllers)
        }
        appearanceSerial &+= 1
        let serial = appearanceSerial
        lastAppearance = (controllers, appearing)
        turns.schedule { [unowned self] in
            // Held no longer than the completion itself: a released controller goes on time.
            if appearanceSerial == serial { lastAppearance = ([], false) }
            for controller in controllers {
                finishAppearanceTransition(of: controller, appearing)
            }
        }
    }

    /// Appearances that began inside a controller whose own appearance was under way, by that controller: their
    /// did-callbacks come before its own.
    private var nestedAppearances: [ObjectIdentifier: [[ViewController]]] = [:]
    /// The controllers of the appearance transition scheduled last (no other one comes between them and a nested one).
    private var lastAppearance: (controllers: [ViewController], appearing: Bool) = ([], false)
    private var appearanceSerial = 0

    private func finishAppearanceTransition(of controller: ViewController, _ appearing: Bool) {
        if !nestedAppearances.isEmpty, let nested = nestedAppearances.removeValue(forKey: ObjectIdentifier(controller)) {
            for inner in nested.joined() { finishAppearanceTransition(of: inner, true) }
        }
        controller.endAppearanceTransition(appearing)
    }

    /// Runs `work` at the end of the current turn, after the layout and display passes and the appearance
    /// completions scheduled before it.
    package func scheduleTurnEndWork(_ work: @escaping @MainActor () -> Void) {
        turns.schedule(work)
    }

    // MARK: Status

    /// The status text may have changed (a scene's state): it is composed again at the end of the turn.
    func setNeedsStatusUpdate() {
        status.isStale = true
        if !turns.isRunning { host?.applicationNeedsEndOfTurn(self) }
    }

    func updateStatus() {
        if usesScenes { status.scenes = sceneStatusSummary }
        if let text = status.update(state: applicationState, window: window) {
            host?.application(self, didChangeStatus: text)
        }
    }

    // MARK: Background tasks

    /// Marks the start of work that must finish even if the application leaves the foreground or terminates.
    ///
    /// Under systemd, termination waits for these tasks (extending the stop timeout) up to a budget, and a sleep
    /// inhibitor is held until they end; when time runs out, `expirationHandler` runs and must end the task.
    public func beginBackgroundTask(
        withName name: String? = nil,
        expirationHandler: (@MainActor () -> Void)? = nil
    ) -> BackgroundTaskIdentifier {
        beginBackgroundTask(withName: name, owner: nil, expirationHandler: expirationHandler)
    }

    /// Begins a background task on behalf of `owner` (a controller's path), whose trace its expiration shows in.
    func beginBackgroundTask(
        withName name: String?,
        owner: String?,
        expirationHandler: (@MainActor () -> Void)?
    ) -> BackgroundTaskIdentifier {
        backgroundTasksCoordinator.begin(name: name, owner: owner, expirationHandler: expirationHandler)
    }

    /// Marks the end of a background task; unknown or already ended identifiers are ignored.
    public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        backgroundTasksCoordinator.end(identifier)
    }

    /// The background tasks that have begun and not ended, oldest first.
    public var backgroundTasks: [BackgroundTask] { backgroundTasksCoordinator.tasks }

    /// What is left of the background time while it runs (the application is in the background with tasks running).
    public var backgroundTimeRemaining: Duration? { backgroundTasksCoordinator.backgroundTimeRemaining }

    /// Time is up: runs every running task's expiration handler, oldest first; a task its handler did not end is
    /// ended after it, with a warning.
    package func expireBackgroundTasks() {
        backgroundTasksCoordinator.expire()
    }

    /// A controller's lifecycle-bound task failed: the delegate hears it (traced as a delegate event).
    func reportFailure(of task: LifecycleTask, error: any Error) {
        traceDelegateEvent(TraceEventName.applicationLifecycleTaskDidFail, detail: "\(task.name): \(error)")
        delegate.application(self, lifecycleTask: task, didFailWithError: error)
    }

    // MARK: Tracing

    /// Records a callback of a controller or a view (`node.callbackTarget`), or of a target known by its path alone.
    func traceEvent(_ event: String, target: @autoclosure () -> TraceTarget, detail: String?) {
        trace.record(event: event, target: target(), state: applicationState, cause: currentCause, detail: detail)
    }

    /// Records a callback of the delegate; `scene`: the scene it is about, if any.
    func traceDelegateEvent(_ event: String, detail: String? = nil, scene: String? = nil) {
        trace.record(
            event: event,
            isDelegate: true,
            target: "delegate",
            state: applicationState,
            cause: currentCause,
            detail: detail,
            scene: scene
        )
    }
}
