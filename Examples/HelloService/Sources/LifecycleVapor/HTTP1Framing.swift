//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleHTTPCore
import NIOHTTP1

/// Vapor's pipeline as the quiesce gate sees it: SwiftNIO's HTTP/1 parts, as `HTTPRequestDecoder` reads them and
/// `HTTPResponseEncoder` writes them.
enum HTTP1Framing: QuiesceGateFraming {
    static func isHead(_ part: HTTPServerRequestPart) -> Bool {
        if case .head = part { return true }
        return false
    }

    static func kind(of part: HTTPServerResponsePart) -> QuiesceGateStateMachine.ResponsePart {
        switch part {
        // As SwiftNIO's HTTPServerPipelineHandler counts them: 101 is a final response (the connection changes
        // protocol after it), the other 1xx are interim.
        case .head(let head): .head(informational: (100..<200).contains(head.status.code) && head.status.code != 101)
        case .body: .body
        case .end: .end
        }
    }

    static func announcingClose(_ head: HTTPServerResponsePart) -> HTTPServerResponsePart {
        guard case .head(var response) = head else { return head }
        response.headers.replaceOrAdd(name: "connection", value: "close")
        return .head(response)
    }
}
