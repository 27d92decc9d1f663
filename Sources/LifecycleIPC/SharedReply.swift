//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// One reply to several `more` calls alike (the same batch of trace events to every follower): its message is
/// encoded once, when the first of them sends it.
public final class SharedReply {
    /// The reply's parameters.
    public let parameters: JSONObject
    /// The message, with `continues`.
    public private(set) lazy var message: [UInt8] = VarlinkMessage.reply(parameters, continues: true)

    /// A reply to share.
    public init(_ parameters: JSONObject) {
        self.parameters = parameters
    }
}
