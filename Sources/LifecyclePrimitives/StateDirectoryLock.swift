//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

package import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// An advisory lock on a service's state directory: `flock(2)` on the directory itself, so no file is added to it. Every
/// process of the service holds it shared from before it loads the saved state until it exits (an upgrade's two
/// processes at once); a tool that edits the saved state while the service is not running
/// (`lifecyclectl scene discard --state-directory`) holds it exclusively for the edit, and is refused while any process
/// of the service holds it. The kernel drops it with the process, however the process ends.
package final class StateDirectoryLock: Sendable {
    /// Who shares the lock.
    package enum Mode: Sendable {
        /// The service's processes: any number together.
        case shared
        /// An editor: alone.
        case exclusive
    }

    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Takes the lock on `directory` without waiting; nil when another process holds it in a mode that excludes this
    /// one. Throws when the directory cannot be opened or locked.
    package static func take(_ directory: String, _ mode: Mode) throws(Errno) -> StateDirectoryLock? {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Errno(rawValue: errno) }
        while flock(descriptor, (mode == .shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0 {
            let error = errno
            if error == EINTR { continue }
            close(descriptor)
            if error == EWOULDBLOCK { return nil }
            throw Errno(rawValue: error)
        }
        return StateDirectoryLock(descriptor: descriptor)
    }

    /// Takes the lock on `directory` shared, waiting up to `patience` while an editor holds it (an edit takes
    /// milliseconds); nil when it is still held then, or the directory cannot be opened (the problem, for the caller to
    /// log; none when there is no directory): the caller goes on without it.
    package static func shared(
        _ directory: String,
        patience: Duration = .seconds(2)
    ) -> (lock: StateDirectoryLock?, problem: String?) {
        let deadline = ContinuousClock.now + patience
        while true {
            do {
                if let lock = try take(directory, .shared) { return (lock, nil) }
            } catch .noSuchFileOrDirectory {
                // No directory, no saved state in it to keep from an editor.
                return (nil, nil)
            } catch {
                return (nil, "cannot lock \(directory): \(error)")
            }
            guard ContinuousClock.now < deadline else {
                return (nil, "another process has held \(directory) exclusively for \(patience) (an edit of the saved state)")
            }
            usleep(5_000)
        }
    }
}
