//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CLifecycleProcess

/// The program's GNU build id (the `NT_GNU_BUILD_ID` note the linker writes, `readelf -n` shows): what tells two
/// builds of one version apart in the run records and the saved state's `writer`.
package enum BuildID {
    /// The running program's, in hex; nil when it has none. Read from the program's headers in memory, once.
    package static let current: String? = {
        var bytes = [UInt8](repeating: 0, count: 64)
        let length = bytes.withUnsafeMutableBufferPointer { clifecycle_build_id($0.baseAddress, $0.count) }
        guard length > 0 else { return nil }
        return bytes[..<length].map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
    }()
}
