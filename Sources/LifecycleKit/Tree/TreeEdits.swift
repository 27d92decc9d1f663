//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The moves in progress in one application's tree, and the tree edits made meanwhile, which wait for them
/// (docs/lifecycle.md, "Re-entrancy").
///
/// A move is what a tree edit does to views (a push's removal and addition, a dismissal and what it uncovers, a
/// window's new root, a layout or display pass), with the callbacks it makes. It computes what to do, calls out, and
/// carries on with what it computed: an edit made by one of those callbacks would change the tree under it. So an
/// edit made while a move is in progress waits, whole, and runs once the outermost move is over, in the order made;
/// an edit a waiting edit's own callbacks make waits for that one. Requests made meanwhile wait too
/// (``Application``): ``isInProgress``.
///
/// `loadView` and `viewDidLoad` build a view that is not in the window yet: while one runs inside a move, its edits
/// take effect at once unless they touch a view in the window (``beginBuilding()``).
@MainActor
final class TreeEdits {
    /// How many moves are in progress (they nest: a push is a removal and an addition).
    private(set) var depth = 0
    /// Views being built (`loadView`, `viewDidLoad`) inside a move; the move's depth is set aside meanwhile.
    private var builds = 0
    /// The edits waiting for the moves in progress, in the order made; `next` is the first not run yet.
    private var waiting: [@MainActor () -> Void] = []
    private var next = 0
    private var isRunningWaitingEdits = false

    /// Whether a move is in progress (a view being built inside one included): requests and edits wait.
    var isInProgress: Bool { depth > 0 || builds > 0 }

    /// Makes a tree edit: now, as a move of its own (what its callbacks edit waits until it is over), or, made while a
    /// move is in progress, once that move is over. Every public tree edit goes through here, so the rule of
    /// docs/lifecycle.md, "Re-entrancy", is written once.
    ///
    /// - Parameters:
    ///   - edits: the moves of the application whose tree the edit changes; nil outside any application (the edit
    ///     runs now).
    ///   - touchesWindow: whether the edit touches a view in the window (read only while a view is being built
    ///     inside a move).
    ///   - again: the whole edit, made again when its turn comes (so it is checked then); built only when the edit
    ///     waits, so an edit that runs now allocates nothing for it.
    ///   - edit: what the edit does.
    /// - Returns: whether the edit ran now (false: it waits).
    @discardableResult
    @inline(__always)
    static func edit(
        in edits: TreeEdits?,
        touchingWindow touchesWindow: @autoclosure () -> Bool,
        again: @autoclosure () -> @MainActor () -> Void,
        now edit: () -> Void
    ) -> Bool {
        guard let edits else {
            edit()
            return true
        }
        if edits.mustWait(touchingWindow: touchesWindow()) {
            edits.wait(again())
            return false
        }
        edits.begin()
        defer { edits.end() }
        edit()
        return true
    }

    /// Whether an edit made now must wait; `touchesWindow` says whether it touches a view in the window (read only
    /// while a view is being built inside a move).
    @inline(__always)
    func mustWait(touchingWindow touchesWindow: @autoclosure () -> Bool) -> Bool {
        if depth > 0 { return true }
        return builds > 0 && touchesWindow()
    }

    /// Keeps an edit until the moves in progress are over.
    func wait(_ edit: @escaping @MainActor () -> Void) {
        waiting.append(edit)
    }

    /// A move starts.
    @inline(__always)
    func begin() {
        depth += 1
    }

    /// A move ends; when it was the outermost one, the edits made meanwhile run, in order.
    @inline(__always)
    func end() {
        depth -= 1
        if depth == 0, builds == 0, next < waiting.count, !isRunningWaitingEdits { runWaitingEdits() }
    }

    /// A view starts being built; returns the depth of the move set aside, for ``endBuilding(_:)``.
    func beginBuilding() -> Int {
        let suspended = depth
        if suspended > 0 {
            builds += 1
            depth = 0
        }
        return suspended
    }

    /// The view is built: the move set aside goes on.
    func endBuilding(_ suspended: Int) {
        guard suspended > 0 else { return }
        builds -= 1
        depth = suspended
    }

    private func runWaitingEdits() {
        isRunningWaitingEdits = true
        defer { isRunningWaitingEdits = false }
        // Each edit is a move of its own; what its callbacks make is appended and runs after it.
        while next < waiting.count {
            let edit = waiting[next]
            waiting[next] = {}
            next += 1
            edit()
        }
        waiting.removeAll()
        next = 0
    }
}
