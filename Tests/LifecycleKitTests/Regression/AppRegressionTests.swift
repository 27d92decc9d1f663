//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Dispatch
@_spi(Internal) @testable import LifecycleKit
import LifecycleKitTesting
import Logging
import Testing

@MainActor
final class TerminateOnDidAppear: ViewController {
    override func viewDidAppear(_ animated: Bool) { Application.shared.requestTermination() }
}

final class AppBox: @unchecked Sendable { var app: Application? }

@MainActor
final class RestoringDelegate: ApplicationDelegate {
    func application(_ application: Application, shouldRestoreApplicationState archive: Archive) -> Bool { true }
    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: ViewController(identifier: "fresh"))
        return true
    }
}

func stderrLines(_ result: ExitTest.Result?) -> [Substring] {
    guard let result else { return [] }
    return String(decoding: result.standardErrorContent, as: UTF8.self).split(separator: "\n")
        .filter { $0.contains("Fatal") || $0.contains("access") || $0.contains("unowned") || $0.contains("error") }
        .prefix(4).map { $0 }
}

@MainActor
@Suite("Regression: application edge cases") struct AppRegressionTests {
    // R12: termination requested from a did-callback of an ordinary turn.
    @Test func terminationFromViewDidAppearReleasesEverythingBeforeReportingTermination() {
        let (app, host, _) = makeLoggedApplication { app in
            app.window = Window(rootViewController:
                NavigationController(rootViewController: LeafController(identifier: "a"), identifier: "nav"))
        }
        app.launch()
        (app.window!.rootViewController as! NavigationController)
            .pushViewController(TerminateOnDidAppear(identifier: "b"), animated: false)
        host.log.removeAll()
        app.runEndOfTurn()
        let terminated = host.log.firstIndex(of: "host terminated")!
        let after = Array(host.log[(terminated + 1)...])
        #expect(after.isEmpty, "callbacks and deinits after the host was told the application terminated")
    }

    // R13a: replacing Application.window after launch crashes (exclusivity) when the old window's controllers go.
    @Test func replacingTheWindowAfterLaunchDoesNotCrash() async {
        await #expect(processExitsWith: .success) {
            await MainActor.run {
                let (app, _, _) = launchedRoot { LeafController(identifier: "old") }
                app.window = Window(rootViewController: LeafController(identifier: "new"))
            }
        }
    }

    // R13b: same with `application.window = nil`.
    @Test func settingTheWindowToNilDoesNotCrash() async {
        await #expect(processExitsWith: .success) {
            await MainActor.run {
                let (app, _, _) = launchedRoot { LeafController(identifier: "old") }
                app.window = nil
            }
        }
    }

    // R13c: the realistic trigger: restored state + a delegate that builds its window in didFinishLaunching.
    @Test func restoredStateReplacedByTheDelegatesWindowDoesNotCrash() async {
        await #expect(processExitsWith: .success) {
            await MainActor.run {
                let delegate = RestoringDelegate()
                let app = Application(delegate: delegate, logger: .init(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
                let recorder = CallbackRecorder(app)
                app.launch(options: LaunchOptions(restoredState: Archive(root: .init(className: "ViewController", identifier: "restored"))))
                _ = recorder
            }
        }
    }

    // R13d: replacing the window while the old one is kept alive (no crash): nothing disappears, nothing appears.
    @Test func replacingTheWindowAfterLaunchMovesTheTree() {
        let (app, _, recorder) = launchedRoot { LeafController(identifier: "old") }
        var old = app.window
        app.window = Window(rootViewController: LeafController(identifier: "new"))
        app.runEndOfTurn()
        old = nil
        _ = old
        app.runEndOfTurn()
        #expect(recorder.lines(targets: ["old"], events: appearance).contains("old viewWillDisappear"),
                "old root released while on screen; its views never left the window")
        #expect(app.window!.rootViewController!.isVisible, "the new window never shows")
    }

    // R14: a dropped second launch still replaces launchOptions.
    @Test func aDroppedSecondLaunchLeavesTheLaunchOptionsAlone() {
        let app = makeApplication(delegate: TestDelegate())
        app.launch(options: LaunchOptions(reason: .test))
        app.launch(options: LaunchOptions(reason: .restart))
        #expect(app.launchOptions.reason == .test)
    }

    // R15: Application.current is read while the application is deinitializing (isolated deinit deferred because the
    // last release happened off the main actor).
    @Test func currentIsNotReadableWhileTheApplicationDeinitializes() async {
        await #expect(processExitsWith: .success) {
            await MainActor.run {
                let box = AppBox()
                box.app = Application(delegate: TestDelegate())
                let done = DispatchSemaphore(value: 0)
                DispatchQueue.global().async { box.app = nil; done.signal() }
                done.wait()
                // The deinit job is queued on the main actor; until it runs, `current` names a dying object.
                _ = ViewController(identifier: "x")   // traces "init" through Application.current
            }
        }
    }
}
