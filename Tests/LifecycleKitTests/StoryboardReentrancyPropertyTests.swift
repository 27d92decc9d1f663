//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleKit
import LifecycleKitTesting
import Logging
import PropertyBased
import Testing

// Storyboard reloads (docs/storyboard.md, docs/lifecycle.md "Re-entrancy") with operations made from inside the
// callbacks of the hand-over: random storyboards, random changes applied on reload (children added with what they
// present, removed, replaced, stacks set, presentations added and changed, the root replaced), and random requests
// and tree edits armed on the callbacks of the controllers they make. Checked against the contract's invariants
// (no reference model of the storyboard update): nothing traps, appearance brackets balance, no controller is
// visible outside the tree, a controller in the tree is visible exactly when its view is in the window, every
// presentation in the tree is one of the window's layers, window moves alternate for every view, every request
// completes once and runs in arrival order; and, when nothing was armed, the tree is the storyboard's. Every play
// ends in termination, whose callbacks may be armed too (`applicationWillTerminate`, the teardown's disappearance,
// where the window or its root may also be replaced or removed): once the host hears "terminated", nothing happens
// after it, and every controller of the tree at termination's start, and every one made since, was released before
// it, closing every appearance it began.

/// A plain controller of the storyboard property test: it reads its `tag` (a change of tag replaces it) and fires
/// what the harness armed on its callbacks.
@MainActor
final class SNode: ViewController {
    static weak var harness: StoryboardHarness?
    let tag: Int

    init(identifier: String) {
        tag = 0
        super.init(identifier: identifier)
    }

    required init(coder: Coder) throws {
        tag = try coder.decodeInteger(forKey: "tag") ?? 0
        try super.init(coder: coder)
    }

    isolated deinit { Self.harness?.released(ObjectIdentifier(self)) }

    override func loadView() { view = SView(name: "view") }
    override func viewWillAppear(_ animated: Bool) { Self.harness?.fire(self, "viewWillAppear") }
    override func viewDidAppear(_ animated: Bool) { Self.harness?.fire(self, "viewDidAppear") }
    override func viewWillDisappear(_ animated: Bool) { Self.harness?.fire(self, "viewWillDisappear") }
    override func viewDidDisappear(_ animated: Bool) { Self.harness?.fire(self, "viewDidDisappear") }
    override func viewWillLayoutSubviews() { Self.harness?.fire(self, "viewWillLayoutSubviews") }
    override func applicationWillReload() { Self.harness?.fire(self, "applicationWillReload") }
    override func applicationDidReload() { Self.harness?.fire(self, "applicationDidReload") }
    override func applicationWillTerminate() { Self.harness?.fire(self, "applicationWillTerminate") }
}

/// The root view of the storyboard property test's controllers: it tells the harness of its window moves.
@MainActor
final class SView: View {
    isolated deinit { SNode.harness?.released(ObjectIdentifier(self)) }
    override func willMove(toWindow newWindow: Window?) { SNode.harness?.windowMove(self, entering: newWindow != nil) }
}

/// A navigation controller of the storyboard property test (its children are its stack).
@MainActor
final class SNav: NavigationController {
    let tag: Int

    required init(coder: Coder) throws {
        tag = try coder.decodeInteger(forKey: "tag") ?? 0
        try super.init(coder: coder)
    }

    isolated deinit { SNode.harness?.released(ObjectIdentifier(self)) }

    override func loadView() { view = SView(name: "view") }
    override func viewWillAppear(_ animated: Bool) { SNode.harness?.fire(self, "viewWillAppear") }
    override func viewDidAppear(_ animated: Bool) { SNode.harness?.fire(self, "viewDidAppear") }
    override func viewWillDisappear(_ animated: Bool) { SNode.harness?.fire(self, "viewWillDisappear") }
    override func viewDidDisappear(_ animated: Bool) { SNode.harness?.fire(self, "viewDidDisappear") }
    override func applicationDidReload() { SNode.harness?.fire(self, "applicationDidReload") }
    override func applicationWillTerminate() { SNode.harness?.fire(self, "applicationWillTerminate") }
}

