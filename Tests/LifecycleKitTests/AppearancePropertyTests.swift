//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Foundation
@_spi(Testing) import LifecycleKit
import PropertyBased
import Testing

/// A plain container for the appearance property test: a plain subview, then the views of all its children, each
/// time its view loads (so a view released on a memory warning comes back with its children's).
@MainActor
final class ModelNode: ViewController {
    override func viewDidLoad() {
        view.addSubview(View(name: "subview"))
        for child in children { view.addSubview(child.view) }
    }
}

/// Plays operations on a real application and on an ``AppearanceModel`` side by side and compares, after every
/// operation and at the end of every turn, the trace with the model.
///
/// The harness holds the controllers weakly, so that the tree alone keeps them: a controller the model releases must
/// be gone.
@MainActor
final class AppearanceHarness {
    /// What is compared: the view lifecycle of controllers and the application events, plus view releases.
    static let comparedEvents: Set<String> = [
        "loadView", "viewDidLoad", "viewWillAppear", "viewDidAppear", "viewWillDisappear", "viewDidDisappear",
        "viewWillLayoutSubviews", "viewDidLayoutSubviews",
        "applicationDidBecomeActive", "applicationWillResignActive", "applicationDidEnterBackground",
        "applicationWillEnterForeground", "applicationWillTerminate", "applicationDidReceiveMemoryWarning",
        "didReceiveMemoryWarning", "applicationWillReload", "applicationDidReload",
    ]

    private struct WeakController {
        weak var controller: ViewController?
    }

    let app: Application
    private let recorder: Recorder
    private(set) var model = AppearanceModel()
    private var references: [String: WeakController] = [:]
    private var cursor = 0
    /// This turn's trace, as compared lines, and the releases (controller and root view deinits) apart.
    private var turnLines: [String] = []
    private var turnReleases: [String] = []
    private var turnReleasedControllers: Set<String> = []
    /// Where each released controller's deinit came, counted in compared lines.
    private var releasePositions: [String: Int] = [:]

    init() {
        let delegate = TestDelegate { app in
            let root = ModelNode(identifier: "r")
            let nav = NavigationController(rootViewController: ModelNode(identifier: "c2"), identifier: "c1")
            root.addChild(nav)
            nav.didMove(toParent: root)
            app.window = Window(rootViewController: root)
        }
        app = makeApplication(delegate: delegate)
        recorder = Recorder(app)
        app.launch()
        app.runEndOfTurn()
        for controller in app.controllersInTreeOrder() {
            references[controller.identifier] = WeakController(controller: controller)
        }
        cursor = recorder.events.count
    }

    private func controller(_ id: String) -> ViewController {
        guard let controller = references[id]?.controller else { preconditionFailure("\(id) is gone") }
        return controller
    }

    private func make(_ new: AppearanceModel.NewController) -> ViewController {
        let made: ViewController
        if let rootID = new.navigationRoot {
            let rootController = ModelNode(identifier: rootID)
            references[rootID] = WeakController(controller: rootController)
            made = NavigationController(rootViewController: rootController, identifier: new.id)
        } else {
            made = ModelNode(identifier: new.id)
        }
        made.keepsViewOnMemoryWarning = new.keepsView
        references[new.id] = WeakController(controller: made)
        return made
    }

    func beginTurn() {
        model.beginTurn()
        turnLines = []
        turnReleases = []
        turnReleasedControllers = []
        releasePositions = [:]
    }

    /// Performs one operation on the application and the model; returns a description of the first disagreement.
    func perform(_ operation: AppearanceModel.Operation, cause: String) -> String? {
        switch operation {
        case .push(let new, let nav):
            (controller(nav) as! NavigationController).pushViewController(make(new), animated: false)
        case .pop(let nav):
            _ = (controller(nav) as! NavigationController).popViewController(animated: false)
        case .popToRoot(let nav):
            _ = (controller(nav) as! NavigationController).popToRootViewController(animated: false)
        case .setStack(let nav, let keeping, let new):
            let navigation = controller(nav) as! NavigationController
            let kept = Array(navigation.viewControllers.prefix(keeping))
            navigation.setViewControllers(kept + [make(new)], animated: false)
        case .present(let new, let presenter, let style):
            let presented = make(new)
            presented.modalPresentationStyle = style
            controller(presenter).present(presented, animated: false)
        case .dismiss(let id):
            controller(id).dismiss(animated: false)
        case .embed(let new, let parent):
            controller(parent).embed(make(new))
        case .unembed(let id):
            let child = controller(id)
            child.parent!.unembed(child)
        case .replaceWindow(let new):
            app.window = Window(rootViewController: make(new))
        case .replaceRoot(let new):
            app.window!.rootViewController = make(new)
        case .request(let request):
            submit(request, cause: Cause(rawValue: cause))
        }
        model.apply(operation, cause: cause)
        readTrace()
        return compareLines(when: "after the operation (before the end of the turn)", prefixOnly: true)
    }

