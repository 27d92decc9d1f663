//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecycleKit

/// Records every callback of an application, in order, so a test can assert a whole sequence at once, as the
/// contract states them (docs/lifecycle.md): `["delegate applicationWillResignActive", "root viewWillDisappear", …]`.
///
/// It observes the application's `Trace` from the moment it is made; ``TestHost`` makes one for its
/// application.
@MainActor
public final class CallbackRecorder {
    /// Every event recorded so far, in order.
    public private(set) var events: [TraceEvent] = []
    /// The application recorded, kept alive while the recorder is (`Application.current` is weak).
    public let application: Application
    private var observation: Trace.Observation?

    /// Starts recording `application`'s callbacks.
    public init(_ application: Application) {
        self.application = application
        observation = application.trace.observe { [weak self] event in self?.events.append(event) }
    }

    /// The events as `target event` lines (`root/feed viewDidAppear`), optionally only those of some targets and
    /// some events.
    public func lines(targets: Set<String>? = nil, events names: Set<String>? = nil) -> [String] {
        events.filter { event in
            (targets?.contains(event.target) ?? true) && (names?.contains(event.event) ?? true)
        }.map { "\($0.target) \($0.event)" }
    }

    /// The events of one scene (its delegate's, its tree's, and the application delegate's about it), as
    /// `target event` lines, optionally only some events.
    public func lines(scene identifier: String, events names: Set<String>? = nil) -> [String] {
        events.filter { event in
            event.scene == identifier && (names?.contains(event.event) ?? true)
        }.map { "\($0.target) \($0.event)" }
    }

    /// Forgets what was recorded so far; recording goes on.
    public func clear() {
        events.removeAll()
    }

    /// Stops recording.
    public func stop() {
        observation?.cancel()
        observation = nil
    }
}
