//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import Logging
import Testing

@Suite struct TraceFormatTests {
    private func record(_ sequence: Int, _ target: String, _ event: String, state: String = "active", cause: String = "signal:SIGUSR1")
        -> TraceRecord
    {
        TraceRecord(sequence: sequence, event: event, target: target, state: state, cause: cause)
    }

    @Test func oneLinePerEventWithTheCauseWhenItChangesAndTheTargetIndentedByDepth() {
        var formatter = TraceFormatter(style: TerminalStyle(colour: false))
        let text = [
            record(58, "root/modes/serving", "applicationWillResignActive"),
            record(59, "root/modes", "applicationWillResignActive"),
            record(63, "delegate", "applicationWillResignActive"),
            record(64, "root/worker.view/progress", "draw", cause: "api"),
        ].map { formatter.format($0) }.joined()
        #expect(text == """
                58 active     signal:SIGUSR1        root/modes/serving applicationWillResignActive
                59 active                         root/modes applicationWillResignActive
                63 active                     delegate applicationWillResignActive
                64 active     api                     root/worker.view/progress draw

            """)
    }

    @Test func theArgumentReadsAsPartOfTheCall() {
        #expect(TraceFormatter.call("willMove(toWindow:)", detail: "nil") == "willMove(toWindow: nil)")
        #expect(TraceFormatter.call("didAddSubview(_:)", detail: "progress") == "didAddSubview(progress)")
        #expect(TraceFormatter.call("didMoveToWindow", detail: "window") == "didMoveToWindow(window)")
        #expect(TraceFormatter.call("draw", detail: nil) == "draw")
    }

    @Test(arguments: [
        ("delegate", 0), ("root", 1), ("root/worker", 2), ("root.view", 2), ("root/worker.view", 3),
        ("root/worker.view/progress", 4), ("root/modes/serving", 3),
        // A scene's delegate hangs where the root does, its tree below it; its identifier counts for nothing.
        ("scene:client-7", 1), ("scene:client-7/root", 2), ("scene:client-7/root.view", 3),
        ("scene:eu.tenant", 1), ("scene:eu.tenant/root/feed", 3), ("scene:eu.tenant/root/feed.view/label", 5),
    ])
    func depthFollowsThePath(target: String, depth: Int) {
        #expect(TraceFormatter.depth(of: target) == depth)
    }

    @Test func aSceneEventsLineNamesItsSceneWhenItsTargetAndArgumentDoNot() {
        var formatter = TraceFormatter(style: TerminalStyle(colour: false))
        func scene(_ sequence: Int, _ target: String, _ event: String, detail: String? = nil, _ scene: String) -> TraceRecord {
            TraceRecord(sequence: sequence, event: event, target: target, state: "active", cause: "control", detail: detail, scene: scene)
        }
        let text = [
            scene(7, "delegate", "application(_:configurationForConnecting:options:)", detail: "client-7", "client-7"),
            scene(8, "scene:client-7", "scene(_:willConnectTo:options:)", "client-7"),
            scene(9, "delegate", "application(_:viewControllerWithRestorationIdentifierPath:coder:)", detail: "root", "client-7"),
            scene(10, "scene:client-7/root", "init(coder:)", "client-7"),
            // A scene whose identifier begins like another's is not named by that one's target.
            scene(11, "scene:client-70", "sceneDidBecomeActive", "client-7"),
        ].map { formatter.format($0) }.joined()
        #expect(text == """
                 7 active     control         delegate application(_:configurationForConnecting:options: client-7)
                 8 active                       scene:client-7 scene(_:willConnectTo:options:)
                 9 active                     delegate application(_:viewControllerWithRestorationIdentifierPath:coder: root) [scene:client-7]
                10 active                         scene:client-7/root init(coder:)
                11 active                       scene:client-70 sceneDidBecomeActive [scene:client-7]

            """)
    }

    @Test func repeatsOfOneEventInTwoScenesDoNotFold() {
        var formatter = TraceFormatter(style: TerminalStyle(colour: false))
        let text = ["a", "b"].enumerated().map { index, identifier in
            formatter.format(
                TraceRecord(
                    sequence: index + 1, event: "application(_:didDiscardSceneSessions:)", target: "delegate",
                    state: "active", cause: "control", detail: identifier, scene: identifier
                )
            )
        }.joined()
        #expect(text.split(separator: "\n").count == 2, "\(text)")
    }

    @Test func repeatsFoldIntoACountWhenSomethingElseHappens() {
        var formatter = TraceFormatter(style: TerminalStyle(colour: false))
        let start = ContinuousClock.now
        var text = formatter.format(record(10, "root/worker.view/progress", "draw", cause: "api"), now: start)
        for sequence in 11...14 {
            text += formatter.format(record(sequence, "root/worker.view/progress", "draw", cause: "api"), now: start + .seconds(sequence - 10))
        }
        #expect(text.split(separator: "\n").count == 1)
        text += formatter.format(record(15, "delegate", "applicationWillResignActive"), now: start + .seconds(6))
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[1].hasSuffix("⋯ root/worker.view/progress draw 4 times more (#11–#14)"))
        #expect(lines[2].contains("delegate applicationWillResignActive"))
    }

    @Test func aRunThatGoesOnPrintsItsCountOncePerInterval() {
        var formatter = TraceFormatter(style: TerminalStyle(colour: false), foldInterval: .seconds(60))
        let start = ContinuousClock.now
        var printed: [String] = []
        for step in 0...25 {
            let text = formatter.format(
                record(step + 1, "root/worker.view/progress", "draw", cause: "api"), now: start + .seconds(step * 5)
            )
            if !text.isEmpty { printed.append(text) }
        }
        // The first draw, then a count at 60 s and at 120 s: three lines for 26 draws in two minutes.
        #expect(printed.count == 3)
        #expect(printed[1].contains("draw 12 times more (#2–#13)"))
        #expect(printed[2].contains("draw 12 times more (#14–#25)"))
        #expect(formatter.flush(now: start + .seconds(200)).contains("once more (#26)"))
        #expect(formatter.flush(now: start + .seconds(200)).isEmpty)
    }

    @Test func colourOnlyWhenAskedAndNeverWithNO_COLOR() {
        let plain = TraceFormatter(style: TerminalStyle(colour: false)).line(record(1, "root/worker", "viewDidLoad"), showCause: true)
        #expect(!plain.contains("\u{1B}["))
        let coloured = TraceFormatter(style: TerminalStyle(colour: true)).line(record(1, "root/worker", "viewDidLoad"), showCause: true)
        #expect(coloured.contains("\u{1B}[32mactive\u{1B}[0m"))
        #expect(coloured.contains("\u{1B}[1mviewDidLoad\u{1B}[0m"))
        #expect(coloured.contains("\u{1B}[2mroot/\u{1B}[0mworker"))
        // Only on a terminal, and NO_COLOR (set to anything) or TERM=dumb wins even there.
        #expect(!TerminalStyle(isTerminal: false, environment: [:]).colour)
        #expect(TerminalStyle(isTerminal: true, environment: [:]).colour)
        #expect(!TerminalStyle(isTerminal: true, environment: ["NO_COLOR": "1"]).colour)
        #expect(TerminalStyle(isTerminal: true, environment: ["NO_COLOR": ""]).colour)
        #expect(!TerminalStyle(isTerminal: true, environment: ["TERM": "dumb"]).colour)
    }
}
