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

@MainActor
@Suite("Regression: containment edge cases") struct ContainmentRegressionTests {
    // R18: pop while the push of the same controller is pending in the same turn.
    @Test func popWhilePushPending() {
        let (app, nav, recorder) = launchedNav(["a"])
        nav.pushViewController(LeafController(identifier: "b"), animated: false)
        nav.popViewController(animated: false)
        app.runEndOfTurn()
        let containment = recorder.events.filter { $0.target == "nav/b" && $0.event.hasSuffix("(toParent:)") }
            .map { "\($0.event)\($0.detail ?? "")" }
        #expect(containment == ["willMove(toParent:)nav", "willMove(toParent:)nil", "didMove(toParent:)nil"])
    }
}