    private func submit(_ request: ReferenceModel.Request, cause: Cause) {
        switch request {
        case .state(.active): app.requestBecomeActive(cause: cause)
        case .state(.inactive): app.requestResignActive(cause: cause)
        case .state(_): app.requestEnterBackground(cause: cause)
        case .terminate: app.requestTermination(cause: cause)
        case .memoryWarning: app.requestMemoryWarning(cause: cause)
        case .reload: app.requestReload(cause: cause)
        }
    }

    /// When the controllers released in a turn of one operation go, beyond "after their own callbacks".
    enum ReleaseOrder {
        case unconstrained
        /// A dismissal, a window replacement, a termination: after every did-callback of the turn (the dismissed
        /// controllers and the old window live until their did-callbacks ran).
        case afterEveryDidCallback
        /// A pop: the popped controller after the new top appeared (`B.viewDidDisappear → A.viewDidAppear →
        /// B.deinit`), when it does.
        case popped(String, after: String)
    }

    /// Ends the turn on both sides and checks everything; returns a description of the first disagreement.
    func endTurn(releaseOrder: ReleaseOrder = .unconstrained) -> String? {
        app.runEndOfTurn()
        model.endTurn()
        readTrace()
        if let problem = compareLines(when: "at the end of the turn", prefixOnly: false) { return problem }
        if let problem = compareReleases() { return problem }
        if let problem = compareReleaseTiming(releaseOrder) { return problem }
        return compareState()
    }

    /// A controller goes after its own callbacks of the turn, and as `order` says.
    private func compareReleaseTiming(_ order: ReleaseOrder) -> String? {
        for (id, position) in releasePositions.sorted(by: { $0.value < $1.value }) {
            let last: Int?
            switch order {
            case .unconstrained:
                last = turnLines.lastIndex { $0.hasPrefix(id + " ") }
            case .afterEveryDidCallback:
                last = turnLines.lastIndex {
                    $0.hasPrefix(id + " ") || $0.hasSuffix(" viewDidAppear") || $0.hasSuffix(" viewDidDisappear")
                }
            case .popped(let popped, let line):
                last = turnLines.lastIndex { $0.hasPrefix(id + " ") || (id == popped && $0 == line) }
            }
            if let last, last >= position {
                return "\(id) deinit came before \(turnLines[last]):\n  " + turnLines.joined(separator: "\n  ")
            }
        }
        return nil
    }

    /// Moves this turn's new trace events into the compared lines and the releases.
    private func readTrace() {
        let events = recorder.events[cursor...]
        cursor = recorder.events.count
        for event in events {
            // Targets are paths; identifiers are unique: the last component names the controller (or its root view).
            let last = event.target.split(separator: "/").last.map(String.init) ?? event.target
            let id = last.hasSuffix(".view") ? String(last.dropLast(5)) : last
            guard id == "delegate" || references[id] != nil else { continue }
            if event.event == "deinit" {
                if last.hasSuffix(".view") && !turnReleasedControllers.contains(id) {
                    // A root view released on its own: a memory warning.
                    turnLines.append("\(last) deinit")
                } else {
                    turnReleases.append("\(last) deinit")
                    if !last.hasSuffix(".view") {
                        turnReleasedControllers.insert(id)
                        releasePositions[id] = turnLines.count
                    }
                }
            } else if Self.comparedEvents.contains(event.event) {
                if event.event.hasPrefix("view") || event.event == "loadView" {
                    turnLines.append("\(id) \(event.event)")
                } else {
                    turnLines.append("\(id) \(event.event)@\(event.state) \(event.cause)")
                }
            }
        }
    }

