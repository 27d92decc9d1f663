//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The saved state's file, whole: bytes → Archive.decodeState (the format 2 header with length and CRC-32, or a bare
// format 1 tree), as StateStore reads the state file and the file descriptor store's copy at launch.
import FuzzSupport
@_spi(Internal) import LifecycleKit

@main
enum StateArchiveFuzzer: FuzzTarget {
    static func test(_ bytes: [UInt8]) {
        let archive: Archive
        do throws(StateArchiveError) {
            archive = try Archive.decodeState(bytes, source: "fuzz.state")
        } catch {
            check(!error.reason.isEmpty, "a refusal without a reason")
            return
        }
        checkStateRoundTrip(archive, from: bytes)
    }
}
