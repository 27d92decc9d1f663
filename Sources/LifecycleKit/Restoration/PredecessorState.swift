//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// What an upgrade's predecessor saved as it exited, beside what it had handed over (docs/restoration.md, "State
/// changed during the drain"): the old process answers requests until it has drained, after the state it handed over
/// was saved; `ApplicationDelegate.application(_:didReceiveFinalStateOf:)` merges the difference.
public struct PredecessorState: Sendable {
    /// The predecessor's pid.
    public let pid: Int32
    /// The state it saved as it terminated.
    let final: Archive
    /// The state it handed over, which this process restored; nil when it handed none.
    let handedOver: Archive?

    /// The state `final` of process `pid`, which had handed over `handedOver`.
    package init(pid: Int32, final: Archive, handedOver: Archive?) {
        self.pid = pid
        self.final = final
        self.handedOver = handedOver
    }

    /// The values the controller at `path` (restoration identifiers from the root, joined by `/`: `root/modes`) saved
    /// as the predecessor exited; nil when it saved none there.
    public func finalValues(atRestorationPath path: String) -> StateCoder? {
        final.node(atRestorationPath: path).map { StateCoder(values: $0.state, restorationPath: path) }
    }

    /// The values of the controller at `path` in the state the predecessor handed over.
    public func handedOverValues(atRestorationPath path: String) -> StateCoder? {
        handedOver?.node(atRestorationPath: path).map { StateCoder(values: $0.state, restorationPath: path) }
    }

    /// What the predecessor's delegate wrote right before it exited, after its drain
    /// (``ApplicationDelegate/application(_:willHandOverFinalStateWith:)``).
    public var finalApplicationValues: StateCoder { StateCoder(values: final.applicationState, restorationPath: "application") }

    /// The delegate's own values in the state the predecessor handed over
    /// (``ApplicationDelegate/application(_:willEncodeRestorableStateWith:)``).
    public var handedOverApplicationValues: StateCoder? {
        handedOver.map { StateCoder(values: $0.applicationState, restorationPath: "application") }
    }
}

extension Archive {
    /// The node at a restoration path of the tree (`root/modes/beta`), if the archive has one.
    package func node(atRestorationPath path: String) -> Node? {
        var parts = path.split(separator: "/").map(String.init)[...]
        guard var node = rootNode, parts.first == node.restorationIdentifier else { return nil }
        parts = parts.dropFirst()
        for part in parts {
            let next = node.children.first { $0.restorationIdentifier == part }
                ?? node.presented.flatMap { $0.restorationIdentifier == part ? $0 : nil }
            guard let next else { return nil }
            node = next
        }
        return node
    }
}

extension Application {
    /// The delegate's values for an upgrade's successor, written as this process exits after its drain
    /// (``ApplicationDelegate/application(_:willHandOverFinalStateWith:)``).
    package func finalStateForSuccessor() -> [String: StateValue] {
        let coder = StateCoder(restorationPath: "application")
        traceDelegateEvent(TraceEventName.applicationWillHandOverFinalState)
        delegate.application(self, willHandOverFinalStateWith: coder)
        return coder.values
    }

    /// Hands the delegate what an upgrade's predecessor saved as it exited (``ApplicationDelegate/application(_:didReceiveFinalStateOf:)``).
    package func receiveFinalState(_ state: PredecessorState) {
        traceDelegateEvent(TraceEventName.applicationDidReceivePredecessorState, detail: "pid \(state.pid)")
        delegate.application(self, didReceiveFinalStateOf: state)
    }
}