@MainActor
final class SDelegate: ApplicationDelegate {
    func registerArchiveClasses(in registry: inout ArchiveClassRegistry) {
        registry.register(SNode.self)
        registry.register(SNav.self)
    }
}

/// A storyboard node, as the generator writes it.
struct StoryboardSpec: Equatable {
    var name: String
    var isNavigation = false
    var tag = 0
    var style: ModalPresentationStyle?
    var children: [StoryboardSpec] = []
    var presented: [StoryboardSpec] = []

    func text(indent: String = "") -> String {
        var lines = ["\(indent)\(isNavigation ? "SNav" : "SNode") \(name) {", "\(indent)  tag = \(tag)"]
        if let style { lines.append("\(indent)  modalPresentationStyle = \(style.rawValue)") }
        for child in children { lines.append(child.text(indent: indent + "  ")) }
        for node in presented { lines.append("\(indent)  present " + node.text(indent: indent + "  ").drop { $0 == " " }) }
        lines.append("\(indent)}")
        return lines.joined(separator: "\n")
    }

    /// The trace paths of the tree it declares, pre-order: a node, its children, what it presents.
    func paths(under parent: String? = nil) -> [String] {
        let path = parent.map { $0 + "/" + name } ?? name
        return [path] + children.flatMap { $0.paths(under: path) } + presented.flatMap { $0.paths(under: path) }
    }

    /// Every node's position, pre-order, as index paths (children, then `-1` for the presented one).
    func positions(at prefix: [Int] = []) -> [[Int]] {
        [prefix] + children.indices.flatMap { children[$0].positions(at: prefix + [$0]) }
            + presented.flatMap { $0.positions(at: prefix + [-1]) }
    }

    subscript(position: [Int]) -> StoryboardSpec {
        get {
            guard let first = position.first else { return self }
            return (first < 0 ? presented[0] : children[first])[Array(position.dropFirst())]
        }
        set {
            guard let first = position.first else { self = newValue; return }
            if first < 0 { presented[0][Array(position.dropFirst())] = newValue } else {
                children[first][Array(position.dropFirst())] = newValue
            }
        }
    }
}

/// Decodes codes into storyboards, changes of storyboards, and what an armed callback makes.
struct StoryboardGenerator {
    var nextName = 1

    private mutating func name() -> String {
        defer { nextName += 1 }
        return "n\(nextName)"
    }

    /// A subtree of at most `size` nodes (a navigation controller has one to three children), maybe presenting.
    mutating func subtree(_ code: inout Int, size: Int, depth: Int = 0) -> StoryboardSpec {
        func take(_ n: Int) -> Int {
            defer { code /= n }
            return code % n
        }
        var node = StoryboardSpec(name: name(), isNavigation: depth > 0 && depth < 3 && take(4) == 0, tag: take(3))
        if take(3) == 0 { node.style = [.automatic, .fullScreen, .overCurrentContext][take(3)] }
        let count = node.isNavigation ? 1 + take(3) : (size > 1 && depth < 3 ? take(3) : 0)
        for _ in 0..<count { node.children.append(subtree(&code, size: max(1, size / 2), depth: depth + 1)) }
        if size > 1, depth < 3, take(3) == 0 { node.presented = [subtree(&code, size: max(1, size / 3), depth: depth + 1)] }
        return node
    }

