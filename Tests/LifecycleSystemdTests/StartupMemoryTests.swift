//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@testable import LifecycleSystemd

@Suite("Startup memory")
struct StartupMemoryTests {
    static let smaps = """
        55d0a0000000-55d0a0d33000 r-xp 00000000 fe:01 123 /usr/local/bin/lifecycled
        Size:              13516 kB
        Rss:                6544 kB
        Anonymous:             0 kB
        55d0a0d33000-55d0a0d8b000 r--p 00d33000 fe:01 123 /usr/local/bin/lifecycled
        Size:                352 kB
        Anonymous:           352 kB
        55d0a0d8b000-55d0a0f8e000 rw-p 00d8b000 fe:01 123 /usr/local/bin/lifecycled
        Anonymous:          1016 kB
        7f0000000000-7f0000021000 rw-p 00000000 00:00 0 [heap]
        Anonymous:          1080 kB
        7f1000000000-7f1000028000 r--p 00000000 fe:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
        Anonymous:             0 kB
        7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
        Anonymous:             0 kB
        """

    @Test func onlyReadOnlyPrivateFileMappingsWithNoPageWrittenAreDropped() {
        let clean = StartupMemory.cleanReadOnlyFileMappings(smaps: Self.smaps)
        // The text and libc's read-only part; not the relocated RELRO part (written, then made read-only), not the
        // writable data, the heap or the vdso.
        #expect(clean.map(\.path) == ["/usr/local/bin/lifecycled", "/usr/lib/x86_64-linux-gnu/libc.so.6"])
        #expect(clean.first?.start == 0x55d0a0000000)
        #expect(clean.first?.end == 0x55d0a0d33000)
    }

    @Test func releasingLeavesTheProcessRunning() {
        let released = StartupMemory.release()
        #expect(released.mappings > 0)
        // Code and constants fault back in from the page cache: this very test goes on running.
        #expect([1, 2, 3].map { $0 * 2 } == [2, 4, 6])
    }
}
