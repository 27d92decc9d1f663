//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The control socket's protocol, from the bytes a peer sends: the stream split into NUL-terminated messages
// (VarlinkFramer, in chunks, at several limits), each message decoded as a call (VarlinkCall.decode) and as a reply
// (VarlinkReply.decode, lifecyclectl's side), then the whole stream sent to a VarlinkServer on this process's main loop
// that serves the control interfaces' real declarations: its replies must be the model's, message by message, and the
// connection must end as docs/control.md says (answered, or closed for a malformed or oversized message).
import FuzzSupport
import LifecycleIPC
import LifecycleSystemd

/// Made at the first input, on the main thread (the loop's), and used by that thread only.
nonisolated(unsafe) private var exchange: VarlinkExchange?

@main
enum VarlinkFuzzer: FuzzTarget {
    static func test(_ bytes: [UInt8]) {
        var chunks = SplitMix64(seed: bytes)
        for limit in [0, 1, 16, 255, VarlinkExchange.maximumMessageSize, VarlinkServer.Limits().maximumMessageSize] {
            checkFraming(bytes, limit: limit, chunks: &chunks)
        }
        for message in bytes.split(separator: 0, omittingEmptySubsequences: false).dropLast() {
            checkMessage(message)
        }
        if exchange == nil { exchange = VarlinkExchange() }
        exchange?.exchange(bytes)
    }
}
