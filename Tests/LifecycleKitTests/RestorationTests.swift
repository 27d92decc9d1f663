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

/// A controller that preserves whatever values it is given and records what it decodes.
@MainActor
class Probe: ViewController {
    var saved: [String: StateValue] = [:]
    var decoded: [String: StateValue]?

    init(_ identifier: String, restoring: Bool = true) {
        super.init(identifier: identifier)
        if restoring { restorationIdentifier = identifier }
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func encodeRestorableState(with coder: StateCoder) {
        for (key, value) in saved { coder.encode(value, forKey: key) }
    }

    override func decodeRestorableState(with coder: StateCoder) {
        decoded = coder.values
    }
}

/// A navigation controller that preserves values too.
@MainActor
final class ProbeStack: NavigationController {
    var saved: [String: StateValue] = [:]
    var decoded: [String: StateValue]?

    init(_ identifier: String, stack: [ViewController]) {
        super.init(identifier: identifier)
        restorationIdentifier = identifier
        setViewControllers(stack, animated: false)
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func encodeRestorableState(with coder: StateCoder) {
        for (key, value) in saved { coder.encode(value, forKey: key) }
    }

    override func decodeRestorableState(with coder: StateCoder) {
        decoded = coder.values
    }
}

/// A delegate that saves and restores, builds its tree (if any) in willFinishLaunching, and registers the probes.
@MainActor
final class StateRestoringDelegate: ApplicationDelegate {
    var build: ((Application) -> Void)?
    var restore = true
    var save = true
    var madeByDelegate: [String: () -> ViewController] = [:]
    var applicationValue: Int?
    var decodedApplicationValue: Int?
    /// More classes the archives may name.
    var extraClasses: [ViewController.Type] = []

    init(build: ((Application) -> Void)? = nil) {
        self.build = build
    }

    func registerArchiveClasses(in registry: inout ArchiveClassRegistry) {
        registry.register(Probe.self)
        registry.register(ProbeStack.self)
        for type in extraClasses { registry.register(type) }
    }

    func application(_ application: Application, willFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
        build?(application)
        return true
    }

    func application(_ application: Application, shouldRestoreApplicationState archive: Archive) -> Bool { restore }
    func application(_ application: Application, shouldSaveApplicationState coder: StateCoder) -> Bool { save }

    func application(_ application: Application, willEncodeRestorableStateWith coder: StateCoder) {
        if let applicationValue { coder.encode(applicationValue, forKey: "value") }
    }

    func application(_ application: Application, didDecodeRestorableStateWith coder: StateCoder) {
        decodedApplicationValue = coder.decodeInteger(forKey: "value")
    }