    private func compareLines(when: String, prefixOnly: Bool) -> String? {
        let expected = model.expected
        if turnLines == expected { return nil }
        if prefixOnly, turnLines.count < expected.count, Array(expected.prefix(turnLines.count)) == turnLines {
            // The trace stops short of the model: a callback the model expects now is missing.
            return "the trace has fewer lines than the model \(when)\n" + Self.sideBySide(expected, turnLines)
        }
        return "the trace differs from the model \(when)\n" + Self.sideBySide(expected, turnLines)
    }

    /// Each graph released at once appears in its order; together they are exactly what the trace released.
    private func compareReleases() -> String? {
        let groups = model.expectedReleases
        let expected = groups.flatMap { $0 }
        let problem: String?
        if expected.sorted() != turnReleases.sorted() {
            problem = "the controllers and views released differ"
        } else if let group = groups.first(where: { group in turnReleases.filter(group.contains) != group }) {
            problem = "a released graph went in another order than \(group)"
        } else {
            problem = nil
        }
        guard let problem else { return nil }
        return "\(problem) at the end of the turn\n  expected (one graph per line):\n"
            + groups.map { "    " + $0.joined(separator: ", ") }.joined(separator: "\n")
            + "\n  actual: " + turnReleases.joined(separator: ", ")
    }

    /// The settled state: who is visible and loaded, who is still alive, the tree's paths, the sequence numbers.
    private func compareState() -> String? {
        let inconsistencies = model.inconsistencies()
        if !inconsistencies.isEmpty {
            return "the model is inconsistent: " + inconsistencies.joined(separator: "; ")
        }
        var problems: [String] = []
        for id in references.keys.sorted() {
            let alive = references[id]!.controller
            guard let node = model.controllers[id] else {
                if alive != nil { problems.append("\(id) should have been released") }
                continue
            }
            guard let alive else {
                problems.append("\(id) was released, the model still has it")
                continue
            }
            if alive.isVisible != (node.appearance == .appeared) {
                problems.append("\(id).isVisible is \(alive.isVisible), the model says \(node.appearance == .appeared)")
            }
            if alive.isViewLoaded != node.isLoaded {
                problems.append("\(id).isViewLoaded is \(alive.isViewLoaded), the model says \(node.isLoaded)")
            }
        }
        let paths = app.controllersInTreeOrder().map(\.path)
        let expectedPaths = model.preOrder().map(model.path)
        if paths != expectedPaths {
            problems.append("the tree is \(paths), the model's is \(expectedPaths)")
        }
        let sequences = recorder.events.map(\.sequence)
        if let gap = sequences.indices.first(where: { sequences[$0] != $0 + 1 }) {
            let previous = gap > 0 ? "\(recorder.events[gap - 1])" : "nothing"
            problems.append(
                "LIFECYCLE_SEQ is not dense and increasing from 1: \(recorder.events[gap]) follows \(previous)"
            )
        }
        guard !problems.isEmpty else { return nil }
        return "the settled state differs from the model:\n  " + problems.joined(separator: "\n  ")
    }

    static func sideBySide(_ expected: [String], _ actual: [String]) -> String {
        let common = min(expected.count, actual.count)
        let firstDifference = (0..<common).first { expected[$0] != actual[$0] } ?? common
        let width = max(30, (expected.map(\.count).max() ?? 0) + 2)
        func padded(_ text: String) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
        var lines = ["  " + padded("expected (model)") + "  actual (trace)"]
        for index in 0..<max(expected.count, actual.count) {
            let left = index < expected.count ? expected[index] : "—"
            let right = index < actual.count ? actual[index] : "—"
            let marker = index == firstDifference ? "> " : "  "
            lines.append(marker + padded(left) + "  " + right)
        }
        return lines.joined(separator: "\n")
    }
}

/// Turns random codes into operations the model and the framework both accept.
enum AppearanceGenerator {
    /// One step: an operation, and whether the turn ends after it (several steps may share a turn).
    struct Step {
        var operation: AppearanceModel.Operation
        var endsTurn: Bool
    }

