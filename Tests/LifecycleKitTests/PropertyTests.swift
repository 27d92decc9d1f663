//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleKit
import LifecycleKitTesting
import PropertyBased
import Testing

/// A small reference model of docs/lifecycle.md §1–§2, written independently of the implementation: the legal
/// single steps as a graph searched breadth-first, a request queue with the coalescing and finality rules, and a
/// tree of identifiers whose pre-order gives the propagation order. ``AppearanceModel`` extends it to §3–§4.
struct ReferenceModel {
    /// The legal single steps and the delegate callback each fires.
    static let edges: [(from: ApplicationState, to: ApplicationState, callback: String)] = [
        (.inactive, .active, "applicationDidBecomeActive"),
        (.active, .inactive, "applicationWillResignActive"),
        (.inactive, .background, "applicationDidEnterBackground"),
        (.background, .inactive, "applicationWillEnterForeground"),
    ]

    static let entering: Set<String> = ["applicationWillEnterForeground", "applicationDidBecomeActive", "applicationDidReload"]

    enum Request: Equatable {
        case state(ApplicationState)
        case terminate
        case memoryWarning
        case reload
    }

    var state: ApplicationState = .active
    var children: [String: [String]] = ["root": ["nav"], "root/nav": ["n0"]]
    var terminated = false
    var expected: [String] = []

    /// Pre-order paths of the tree.
    func preOrder() -> [String] {
        var out: [String] = []
        func visit(_ path: String) {
            out.append(path)
            for child in children[path] ?? [] { visit(path + "/" + child) }
        }
        if !terminated { visit("root") }
        return out
    }

    /// The shortest legal path of callbacks, with the state each fires in.
    static func path(from: ApplicationState, to: ApplicationState) -> [(String, ApplicationState, ApplicationState)] {
        var frontier: [(ApplicationState, [(String, ApplicationState, ApplicationState)])] = [(from, [])]
        var seen: Set<ApplicationState> = [from]
        while !frontier.isEmpty {
            let (node, route) = frontier.removeFirst()
            if node == to { return route }
            for edge in edges where edge.from == node && !seen.contains(edge.to) {
                seen.insert(edge.to)
                // "Will" callbacks fire in the state left, "did" callbacks in the state reached.
                let firing = edge.callback.contains("Will") ? edge.from : edge.to
                frontier.append((edge.to, route + [(edge.callback, firing, edge.to)]))
            }
        }
        return []
    }

    /// The delegate callbacks a request fires from the current state: (callback, firing state, state after).
    func callbacks(for request: Request) -> [(String, ApplicationState, ApplicationState)] {
        switch request {
        case .state(let target): return Self.path(from: state, to: target)
        case .terminate:
            return Self.path(from: state, to: .background) + [("applicationWillTerminate", .background, .terminated)]
        case .memoryWarning: return [("applicationDidReceiveMemoryWarning", state, state)]
        case .reload: return [("applicationWillReload", state, state), ("applicationDidReload", state, state)]
        }
    }

    /// The trace lines (`target event@state cause`) one delegate callback produces down the current tree.
    func lines(for callback: String, state: ApplicationState, cause: String) -> [String] {
        let controllerEvent = callback == "applicationDidReceiveMemoryWarning" ? "didReceiveMemoryWarning" : callback
        let tree = preOrder().map { "\($0) \(controllerEvent)@\(state) \(cause)" }
        let delegate = "delegate \(callback)@\(state) \(cause)"
        return Self.entering.contains(callback) ? [delegate] + tree : tree.reversed() + [delegate]
    }

    /// Runs a request and what it queues; `hook` says which nested request a callback makes.
    mutating func run(_ request: Request, cause: String, hook: inout (callback: String, request: Request, cause: String)?) {
        guard !terminated else { return }
        var queue: [(Request, String)] = [(request, cause)]
        var terminating = false
        while !queue.isEmpty {
            let (current, currentCause) = queue.removeFirst()
            for (callback, firing, after) in callbacks(for: current) {
                expected += lines(for: callback, state: firing, cause: currentCause)
                if callback == "applicationWillTerminate" {
                    terminated = true
                    terminating = true
                }
                state = after
                if let armed = hook, armed.callback == callback {
                    hook = nil
                    let alreadyTerminating = terminating || queue.contains { $0.0 == .terminate } || current == .terminate
                    let coalesced =
                        (armed.request == .memoryWarning
                            && (current == .memoryWarning || queue.contains { $0.0 == .memoryWarning }))
                        || (armed.request == .reload && queue.contains { $0.0 == .reload })
                    if !alreadyTerminating && !coalesced { queue.append((armed.request, armed.cause)) }
                }
            }
        }
    }
}

@MainActor
@Suite("Property: random requests and tree edits against the reference model")
struct PropertyTests {
    static let applicationEvents: Set<String> = [
        "applicationDidBecomeActive", "applicationWillResignActive", "applicationDidEnterBackground",
        "applicationWillEnterForeground", "applicationWillTerminate", "applicationDidReceiveMemoryWarning",
        "didReceiveMemoryWarning", "applicationWillReload", "applicationDidReload",
    ]