    func application(
        _ application: Application,
        viewControllerWithRestorationIdentifierPath identifierComponents: [String],
        coder: Coder
    ) -> ViewController? {
        madeByDelegate[identifierComponents.joined(separator: "/")]?()
    }
}

/// A host that keeps every archive the application preserved.
@MainActor
final class ArchiveHost: ApplicationHost {
    var archives: [Archive] = []
    var log: [String] = []
    func application(_ application: Application, didEncodeRestorableState archive: Archive) {
        archives.append(archive)
        log.append("host saved generation \(archive.generation)")
    }
    func applicationDidTerminate(_ application: Application) { log.append("host terminated") }
}

@MainActor
func restoringApplication(_ delegate: StateRestoringDelegate) -> (Application, ArchiveHost, CallbackRecorder) {
    let app = Application(delegate: delegate, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    let host = ArchiveHost()
    app.host = host
    app.trace.observe { [weak host] event in host?.log.append("\(event.target) \(event.event)") }
    return (app, host, CallbackRecorder(app))
}

/// The events of preservation and restoration (and of making controllers for it).
let restorationEvents: Set<String> = [
    "application(_:shouldSaveApplicationState:)", "application(_:willEncodeRestorableStateWith:)",
    "encodeRestorableState(with:)", "application(_:shouldRestoreApplicationState:)",
    "application(_:viewControllerWithRestorationIdentifierPath:coder:)", "init(coder:)", "willMove(toParent:)",
    "didMove(toParent:)", "awakeFromArchive", "decodeRestorableState(with:)", "applicationFinishedRestoringState",
    "application(_:didDecodeRestorableStateWith:)", "willFinishLaunching", "didFinishLaunching",
    "applicationDidEnterBackground", "applicationWillTerminate", "deinit",
]

@MainActor
@Suite("State preservation and restoration")
struct RestorationTests {
    /// root { a, nav [s1, s2] } presenting p.
    static func fullTree(_ app: Application) {
        let root = Probe("root")
        let a = Probe("a")
        a.saved = ["count": .integer(3)]
        root.embed(a)
        let nav = ProbeStack("nav", stack: [Probe("s1"), Probe("s2")])
        root.embed(nav)
        let p = Probe("p")
        p.modalPresentationStyle = .fullScreen
        p.saved = ["title": .string("settings"), "ratio": .double(0.25)]
        app.window = Window(rootViewController: root)
        root.present(p, animated: false)
    }

    @Test func preservationFollowsDidEnterBackgroundOnTheWholeTreePreOrder() throws {
        let delegate = StateRestoringDelegate(build: Self.fullTree)
        delegate.applicationValue = 42
        let (app, host, recorder) = restoringApplication(delegate)
        app.launch()
        recorder.clear()
        app.requestEnterBackground()
        let lines = recorder.lines(events: restorationEvents).filter { !$0.hasSuffix("applicationDidEnterBackground") }
        #expect(
            lines == [
                "delegate application(_:shouldSaveApplicationState:)",
                "delegate application(_:willEncodeRestorableStateWith:)",
                "root encodeRestorableState(with:)",
                "root/a encodeRestorableState(with:)",
                "root/nav encodeRestorableState(with:)",
                "root/nav/s1 encodeRestorableState(with:)",
                "root/nav/s2 encodeRestorableState(with:)",
                "root/p encodeRestorableState(with:)",
            ]
        )
        // After applicationDidEnterBackground has reached the whole tree: the delegate hears it last.
        let all = recorder.lines()
        #expect(all.firstIndex(of: "delegate applicationDidEnterBackground")! < all.firstIndex(of: "delegate application(_:shouldSaveApplicationState:)")!)
        let archive = try #require(host.archives.last)
        #expect(archive.generation == 1)
        #expect(archive.applicationState == ["value": .integer(42)])
        #expect(archive.root.children.map(\.restorationIdentifier) == ["a", "nav"])
        #expect(archive.root.children[1].children.map(\.restorationIdentifier) == ["s1", "s2"])
        #expect(archive.root.presented?.restorationIdentifier == "p")
        #expect(archive.root.presented?.modalPresentationStyle == .fullScreen)
        #expect(archive.root.presented?.state == ["title": .string("settings"), "ratio": .double(0.25)])
    }

    @Test func terminationSavesOnceAfterWillTerminateAndBeforeTheTeardown() {
        let (app, host, _) = restoringApplication(StateRestoringDelegate(build: Self.fullTree))
        app.launch()
        host.log.removeAll()
        app.requestTermination()
        let willTerminate = host.log.firstIndex(of: "delegate applicationWillTerminate")!
        let saved = host.log.firstIndex(of: "host saved generation 1")!
        let firstDeinit = host.log.firstIndex { $0.hasSuffix(" deinit") }!
        #expect(willTerminate < saved && saved < firstDeinit)
        #expect(host.archives.count == 1, "terminating from active saves once, not also after applicationDidEnterBackground")
    }

    @Test func nothingIsAskedWhenTheRootHasNoRestorationIdentifier() {
        let (app, host, recorder) = restoringApplication(
            StateRestoringDelegate { app in app.window = Window(rootViewController: Probe("root", restoring: false)) }
        )
        app.launch()
        app.requestEnterBackground()
        #expect(host.archives.isEmpty)
        #expect(recorder.lines(events: ["application(_:shouldSaveApplicationState:)"]).isEmpty)
    }

    @Test func aDelegateThatDeclinesSavesNothing() {
        let delegate = StateRestoringDelegate(build: Self.fullTree)
        delegate.save = false
        let (app, host, recorder) = restoringApplication(delegate)
        app.launch()
        app.requestEnterBackground()
        #expect(host.archives.isEmpty)
        #expect(recorder.lines(events: ["encodeRestorableState(with:)"]).isEmpty)
    }

    @Test func restorationRunsBetweenTheLaunchCallbacksInTheDocumentedOrder() throws {
        // Save the full tree, then launch a new application whose delegate builds only root { a, nav [s1] }.
        let (saving, savingHost, _) = restoringApplication(StateRestoringDelegate(build: Self.fullTree))
        saving.launch()
        saving.requestEnterBackground()
        let archive = try #require(savingHost.archives.last)

        let delegate = StateRestoringDelegate { app in
            let root = Probe("root")
            root.embed(Probe("a"))
            root.embed(ProbeStack("nav", stack: [Probe("s1")]))
            app.window = Window(rootViewController: root)
        }
        delegate.madeByDelegate["root/p"] = { Probe("made-by-delegate") }
        let (app, _, recorder) = restoringApplication(delegate)
        app.launch(options: LaunchOptions(reason: .restart, restoredState: archive))
        let launch = recorder.lines(events: restorationEvents)
        let start = launch.firstIndex(of: "delegate willFinishLaunching")!
        let end = launch.firstIndex(of: "delegate didFinishLaunching")!
        #expect(
            Array(launch[(start + 1)..<end]).filter { !$0.hasPrefix("root/a ") && !$0.hasPrefix("root/nav/s1 ") && $0 != "root/nav willMove(toParent:)" && $0 != "root/nav didMove(toParent:)" } == [
                "delegate application(_:shouldRestoreApplicationState:)",
                // The tree lacks s2 and p: each is made (s2 by its class, p by the delegate) and wired in.
                "delegate application(_:viewControllerWithRestorationIdentifierPath:coder:)",
                "root/nav/s2 init(coder:)",
                // Pushed on a loaded navigation controller: its didMove(toParent:) comes at the end of the turn.
                "root/nav/s2 willMove(toParent:)",
                "delegate application(_:viewControllerWithRestorationIdentifierPath:coder:)",
                // Controllers made by their class wake once everything is wired.
                "root/nav/s2 awakeFromArchive",
                // Then every restored controller decodes its values, pre-order, and hears that restoration is over.
                "root decodeRestorableState(with:)",
                "root/nav decodeRestorableState(with:)",
                "root/nav/s2 decodeRestorableState(with:)",
                "root/p decodeRestorableState(with:)",
                "root applicationFinishedRestoringState",
                "root/nav applicationFinishedRestoringState",
                "root/nav/s2 applicationFinishedRestoringState",
                "root/p applicationFinishedRestoringState",
                "delegate application(_:didDecodeRestorableStateWith:)",
            ]
        )
        #expect(launch[start...end].contains("root/a decodeRestorableState(with:)"))
        #expect(launch[start...end].contains("root/nav/s1 decodeRestorableState(with:)"))
        let root = try #require(app.window?.rootViewController as? Probe)
        let nav = try #require(root.children.last as? ProbeStack)
        #expect(nav.viewControllers.map(\.identifier) == ["s1", "s2"])
        #expect(launch.firstIndex(of: "root/nav/s2 didMove(toParent:)")! > end)
        #expect(nav.topViewController?.isViewLoaded == true)
        #expect(!root.isVisible, "the restored full-screen presentation covers the root")
        #expect((root.children.first as? Probe)?.decoded == ["count": .integer(3)])
        let presented = try #require(root.presentedViewController as? Probe)
        #expect(presented.identifier == "p", "the archived identifier names the delegate's controller")
        #expect(presented.modalPresentationStyle == .fullScreen)
        #expect(presented.decoded == ["title": .string("settings"), "ratio": .double(0.25)])
        #expect(presented.isVisible)
        #expect(app.restorationGeneration == archive.generation)
    }

