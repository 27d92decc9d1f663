import LifecycleKit
import Logging

/// Records the trace of an application as `target event` lines.
@MainActor
final class Recorder {
    private(set) var events: [TraceEvent] = []

    init(_ application: Application) {
        application.trace.observe { [unowned self] event in self.events.append(event) }
    }

    /// `target event` lines, optionally only for some targets and some events.
    func lines(targets: Set<String>? = nil, events names: Set<String>? = nil) -> [String] {
        events.filter { event in
            (targets?.contains(event.target) ?? true) && (names?.contains(event.event) ?? true)
        }.map { "\($0.target) \($0.event)" }
    }

    /// Forgets what was recorded so far.
    func clear() { events.removeAll() }
}

/// A delegate that builds its window through a closure and forgets nothing it is asked to build.
@MainActor
final class TestDelegate: ApplicationDelegate {
    var build: (Application) -> Void
    var onEvent: (String, Application) -> Void = { _, _ in }

    init(build: @escaping (Application) -> Void = { _ in }) {
        self.build = build
    }

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        build(application)
        return true
    }

    func applicationDidBecomeActive(_ application: Application) { onEvent("applicationDidBecomeActive", application) }
    func applicationWillResignActive(_ application: Application) { onEvent("applicationWillResignActive", application) }
    func applicationDidEnterBackground(_ application: Application) {
        onEvent("applicationDidEnterBackground", application)
    }
    func applicationWillEnterForeground(_ application: Application) {
        onEvent("applicationWillEnterForeground", application)
    }
    func applicationDidReceiveMemoryWarning(_ application: Application) {
        onEvent("applicationDidReceiveMemoryWarning", application)
    }
    func applicationWillTerminate(_ application: Application) { onEvent("applicationWillTerminate", application) }
}

/// A controller that adds one subview, named `subview`, in `viewDidLoad`, as LIFECYCLE.md §3's show sequence does.
@MainActor
final class LeafController: ViewController {
    override func viewDidLoad() {
        view.addSubview(View(name: "subview"))
    }
}

/// An application with a silent logger, so tests read the trace through a recorder only.
@MainActor
func makeApplication(delegate: TestDelegate) -> Application {
    Application(delegate: delegate, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
}

/// The view lifecycle events of LIFECYCLE.md §3 (what the printed sequences show).
let viewLifecycleEvents: Set<String> = [
    "init", "init(coder:)", "awakeFromArchive", "loadView", "viewDidLoad", "viewWillAppear", "viewDidAppear",
    "viewWillDisappear", "viewDidDisappear", "viewWillLayoutSubviews", "viewDidLayoutSubviews", "deinit",
    "willMove(toSuperview:)", "didMoveToSuperview", "willMove(toWindow:)", "didMoveToWindow", "layoutSubviews", "draw",
]
