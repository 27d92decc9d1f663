//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

@Suite("Process environment")
struct ProcessEnvironmentTests {
    /// An environment block of these entries (C strings, then a null pointer), for the duration of `body`.
    private func withBlock<R>(_ entries: [[UInt8]], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let strings = entries.map { bytes -> UnsafeMutablePointer<CChar> in
            let string = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (index, byte) in bytes.enumerated() { string[index] = CChar(bitPattern: byte) }
            string[bytes.count] = 0
            return string
        }
        defer { strings.forEach { $0.deallocate() } }
        let block = (strings.map(Optional.some) + [nil]) as [UnsafeMutablePointer<CChar>?]
        return block.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    @Test func eachEntryIsSplitAtItsFirstEqualsSignAsGetenvSplitsIt() {
        let variables = withBlock(
            [
                Array("PLAIN=value".utf8),
                Array("EQUALS=a=b=c".utf8),
                Array("EMPTY=".utf8),
                Array("ACCENT=caf\u{E9}".utf8),
                // "=" followed by a combining accent: one Character, but the name still ends at the "=" byte.
                Array("COMBINING=\u{301}x".utf8),
                Array("NO_EQUALS".utf8),
                [0x42, 0x41, 0x44, 0x3D, 0xFF, 0x41],
            ]
        ) { ProcessEnvironment.variables($0) }
        #expect(
            variables == [
                "PLAIN": "value", "EQUALS": "a=b=c", "EMPTY": "", "ACCENT": "caf\u{E9}", "COMBINING": "\u{301}x",
                "BAD": "\u{FFFD}A",
            ]
        )
    }
}

// With the tests that set variables: another thread's setenv(3) may free the block this one walks.
extension ProcessStateTests {
    @Test func theProcessEnvironmentReadsAsGetenvReadsIt() {
        let all = ProcessEnvironment.all()
        #expect(!all.isEmpty)
        for (name, value) in all {
            #expect(ProcessEnvironment.value(name) == value, "\(name)")
        }
    }
}