    /// Decodes one code against the current model; nil when the chosen operation has nothing to act on.
    static func step(for code: Int, model: AppearanceModel, nextID: inout Int) -> Step? {
        let kind = code % 100
        let selector = code / 100
        let tree = model.preOrder()
        func pick(_ candidates: [String]) -> String? {
            candidates.isEmpty ? nil : candidates[selector % candidates.count]
        }
        func new(canBeNavigation: Bool = true) -> AppearanceModel.NewController {
            let id = "c\(nextID)"
            nextID += 1
            if canBeNavigation, (selector / 39) % 3 == 0 {
                let rootID = "c\(nextID)"
                nextID += 1
                return .init(id: id, navigationRoot: rootID, keepsView: (selector / 117) % 4 == 0)
            }
            return .init(id: id, keepsView: (selector / 117) % 4 == 0)
        }
        let node = { (id: String) in model.controllers[id]! }
        let operation: AppearanceModel.Operation
        switch kind {
        case 0..<14:
            guard let nav = pick(tree.filter { node($0).kind == .navigation }) else { return nil }
            operation = .push(new(canBeNavigation: false), onto: nav)
        case 14..<26:
            // Pop one, pop to the root, or keep part of the stack and put a new controller on top.
            let variant = (selector / 7) % 6
            let navs = tree.filter { node($0).kind == .navigation && (node($0).children.count > 1 || variant == 5) }
            guard let nav = pick(navs) else { return nil }
            let stack = node(nav).children
            let keeping = switch variant {
            case 0, 1, 2: stack.count - 1
            case 3: 1
            default: 1 + (selector / 42) % stack.count
            }
            operation = switch variant {
            case 0, 1, 2: .pop(nav)
            case 3: .popToRoot(nav)
            default: .setStack(nav, keeping: keeping, plus: new(canBeNavigation: false))
            }
        case 26..<40:
            guard let presenter = pick(tree.filter { node($0).presented == nil }) else { return nil }
            let styles: [ModalPresentationStyle] = [.automatic, .overCurrentContext, .fullScreen]
            operation = .present(new(), by: presenter, style: styles[(selector / 13) % 3])
        case 40..<52:
            let candidates = tree.filter { model.presentationDismissed(from: $0) != nil }
            guard let id = pick(candidates) else { return nil }
            operation = .dismiss(from: id)
        case 52..<64:
            guard let parent = pick(tree.filter { node($0).kind == .plain }) else { return nil }
            operation = .embed(new(), in: parent)
        case 64..<72:
            let children = tree.filter { id in node(id).parent.map { node($0).kind == .plain } == true }
            guard let child = pick(children) else { return nil }
            operation = .unembed(child)
        case 72..<76:
            operation = selector % 2 == 0 ? .replaceWindow(new()) : .replaceRoot(new())
        case 76..<84:
            operation = .request(.memoryWarning)
        case 84..<99:
            let requests: [ReferenceModel.Request] = [.state(.active), .state(.inactive), .state(.background), .reload]
            operation = .request(requests[selector % requests.count])
        default:
            operation = .request(.terminate)
        }
        let isTermination = if case .request(.terminate) = operation { true } else { false }
        return Step(operation: operation, endsTurn: isTermination || (selector / 468) % 4 != 0)
    }
}

