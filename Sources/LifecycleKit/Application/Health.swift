//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// What an orchestrator asks of a running application (Kubernetes' probes): the lifecycle knows each answer.
public enum HealthProbe: String, Sendable, Hashable, CaseIterable {
    /// Whether it takes new work: launched, active, every hosted server accepting, and not stopping. In the
    /// background it is alive but not ready, so traffic goes elsewhere.
    case ready
    /// Whether it is alive: the main loop turns, so no callback holds it. Asked on the main actor, the answer itself
    /// is the proof; whoever asks bounds the wait (a stalled loop never answers).
    case live
    /// Whether launch and state restoration are over.
    case started
}

/// One probe's answer.
public struct HealthCheck: Sendable, Hashable, CustomStringConvertible {
    /// The probe asked.
    public var probe: HealthProbe
    /// Whether it passed.
    public var passed: Bool
    /// Why, in a few words: `active, 1 listener serving`, `in the background`, `stopping (lame duck)`.
    public var reason: String

    /// An answer.
    public init(probe: HealthProbe, passed: Bool, reason: String) {
        self.probe = probe
        self.passed = passed
        self.reason = reason
    }

    /// `ready: yes (active, 1 listener serving)`, `ready: no (in the background)`.
    public var description: String { "\(probe.rawValue): \(passed ? "yes" : "no") (\(reason))" }
}

extension Application {
    /// The answer to `probe` now. Being asked on the main actor, the application answers `live` whenever it answers.
    public func check(_ probe: HealthProbe) -> HealthCheck {
        switch probe {
        case .live:
            return HealthCheck(probe: .live, passed: true, reason: "the main loop answered")
        case .started:
            return hasFinishedLaunching
                ? HealthCheck(probe: .started, passed: true, reason: "launched")
                : HealthCheck(
                    probe: .started,
                    passed: false,
                    reason: applicationState == .notRunning ? "not launched" : "launching"
                )
        case .ready:
            return readiness()
        }
    }

    private func readiness() -> HealthCheck {
        func notReady(_ reason: String) -> HealthCheck { HealthCheck(probe: .ready, passed: false, reason: reason) }
        guard hasFinishedLaunching else {
            return notReady(applicationState == .notRunning ? "not launched" : "launching")
        }
        if isTerminating { return notReady("terminating") }
        if let stoppingReason { return notReady(stoppingReason) }
        switch applicationState {
        case .active: break
        case .background: return notReady("in the background")
        case .inactive: return notReady("inactive (interrupted)")
        case .notRunning, .terminated: return notReady(applicationState.rawValue)
        }
        let listeners = self.listeners.listeners
        if let idle = listeners.first(where: { $0.state != .serving }) {
            return notReady("listener \(idle.name) (\(idle.address)) is \(idle.state.rawValue)")
        }
        let serving = listeners.isEmpty ? "" : ", \(listeners.count) listener\(listeners.count == 1 ? "" : "s") serving"
        return HealthCheck(probe: .ready, passed: true, reason: "active\(serving)")
    }
}