    static func request(_ code: Int) -> ReferenceModel.Request {
        switch code % 6 {
        case 0: .state(.active)
        case 1: .state(.inactive)
        case 2: .state(.background)
        case 3: .memoryWarning
        case 4: .reload
        default: code % 60 == 5 ? .terminate : .state(.background)
        }
    }

    func submit(_ request: ReferenceModel.Request, to app: Application, cause: String) {
        let cause = Cause(rawValue: cause)
        switch request {
        case .state(.active): app.requestBecomeActive(cause: cause)
        case .state(.inactive): app.requestResignActive(cause: cause)
        case .state(_): app.requestEnterBackground(cause: cause)
        case .terminate: app.requestTermination(cause: cause)
        case .memoryWarning: app.requestMemoryWarning(cause: cause)
        case .reload: app.requestReload(cause: cause)
        }
    }

    /// Plays one sequence of operation codes on a real application and on the model; returns both traces.
    func play(_ codes: [Int]) -> (actual: [String], expected: [String], sequences: [Int]) {
        var model = ReferenceModel()
        var hook: (callback: String, request: ReferenceModel.Request, cause: String)?
        var nextID = 1
        let delegate = TestDelegate { app in
            let nav = NavigationController(rootViewController: LeafController(identifier: "n0"), identifier: "nav")
            app.window = Window(rootViewController: ContainerController(identifier: "root", children: [nav]))
        }
        let app = makeApplication(delegate: delegate)
        let recorder = CallbackRecorder(app)
        app.launch()
        app.runEndOfTurn()
        var controllers: [String: ViewController] = [:]
        func index() {
            controllers = Dictionary(uniqueKeysWithValues: app.controllersInTreeOrder().map { ($0.path, $0) })
        }
        index()
        var realHook: (callback: String, request: ReferenceModel.Request, cause: String)?
        delegate.onEvent = { callback, app in
            guard let armed = realHook, armed.callback == callback else { return }
            realHook = nil
            self.submit(armed.request, to: app, cause: armed.cause)
        }
        let skipPrefix = recorder.events.count
        for (position, code) in codes.enumerated() {
            let cause = "op:\(position)"
            switch (code / 7) % 8 {
            case 0, 1, 2:
                let request = Self.request(code)
                submit(request, to: app, cause: cause)
                model.run(request, cause: cause, hook: &hook)
            case 3 where !model.terminated:
                // Add a leaf under a container (root or a leaf that became a container), never under the nav.
                let parents = model.preOrder().filter { !$0.hasSuffix("/nav") && !$0.hasPrefix("root/nav/") }
                let parent = parents[code % parents.count]
                let id = "c\(nextID)"
                nextID += 1
                controllers[parent]!.embed(LeafController(identifier: id))
                model.children[parent, default: []].append(id)
            case 4 where !model.terminated:
                let removable = model.preOrder().filter {
                    $0 != "root" && $0 != "root/nav" && !$0.hasPrefix("root/nav/")
                }
                guard !removable.isEmpty else { break }
                let victim = removable[code % removable.count]
                let parentPath = String(victim[..<victim.lastIndex(of: "/")!])
                controllers[parentPath]!.unembed(controllers[victim]!)
                model.children[parentPath]!.removeAll { parentPath + "/" + $0 == victim }
                model.children = model.children.filter { !$0.key.hasPrefix(victim + "/") && $0.key != victim }
            case 5 where !model.terminated:
                let id = "p\(nextID)"
                nextID += 1
                (controllers["root/nav"] as! NavigationController).pushViewController(
                    LeafController(identifier: id),
                    animated: code % 2 == 0
                )
                model.children["root/nav", default: []].append(id)
            case 6 where !model.terminated:
                if (controllers["root/nav"] as! NavigationController).popViewController(animated: false) != nil {
                    model.children["root/nav"]!.removeLast()
                }
            case 7:
                let callbacks = [
                    "applicationWillResignActive", "applicationDidEnterBackground", "applicationWillEnterForeground",
                    "applicationDidBecomeActive", "applicationDidReceiveMemoryWarning",
                ]
                let armed = (callbacks[code % callbacks.count], Self.request(code / 5), "nested:\(position)")
                hook = armed
                realHook = armed
            default:
                break
            }
            app.runEndOfTurn()
            if !model.terminated { index() }
        }
        let events = recorder.events.dropFirst(skipPrefix).filter { Self.applicationEvents.contains($0.event) }
        return (
            events.map { "\($0.target) \($0.event)@\($0.state) \($0.cause)" },
            model.expected,
            recorder.events.map(\.sequence)
        )
    }

    @Test func randomRequestsAndTreeEditsFollowTheModel() async {
        await propertyCheck(count: 10_000, input: Gen.int(in: 0...9_999).array(of: 1...24)) { codes in
            let (actual, expected, sequences) = play(codes)
            #expect(actual == expected)
            #expect(sequences == Array(1...sequences.count), "LIFECYCLE_SEQ counts every event from 1")
            await Task.yield()
        }
    }

    @Test func theModelAgreesOnAKnownSequence() {
        // Background, a memory warning there, foreground, then terminate from active.
        let (actual, expected, _) = play([2 * 7 * 0 + 2, 3, 0, 5 + 60 * 0])
        #expect(actual == expected)
        #expect(!expected.isEmpty)
    }
}
