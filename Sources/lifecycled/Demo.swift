//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import Dispatch
import LifecycleDaemon
import LifecycleKit
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The demo's own section of the configuration file, `[Demo]`.
struct DemoSettings: ConfigurationSection {
    static let name = "Demo"
    static let keys: [ConfigurationKey<Self>] = [
        .duration("WorkIntervalSec", \.workInterval),
        ConfigurationKey("Mode") { settings, value throws(ConfigurationValueError) in
            guard !value.isEmpty, value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
                throw ConfigurationValueError("Mode=\(value) is not a mode name (letters, digits, '-')")
            }
            settings.mode = value
        },
        .duration("TerminationTaskSec", \.terminationTask),
        .duration("BackgroundTaskSec", \.backgroundTask),
        .integer("AllocateMiB", \.allocateMiB),
        .choice("ModeChange", \.modeChange, what: "a way to change modes"),
        .duration("FailEverySec", \.failEvery),
        .integer("MaxRestarts", \.maxRestarts, in: 0...1000),
    ]

    /// How often the worker does a job while active; zero: only when asked.
    var workInterval = Duration.seconds(5)
    /// The serving mode shown by the navigation stack; a reload that changes it hands over to a new controller.
    var mode = "serving"
    /// A background task of this length begun in `applicationWillTerminate` (termination waits for it).
    var terminationTask = Duration.zero
    /// A background task of this length begun in `applicationDidEnterBackground` (a sleep's inhibitor waits for it).
    var backgroundTask = Duration.zero
    /// Debug: allocate and touch this many MiB in the cache at launch (memory pressure tests).
    var allocateMiB = 0
    /// What a reload that changes `Mode=` does: replace the stack with the new mode, or push it (going back to it
    /// when it is on the stack already).
    var modeChange = ModeChange.replace
    /// The worker's feed (work that reads an upstream) fails this long after each start; zero: it never fails. For
    /// supervision: the feed is restarted after a growing delay, and past `MaxRestarts=` failures within a minute the
    /// daemon exits with status 75 for systemd to restart it.
    var failEvery = Duration.zero
    /// The feed's restarts allowed within a minute (its restart policy): 100 ms before the first, doubling up to 10 s.
    var maxRestarts = 5
}

/// How the modes stack follows `Mode=`.
enum ModeChange: String, CaseIterable, Sendable {
    /// The new mode replaces the stack (a hand-over).
    case replace
    /// The new mode is pushed over the current one; a mode already on the stack is popped back to.
    case push
}

/// The demo's own command-line options; each overrides its `[Demo]` key.
struct DemoOptions: ParsableArguments {
    @Option(name: .customLong("work-interval"), help: "Seconds between the demo worker's jobs while active (0: none).")
    var workInterval: Double?

    @Option(
        name: .customLong("termination-task-seconds"),
        help: "Begin a background task of this length in applicationWillTerminate."
    )
    var terminationTaskSeconds: Double?

    func validate() throws {
        for value in [workInterval, terminationTaskSeconds].compactMap({ $0 }) where Duration(setting: value) == nil {
            throw ValidationError("durations must be non-negative numbers of seconds (at most 292 years), not \(value)")
        }
    }

    /// The settings with these options applied over them.
    func applied(to settings: DemoSettings) -> DemoSettings {
        var settings = settings
        if let interval = workInterval.flatMap({ Duration(setting: $0) }) { settings.workInterval = interval }
        if let task = terminationTaskSeconds.flatMap({ Duration(setting: $0) }) { settings.terminationTask = task }
        return settings
    }
}

/// What the demo's controllers share: the settings (replaced on reload) and the logger.
@MainActor
final class DemoEnvironment {
    /// The current settings; a reload replaces them before `applicationDidReload`.
    var settings = DemoSettings()
    /// The settings before the last valid reload: what changed is what a reload applies.
    var previousSettings = DemoSettings()
    /// Where the demo logs what it does.
    let logger = Logger(label: DaemonOptions.processName)
    /// Memory held on purpose (debug `AllocateMiB`), so memory pressure persists.
    var ballast: [[UInt8]] = []
}

extension ViewController {
    /// The demo's shared environment, reached through the application this controller belongs to (its delegate):
    /// controllers made by a storyboard or by restoration find it the same way as the ones built in code.
    var environment: DemoEnvironment {
        guard let delegate = application?.delegate as? DemoDelegate else {
            preconditionFailure("\(path) reads the demo's environment before it joined the application")
        }
        return delegate.environment
    }
}

/// A view that draws one line of the status from a closure.
@MainActor
final class LabelView: View {
    private let text: @MainActor () -> String