    /// A random change of `spec`: a child added (with what it presents), one removed, one replaced (its tag), a
    /// presentation added or replaced, the root replaced.
    mutating func change(_ spec: StoryboardSpec, code: Int) -> StoryboardSpec {
        var code = code
        var changed = spec
        let positions = spec.positions()
        let position = positions[code % positions.count]
        code /= positions.count
        let kind = code % 6
        code /= 6
        switch kind {
        case 0, 1:
            // A child added (on a navigation controller: on top of its stack).
            changed[position].children.append(subtree(&code, size: 1 + code % 5, depth: position.count + 1))
        case 2:
            // A node removed (never the root, never a stack's last controller: that one is replaced instead).
            guard let last = position.last else {
                changed.tag += 1
                return changed
            }
            let parent = Array(position.dropLast())
            if last < 0 {
                changed[parent].presented = []
            } else if changed[parent].isNavigation, changed[parent].children.count == 1 {
                changed[position].tag += 1
            } else {
                changed[parent].children.remove(at: last)
            }
        case 3:
            changed[position].tag += 1
        case 4:
            changed[position].presented = [subtree(&code, size: 1 + code % 4, depth: position.count + 1)]
        default:
            if position.isEmpty, code % 3 == 0 {
                changed = subtree(&code, size: 6)
            } else {
                changed[position].tag += 1
            }
        }
        return changed
    }
}

/// Plays storyboard reloads with armed operations on a real application and checks the invariants.
@MainActor
final class StoryboardHarness {
    let app: Application
    let recorder: CallbackRecorder
    private let host = StoryboardReloadingHost()
    private var generator = StoryboardGenerator()
    private(set) var storyboard: StoryboardSpec
    private var archive: Archive
    /// Operations armed on callbacks: the next time a controller of that name gets that callback, the code is
    /// decoded (against the application then) into an operation made from inside it.
    private var arms: [(name: String, callback: String, code: Int)] = []
    private(set) var firings = 0
    private var madeNames = 0
    /// Presenters whose presentation waits for a move in progress.
    private var pendingPresenters: [ObjectIdentifier] = []
    private var requests: [(cause: String, outcomes: [RequestOutcome])] = []
    /// Each live controller's appearance and each live root view's last window move, by object (a storyboard change
    /// replaces a controller by another of the same name).
    private var appearanceStates: [ObjectIdentifier: (path: String, state: AppearanceModel.Appearance)] = [:]
    private var windowMoves: [ObjectIdentifier: Bool] = [:]
    private var problems: [String] = []
    var log: [String] = []

    // Termination.
    private var isStopping = false
    /// The controllers (and their root views) of the tree when termination began, where the trace was then, and the
    /// controllers made since.
    private var treeAtStop: [(name: String, wasVisible: Bool, controller: Weak, view: Weak)] = []
    private var madeDuringStop: [Weak] = []
    private var stopStart = 0
    private var terminatedAt: Int?

    private struct Weak {
        weak var object: AnyObject?
    }

