//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit

/// A view that draws one line of the status from a closure.
@MainActor
final class LabelView: View {
    private let text: @MainActor () -> String

    init(name: String, text: @escaping @MainActor () -> String) {
        self.text = text
        super.init(name: name)
    }

    override func draw(in context: inout StatusContext) {
        context.write(text())
    }
}
