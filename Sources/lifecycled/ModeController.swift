//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import Logging

/// One mode of serving; it starts serving when it appears and stops when it disappears.
@MainActor
final class ModeController: ViewController {
    private var serving = false
    /// How many times this mode started serving; preserved.
    private var activations = 0

    init(mode: String) {
        super.init(identifier: mode)
        restorationIdentifier = mode
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
        // A storyboard may leave the restoration identifier out: a mode is restored by its name.
        if restorationIdentifier == nil { restorationIdentifier = identifier }
    }

    override func encodeRestorableState(with coder: StateCoder) {
        coder.encode(activations, forKey: "activations")
    }

    override func decodeRestorableState(with coder: StateCoder) {
        activations = coder.decodeInteger(forKey: "activations") ?? activations
    }

    override func viewDidLoad() {
        view.addSubview(
            LabelView(name: "summary") { [unowned self] in
                "mode \(identifier)" + (serving ? "" : " (stopped)") + " #\(activations)"
            }
        )
    }

    override func viewDidAppear(_ animated: Bool) {
        serving = true
        activations += 1
        environment.logger.info("mode \(identifier) serving")
        view.subviews.first?.setNeedsDisplay()
    }

    override func viewWillDisappear(_ animated: Bool) {
        serving = false
        environment.logger.info("mode \(identifier) stopping")
    }
}
