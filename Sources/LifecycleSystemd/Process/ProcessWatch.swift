//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CLifecycleProcess
import LifecyclePrimitives

#if canImport(Glibc)
import Glibc
#endif

/// A watch of another process's exit (not a child's) through a pidfd (`pidfd_open(2)`, Linux 5.3): its descriptor
/// becomes readable once the process has exited. Opened while the process is known to run, it can never watch a
/// process that took its pid later.
@MainActor
package final class ProcessWatch {
    private var descriptor: Int32
    private var source: MainLoop.Source?

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Watches the process `pid` on `loop`: `handler` runs once, when it has exited. Nil when no pidfd can be opened
    /// (the process is gone already, or the kernel or a seccomp filter refuses the call).
    package static func start(pid: Int32, loop: MainLoop, handler: @escaping @MainActor () -> Void) -> ProcessWatch? {
        // Close-on-exec: an upgrade's successor must not inherit it.
        let descriptor = clifecycle_pidfd_open(pid)
        guard descriptor >= 0 else { return nil }
        let watch = ProcessWatch(descriptor: descriptor)
        do {
            watch.source = try loop.addIO(fd: descriptor, events: .readable) { [weak watch] _ in
                MainActor.assumeIsolated {
                    watch?.cancel()
                    handler()
                }
            }
        } catch {
            watch.cancel()
            return nil
        }
        return watch
    }

    /// Stops watching; the handler does not run.
    package func cancel() {
        source?.cancel()
        source = nil
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
    }
}
