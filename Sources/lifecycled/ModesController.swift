//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import Logging

/// The navigation stack of modes: a reload that changes `Mode=` hands over to a new mode controller (or pushes it,
/// with `ModeChange=push`). The stack is preserved: a restart restores it. A reload that changes the mode while the
/// application is in the background is refused: nothing would serve the incoming mode's start.
@MainActor
final class ModesController: NavigationController {
    private weak var summary: View?

    init(rootViewController: ViewController) {
        super.init(rootViewController: rootViewController, identifier: "modes")
        restorationIdentifier = "modes"
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        let label = LabelView(name: "stack") { [unowned self] in
            "stack " + viewControllers.map(\.identifier).joined(separator: "/")
        }
        view.addSubview(label)
        summary = label
    }

    override func validateReload(_ proposal: ReloadProposal) throws {
        guard let settings = proposal.settings(as: DemoSettings.self), settings.mode != environment.settings.mode,
            application?.applicationState == .background
        else { return }
        throw ModeChangeNeedsForeground(mode: settings.mode)
    }

    override func applicationDidReload() {
        let mode = environment.settings.mode
        // Only a change of Mode= moves the stack: a storyboard or a restored stack may show another mode.
        guard mode != environment.previousSettings.mode, topViewController?.identifier != mode else { return }
        defer { summary?.setNeedsDisplay() }
        switch environment.settings.modeChange {
        case .replace:
            environment.logger.info("mode changes to \(mode): handing over")
            // The incoming mode prepares (viewDidLoad) before the outgoing one stops (viewWillDisappear).
            setViewControllers([ModeController(mode: mode)], animated: false)
        case .push:
            if let index = viewControllers.firstIndex(where: { $0.identifier == mode }) {
                environment.logger.info("mode changes back to \(mode): popping to it")
                setViewControllers(Array(viewControllers[...index]), animated: false)
            } else {
                environment.logger.info("mode changes to \(mode): pushing it")
                pushViewController(ModeController(mode: mode), animated: false)
            }
        }
    }

    override func applicationFinishedRestoringState() {
        summary?.setNeedsDisplay()
    }
}

/// A mode change refused because the application is in the background.
struct ModeChangeNeedsForeground: Error, CustomStringConvertible {
    let mode: String
    var description: String {
        "a change of mode to \(mode) needs the foreground (the incoming mode prepares before the outgoing one stops); "
            + "return to the foreground, then reload"
    }
}
