//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// Appearance (docs/lifecycle.md §3): where a controller is between `viewWillAppear` and `viewDidDisappear`, as its
// root view's moves in and out of the window drive it, and the layout callbacks around its root view's. The callbacks
// a subclass overrides are declared with the class.
extension ViewController {
    /// Where a controller is in its appearance, as UIKit tracks it.
    enum Appearance: Sendable {
        /// Not on screen.
        case disappeared
        /// `viewWillAppear` has run; `viewDidAppear` comes at the end of the turn.
        case appearing
        /// On screen.
        case appeared
        /// `viewWillDisappear` has run; `viewDidDisappear` comes at the end of the turn.
        case disappearing
    }

    /// Whether this controller is on screen (between `viewDidAppear` and `viewWillDisappear`).
    public var isVisible: Bool { appearance == .appeared }

    /// Whether the controller is on screen or on its way there.
    var isAppearingOrAppeared: Bool { appearance == .appearing || appearance == .appeared }

    func lastTransitionAnimated(_ animated: Bool) {
        lastTransitionWasAnimated = animated
    }

    func beginAppearanceTransition(_ appearing: Bool) {
        let animated = lastTransitionWasAnimated
        switch (appearing, appearance) {
        case (true, .disappeared), (true, .disappearing):
            appearance = .appearing
            trace(TraceEventName.viewWillAppear)
            viewWillAppear(animated)
        case (false, .appeared), (false, .appearing):
            appearance = .disappearing
            trace(TraceEventName.viewWillDisappear)
            viewWillDisappear(animated)
            updateLifecycleTasks(reason: .disappearance)
        default:
            // Already moving the requested way: a view re-entering within one turn; nothing to repeat.
            break
        }
    }

    func endAppearanceTransition(_ appearing: Bool) {
        let animated = lastTransitionWasAnimated
        switch (appearing, appearance) {
        case (true, .appearing):
            appearance = .appeared
            trace(TraceEventName.viewDidAppear)
            viewDidAppear(animated)
            updateLifecycleTasks(reason: .disappearance)
        case (false, .disappearing):
            appearance = .disappeared
            trace(TraceEventName.viewDidDisappear)
            viewDidDisappear(animated)
        default:
            // The transition was reversed within the same turn; its own completion delivers the final callback.
            break
        }
    }

    func notifyWillLayoutSubviews() {
        trace(TraceEventName.viewWillLayoutSubviews)
        viewWillLayoutSubviews()
    }

    func notifyDidLayoutSubviews() {
        trace(TraceEventName.viewDidLayoutSubviews)
        viewDidLayoutSubviews()
    }
}
