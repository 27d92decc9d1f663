//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import SystemPackage

extension SystemCallError {
    /// Returns a libsystemd result unchanged when it is not negative, else throws it (libsystemd returns -errno).
    @discardableResult
    static func check(_ result: Int32, _ operation: @autoclosure () -> String) throws(SystemCallError) -> Int32 {
        guard result < 0 else { return result }
        throw SystemCallError(operation: operation(), errno: Errno(rawValue: -result))
    }
}
