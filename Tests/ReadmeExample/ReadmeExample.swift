//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleDaemon
import LifecycleKit
import LifecycleServices
import ServiceLifecycle

@main
final class AppDelegate: ApplicationMain {
    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: NavigationController(rootViewController: FeedController()))
        return true
    }
    func applicationDidEnterBackground(_ application: Application) { print("saving state") }
}

final class FeedController: ViewController {
    override func viewDidLoad() {
        view.addSubview(View(name: "status"))
        embed(ServiceController(identifier: "api") { [Heartbeat()] })  // serves while the feed is on screen
        task("poll") { try await pollUpstream() }  // cancelled on disappear and in the background
    }
    override func didReceiveMemoryWarning() { /* drop caches */ }
    func openDetail() { navigationController?.pushViewController(DetailController(), animated: false) }
}

final class DetailController: ViewController {
    override func viewDidDisappear(_ animated: Bool) { /* the feed is serving again: hand-off done */ }
}

/// Any swift-service-lifecycle Service: a Hummingbird or Vapor server, a queue consumer.
struct Heartbeat: Service {
    func run() async throws { try await gracefulShutdown() }
}

func pollUpstream() async throws { while true { try await Task.sleep(for: .seconds(5)) } }
