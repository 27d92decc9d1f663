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
import Testing

/// A controller with typed storyboard properties.
@MainActor
final class Tuned: ViewController {
    var interval = 0
    var verbose = false
    var label = ""

    required init(coder: Coder) throws {
        interval = try coder.decodeInteger(forKey: "interval") ?? 0
        verbose = try coder.decodeBool(forKey: "verbose") ?? false
        label = coder.decodeString(forKey: "label") ?? ""
        try super.init(coder: coder)
    }
}

/// A label view made by a registered factory.
@MainActor
final class Caption: View {
    let text: String
    init(name: String, text: String) {
        self.text = text
        super.init(name: name)
    }
    override func draw(in context: inout StatusContext) { context.write(text) }
}

@MainActor
final class StoryboardDelegate: ApplicationDelegate {
    func application(_ application: Application, shouldRestoreApplicationState archive: Archive) -> Bool { true }
    func registerArchiveClasses(in registry: inout ArchiveClassRegistry) {
        registry.register(Tuned.self)
        registry.register(Probe.self)
        registry.registerView("Caption") { coder in
            Caption(name: coder.identifier ?? "caption", text: coder.decodeString(forKey: "text") ?? "")
        }
    }
}

@MainActor
@Suite("Storyboards")
struct StoryboardTests {
    static let example = """
        # The tree, by hand.
        Tuned root {
            restorationIdentifier = root
            interval = 5        // a comment after a value
            view Caption title { text = "hello \\"world\\"" }
            Tuned worker { verbose = yes; label = "a b" }
            NavigationController modes {
                ViewController serving
                ViewController maintenance
            }
            present Tuned settings {
                modalPresentationStyle = overCurrentContext
            }
        }
        """

    func application() -> (Application, CallbackRecorder) {
        let app = Application(delegate: StoryboardDelegate(), logger: Logger(label: "t", factory: { _ in SwiftLogNoOpLogHandler() }))
        return (app, CallbackRecorder(app))
    }

    func parseError(_ text: String) -> String {
        do {
            _ = try StoryboardFormat.parse(text, source: "tree.storyboard")
            return "no error"
        } catch {
            return error.description
        }
    }

    func loadError(_ text: String) -> String {
        let (app, _) = application()
        do {
            try app.loadStoryboard(try StoryboardFormat.parse(text, source: "tree.storyboard"))
            return "no error"
        } catch {
            return error.description
        }
    }

    @Test func theExampleParsesIntoTheTreeItDeclares() throws {
        let archive = try StoryboardFormat.parse(Self.example, source: "tree.storyboard")
        let root = archive.root
        #expect(root.className == "Tuned" && root.identifier == "root" && root.restorationIdentifier == "root")
        #expect(root.properties == ["interval": "5"])
        #expect(root.origin.location == SourceLocation(line: 2, column: 1))
        #expect(root.origin.propertyLocations["interval"] == SourceLocation(line: 4, column: 16))
        #expect(root.views.map(\.name) == ["title"])
        #expect(root.views[0].properties["text"] == "hello \"world\"")
        #expect(root.children.map(\.identifier) == ["worker", "modes"])
        #expect(root.children[0].properties == ["verbose": "yes", "label": "a b"])
        #expect(root.children[1].children.map(\.identifier) == ["serving", "maintenance"])
        #expect(root.presented?.identifier == "settings")
        #expect(root.presented?.modalPresentationStyle == .overCurrentContext)
    }

