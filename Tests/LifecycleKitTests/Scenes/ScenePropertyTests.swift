//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import FoundationEssentials
@_spi(Internal) import LifecycleKit
import LifecycleKitTesting
import PropertyBased
import Testing

@MainActor
@Suite("Property: random scene and process-level requests against the scene model")
struct ScenePropertyTests {
    /// Sequences per run: 2,000, or `LIFECYCLE_PROPERTY_CASES` for a longer soak.
    static let cases = ProcessInfo.processInfo.environment["LIFECYCLE_PROPERTY_CASES"].flatMap { Int($0) } ?? 2_000

    /// The background scenes a memory warning leaves connected.
    static let limit = 2

    /// The application delegate's events the model writes.
    static let delegateEvents: Set<String> = [
        "application(_:configurationForConnecting:options:)", "application(_:didDiscardSceneSessions:)",
        "applicationDidReceiveMemoryWarning", "applicationWillTerminate", "applicationWillReload",
        "applicationDidReload", "application(_:shouldSaveApplicationState:)",
    ]

    /// The tree events the model writes.
    static let treeEvents: Set<String> = [
        "applicationWillEnterForeground", "applicationDidBecomeActive", "applicationWillResignActive",
        "applicationDidEnterBackground", "applicationWillTerminate", "didReceiveMemoryWarning",
        "applicationWillReload", "applicationDidReload", "deinit",
    ]

    static let armable = [
        "sceneWillEnterForeground", "sceneDidBecomeActive", "sceneWillResignActive", "sceneDidEnterBackground",
        "sceneDidDisconnect",
    ]

    /// Whether an event of the real trace is one the model writes.
    static func modelled(_ event: TraceEvent) -> Bool {
        if event.target == "delegate" { return delegateEvents.contains(event.event) }
        guard event.target.hasPrefix("scene:"), !event.target.contains(".view") else { return false }
        if !event.target.contains("/") { return true }
        return treeEvents.contains(event.event)
    }

    /// The request an operation code decodes to, against the model's sessions; nil when it names none.
    static func request(_ code: Int, model: SceneModel, next: inout Int) -> SceneModel.Request? {
        let sessions = model.sessions.sorted { $0.value.serial < $1.value.serial }.map(\.key)
        func existing() -> String? { sessions.isEmpty ? nil : sessions[(code / 10) % sessions.count] }
        if code % 97 == 0 { return .terminate }
        switch code % 10 {
        case 0: return .process(.background)
        case 1: return .process(.active)
        case 2: return .process(.inactive)
        case 3: return .memoryWarning
        case 4: return .reload
        case 5, 6:
            next += 1
            return .connect("s\(next)", (code / 10) % 3 == 0 ? .background : .active)
        case 7: return existing().map { .activate($0, (code / 10) % 2 == 0 ? .active : .background) }
        case 8: return existing().map { .disconnect($0) }
        default: return existing().map { .discard($0) }
        }
    }

    /// Makes `request` on the real application, from outside or from a callback.
    static func make(_ request: SceneModel.Request, on application: Application, cause: String) {
        let cause = Cause(rawValue: cause)
        switch request {
        case .process(let state):
            switch state {
            case .active: application.requestBecomeActive(cause: cause)
            case .inactive: application.requestResignActive(cause: cause)
            default: application.requestEnterBackground(cause: cause)
            }
        case .terminate: application.requestTermination(cause: cause)
        case .memoryWarning: application.requestMemoryWarning(cause: cause)
        case .reload: application.requestReload(cause: cause)
        case .connect(let id, let target):
            _ = try? application.requestSceneSessionActivation(persistentIdentifier: id, inBackground: target == .background, cause: cause)
        case .activate(let id, let target):
            try? application.submitScene(target == .active ? .foreground(id) : .background(id), cause: cause)
        case .disconnect(let id): try? application.submitScene(.disconnect(id), cause: cause)
        case .discard(let id): try? application.submitScene(.discard(id), cause: cause)
        }
    }

