//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// A reload on offer (docs/lifecycle.md §1, "Reload as a transaction"): the configuration the host has read and
/// validated, before anything applies it. The delegate and every controller may refuse it by throwing from their
/// `validateReload` hook; it then applies to none of them, and the application keeps running as it was.
public struct ReloadProposal: Sendable {
    /// The application's own configuration as read from the new file (the daemon's `ApplicationMain.Settings`
    /// section), or nil when the host has none.
    public let settings: (any Sendable)?

    /// A proposal carrying the application's new settings.
    public init(settings: (any Sendable)? = nil) {
        self.settings = settings
    }

    /// The new settings as the application's own type, or nil when they are not of that type.
    public func settings<Settings>(as type: Settings.Type) -> Settings? {
        settings as? Settings
    }
}

/// What the host says when asked to prepare a reload: the proposal to offer, or why the new configuration cannot be
/// used (a file's `file:line: what is wrong`).
package enum ReloadPreparation: Sendable {
    /// The configuration was read and is valid: offer it.
    case ready(ReloadProposal)
    /// The configuration cannot be used: nothing is offered or applied.
    case refused(String)
}

extension Application {
    /// The reload's first phase, inside its `beginReload` step: the host reads and validates the configuration, then
    /// the delegate and the tree (pre-order) are offered it. Returns the refusal (who refused and why), or nil when
    /// every participant accepted; the refusal is traced as `reloadRefused` on whoever refused.
    func prepareReload() -> String? {
        let proposal: ReloadProposal
        switch host?.applicationPrepareReload(self) ?? .ready(ReloadProposal()) {
        case .ready(let ready):
            proposal = ready
        case .refused(let reason):
            traceEvent(TraceEventName.reloadRefused, target: .named("configuration"), detail: reason)
            return "the configuration: \(reason)"
        }
        do {
            traceDelegateEvent(TraceEventName.applicationValidateReload)
            try delegate.application(self, validateReload: proposal)
        } catch {
            traceDelegateEvent(TraceEventName.reloadRefused, detail: "\(error)")
            return "the delegate: \(error)"
        }
        for controller in controllersInTreeOrder() {
            do {
                controller.trace(TraceEventName.validateReload)
                try controller.validateReload(proposal)
            } catch {
                controller.trace(TraceEventName.reloadRefused, detail: "\(error)")
                return "\(controller.path): \(error)"
            }
        }
        return nil
    }
}
