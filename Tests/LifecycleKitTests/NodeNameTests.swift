//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKitTesting
import Testing

@_spi(Internal) @testable import LifecycleKit

// A controller identifier or a view name is part of every trace path (LIFECYCLE_TARGET= in the journal, a line of the
// trace, lifecyclectl's output): a newline, an escape sequence or a bidirectional override in one would break the field
// or the line, or reach the terminal that shows it.
@MainActor
@Suite("Names in trace paths")
struct NodeNameTests {
    @Test func controlCharactersInAnIdentifierGivenAtInitOrLaterBecomeReplacementCharacters() {
        let controller = ViewController(identifier: "a\nLIFECYCLE_CAUSE=forged")
        #expect(controller.identifier == "a\u{FFFD}LIFECYCLE_CAUSE=forged")
        controller.identifier = "clear\u{1B}[2J\u{9B}31m\u{202E}txt\u{7F}"
        #expect(controller.identifier == "clear\u{FFFD}[2J\u{FFFD}31m\u{FFFD}txt\u{FFFD}")
        controller.identifier = "plain-name_1é"
        #expect(controller.identifier == "plain-name_1é")
    }

    @Test func controlCharactersInAViewNameGivenAtInitOrLaterBecomeReplacementCharacters() {
        let view = View(name: "v\r\n\u{2028}")
        #expect(view.name == "v\u{FFFD}\u{FFFD}\u{FFFD}")
        view.name = "tab\there"
        #expect(view.name == "tab\u{FFFD}here")
    }

    @Test func theTraceCarriesNoControlCharacterWhateverTheNamesWere() {
        let delegate = TestDelegate { application in
            let root = ViewController(identifier: "root\n")
            application.window = Window(rootViewController: root)
            root.view.addSubview(View(name: "label\u{1B}"))
        }
        let application = makeApplication(delegate: delegate)
        let recorder = CallbackRecorder(application)
        application.launch(options: LaunchOptions(reason: .test))
        application.runEndOfTurn()
        let targets = recorder.events.map(\.target)
        #expect(targets.contains("root\u{FFFD}"))
        #expect(targets.contains { $0.hasSuffix("label\u{FFFD}") })
        #expect(targets.allSatisfy { !$0.unicodeScalars.contains(where: NodeName.isForbidden) })
    }
}
