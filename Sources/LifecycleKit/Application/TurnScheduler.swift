//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The work deferred to the end of a main-loop turn (the lifecycle's §4): one layout pass, one display pass, then
/// the did-callbacks and completions scheduled during the turn, repeated until nothing is left.
///
/// The scheduler owns only the bookkeeping; ``Application`` supplies the passes (it knows the window) and decides
/// what requests made meanwhile do.
@MainActor
final class TurnScheduler {
    /// Whether a layout or display mark waits for a pass.
    private(set) var needsPasses = false
    /// Did-callbacks and completions, in the order scheduled.
    private var completions: [@MainActor () -> Void] = []
    /// How deep ``run(passes:)`` is nested (a completion that ends a turn itself, as termination does).
    private(set) var depth = 0
    /// Told once whenever the turn gains work while no end of turn is running, so that a host whose loop would
    /// otherwise sleep ends the turn anyway.
    var onWorkScheduled: (@MainActor () -> Void)?

    /// Rounds of passes one end of turn runs before it gives up on a layout that keeps marking itself.
    static let maximumRounds = 32

    /// Whether an end of turn is running now.
    var isRunning: Bool { depth > 0 }

    /// Whether anything waits for the end of the turn.
    var hasWork: Bool { needsPasses || !completions.isEmpty }

    /// A view was marked for layout or display.
    func setNeedsPasses() {
        guard !needsPasses else { return }
        needsPasses = true
        announce()
    }

    /// Runs `work` at the end of the turn, after the passes and the completions scheduled before it.
    func schedule(_ work: @escaping @MainActor () -> Void) {
        completions.append(work)
        announce()
    }

    private func announce() {
        if depth == 0 { onWorkScheduled?() }
    }

    /// Runs the passes and the completions until nothing is left (or the rounds run out); returns false when the
    /// rounds ran out with work left, which then waits for the next turn.
    @discardableResult
    func run(passes: () -> Void) -> Bool {
        depth += 1
        defer { depth -= 1 }
        var rounds = 0
        while needsPasses || !completions.isEmpty {
            rounds += 1
            if rounds > Self.maximumRounds { return false }
            if needsPasses {
                needsPasses = false
                passes()
                // What the pass marked (a layout callback, an edit one made) is laid out before the did-callbacks.
                if needsPasses { continue }
            }
            let batch = completions
            completions.removeAll()
            for completion in batch { completion() }
            // `batch` holds what its completions capture until every one ran: a popped controller is released only
            // after the one below it appeared.
            withExtendedLifetime(batch) {}
        }
        return true
    }
}
