//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd

// The hooks live in libdispatch.so; importing Dispatch is what links it into programs that never import it.
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// The one place that touches libdispatch's private main-queue hooks (declared in CSystemd's shim.h).
///
/// They are what swift-corelibs-foundation's RunLoop uses to drive the main queue from its own loop on the main
/// thread; they are underscored and undocumented, so nothing else in the package calls them.
enum MainDispatchQueue {
    /// An eventfd that becomes readable when the main queue has work (created by libdispatch on first use).
    static var wakeupDescriptor: Int32 {
        _dispatch_get_main_queue_handle_4CF()
    }

    /// Resets the eventfd's counter so that epoll reports the descriptor again only for new work.
    static func acknowledgeWakeup(_ descriptor: Int32) {
        var counter: UInt64 = 0
        // libdispatch makes the eventfd non-blocking: EAGAIN just means another drain already read it.
        _ = read(descriptor, &counter, MemoryLayout<UInt64>.size)
    }

    /// Runs the blocks queued on the main queue so far; main thread only.
    static func drain() {
        _dispatch_main_queue_callback_4CF(nil)
    }
}
