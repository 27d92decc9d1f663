//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// A count of the tree nodes the framework's walks visit, kept in debug builds only: the scaling test reads it to
/// check that every tree operation stays linear in the size of the tree (work done, not wall time). Release builds
/// compile it to nothing.
@MainActor
enum TreeWork {
    #if DEBUG
    /// Nodes visited since the process started (or the last ``reset()``).
    private(set) static var visits = 0
    #endif

    /// Counts `nodes` visited.
    @inline(__always)
    static func count(_ nodes: Int) {
        #if DEBUG
        visits &+= nodes
        #endif
    }

    #if DEBUG
    /// Starts counting from zero.
    static func reset() { visits = 0 }
    #endif
}
