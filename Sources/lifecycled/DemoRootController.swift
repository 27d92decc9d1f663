//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit

#if canImport(Glibc)
import Glibc
#endif

/// The root: a container for the worker, the cache and the modes, with a title line.
///
/// The children join the tree when the root is made, not when its view loads: a launch into the background loads
/// no view, and the children must still receive the application events.
@MainActor
final class DemoRootController: ViewController {
    init(children: [ViewController]) {
        super.init(identifier: "root")
        restorationIdentifier = "root"
        for child in children {
            addChild(child)
            child.didMove(toParent: self)
        }
    }

    required init(coder: Coder) throws {
        try super.init(coder: coder)
    }

    override func viewDidLoad() {
        view.insertSubview(LabelView(name: "title") { "pid \(getpid())" }, at: 0)
        // A storyboard's container embeds its children itself.
        for child in children where child.viewIfLoaded?.superview !== view { view.addSubview(child.view) }
    }
}