    init(code: Int) throws {
        app = Application(delegate: SDelegate(), logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
        recorder = CallbackRecorder(app)
        app.host = host
        var code = code
        storyboard = generator.subtree(&code, size: 6)
        archive = try StoryboardFormat.parse(storyboard.text(), source: "s")
        try app.loadStoryboard(archive)
        host.onStopping = { [unowned self] in terminationWillBegin() }
        host.onTerminated = { [unowned self] in applicationDidTerminate() }
        SNode.harness = self
        app.launch()
        app.runEndOfTurn()
        log.append("launch with:\n" + storyboard.text())
    }

    /// Arms an operation on a callback of a controller the storyboard names.
    func arm(code: Int) {
        let names = storyboard.paths().map { String($0.split(separator: "/").last!) }
        let callbacks = [
            "viewWillAppear", "viewDidAppear", "viewWillDisappear", "viewDidDisappear", "viewWillLayoutSubviews",
            "applicationWillReload", "applicationDidReload", "applicationWillTerminate",
        ]
        let arm = (names[code % names.count], callbacks[(code / 7) % callbacks.count], code / 53)
        arms.append(arm)
        log.append("arm \(arm.0).\(arm.1) (code \(arm.2))")
    }

    /// Changes the storyboard and reloads; returns a description of what does not hold.
    func reload(code: Int) throws -> String? {
        let new = generator.change(storyboard, code: code)
        let newArchive = try StoryboardFormat.parse(new.text(), source: "s")
        log.append("reload with:\n" + new.text())
        host.change = (archive, newArchive)
        storyboard = new
        archive = newArchive
        submit("reload", cause: "reload")
        app.runEndOfTurn()
        if host.log.contains(where: { $0.hasPrefix("host: ") }) { return "the storyboard change failed: \(host.log)" }
        return check()
    }

    func released(_ object: ObjectIdentifier) {
        appearanceStates[object] = nil
        windowMoves[object] = nil
    }

    func windowMove(_ view: View, entering: Bool) {
        if windowMoves[ObjectIdentifier(view)] == entering {
            problems.append("\(view.path) moves \(entering ? "into" : "out of") the window twice in a row")
        }
        windowMoves[ObjectIdentifier(view)] = entering
    }

    private func appearance(_ controller: ViewController, _ callback: String) {
        let before = appearanceStates[ObjectIdentifier(controller)]?.state ?? .disappeared
        let after: AppearanceModel.Appearance? = switch (callback, before) {
        case ("viewWillAppear", .disappeared), ("viewWillAppear", .disappearing): .appearing
        case ("viewDidAppear", .appearing): .appeared
        case ("viewWillDisappear", .appeared), ("viewWillDisappear", .appearing): .disappearing
        case ("viewDidDisappear", .disappearing): .disappeared
        default: nil
        }
        if let after { appearanceStates[ObjectIdentifier(controller)] = (controller.path, after) } else {
            problems.append("\(controller.path) \(callback) while \(before): brackets unbalanced")
        }
        if callback == "viewDidAppear", !app.controllersInTreeOrder().contains(where: { $0 === controller }) {
            problems.append("\(controller.path) appeared outside the tree")
        }
    }

    func fire(_ controller: ViewController, _ callback: String) {
        if callback.hasPrefix("viewWill") && callback.hasSuffix("ppear") || callback.hasPrefix("viewDid") && callback.hasSuffix("ppear") {
            appearance(controller, callback)
        }
        guard let index = arms.firstIndex(where: { $0.name == controller.identifier && $0.callback == callback }) else {
            return
        }
        let (_, _, code) = arms.remove(at: index)
        firings += 1
        if !app.edits.isInProgress { pendingPresenters = [] }
        let tree = app.controllersInTreeOrder()
        func pick<T>(_ candidates: [T]) -> T? { candidates.isEmpty ? nil : candidates[(code / 13) % candidates.count] }
        func made() -> SNode {
            madeNames += 1
            let node = SNode(identifier: "x\(madeNames)")
            if isStopping { madeDuringStop.append(Weak(object: node)) }
            return node
        }
        switch code % 11 {
        case 0, 1:
            guard let nav = pick(tree.compactMap { $0 as? NavigationController }) else { return }
            let pushed = made()
            log.append("  \(controller.path).\(callback): push \(pushed.identifier) onto \(nav.path)")
            nav.pushViewController(pushed, animated: false)
        case 2:
            guard let nav = pick(tree.compactMap { $0 as? NavigationController }) else { return }
            log.append("  \(controller.path).\(callback): pop \(nav.path)")
            nav.popViewController(animated: false)
        case 3, 4:
            let candidates = tree.filter {
                $0.presentedViewController == nil && !pendingPresenters.contains(ObjectIdentifier($0))
            }
            guard let presenter = pick(candidates) else { return }
            let presented = made()
            presented.modalPresentationStyle = [.automatic, .fullScreen, .overCurrentContext][(code / 7) % 3]
            log.append("  \(controller.path).\(callback): \(presenter.path) presents \(presented.identifier)")
            if app.edits.isInProgress { pendingPresenters.append(ObjectIdentifier(presenter)) }
            presenter.present(presented, animated: false)
        case 5:
            guard let from = pick(tree) else { return }
            log.append("  \(controller.path).\(callback): dismiss from \(from.path)")
            from.dismiss(animated: false)
        case 6:
            guard let parent = pick(tree.filter { !($0 is NavigationController) }) else { return }
            let child = made()
            log.append("  \(controller.path).\(callback): embed \(child.identifier) in \(parent.path)")
            parent.embed(child)
        case 7:
            guard let child = pick(tree.filter { $0.parent != nil && !($0.parent is NavigationController) }),
                let parent = child.parent
            else { return }
            log.append("  \(controller.path).\(callback): unembed \(child.path)")
            parent.unembed(child)
        case 8...10 where isStopping:
            // During the stop (its requests would be dropped): the window or its root replaced or removed.
            switch (code / 11) % 4 {
            case 0:
                let root = made()
                log.append("  \(controller.path).\(callback): window.rootViewController = \(root.identifier)")
                app.window?.rootViewController = root
            case 1:
                let root = made()
                log.append("  \(controller.path).\(callback): application.window = Window(\(root.identifier))")
                app.window = Window(rootViewController: root)
            case 2:
                log.append("  \(controller.path).\(callback): application.window = nil")
                app.window = nil
            default:
                log.append("  \(controller.path).\(callback): window.rootViewController = nil")
                app.window?.rootViewController = nil
            }
        default:
            let request = ["background", "foreground", "memory warning", "reload", "inactive", "foreground"][(code / 11) % 6]
            log.append("  \(controller.path).\(callback): request \(request)")
            submit(request, cause: "nested")
        }
    }

    private func submit(_ request: String, cause: String) {
        let index = requests.count
        requests.append((cause, []))
        let cause = Cause(rawValue: cause)
        let completion: RequestCompletion = { [weak self] outcome in self?.requests[index].outcomes.append(outcome) }
        switch request {
        case "background": app.submit(.enterBackground, cause: cause, completion: completion)
        case "foreground": app.submit(.becomeActive, cause: cause, completion: completion)
        case "inactive": app.submit(.resignActive, cause: cause, completion: completion)
        case "memory warning": app.submit(.memoryWarning, cause: cause, completion: completion)
        case "terminate": app.submit(.terminate, cause: cause, completion: completion)
        default: app.submit(.reload, cause: cause, completion: completion)
        }
    }

    /// Termination began: the tree it must tear down.
    private func terminationWillBegin() {
        isStopping = true
        stopStart = recorder.events.count
        treeAtStop = app.controllersInTreeOrder().map {
            ($0.identifier, $0.isVisible, Weak(object: $0), Weak(object: $0.viewIfLoaded))
        }
    }

    /// The host heard "terminated": the teardown must be whole by now.
    private func applicationDidTerminate() {
        terminatedAt = recorder.events.count
        let events = recorder.events[stopStart...]
        for (name, wasVisible, controller, view) in treeAtStop {
            if controller.object != nil { problems.append("\(name) is alive when the host hears \"terminated\"") }
            if view.object != nil { problems.append("\(name).view is alive when the host hears \"terminated\"") }
            let own = events.filter { $0.target.split(separator: "/").last.map(String.init) == name }.map(\.event)
            guard let release = own.firstIndex(of: "deinit") else {
                problems.append("\(name) was not released before \"terminated\"")
                continue
            }
            let brackets = own[..<release].filter { $0.hasPrefix("view") && $0.hasSuffix("ppear") }
            if (wasVisible || !brackets.isEmpty) && brackets.last != "viewDidDisappear" {
                problems.append("\(name) was released after \(brackets.last ?? "no disappearance")")
            }
        }
        if madeDuringStop.contains(where: { $0.object != nil }) {
            problems.append("a controller made during the stop is alive when the host hears \"terminated\"")
        }
    }

    /// Terminates; returns a description of what does not hold.
    func terminate() -> String? {
        log.append("terminate")
        submit("terminate", cause: "terminate")
        app.runEndOfTurn()
        if terminatedAt == nil { problems.append("the host never heard \"terminated\"") }
        if let terminatedAt, recorder.events.count > terminatedAt {
            let after = recorder.events[terminatedAt...].map { "\($0.target) \($0.event)" }
            problems.append("after \"terminated\": " + after.joined(separator: ", "))
        }
        return check()
    }

    /// The invariants, once the turn is over.
    func check() -> String? {
        var problems = self.problems
        self.problems = []
        for (_, (path, state)) in appearanceStates where state == .appearing || state == .disappearing {
            problems.append("\(path) is left \(state)")
        }
        guard let window = app.window else { return problems.isEmpty ? nil : problems.joined(separator: "\n") }
        let tree = app.controllersInTreeOrder()
        for controller in tree {
            let inWindow = controller.viewIfLoaded?.window != nil
            if controller.isVisible != inWindow {
                problems.append("\(controller.path): visible \(controller.isVisible), view in the window \(inWindow)")
            }
            if controller.presentingViewController != nil, !window.layers.contains(where: { $0.controller === controller }) {
                problems.append("\(controller.path) is presented but not one of the window's layers")
            }
        }
        for layer in window.layers where !tree.contains(where: { $0 === layer.controller }) {
            problems.append("the window's layer \(layer.controller.path) is not in the tree")
        }
        var lastStart = 0
        for (index, request) in requests.enumerated() {
            guard request.outcomes.count == 1 else {
                problems.append("request \(index) (\(request.cause)) completed \(request.outcomes.count) times")
                continue
            }
            if case .performed(let events) = request.outcomes[0] {
                if events.lowerBound < lastStart { problems.append("request \(index) ran out of arrival order") }
                lastStart = events.lowerBound
            }
        }
        if firings == 0, app.applicationState != .terminated {
            let paths = tree.map(\.path)
            if paths != storyboard.paths() { problems.append("the tree is \(paths), the storyboard's \(storyboard.paths())") }
        }
        return problems.isEmpty ? nil : problems.joined(separator: "\n")
    }
}

@MainActor
@Suite("Property: storyboard reloads with operations made from their callbacks")
struct StoryboardReentrancyPropertyTests {
    /// Plays a launch, then reloads and arms: a code's last digit says which; nil when every check held.
    static func play(_ codes: [Int]) throws -> String? {
        guard let first = codes.first else { return nil }
        let harness = try StoryboardHarness(code: first)
        defer { SNode.harness = nil }
        if let problem = harness.check() { return report(harness, problem) }
        for code in codes.dropFirst() {
            if code % 10 < 4 {
                harness.arm(code: code / 10)
            } else if let problem = try harness.reload(code: code / 10) {
                return report(harness, problem)
            }
        }
        // Every play ends in termination: what is still armed on the stop's callbacks fires.
        if let problem = harness.terminate() { return report(harness, problem) }
        return nil
    }

    static func report(_ harness: StoryboardHarness, _ problem: String) -> String {
        (harness.log + [problem]).joined(separator: "\n")
    }

    @Test func storyboardReloadsWithOperationsMadeFromTheirCallbacksKeepTheInvariants() async {
        await propertyCheck(count: 1_000, input: Gen.int(in: 0...999_999_999).array(of: 2...8)) { codes in
            do {
                let problem = try Self.play(codes)
                #expect(problem == nil, "\(problem ?? "")")
            } catch {
                Issue.record("codes \(codes): \(error)")
            }
            await Task.yield()
        }
    }

    // The storyboard of issue 18's first example, with its reload: a child declaring a presentation added, with a
    // presentation deeper in it.
    @Test func aReloadAddingAChildThatPresentsKeepsTheInvariants() throws {
        let harness = try StoryboardHarness(code: 0)
        #expect(harness.check() == nil)
        for code in 0..<40 {
            let problem = try harness.reload(code: code * 7_919)
            #expect(problem == nil, "\(StoryboardReentrancyPropertyTests.report(harness, problem ?? ""))")
            if problem != nil { break }
        }
    }
}
