//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// One reply to several `more` calls alike (the same batch of trace events to every follower): its message is
/// encoded once, when the first of them sends it.
@_spi(Testing) public final class SharedReply {
    /// The reply's parameters.
    @_spi(Testing) public let parameters: JSONObject
    /// The message, with `continues`.
    package private(set) lazy var message: [UInt8] = VarlinkMessage.reply(parameters, continues: true)

    /// A reply to share.
    @_spi(Testing) public init(_ parameters: JSONObject) {
        self.parameters = parameters
    }
}