    @Test func aLoadedStoryboardIsTheWindowBeforeLaunchAndAppearsAtLaunch() throws {
        let (app, recorder) = application()
        try app.loadStoryboard(try StoryboardFormat.parse(Self.example, source: "tree.storyboard"))
        let root = try #require(app.window?.rootViewController as? Tuned)
        #expect(root.interval == 5)
        let worker = try #require(root.children.first as? Tuned)
        #expect(worker.verbose && worker.label == "a b")
        app.launch()
        #expect(recorder.events.first { $0.event == TraceEventName.initWithCoder }?.cause == .launch)
        #expect(recorder.lines(events: ["init(coder:)"]) == [
            "root init(coder:)", "root/worker init(coder:)", "root/modes init(coder:)", "root/modes/serving init(coder:)",
            "root/modes/maintenance init(coder:)", "root/settings init(coder:)",
        ])
        // Awake once everything is wired, pre-order; the declared view is under the root view before viewDidLoad.
        let lines = recorder.lines(targets: ["root", "root.view/title"], events: ["awakeFromArchive", "viewDidLoad", "didMoveToSuperview"])
        #expect(lines == ["root awakeFromArchive", "root.view/title didMoveToSuperview", "root viewDidLoad"])
        #expect((root.children[1] as? NavigationController)?.topViewController?.identifier == "maintenance")
        #expect(app.statusText.contains("hello \"world\""))
        #expect(root.presentedViewController?.isVisible == true)
        #expect(root.isVisible, "presented over the current context, the root stays visible")
    }

    @Test func syntaxErrorsNameTheLineColumnAndWhatWouldBeValid() {
        #expect(parseError("") == "tree.storyboard:1:1: the storyboard is empty: expected its root controller (Class name { … }).")
        #expect(parseError("# only a comment\n") .hasPrefix("tree.storyboard:2:1: the storyboard is empty"))
        #expect(
            parseError("Tuned root {\n  interval =\n}")
                == "tree.storyboard:3:1: expected a value after \"interval =\" on the same line: a word or a \"quoted string\"; found \"}\"."
        )
        #expect(
            parseError("Tuned root {\n  Tuned a {\n")
                == "tree.storyboard:3:1: the block of a opened at 2:11 is not closed: expected \"}\" before the end of the file."
        )
        #expect(parseError("Tuned root {\n  = 4\n}").hasPrefix("tree.storyboard:2:3: expected a property (key = value), a child controller"))
        #expect(parseError("Tuned root\nTuned other").hasPrefix("tree.storyboard:2:1: a storyboard has one root controller (root); found \"Tuned\""))
        #expect(parseError("Tuned root }").hasPrefix("tree.storyboard:1:12: unexpected \"}\""))
        #expect(parseError("Tuned root {\n  label = \"open\n}").hasPrefix("tree.storyboard:2:11: the string that starts here is not closed"))
        #expect(parseError("Tuned root { label = \"a\\q\" }").hasPrefix("tree.storyboard:1:24: \\q is not an escape; valid:"))
        #expect(parseError("Tuned root {\n  interval = 1\n  interval = 2\n}") == "tree.storyboard:3:3: interval is set twice in root (first at 2:14).")
        #expect(parseError("Tuned root {\n  Tuned a\n  Tuned a\n}").hasPrefix("tree.storyboard:3:3: two controllers under root are named a (the first at 2:3)"))
        #expect(parseError("Tuned ro/ot").hasPrefix("tree.storyboard:1:7: \"ro/ot\" is not a name"))
        #expect(
            parseError("Tuned root {\n  present Tuned p { modalPresentationStyle = sideways }\n}")
                == "tree.storyboard:2:46: modalPresentationStyle = sideways is not a presentation style; valid: automatic, fullScreen, overCurrentContext."
        )
        #expect(parseError("Tuned root { view Caption c { Tuned x } }").contains("a view holds no controllers"))
        var deep = ""
        for _ in 0..<70 { deep += "Tuned a {\n" }
        #expect(parseError(deep).contains("nest deeper than 64 levels"))
    }

    @Test func instantiationErrorsNameTheLineColumnAndWhatWouldBeValid() {
        #expect(
            loadError("Tuned root {\n  Tunde worker\n}")
                == "tree.storyboard:2:3: root/worker names class \"Tunde\", which is not registered; registered: NavigationController, Probe, Tuned, ViewController."
        )
        #expect(
            loadError("Tuned root {\n  interval = soon\n}")
                == "tree.storyboard:2:14: root (Tuned): interval is \"soon\", not a whole number."
        )
        #expect(
            loadError("Tuned root {\n  intervl = 5\n}")
                == "tree.storyboard:2:13: root (Tuned) does not read a property \"intervl\"; it reads: interval, label, verbose."
        )
        #expect(
            loadError("ViewController root {\n  color = red\n}")
                == "tree.storyboard:2:11: root (ViewController) does not read a property \"color\"; it reads no properties."
        )
        #expect(
            loadError("Tuned root {\n  view Label title\n}")
                == "tree.storyboard:2:8: root.view/title names view class \"Label\", which is not registered; registered views: Caption, View."
        )
        #expect(
            loadError("Tuned root {\n  view Caption title { txt = x }\n}")
                == "tree.storyboard:2:30: root.view/title (Caption) does not read a property \"txt\"; it reads: text."
        )
    }

    @Test func aChangedChildIsHandedOverInTheNavigationOrder() throws {
        let (app, recorder) = application()
        let old = try StoryboardFormat.parse("Tuned root {\n  Tuned worker { interval = 1 }\n  Tuned other\n}", source: "s")
        try app.loadStoryboard(old)
        app.launch()
        let other = app.window?.rootViewController?.children.last
        recorder.clear()
        // A comment and a moved line change nothing.
        let same = try StoryboardFormat.parse("# moved\nTuned root {\n\n  Tuned worker { interval = 1 }\n  Tuned other\n}", source: "s")
        #expect(try app.applyStoryboardChange(from: old, to: same).isEmpty)
        let new = try StoryboardFormat.parse("Tuned root {\n  Tuned worker { interval = 2 }\n  Tuned other\n}", source: "s")
        let changes = try app.applyStoryboardChange(from: old, to: new)
        app.runEndOfTurn()
        #expect(changes == ["replaced root/worker (Tuned)"])
        let order = recorder.lines(targets: ["root/worker"], events: ["init(coder:)", "viewDidLoad", "viewWillDisappear", "viewWillAppear", "viewDidDisappear", "viewDidAppear", "deinit"])
        // The incoming worker prepares before the outgoing one stops, and the outgoing one has stopped before the
        // incoming one serves.
        #expect(order == [
            "root/worker init(coder:)", "root/worker viewDidLoad", "root/worker viewWillDisappear", "root/worker viewWillAppear",
            "root/worker viewDidDisappear", "root/worker viewDidAppear", "root/worker deinit",
        ])
        let root = try #require(app.window?.rootViewController)
        #expect((root.children.first as? Tuned)?.interval == 2)
        #expect(root.children.last === other, "the unchanged sibling is left alone")
        #expect(root.view.subviews.compactMap(\.viewController).map(\.identifier) == ["worker", "other"])
    }

    @Test func aChangedStackIsSetInPushOrderAndAnInvalidChangeTouchesNothing() throws {
        let (app, recorder) = application()
        let old = try StoryboardFormat.parse("Tuned root {\n  NavigationController modes { ViewController serving }\n}", source: "s")
        try app.loadStoryboard(old)
        app.launch()
        recorder.clear()
        let invalid = try StoryboardFormat.parse("Tuned root {\n  NavigationController modes { Tuned busy { interval = x } }\n}", source: "s")
        #expect(throws: ArchiveError.self) { try app.applyStoryboardChange(from: old, to: invalid) }
        app.runEndOfTurn()
        #expect(recorder.lines(events: ["viewWillDisappear", "viewWillAppear"]).isEmpty, "an invalid storyboard moves nothing")
        let new = try StoryboardFormat.parse("Tuned root {\n  NavigationController modes { ViewController serving; ViewController busy }\n}", source: "s")
        recorder.clear()
        #expect(try app.applyStoryboardChange(from: old, to: new) == ["root/modes: stack serving, busy"])
        app.runEndOfTurn()
        let order = recorder.lines(targets: ["root/modes/serving", "root/modes/busy"], events: ["viewDidLoad", "viewWillDisappear", "viewWillAppear", "viewDidDisappear", "viewDidAppear"])
        #expect(order == [
            "root/modes/busy viewDidLoad", "root/modes/serving viewWillDisappear", "root/modes/busy viewWillAppear",
            "root/modes/serving viewDidDisappear", "root/modes/busy viewDidAppear",
        ])
    }

    @Test func restorationAppliesOnTopOfTheStoryboard() throws {
        let storyboard = try StoryboardFormat.parse(
            "Probe root {\n  restorationIdentifier = root\n  NavigationController modes {\n    restorationIdentifier = modes\n    Probe serving { restorationIdentifier = serving }\n  }\n}",
            source: "s"
        )
        // Saved: the stack has one more mode.
        var saved = storyboard.root
        saved.properties = [:]
        saved.children[0].children.append(Archive.Node(className: "Probe", identifier: "beta", restorationIdentifier: "beta", state: ["n": .integer(2)]))
        var archive = Archive(root: saved)
        archive.generation = 3
        let (app, _) = application()
        try app.loadStoryboard(storyboard)
        app.launch(options: LaunchOptions(restoredState: archive))
        let modes = try #require(app.window?.rootViewController?.children.first as? NavigationController)
        #expect(modes.viewControllers.map(\.identifier) == ["serving", "beta"])
        #expect((modes.topViewController as? Probe)?.decoded == ["n": .integer(2)])
        #expect(modes.topViewController?.isVisible == true)
    }
}
