import Dispatch
import LifecycleKit
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What the demo's controllers share: the settings (replaced on reload) and the logger.
@MainActor
public final class DemoEnvironment {
    /// The current settings; a reload replaces them before `applicationDidReload`.
    public var settings: DemoSettings
    /// Where the demo logs what it does.
    public let logger: Logger
    /// Memory held on purpose (debug `AllocateMiB`), so memory pressure persists.
    var ballast: [[UInt8]] = []

    /// Creates an environment.
    public init(settings: DemoSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
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

/// The demo daemon's delegate: it builds a tree whose controllers use every callback for something visible.
///
/// `root` holds `worker` (jobs on a timer, paused in the background), `cache` (filled when it appears, emptied on a
/// memory warning) and `modes`, a navigation stack that hands over to a new mode controller when a reload changes
/// `Mode=`.
@MainActor
public final class DemoDelegate: ApplicationDelegate {
    /// The shared environment.
    public let environment: DemoEnvironment

    /// Creates the delegate.
    public init(environment: DemoEnvironment) {
        self.environment = environment
    }

    public func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
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
        let modes = ModesController(
            rootViewController: ModeController(mode: environment.settings.mode, environment: environment),
            environment: environment
        )
        let root = DemoRootController(
            children: [
                WorkerController(environment: environment),
                CacheController(environment: environment),
                modes,
            ]
        )
        application.window = Window(rootViewController: root)
        return true
    }

    public func applicationDidBecomeActive(_ application: Application) {
        environment.logger.info("active: serving")
    }

    public func applicationDidEnterBackground(_ application: Application) {
        environment.logger.info("in the background: work paused")
        let seconds = environment.settings.backgroundTask
        guard seconds > .zero else { return }
        // Work that must finish in the background: a sleep holds logind's inhibitor until it ends (or expires).
        beginTimedTask("background-work", label: "background work", lasting: seconds, in: application)
    }

    public func applicationDidReceiveMemoryWarning(_ application: Application) {
        environment.logger.notice("memory warning handled by the tree")
    }

    public func applicationWillTerminate(_ application: Application) {
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
        DispatchQueue.main.asyncAfter(deadline: .now() + duration.timeInterval) {
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
        for child in children {
            addChild(child)
            child.didMove(toParent: self)
        }
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        view.addSubview(LabelView(name: "title") { "pid \(getpid())" })
        for child in children { view.addSubview(child.view) }
    }
}

/// Does a job per tick while the application is in the foreground; pauses in the background.
@MainActor
final class WorkerController: ViewController {
    private let environment: DemoEnvironment
    private var timer: DispatchSourceTimer?
    private var jobs = 0
    private var paused = true
    private var timerSuspended = true
    private weak var progress: View?

    init(environment: DemoEnvironment) {
        self.environment = environment
        super.init(identifier: "worker")
    }

    required init(coder: Coder) throws {
        preconditionFailure("WorkerController is built in code by DemoDelegate")
    }

    override func viewDidLoad() {
        let label = LabelView(name: "progress") { [unowned self] in
            "worker \(jobs) jobs" + (paused ? " (paused)" : "")
        }
        view.addSubview(label)
        progress = label
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
            source.schedule(deadline: .now() + interval.timeInterval, repeating: interval.timeInterval)
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
    private let environment: DemoEnvironment
    private var entries: [[UInt8]] = []
    private weak var usage: View?

    init(environment: DemoEnvironment) {
        self.environment = environment
        super.init(identifier: "cache")
    }

    required init(coder: Coder) throws {
        preconditionFailure("CacheController is built in code by DemoDelegate")
    }

    override func viewDidLoad() {
        let label = LabelView(name: "usage") { [unowned self] in "cache \(entries.count) entries" }
        view.addSubview(label)
        usage = label
    }

    override func viewDidAppear(_ animated: Bool) {
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

/// The navigation stack of modes: a reload that changes `Mode=` hands over to a new mode controller.
@MainActor
final class ModesController: NavigationController {
    private let environment: DemoEnvironment

    init(rootViewController: ViewController, environment: DemoEnvironment) {
        self.environment = environment
        super.init(rootViewController: rootViewController, identifier: "modes")
    }

    required init(coder: Coder) throws {
        preconditionFailure("ModesController is built in code by DemoDelegate")
    }

    override func applicationDidReload() {
        let mode = environment.settings.mode
        guard topViewController?.identifier != mode else { return }
        environment.logger.info("mode changes to \(mode): handing over")
        // The incoming mode prepares (viewDidLoad) before the outgoing one stops (viewWillDisappear).
        setViewControllers([ModeController(mode: mode, environment: environment)], animated: false)
    }
}

/// One mode of serving; it starts serving when it appears and stops when it disappears.
@MainActor
final class ModeController: ViewController {
    private let environment: DemoEnvironment
    private var serving = false

    init(mode: String, environment: DemoEnvironment) {
        self.environment = environment
        super.init(identifier: mode)
    }

    required init(coder: Coder) throws {
        preconditionFailure("ModeController is built in code by DemoDelegate")
    }

    override func viewDidLoad() {
        view.addSubview(LabelView(name: "summary") { [unowned self] in "mode \(identifier)" + (serving ? "" : " (stopped)") })
    }

    override func viewDidAppear(_ animated: Bool) {
        serving = true
        environment.logger.info("mode \(identifier) serving")
        view.subviews.first?.setNeedsDisplay()
    }

    override func viewWillDisappear(_ animated: Bool) {
        serving = false
        environment.logger.info("mode \(identifier) stopping")
    }
}

extension Duration {
    /// The duration as Dispatch's time interval.
    var timeInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
