//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The saved state's body: the input is the JSON after the header, framed with its true length and CRC-32 before
// Archive.decodeState reads it, so every mutation reaches the JSON and the node, view and value decoders.
import FuzzSupport
@_spi(Internal) import LifecycleKit

@main
enum StatePayloadFuzzer: FuzzTarget {
    static func test(_ body: [UInt8]) {
        let bytes = framedState(body: body)
        let archive: Archive
        do throws(StateArchiveError) {
            archive = try Archive.decodeState(bytes, source: "fuzz.state")
        } catch {
            if case .checksumMismatch = error.problem { check(false, "the framed body fails its own checksum") }
            if case .truncated = error.problem { check(false, "the framed body is truncated: \(error)") }
            return
        }
        check(archive.formatVersion == 2, "a framed body read as format \(archive.formatVersion)")
        checkStateRoundTrip(archive, from: bytes)
    }
}