    /// Plays one sequence on a real application and on the model; returns the first disagreement, or nil.
    static func play(_ codes: [Int]) -> String? {
        var model = SceneModel(limit: limit)
        let (host, delegate) = makeSceneHost(SceneManifest(launchSceneRole: nil, maximumBackgroundScenes: limit))
        host.launch()
        host.recorder.clear()
        var next = 0
        var log: [String] = []
        for (position, code) in codes.enumerated() {
            let cause = "op:\(position)"
            if (code / 1_000) % 3 == 0, let arm = arm(code, position: position, model: model, next: &next) {
                // Armed on a callback: made from inside it when it fires.
                model.arms.removeAll { $0.target == arm.target && $0.callback == arm.callback }
                model.arms.append(arm)
                log.append("arm \(arm)")
                let hook: @MainActor (Application?) -> Void = { application in
                    if let application { make(arm.request, on: application, cause: arm.cause) }
                }
                if arm.target == "delegate" {
                    delegate.hooks[arm.callback] = { hook($0) }
                } else {
                    delegate.sceneDelegates[arm.target]?.hooks[arm.callback] = { hook($0.application) }
                }
            }
            guard let request = request(code, model: model, next: &next) else { continue }
            log.append("\(cause): \(request)")
            model.submit(request, cause: cause)
            make(request, on: host.application, cause: cause)
            host.endTurn()
            let actual = host.recorder.events.filter(modelled).map { "\($0.target) \($0.event)@\($0.state) \($0.cause)" }
            if actual != model.expected {
                let common = zip(actual, model.expected).prefix { $0 == $1 }.count
                return """
                    the trace left the model after \(common) lines
                    operations: \(log.joined(separator: "; "))
                    actual:   \(actual.dropFirst(max(0, common - 3)).prefix(12).joined(separator: " | "))
                    expected: \(model.expected.dropFirst(max(0, common - 3)).prefix(12).joined(separator: " | "))
                    """
            }
            if host.application.applicationState != model.applicationState {
                return "the application is \(host.application.applicationState), the model \(model.applicationState); \(log)"
            }
            let scenes = host.application.connectedScenes.map(\.session.persistentIdentifier)
            if scenes != model.connectedInOrder {
                return "connected \(scenes), the model \(model.connectedInOrder); \(log)"
            }
            let sessions = Set(host.application.sceneSessions.map(\.persistentIdentifier))
            if sessions != Set(model.sessions.keys) {
                return "sessions \(sessions.sorted()), the model \(model.sessions.keys.sorted()); \(log)"
            }
        }
        let sequences = host.recorder.events.map(\.sequence)
        if let first = sequences.first, sequences != Array(first..<(first + sequences.count)) {
            return "LIFECYCLE_SEQ has a gap"
        }
        return nil
    }

    /// A request armed on a connected scene's callback, or on the application delegate's memory warning.
    static func arm(_ code: Int, position: Int, model: SceneModel, next: inout Int) -> SceneModel.Arm? {
        let connected = model.connectedInOrder
        let target: String
        let callback: String
        if connected.isEmpty || (code / 100) % 5 == 0 {
            target = "delegate"
            callback = "applicationDidReceiveMemoryWarning"
        } else {
            target = connected[(code / 100) % connected.count]
            callback = armable[(code / 7) % armable.count]
        }
        guard let request = request(code / 3 + 1, model: model, next: &next), request != .terminate || code % 5 == 0 else {
            return nil
        }
        return SceneModel.Arm(target: target, callback: callback, request: request, cause: "nested:\(position)")
    }

    @Test func randomSceneAndProcessRequestsFollowTheModel() async {
        await propertyCheck(count: Self.cases, input: Gen.int(in: 0...99_999).array(of: 1...30)) { codes in
            let problem = Self.play(codes)
            #expect(problem == nil, "\(problem ?? "")")
            await Task.yield()
        }
    }

    @Test func theModelAgreesOnAKnownSequence() {
        // Connect two, background one, a memory warning, SIGUSR1, SIGUSR2, disconnect, discard, terminate.
        #expect(Self.play([5, 15, 17, 3, 0, 1, 28, 39, 97 * 11]) == nil)
    }
}
