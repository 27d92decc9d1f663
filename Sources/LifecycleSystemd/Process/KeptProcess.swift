//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CLifecycleProcess
package import LifecyclePrimitives
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A program this process started beside itself (the next process of the service, in an upgrade), under a keeper
/// process until it is released: then the keeper exits, and the program becomes the child of the service manager,
/// which supervises it fully as its main process only if it is its child.
package final class KeptProcess {
    /// The program's pid.
    package let pid: Int32
    /// Readable when the program has exited before it was released (its status comes), or once the keeper has gone.
    package let statusDescriptor: Int32
    /// The program's exit status once known: the code, or 128 + the signal that ended it.
    package private(set) var exitCode: Int32?
    /// Whether ``release()`` let the program go.
    package private(set) var isReleased = false
    private var keeper: Int32?
    private var releaseDescriptor: Int32

    /// Starts `path` with `arguments` (the first is its name) and `environment`, adding `NAME=<its pid>` for each of
    /// `pidVariables` (LISTEN_PID, WATCHDOG_PID), with `descriptors` as its descriptors 3, 4, ... Throws when a fork
    /// or the exec fails (the exec's errno: a missing or non-executable file).
    package init(
        path: String,
        arguments: [String],
        environment: [String: String],
        pidVariables: [String],
        descriptors: [Int32]
    ) throws(SystemCallError) {
        let environmentLines = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        var kept = clifecycle_kept(pid: 0, keeper: 0, release_fd: -1, status_fd: -1)
        let result = Self.withCStrings(arguments) { argv in
            Self.withCStrings(environmentLines) { envp in
                Self.withCStrings(pidVariables) { names in
                    descriptors.withUnsafeBufferPointer { fds in
                        clifecycle_spawn_kept(
                            path,
                            argv,
                            envp,
                            UnsafePointer(OpaquePointer(names)),
                            Int32(pidVariables.count),
                            fds.baseAddress,
                            Int32(descriptors.count),
                            &kept
                        )
                    }
                }
            }
        }
        guard result == 0 else { throw SystemCallError(operation: "exec \(path)", errno: Errno(rawValue: -result)) }
        pid = kept.pid
        keeper = kept.keeper
        releaseDescriptor = kept.release_fd
        statusDescriptor = kept.status_fd
        let flags = fcntl(statusDescriptor, F_GETFL)
        if flags >= 0 { _ = fcntl(statusDescriptor, F_SETFL, flags | O_NONBLOCK) }
    }

    deinit {
        if releaseDescriptor >= 0 { close(releaseDescriptor) }
        close(statusDescriptor)
        // Not released: closing the release pipe lets the keeper go; reap it without waiting.
        if let keeper {
            var code: Int32 = 0
            _ = clifecycle_wait(keeper, &code, WNOHANG)
        }
    }

    /// Reads what the keeper said: true once the program is known to have exited (``exitCode``) or the keeper is
    /// gone; false while both run.
    @discardableResult
    package func readStatus() -> Bool {
        var code: Int32 = 0
        let count = withUnsafeMutableBytes(of: &code) { read(statusDescriptor, $0.baseAddress, $0.count) }
        if count == MemoryLayout<Int32>.size {
            exitCode = code
        } else if count < 0, errno == EAGAIN || errno == EINTR {
            return false
        }
        reapKeeper(waiting: true)
        return true
    }

    /// Lets the program go: the keeper exits (and is reaped), and the program becomes the service manager's child.
    package func release() {
        guard !isReleased, releaseDescriptor >= 0 else { return }
        isReleased = true
        close(releaseDescriptor)
        releaseDescriptor = -1
        reapKeeper(waiting: true)
    }

    /// Sends `signal` to the program, unless it is known to have exited (its pid may be reused then).
    package func signal(_ signal: Int32) {
        guard exitCode == nil else { return }
        kill(pid, signal)
    }

    private func reapKeeper(waiting: Bool) {
        guard let keeper else { return }
        var code: Int32 = 0
        if clifecycle_wait(keeper, &code, waiting ? 0 : WNOHANG) != 0 { self.keeper = nil }
    }

    /// Calls `body` with a NULL-terminated array of C strings made from `strings`.
    private static func withCStrings<Result>(
        _ strings: [String],
        _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result
    ) -> Result {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