    @Test func withoutAWindowTheTreeIsBuiltFromTheArchive() throws {
        let (saving, savingHost, _) = restoringApplication(StateRestoringDelegate(build: Self.fullTree))
        saving.launch()
        saving.requestEnterBackground()
        saving.requestEnterBackground()
        let archive = try #require(savingHost.archives.last)

        let (app, host, recorder) = restoringApplication(StateRestoringDelegate())
        app.launch(options: LaunchOptions(restoredState: archive))
        #expect(describe(app.window?.rootViewController) == describe(saving.window?.rootViewController))
        #expect(recorder.lines(targets: ["root/p"], events: ["init(coder:)", "awakeFromArchive", "loadView"]) == [
            "root/p init(coder:)", "root/p awakeFromArchive", "root/p loadView",
        ])
        // The next save continues the generations.
        app.requestEnterBackground()
        #expect(host.archives.last?.generation == archive.generation + 1)
    }

    @Test func aDelegateThatDeclinesRestorationGetsNothingRestored() throws {
        let (saving, savingHost, _) = restoringApplication(StateRestoringDelegate(build: Self.fullTree))
        saving.launch()
        saving.requestEnterBackground()
        let delegate = StateRestoringDelegate()
        delegate.restore = false
        let (app, _, recorder) = restoringApplication(delegate)
        let archive = try #require(savingHost.archives.last)
        app.launch(options: LaunchOptions(restoredState: archive))
        #expect(app.window == nil)
        #expect(recorder.lines(events: ["decodeRestorableState(with:)", "init(coder:)"]).isEmpty)
    }

    @Test func aSavedRootThatIsNotTheWindowsRootRestoresNothing() throws {
        let (saving, savingHost, _) = restoringApplication(StateRestoringDelegate(build: Self.fullTree))
        saving.launch()
        saving.requestEnterBackground()
        let (app, _, recorder) = restoringApplication(
            StateRestoringDelegate { app in app.window = Window(rootViewController: Probe("other")) }
        )
        let archive = try #require(savingHost.archives.last)
        app.launch(options: LaunchOptions(restoredState: archive))
        #expect(recorder.lines(events: ["decodeRestorableState(with:)"]).isEmpty)
        #expect(app.window?.rootViewController?.identifier == "other")
    }

    @Test func aFormat1TreeIsMigratedAndRestoredWhole() throws {
        let archive = try Archive.decodeState(
            Array(#"{"class": "NavigationController", "identifier": "nav", "children": [{"class": "ViewController", "identifier": "saved"}]}"#.utf8),
            source: "state.json"
        )
        #expect(archive.formatVersion == 1)
        let (app, _, recorder) = restoringApplication(StateRestoringDelegate())
        app.launch(options: LaunchOptions(reason: .restart, restoredState: archive))
        let nav = try #require(app.window?.rootViewController as? NavigationController)
        #expect(nav.topViewController?.identifier == "saved")
        #expect(nav.topViewController?.isVisible == true)
        #expect(recorder.lines(events: ["init(coder:)"]) == ["nav init(coder:)", "nav/saved init(coder:)"])
    }

    // MARK: The archive format

    static func sampleArchive() -> Archive {
        var root = Archive.Node(className: "Probe", identifier: "root", restorationIdentifier: "root", state: ["n": .integer(1)])
        root.children = [Archive.Node(className: "Probe", identifier: "a", restorationIdentifier: "a", state: ["t": .string("x")])]
        var archive = Archive(root: root)
        archive.generation = 7
        return archive
    }

    @Test func everyTruncationIsRefusedNeverHalfRead() {
        let bytes = Self.sampleArchive().encodedState()
        for length in 0..<bytes.count {
            #expect(throws: StateArchiveError.self) { try Archive.decodeState(Array(bytes[..<length]), source: "s") }
        }
        #expect((try? Archive.decodeState(bytes, source: "s"))?.root == Self.sampleArchive().root)
    }

    @Test func everyFlippedBitIsRefused() {
        let bytes = Self.sampleArchive().encodedState()
        for index in bytes.indices {
            for bit in 0..<8 {
                var torn = bytes
                torn[index] ^= 1 << bit
                let decoded = try? Archive.decodeState(torn, source: "s")
                #expect(decoded == nil || decoded?.root == Self.sampleArchive().root, "byte \(index) bit \(bit)")
            }
        }
    }

    @Test func aNewerFormatIsRefusedWithAMessageSayingSo() throws {
        var bytes = Self.sampleArchive().encodedState()
        bytes[Array("LifecycleKit-State ".utf8).count] = UInt8(ascii: "3")
        do {
            _ = try Archive.decodeState(bytes, source: "/var/lib/x/state.archive")
            Issue.record("a format 3 archive was read")
        } catch {
            #expect(error.problem == .newerFormat(3))
            #expect(error.description.contains("/var/lib/x/state.archive was written in format 3, newer than this build reads"))
            #expect(error.description.contains("refused rather than misread"))
        }
    }

    @Test func theReasonsNameWhatIsWrong() {
        func problem(_ text: String) -> StateArchiveProblem? {
            do {
                _ = try Archive.decodeState(Array(text.utf8), source: "s")
                return nil
            } catch { return error.problem }
        }
        #expect(problem("") == .empty)
        #expect(problem("hello") == .notAnArchive)
        #expect(problem("LifecycleKit-St") == .truncated(expected: 18, found: 15))
        #expect(problem("LifecycleKit-State 2 10 00000000\n{}") == .truncated(expected: 10, found: 2))
        #expect(problem("LifecycleKit-State 2 1 00000000\n{}") == .trailingBytes(expected: 1, found: 2))
        #expect(problem("LifecycleKit-State 2 2 00000000\n{}") == .checksumMismatch)
        #expect(problem("LifecycleKit-State x 2 00000000\n{}") == .unsupportedFormat("x"))
        let body = Array("{}".utf8)
        let crc = String(CRC32.checksum(body), radix: 16)
        let header = "LifecycleKit-State 2 2 \(String(repeating: "0", count: 8 - crc.count) + crc)\n{}"
        guard case .malformed? = problem(header) else {
            Issue.record("a checksummed body that is not an archive was not malformed")
            return
        }
    }

    @Test func crc32IsZlibs() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    // MARK: Round trip

    @Test func randomTreesRoundTripThroughTheArchive() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...Int.max).array(of: 8...120)) { codes in
            // Each case gives the main actor back: the other suites' hosts share it (docs/testing.md).
            await Task.yield()
            var source = CodeSource(codes: codes)
            let delegate = StateRestoringDelegate { app in
                var counter = 0
                let root = makeRandomTree(&source, depth: 0, counter: &counter)
                app.window = Window(rootViewController: root)
                presentRandomly(root, &source, depth: 0, counter: &counter)
            }
            let (saving, savingHost, _) = restoringApplication(delegate)
            saving.launch()
            saving.requestEnterBackground()
            guard let archive = savingHost.archives.last else {
                Issue.record("nothing was saved")
                return
            }
            let bytes = archive.encodedState()
            let decoded: Archive
            do {
                decoded = try Archive.decodeState(bytes, source: "round trip")
            } catch {
                Issue.record("a saved archive did not decode: \(error)")
                return
            }
            #expect(decoded.root == archive.root)
            #expect(decoded.generation == archive.generation)
            let (restoring, _, _) = restoringApplication(StateRestoringDelegate())
            restoring.launch(options: LaunchOptions(restoredState: decoded))
            #expect(describe(restoring.window?.rootViewController) == describe(saving.window?.rootViewController))
        }
    }
}

