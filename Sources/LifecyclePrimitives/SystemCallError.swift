//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import SystemPackage

/// A system call (or a libsystemd call) that failed, with the errno it reported.
public struct SystemCallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call that failed, e.g. `sd_event_add_signal(SIGUSR1)`.
    public let operation: String
    /// The error the call reported.
    public let errno: Errno

    /// Wraps a failed call and its errno.
    public init(operation: String, errno: Errno) {
        self.operation = operation
        self.errno = errno
    }

    /// A full sentence naming the call and the error, e.g. "sd_notify failed: Connection refused (errno 111)."
    public var description: String {
        "\(operation) failed: \(errno.description) (errno \(errno.rawValue))."
    }
}
