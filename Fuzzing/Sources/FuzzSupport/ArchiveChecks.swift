//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleKit

/// What must hold of any saved state `Archive.decodeState` accepted: it is written again (format 2) and read back
/// as the same tree, generation and application values; a format 1 tree comes back migrated, as format 2.
package func checkStateRoundTrip(_ archive: Archive, from bytes: [UInt8]) {
    check(archive.generation >= 0, "a negative generation was accepted")
    check(archive.formatVersion == 1 || archive.formatVersion == 2, "format \(archive.formatVersion) was accepted")
    let written = archive.encodedState()
    let again: Archive
    do {
        again = try Archive.decodeState(written, source: "rewritten")
    } catch {
        check(false, "a state read from \(bytes.count) bytes, written again, is refused: \(error)")
        return
    }
    check(again.formatVersion == Archive.currentFormatVersion, "rewritten in format \(again.formatVersion)")
    check(again.root == archive.root, "the tree changed when written and read again")
    check(again.generation == archive.generation, "the generation changed when written and read again")
    check(
        again.applicationState == archive.applicationState,
        "the application's values changed when written and read again"
    )
    check(again.encodedState() == written, "writing the same state twice gave different bytes")
}

/// A saved state's file around `body`: the format 2 header with the body's true length and CRC-32, so the fuzzer's
/// mutations reach the JSON decoder instead of failing the checksum.
package func framedState(body: [UInt8]) -> [UInt8] {
    let checksum = String(CRC32.checksum(body), radix: 16)
    let header =
        "LifecycleKit-State 2 \(body.count) " + String(repeating: "0", count: 8 - checksum.count) + checksum + "\n"
    return Array(header.utf8) + body
}
