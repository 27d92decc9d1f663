//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleKitTesting
import Testing

/// The application's own settings, as a configuration section would hold them.
private struct ServerSettings: Sendable, Equatable {
    var port: Int
}

private struct PortRefused: Error, CustomStringConvertible {
    let port: Int
    var description: String { "port \(port) needs privileges; use 1024 or above" }
}

/// Serves on a port; refuses a port it cannot bind.
@MainActor
private final class ServerController: ViewController {
    private(set) var port = 8080
    private var offered: Int?

    override func validateReload(_ proposal: ReloadProposal) throws {
        guard let settings = proposal.settings(as: ServerSettings.self) else { return }
        if settings.port < 1024 { throw PortRefused(port: settings.port) }
        offered = settings.port
    }

    override func applicationDidReload() {
        if let offered { port = offered }
        offered = nil
    }
}

@MainActor
private final class Delegate: ApplicationDelegate {
    let server = ServerController(identifier: "http")
    var refusal: String?

    func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        application.window = Window(rootViewController: NavigationController(rootViewController: server, identifier: "root"))
        return true
    }

    func application(_ application: Application, validateReload proposal: ReloadProposal) throws {
        if let refusal { throw Refusal(description: refusal) }
    }

    struct Refusal: Error, CustomStringConvertible { let description: String }
}

@MainActor
@Suite("Reload as a transaction: offered to everybody, applied to all or none")
struct ReloadTransactionTests {
    private func launched() -> (TestHost, Delegate, [String]) {
        let delegate = Delegate()
        let host = TestHost(delegate: delegate)
        host.launch()
        host.recorder.clear()
        return (host, delegate, [])
    }

    @Test func anAcceptedReloadIsOfferedToTheDelegateThenTheTreeThenApplied() {
        let (host, delegate, _) = launched()
        var applied = 0
        host.onReloadConfiguration = { applied += 1 }
        host.reloadSettings = ServerSettings(port: 9090)
        let outcome = host.signal("SIGHUP")
        #expect(
            host.recorder.lines() == [
                "delegate application(_:validateReload:)", "root validateReload(_:)", "root/http validateReload(_:)",
                "root/http applicationWillReload", "root applicationWillReload", "delegate applicationWillReload",
                "delegate applicationDidReload", "root applicationDidReload", "root/http applicationDidReload",
            ]
        )
        #expect(applied == 1)
        #expect(delegate.server.port == 9090)
        #expect(outcome.map { "\($0)" }?.hasPrefix("performed") == true)
        #expect(Array(host.notifications.suffix(2)) == ["RELOADING=1", "READY=1"])
    }

    @Test func aControllerThatRefusesStopsTheOfferAndNothingApplies() {
        let (host, delegate, _) = launched()
        var applied = 0
        host.onReloadConfiguration = { applied += 1 }
        host.reloadSettings = ServerSettings(port: 80)
        let outcome = host.signal("SIGHUP")
        #expect(
            host.recorder.lines() == [
                "delegate application(_:validateReload:)", "root validateReload(_:)", "root/http validateReload(_:)",
                "root/http reloadRefused",
            ]
        )
        #expect(host.recorder.events.last?.detail == "port 80 needs privileges; use 1024 or above")
        #expect(applied == 0)
        #expect(delegate.server.port == 8080)
        guard case .refused(let reason, let events)? = outcome else {
            Issue.record("a refused reload reports .refused, not \(String(describing: outcome))")
            return
        }
        #expect(reason == "root/http: port 80 needs privileges; use 1024 or above")
        #expect(events.count == 4)
        // Still ready, as it was: RELOADING=1 is followed by READY=1.
        #expect(Array(host.notifications.suffix(2)) == ["RELOADING=1", "READY=1"])
        #expect(host.application.applicationState == .active)
    }

    @Test func aDelegateThatRefusesIsAskedFirstAndTheTreeIsNotAsked() {
        let (host, delegate, _) = launched()
        delegate.refusal = "maintenance window: reloads wait until 02:00"
        let outcome = host.signal("SIGHUP")
        #expect(host.recorder.lines() == ["delegate application(_:validateReload:)", "delegate reloadRefused"])
        #expect(outcome == .refused(reason: "the delegate: maintenance window: reloads wait until 02:00", events: outcome!.events!))
    }

    @Test func anInvalidConfigurationIsRefusedBeforeAnybodyIsOffered() {
        let (host, _, _) = launched()
        host.reloadConfigurationError = "app.conf:3: Port=http is not a whole number from 1 to 65535"
        let outcome = host.send(.reload, cause: "control")
        #expect(host.recorder.lines() == ["configuration reloadRefused"])
        #expect(outcome.map { "\($0)" } == "refused by the configuration: app.conf:3: Port=http is not a whole number from 1 to 65535")
        // Mended, the same process reloads.
        host.reloadConfigurationError = nil
        host.reloadSettings = ServerSettings(port: 9443)
        #expect(host.send(.reload).map { "\($0)" }?.hasPrefix("performed") == true)
    }

    @Test func aReloadFoldedIntoARefusedOneIsRefusedToo() {
        let (host, delegate, _) = launched()
        host.reloadSettings = ServerSettings(port: 22)
        var outcomes: [String] = []
        // Unowned: the trace keeps its observers, and the host keeps the application (a cycle would leak: make
        // sanitize-address).
        host.application.trace.observe { [unowned host] event in
            // A second reload asked while the first is being offered waits (folded or queued behind it).
            if event.event == "root/http validateReload(_:)" || event.target == "root/http",
                event.event == TraceEventName.validateReload, outcomes.isEmpty
            {
                host.application.submit(.reload, cause: "control") { outcomes.append("second \($0)") }
            }
        }
        host.application.submit(.reload, cause: "control") { outcomes.append("first \($0)") }
        host.endTurn()
        #expect(outcomes.count == 2)
        #expect(outcomes.allSatisfy { $0.contains("refused by root/http: port 22 needs privileges") })
        #expect(delegate.server.port == 8080)
    }
}