/// Reads codes in turn, wrapping around.
struct CodeSource {
    let codes: [Int]
    var index = 0
    mutating func next(_ bound: Int) -> Int {
        defer { index += 1 }
        return codes[index % codes.count] % bound
    }
    mutating func raw() -> Int {
        defer { index += 1 }
        return codes[index % codes.count]
    }
}

@MainActor
func randomValues(_ source: inout CodeSource) -> [String: StateValue] {
    var values: [String: StateValue] = [:]
    for key in 0..<source.next(4) {
        let raw = source.raw()
        switch source.next(6) {
        case 0: values["k\(key)"] = .string(String(repeating: "é\"\\\n{", count: raw % 4) + "\(raw)")
        case 1: values["k\(key)"] = .integer(raw % 2 == 0 ? raw : -raw)
        case 2: values["k\(key)"] = .double(Double(bitPattern: UInt64(truncatingIfNeeded: raw &* 2_654_435_761)))
        case 3: values["k\(key)"] = .bool(raw % 2 == 0)
        case 4: values["k\(key)"] = .strings((0..<(raw % 3)).map { "s\($0)" })
        default: values["k\(key)"] = .integer(raw % 2 == 0 ? .max : .min)
        }
    }
    return values
}

@MainActor
func makeRandomTree(_ source: inout CodeSource, depth: Int, counter: inout Int) -> ViewController {
    counter += 1
    let identifier = "n\(counter)"
    let childCount = depth < 3 ? source.next(4) : 0
    if source.next(3) == 0 && childCount > 0 {
        var stack: [ViewController] = []
        for _ in 0..<childCount { stack.append(makeRandomTree(&source, depth: depth + 1, counter: &counter)) }
        let navigation = ProbeStack(identifier, stack: stack)
        navigation.saved = randomValues(&source)
        return navigation
    }
    let probe = Probe(identifier)
    probe.saved = randomValues(&source)
    for _ in 0..<childCount { probe.embed(makeRandomTree(&source, depth: depth + 1, counter: &counter)) }
    return probe
}

