//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Composes the application's status text, the line behind systemd's `STATUS=` and `systemctl status`: the
/// application state, then every visible view's text in pre-order, joined by "; ".
struct StatusComposer {
    /// The last text composed.
    private(set) var text = ""
    /// Whether a display pass or an appearance change may have changed the text since it was composed.
    var isStale = false
    /// A note the text ends with until it is replaced: that the last reload was refused, and by whom.
    var note: String?
    /// Why the application stops though it still serves (a lame-duck delay), said right after the state.
    var stopping: String?
    /// With scenes: how many are connected, and in which states (`2 scenes: 1 active, 1 background`).
    var scenes: String?

    /// Composes the text again; returns it when it differs from the last one.
    @MainActor
    mutating func update(state: ApplicationState, window: Window?) -> String? {
        isStale = false
        var parts: [String] = []
        if let window {
            for layer in window.visibleLayers {
                layer.controller.viewIfLoaded?.collectStatus(into: &parts)
            }
        }
        if let scenes { parts.append(scenes) }
        let head = stopping.map { "\(state.rawValue), \($0)" } ?? state.rawValue
        var composed = parts.isEmpty ? head : "\(head): " + parts.joined(separator: "; ")
        if let note { composed += " (\(note))" }
        guard composed != text else { return nil }
        text = composed
        return composed
    }
}
