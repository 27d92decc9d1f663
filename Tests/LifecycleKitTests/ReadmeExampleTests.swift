import LifecycleKit
import Testing

// The README's example, verbatim but for the print: it must compile and behave as the README says.
private final class AppDelegate: ApplicationDelegate {
    var saved = 0
    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: NavigationController(rootViewController: FeedController()))
        return true
    }
    func applicationDidEnterBackground(_ application: Application) { saved += 1 }
}

private final class FeedController: ViewController {
    private var poller: Task<Void, Never>?
    override func viewDidLoad() { view.addSubview(View(name: "status")) }
    override func viewDidAppear(_ animated: Bool) { poller = Task { /* poll upstream */ } }
    override func viewWillDisappear(_ animated: Bool) { poller?.cancel() }
    override func applicationDidEnterBackground() { poller?.cancel() }
    override func didReceiveMemoryWarning() { /* drop caches */ }
    func openDetail() { navigationController?.pushViewController(DetailController(), animated: false) }
}

private final class DetailController: ViewController {
    override func viewDidDisappear(_ animated: Bool) { /* the feed is serving again: hand-off done */ }
}

@MainActor
@Suite("The README example")
struct ReadmeExampleTests {
    @Test func theExampleLaunchesPushesAndBackgroundsAsDocumented() {
        let delegate = AppDelegate()
        let app = Application(delegate: delegate)
        let recorder = Recorder(app)
        app.launch()
        let nav = app.window!.rootViewController as! NavigationController
        (nav.topViewController as! FeedController).openDetail()
        app.runEndOfTurn()
        #expect(
            recorder.lines(events: ["viewWillAppear", "viewDidAppear", "viewWillDisappear", "viewDidDisappear"]) == [
                "navigation viewWillAppear", "navigation/feed viewWillAppear", "navigation/feed viewDidAppear",
                "navigation viewDidAppear", "navigation/feed viewWillDisappear", "navigation/detail viewWillAppear",
                "navigation/feed viewDidDisappear", "navigation/detail viewDidAppear",
            ]
        )
        app.requestEnterBackground()
        #expect(delegate.saved == 1)
    }
}