@MainActor
func presentRandomly(_ root: ViewController, _ source: inout CodeSource, depth: Int, counter: inout Int) {
    guard depth < 2, source.next(3) == 0 else { return }
    let presented = makeRandomTree(&source, depth: 2, counter: &counter)
    presented.modalPresentationStyle = ModalPresentationStyle.allCases[source.next(ModalPresentationStyle.allCases.count)]
    root.present(presented, animated: false)
    presentRandomly(presented, &source, depth: depth + 1, counter: &counter)
}

/// The shape and values of a tree: class, identifiers, the values it saved (or decoded), children, presentation.
@MainActor
func describe(_ controller: ViewController?) -> String {
    guard let controller else { return "nil" }
    let values: [String: StateValue]
    if let probe = controller as? Probe {
        values = probe.decoded ?? probe.saved
    } else if let stack = controller as? ProbeStack {
        values = stack.decoded ?? stack.saved
    } else {
        values = [:]
    }
    var text = "\(type(of: controller))#\(controller.identifier)[\(controller.restorationIdentifier ?? "-")]"
    text += "{" + values.keys.sorted().map { "\($0)=\(values[$0]!)" }.joined(separator: ",") + "}"
    text += "(" + controller.children.map(describe).joined(separator: " ") + ")"
    if let presented = controller.presentedViewController {
        text += "^\(presented.modalPresentationStyle.rawValue):" + describe(presented)
    }
    return text
}
