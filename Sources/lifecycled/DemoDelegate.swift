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
    private func beginTimedTask(
        _ name: String,
        label: String,
        lasting duration: Duration,
        in application: Application
    ) {
        let logger = environment.logger
        var task = BackgroundTaskIdentifier.invalid
        task = application.beginBackgroundTask(withName: name) {
            logger.warning("\(label) expired before it finished")
            application.endBackgroundTask(task)
        }
        logger.info("\(label) started: \(duration)")
        DispatchQueue.main.asyncAfter(deadline: .now() + DispatchTimeInterval(duration)) {
            MainActor.assumeIsolated {
                guard application.backgroundTasks.contains(where: { $0.identifier == task }) else { return }
                logger.info("\(label) finished")
                application.endBackgroundTask(task)
            }
        }
    }
}

extension DispatchTimeInterval {
    /// A duration as Dispatch counts it: whole nanoseconds, truncated.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