    init(name: String, text: @escaping @MainActor () -> String) {
        self.text = text
        super.init(name: name)
    }

    override func draw(in context: inout StatusContext) {
        context.write(text())
    }
}

/// lifecycled, the demo daemon: its delegate builds a tree whose controllers use every callback for something
/// visible, and `@main` on it is the whole program (``ApplicationMain``).
///
/// `root` holds `worker` (jobs on a timer, paused in the background), `cache` (filled on the loop turn after it
/// appears, emptied on a memory warning) and `modes`, a navigation stack that hands over to a new mode controller when
/// a reload changes `Mode=`.
@main
final class DemoDelegate: ApplicationMain {
    typealias Options = DemoOptions
    typealias Settings = DemoSettings

    nonisolated static var commandConfiguration: CommandConfiguration {
        CommandConfiguration(
            commandName: "lifecycled",
            abstract: "A daemon with the iOS application lifecycle, driven by Unix signals and systemd.",
            version: "0.2.0"
        )
    }

    /// The shared environment.
    let environment = DemoEnvironment()

    func configure(options: DemoOptions, settings: DemoSettings) {
        environment.previousSettings = environment.settings
        environment.settings = options.applied(to: settings)
    }

    func registerArchiveClasses(in registry: inout ArchiveClassRegistry) {
        for type: ViewController.Type in [
            DemoRootController.self, WorkerController.self, CacheController.self, ModesController.self,
            ModeController.self,
        ] {
            registry.register(type)
        }
        // `view LabelView title { text = "…" }` in a storyboard: a label with fixed text.
        registry.registerView("LabelView") { coder in
            let text = coder.decodeString(forKey: "text") ?? ""
            return LabelView(name: coder.identifier ?? "label") { text }
        }
    }

    /// The tree is built here, before restoration, so that the saved state restores into it (UIKit's advice); a
    /// storyboard (`--storyboard`) has built it already.
    func application(_ application: Application, willFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        guard application.window == nil else { return true }
        let modes = ModesController(rootViewController: ModeController(mode: environment.settings.mode))
        let root = DemoRootController(children: [WorkerController(), CacheController(), modes])
        application.window = Window(rootViewController: root)
        return true
    }

    func application(_ application: Application, shouldRestoreApplicationState archive: Archive) -> Bool { true }

    func application(_ application: Application, shouldSaveApplicationState coder: StateCoder) -> Bool { true }

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        let logger = environment.logger
        logger.info("launching: reason \(options.reason.rawValue)")
        if environment.settings.allocateMiB > 0 {
            // Debug ballast: touch every page so it is resident and counts towards the cgroup's memory.
            let chunk = 1 << 20
            environment.ballast = (0..<environment.settings.allocateMiB).map { index in
                [UInt8](repeating: UInt8(truncatingIfNeeded: index | 1), count: chunk)
            }
            logger.info("debug: holding \(environment.settings.allocateMiB) MiB of ballast")
        }
        return true
    }

    func applicationDidBecomeActive(_ application: Application) {
        environment.logger.info("active: serving")
    }

    func applicationDidEnterBackground(_ application: Application) {
        environment.logger.info("in the background: work paused")
        let seconds = environment.settings.backgroundTask
        guard seconds > .zero else { return }
        // Work that must finish in the background: a sleep holds logind's inhibitor until it ends (or expires).
        beginTimedTask("background-work", label: "background work", lasting: seconds, in: application)
    }

    func applicationDidReceiveMemoryWarning(_ application: Application) {
        environment.logger.notice("memory warning handled by the tree")
    }

    func applicationWillTerminate(_ application: Application) {
        let seconds = environment.settings.terminationTask
        guard seconds > .zero else { return }
        // A flush that must finish before the process exits: termination waits for it (up to the budget).
        beginTimedTask("flush", label: "flush", lasting: seconds, in: application)
    }

    /// Begins a background task that ends by itself after `duration`, logging `<label> started`, `finished`, or,
    /// when its time runs out first, `expired before it finished`.
    private func beginTimedTask(_ name: String, label: String, lasting duration: Duration, in application: Application) {
        let logger = environment.logger
        var task = BackgroundTaskIdentifier.invalid
        task = application.beginBackgroundTask(withName: name) {
            logger.warning("\(label) expired before it finished")
            application.endBackgroundTask(task)
        }
        logger.info("\(label) started: \(duration)")
        DispatchQueue.main.asyncAfter(deadline: .now() + .nanoseconds(Int(duration.wholeNanoseconds))) {
            MainActor.assumeIsolated {
                guard application.backgroundTasks.contains(where: { $0.identifier == task }) else { return }
                logger.info("\(label) finished")
                application.endBackgroundTask(task)
            }
        }
    }
}

