//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleKitTesting
import Logging

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

    func applicationDidBecomeActive(_ application: Application) {
        onEvent(TraceEventName.applicationDidBecomeActive, application)
    }
    func applicationWillResignActive(_ application: Application) {
        onEvent(TraceEventName.applicationWillResignActive, application)
    }
    func applicationDidEnterBackground(_ application: Application) {
        onEvent(TraceEventName.applicationDidEnterBackground, application)
    }
    func applicationWillEnterForeground(_ application: Application) {
        onEvent(TraceEventName.applicationWillEnterForeground, application)
    }
    func applicationDidReceiveMemoryWarning(_ application: Application) {
        onEvent(TraceEventName.applicationDidReceiveMemoryWarning, application)
    }
    func applicationWillTerminate(_ application: Application) {
        onEvent(TraceEventName.applicationWillTerminate, application)
    }
}

/// A controller that adds one subview, named `subview`, in `viewDidLoad`, as docs/lifecycle.md §3's show sequence does.
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

/// The four appearance callbacks, by the trace's names: a filter that asserts their absence must not be misspelt.
let appearanceEvents: Set<String> = [
    TraceEventName.viewWillAppear, TraceEventName.viewDidAppear, TraceEventName.viewWillDisappear,
    TraceEventName.viewDidDisappear,
]

/// The view lifecycle events of docs/lifecycle.md §3 (what the printed sequences show).
let viewLifecycleEvents: Set<String> = [
    "init", "init(coder:)", "awakeFromArchive", "loadView", "viewDidLoad", "viewWillAppear", "viewDidAppear",
    "viewWillDisappear", "viewDidDisappear", "viewWillLayoutSubviews", "viewDidLayoutSubviews", "deinit",
    "willMove(toSuperview:)", "didMoveToSuperview", "willMove(toWindow:)", "didMoveToWindow", "layoutSubviews", "draw",
]

/// A container that embeds its children's views in `viewDidLoad`, in the order given.
@MainActor
final class ContainerController: ViewController {
    private var pending: [ViewController]

    init(identifier: String, children: [ViewController]) {
        pending = children
        super.init(identifier: identifier)
    }

    required init(coder: Coder) throws {
        pending = []
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        view.addSubview(View(name: "subview"))
        for child in pending { embed(child) }
        pending = []
    }
}

/// Application events as they reach controllers: entering ones delegate-first, leaving ones delegate-last.
let enteringEvents: Set<String> = ["applicationWillEnterForeground", "applicationDidBecomeActive", "applicationDidReload"]

/// The expected lines for one application event over a tree given in pre-order.
func propagation(of event: String, controllerEvent: String? = nil, preOrder: [String]) -> [String] {
    let tree = preOrder.map { "\($0) \(controllerEvent ?? event)" }
    return enteringEvents.contains(event) ? ["delegate \(event)"] + tree : tree.reversed() + ["delegate \(event)"]
}

/// A host that writes what it is told into a shared log, beside the trace, so one list shows both orders.
@MainActor
final class LoggingHost: ApplicationHost {
    var log: [String] = []

    func applicationDidFinishLaunching(_ application: Application) { log.append("host ready") }
    func applicationWillBeginReload(_ application: Application) { log.append("host reloading") }
    func applicationReloadConfiguration(_ application: Application) { log.append("host reread configuration") }
    func applicationDidFinishReload(_ application: Application) { log.append("host ready") }
    func applicationWillBeginTermination(_ application: Application) { log.append("host stopping") }
    func applicationDidTerminate(_ application: Application) { log.append("host terminated") }
}

/// An application with a host whose log also receives every trace event as `target event`.
@MainActor
func makeLoggedApplication(build: @escaping (Application) -> Void = { _ in }) -> (Application, LoggingHost, TestDelegate) {
    let delegate = TestDelegate(build: build)
    let app = makeApplication(delegate: delegate)
    let host = LoggingHost()
    app.host = host
    app.trace.observe { [weak host] event in host?.log.append("\(event.target) \(event.event)") }
    return (app, host, delegate)
}

/// The controller, to be presented full screen (the push order) rather than as the default sheet.
@MainActor
func fullScreen<Controller: ViewController>(_ controller: Controller) -> Controller {
    controller.modalPresentationStyle = .fullScreen
    return controller
}
