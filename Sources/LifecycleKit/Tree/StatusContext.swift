//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Where a view draws: its part of the application's status text (`systemctl status`'s Status line).
public struct StatusContext: Sendable {
    /// The text this view contributes; empty contributes nothing.
    public var text = ""

    /// Creates an empty context.
    public init() {}

    /// Appends text to this view's part of the status.
    public mutating func write(_ string: String) {
        text += string
    }
}