/// The root: a container for the worker, the cache and the modes, with a title line.
///
/// The children join the tree when the root is made, not when its view loads: a launch into the background loads
/// no view, and the children must still receive the application events.
@MainActor
final class DemoRootController: ViewController {
    init(children: [ViewController]) {
        super.init(identifier: "root")
        restorationIdentifier = "root"
        for child in children {
            addChild(child)
            child.didMove(toParent: self)
        }
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        view.insertSubview(LabelView(name: "title") { "pid \(getpid())" }, at: 0)
        // A storyboard's container embeds its children itself.
        for child in children where child.viewIfLoaded?.superview !== view { view.addSubview(child.view) }
    }
}

/// Does a job per tick while the application is in the foreground; pauses in the background.
@MainActor
final class WorkerController: ViewController {
    private var timer: (any DispatchSourceTimer)?
    private var jobs = 0
    private var paused = true
    private var timerSuspended = true
    private weak var progress: View?

    init() {
        super.init(identifier: "worker")
        restorationIdentifier = "worker"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    /// The jobs done survive a restart.
    override func encodeRestorableState(with coder: StateCoder) {
        coder.encode(jobs, forKey: "jobs")
    }

    override func decodeRestorableState(with coder: StateCoder) {
        jobs = coder.decodeInteger(forKey: "jobs") ?? jobs
        progress?.setNeedsDisplay()
    }

    override func viewDidLoad() {
        let label = LabelView(name: "progress") { [unowned self] in
            "worker \(jobs) jobs" + (paused ? " (paused)" : "")
        }
        view.addSubview(label)
        progress = label
        startFeedIfAsked()
    }

    /// The feed, once: work that reads an upstream while the worker is on screen in the foreground, supervised by its
    /// restart policy. With `FailEverySec=` the upstream breaks that long after each start.
    private var feed: LifecycleTask?

    private func startFeedIfAsked() {
        let settings = environment.settings
        guard feed == nil, settings.failEvery > .zero else { return }
        let failEvery = settings.failEvery
        let policy = RestartPolicy.onFailure(
            maxRestarts: settings.maxRestarts,
            within: .seconds(60),
            backoff: .exponential(initial: .milliseconds(100), maximum: .seconds(10))
        )
        feed = task("feed", restartPolicy: policy) {
            try await Task.sleep(for: failEvery)
            throw UpstreamFailure()
        }
    }

    override func applicationDidBecomeActive() { resume() }
    override func applicationDidEnterBackground() { pause() }
    override func applicationWillTerminate() {
        pause()
        stopTimer()
    }

    /// Cancels the timer; Dispatch requires a suspended source to be resumed before its last release.
    private func stopTimer() {
        guard let timer else { return }
        timer.cancel()
        if timerSuspended { timer.resume() }
        timerSuspended = false
        self.timer = nil
    }

    private func resume() {
        guard paused else { return }
        paused = false
        progress?.setNeedsDisplay()
        let interval = environment.settings.workInterval
        guard interval > .zero else { return }
        if timer == nil {
            let source = DispatchSource.makeTimerSource(queue: .main)
            let nanoseconds = DispatchTimeInterval.nanoseconds(Int(interval.wholeNanoseconds))
            source.schedule(deadline: .now() + nanoseconds, repeating: nanoseconds)
            source.setEventHandler { [weak self] in
                MainActor.assumeIsolated { self?.doJob() }
            }
            timer = source
        }
        timer?.resume()
        timerSuspended = false
    }

    private func pause() {
        guard !paused else { return }
        paused = true
        if let timer, !timerSuspended {
            timer.suspend()
            timerSuspended = true
        }
        environment.logger.info("worker paused after \(jobs) jobs")
        progress?.setNeedsDisplay()
    }

    private func doJob() {
        jobs += 1
        progress?.setNeedsDisplay()
    }

    isolated deinit {
        stopTimer()
    }
}

/// A cache warmed when it appears and emptied on a memory warning.
@MainActor
final class CacheController: ViewController {
    private var entries: [[UInt8]] = []
    private weak var usage: View?

    /// A cache is rebuilt, not restored: it has no restoration identifier.
    init() {
        super.init(identifier: "cache")
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        let label = LabelView(name: "usage") { [unowned self] in "cache \(entries.count) entries" }
        view.addSubview(label)
        usage = label
    }

