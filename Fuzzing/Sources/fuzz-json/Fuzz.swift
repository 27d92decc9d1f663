//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// JSON text: bytes → JSONValue.parse, the parser every control message goes through (the daemon's calls, lifecyclectl's
// replies), compared with a second reading of RFC 8259 (ReferenceJSON): it accepts exactly valid JSON within its
// documented refusals, refuses nesting past the bound with "nested deeper than N levels" for every N, and what it accepts
// is written compactly and read back as the same value.
import FuzzSupport
import LifecycleIPC

@main
enum JSONFuzzer: FuzzTarget {
    static func test(_ bytes: [UInt8]) {
        checkJSON(bytes)
        // The same text under a small bound, so that the fuzzer's short inputs reach it.
        checkJSON(bytes, maximumDepth: 3)
    }
}
