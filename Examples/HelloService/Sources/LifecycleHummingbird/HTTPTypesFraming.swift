//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import HTTPTypes
import LifecycleHTTPCore
import NIOHTTPTypes

/// Hummingbird's pipeline as the quiesce gate sees it: swift-http-types' parts, as `HTTP1Channel` decodes them.
enum HTTPTypesFraming: QuiesceGateFraming {
    static func isHead(_ part: HTTPRequestPart) -> Bool {
        if case .head = part { return true }
        return false
    }

    static func kind(of part: HTTPResponsePart) -> QuiesceGateStateMachine.ResponsePart {
        switch part {
        case .head(let head): .head(informational: head.status.kind == .informational)
        case .body: .body
        case .end: .end
        }
    }

    static func announcingClose(_ head: HTTPResponsePart) -> HTTPResponsePart {
        guard case .head(var response) = head else { return head }
        response.headerFields[.connection] = "close"
        return .head(response)
    }
}