    override func viewDidAppear(_ animated: Bool) {
        guard entries.isEmpty else { return }
        // On the loop's next turn, as a service warms its caches once it serves: the launch, and READY=1 at its end,
        // do not wait for a megabyte of allocations and page faults (a third of a millisecond, docs/benchmarks.md).
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated { self?.fill() }
        }
    }

    private func fill() {
        guard entries.isEmpty else { return }
        entries = (0..<16).map { [UInt8](repeating: UInt8($0), count: 64 * 1024) }
        usage?.setNeedsDisplay()
    }

    override func didReceiveMemoryWarning() {
        let freed = entries.reduce(0) { $0 + $1.count }
        entries.removeAll()
        environment.logger.notice("cache emptied on memory warning: freed \(freed / 1024) KiB")
        usage?.setNeedsDisplay()
    }
}

/// What the worker's feed throws when `FailEverySec=` breaks its upstream.
struct UpstreamFailure: Error, CustomStringConvertible {
    var description: String { "the upstream closed the connection" }
}

/// A mode change refused because the application is in the background.
struct ModeChangeNeedsForeground: Error, CustomStringConvertible {
    let mode: String
    var description: String {
        "a change of mode to \(mode) needs the foreground (the incoming mode prepares before the outgoing one stops); "
            + "return to the foreground, then reload"
    }
}

/// The navigation stack of modes: a reload that changes `Mode=` hands over to a new mode controller (or pushes it,
/// with `ModeChange=push`). The stack is preserved: a restart restores it. A reload that changes the mode while the
/// application is in the background is refused: nothing would serve the incoming mode's start.
@MainActor
final class ModesController: NavigationController {
    private weak var summary: View?

    init(rootViewController: ViewController) {
        super.init(rootViewController: rootViewController, identifier: "modes")
        restorationIdentifier = "modes"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        let label = LabelView(name: "stack") { [unowned self] in
            "stack " + viewControllers.map(\.identifier).joined(separator: "/")
        }
        view.addSubview(label)
        summary = label
    }

    override func validateReload(_ proposal: ReloadProposal) throws {
        guard let settings = proposal.settings(as: DemoSettings.self), settings.mode != environment.settings.mode,
            application?.applicationState == .background
        else { return }
        throw ModeChangeNeedsForeground(mode: settings.mode)
    }

    override func applicationDidReload() {
        let mode = environment.settings.mode
        // Only a change of Mode= moves the stack: a storyboard or a restored stack may show another mode.
        guard mode != environment.previousSettings.mode, topViewController?.identifier != mode else { return }
        defer { summary?.setNeedsDisplay() }
        switch environment.settings.modeChange {
        case .replace:
            environment.logger.info("mode changes to \(mode): handing over")
            // The incoming mode prepares (viewDidLoad) before the outgoing one stops (viewWillDisappear).
            setViewControllers([ModeController(mode: mode)], animated: false)
        case .push:
            if let index = viewControllers.firstIndex(where: { $0.identifier == mode }) {
                environment.logger.info("mode changes back to \(mode): popping to it")
                setViewControllers(Array(viewControllers[...index]), animated: false)
            } else {
                environment.logger.info("mode changes to \(mode): pushing it")
                pushViewController(ModeController(mode: mode), animated: false)
            }
        }
    }

    override func applicationFinishedRestoringState() {
        summary?.setNeedsDisplay()
    }
}

/// One mode of serving; it starts serving when it appears and stops when it disappears.
@MainActor
final class ModeController: ViewController {
    private var serving = false
    /// How many times this mode started serving; preserved.
    private var activations = 0

    init(mode: String) {
        super.init(identifier: mode)
        restorationIdentifier = mode
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
        // A storyboard may leave the restoration identifier out: a mode is restored by its name.
        if restorationIdentifier == nil { restorationIdentifier = identifier }
    }

    override func encodeRestorableState(with coder: StateCoder) {
        coder.encode(activations, forKey: "activations")
    }

    override func decodeRestorableState(with coder: StateCoder) {
        activations = coder.decodeInteger(forKey: "activations") ?? activations
    }

    override func viewDidLoad() {
        view.addSubview(
            LabelView(name: "summary") { [unowned self] in
                "mode \(identifier)" + (serving ? "" : " (stopped)") + " #\(activations)"
            }
        )
    }

    override func viewDidAppear(_ animated: Bool) {
        serving = true
        activations += 1
        environment.logger.info("mode \(identifier) serving")
        view.subviews.first?.setNeedsDisplay()
    }

    override func viewWillDisappear(_ animated: Bool) {
        serving = false
        environment.logger.info("mode \(identifier) stopping")
    }
}