@MainActor
@Suite("Property: appearance and the view tree against the reference model")
struct AppearancePropertyTests {
    /// Plays codes as operations, turn by turn; returns nil when the framework agreed with the model throughout, or
    /// a report: the whole sequence played, where they disagreed, and how. `verbose` prints each operation before it
    /// runs (for a sequence that crashes the framework).
    static func play(_ codes: [Int], verbose: Bool = false) -> String? {
        let harness = AppearanceHarness()
        var nextID = 3
        var log: [String] = []
        var turn: [String] = []
        var turnNumber = 1
        var releaseOrder = AppearanceHarness.ReleaseOrder.unconstrained
        var treeBefore = harness.model.treeDescription
        harness.beginTurn()
        func report(_ problem: String) -> String {
            var lines = ["codes: \(codes)", "sequence (each turn ends with runEndOfTurn()):"]
            lines += log
            lines.append("  turn \(turnNumber): " + turn.joined(separator: "; ") + "   <- fails here")
            lines.append("tree before this turn: \(treeBefore)")
            lines.append(problem)
            return lines.joined(separator: "\n")
        }
        for (position, code) in codes.enumerated() {
            if harness.model.isTerminated { break }
            guard let step = AppearanceGenerator.step(for: code, model: harness.model, nextID: &nextID) else {
                continue
            }
            turn.append(step.operation.description)
            switch (turn.count, step.operation) {
            case (1, .pop(let nav)):
                let stack = harness.model.controllers[nav]!.children
                releaseOrder = .popped(stack.last!, after: "\(stack.dropLast().last!) viewDidAppear")
            case (1, .dismiss), (1, .replaceWindow), (1, .replaceRoot), (1, .request(.terminate)):
                releaseOrder = .afterEveryDidCallback
            default: releaseOrder = .unconstrained
            }
            if verbose { print("turn \(turnNumber): \(step.operation)\(step.endsTurn ? "" : " (same turn)")") }
            if let problem = harness.perform(step.operation, cause: "op:\(position)") { return report(problem) }
            guard step.endsTurn || position == codes.count - 1 else { continue }
            if let problem = harness.endTurn(releaseOrder: releaseOrder) { return report(problem) }
            log.append("  turn \(turnNumber): " + turn.joined(separator: "; "))
            turn = []
            turnNumber += 1
            treeBefore = harness.model.treeDescription
            harness.beginTurn()
        }
        if !turn.isEmpty, let problem = harness.endTurn(releaseOrder: releaseOrder) { return report(problem) }
        return nil
    }

    /// Sequences per run: 1,500 (about 4 s), or `LIFECYCLE_PROPERTY_CASES` for a longer soak.
    static let cases = ProcessInfo.processInfo.environment["LIFECYCLE_PROPERTY_CASES"].flatMap { Int($0) } ?? 1_500

    /// A failure prints the codes (shrunk), the operations turn by turn, the tree before the failing turn and the
    /// difference. Reproduce it with the `.fixedSeed(…)` trait the failure names, or with `play([codes])` in a test.
    @Test func randomOperationsFollowTheModel() async {
        await propertyCheck(count: Self.cases, input: Gen.int(in: 0...999_999).array(of: 1...30)) { codes in
            let problem = Self.play(codes)
            #expect(problem == nil, "\(problem ?? "")")
        }
    }

    @Test func theModelAgreesOnAKnownSequence() {
        // A push; a memory warning releases the covered root's view; a pop loads it again before it appears; a
        // full-screen presentation over everything; a navigation controller presented over that and dismissed from
        // inside; the full-screen one dismissed; a new window; the background; termination.
        let codes = [58500, 46876, 46814, 65126, 47026, 47340, 47140, 46872, 47084, 46899]
        #expect(Self.operations(codes) == [
            "push c3 onto c1", "memory warning", "pop c1", "r presents c4 (.fullScreen)",
            "c4 presents nav c5[c6] (keeps its view) (.automatic)", "dismiss from c6", "dismiss from c4",
            "application.window = Window(root: nav c7[c8] (keeps its view))", "request background",
            "request termination",
        ])
        let problem = Self.play(codes)
        #expect(problem == nil, "\(problem ?? "")")
    }

    /// Counterexamples the property test found after the findings were fixed, kept as regressions: a
    /// setViewControllers whose dismissal shows the stack again (the stack must be final first), and a push onto a
    /// stack that leaves the tree in the same turn (the push must not keep the pushed controller alive).
    @Test(arguments: [[0, 159526, 0, 990076, 289276, 444114], [7752, 119164, 994952, 0, 646426, 669852, 187300, 675364]])
    func laterCounterexamplesAgreeWithTheModel(codes: [Int]) {
        let problem = Self.play(codes)
        #expect(problem == nil, "\(problem ?? "")")
    }

    /// The operations codes decode to, on a model that follows them.
    static func operations(_ codes: [Int]) -> [String] {
        var model = AppearanceModel()
        var nextID = 3
        var operations: [String] = []
        for (position, code) in codes.enumerated() {
            guard let step = AppearanceGenerator.step(for: code, model: model, nextID: &nextID) else { continue }
            operations.append(step.operation.description)
            model.apply(step.operation, cause: "op:\(position)")
            if step.endsTurn { model.endTurn() }
        }
        return operations
    }
}
