//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A process an upgrade started beside this one: ``KeptProcess`` in the daemon, a stand-in in the unit tests.
@MainActor
protocol SuccessorProcess: AnyObject {
    /// Its pid.
    var pid: Int32 { get }
    /// Lets it go to the service manager: from now on its exit is not this process's to see.
    func release()
    /// Sends it a signal, unless it is known to have exited.
    func signal(_ signal: Int32)
}

extension KeptProcess: SuccessorProcess {}

extension ProcessWatch: ScheduledWork {}

/// How both sides of an upgrade reach the operating system and systemd: one seam, so the state machines' drivers run
/// in unit tests with stand-ins (no process, no systemd) and every failure cause is tested there.
@MainActor
struct UpgradeEffects {
    /// The program an upgrade starts (``Daemon/upgradePath(arguments:)``, read at start), nil when unknown.
    var executablePath: String?
    /// Why the file at a path cannot be executed now, or nil when it can (`access(X_OK)`).
    var cannotExecute: (String) -> Errno?
    /// A connected pair for the two processes to talk over (`SOCK_SEQPACKET`, non-blocking, close-on-exec):
    /// (this process's end, the successor's).
    var makeChannel: () throws(SystemCallError) -> (Int32, Int32)
    /// A sealed in-memory file holding `bytes`, named `name`, to pass the saved state.
    var sealedFile: (_ bytes: [UInt8], _ name: String) throws(SystemCallError) -> Int32
    /// Starts the successor (``SuccessorLaunch``) under a keeper process.
    var spawn: (SuccessorLaunch) throws(SystemCallError) -> any SuccessorProcess
    /// Calls `handler` with the successor's exit status (its code, or 128 + the signal; nil when unknown) once it has
    /// exited before it was released; cancel to stop watching.
    var watchExit: (any SuccessorProcess, _ handler: @escaping @MainActor (Int32?) -> Void) throws(SystemCallError)
        -> any ScheduledWork
    /// Calls `handler` whenever the descriptor is readable; cancel to stop watching.
    var watchReadable: (Int32, _ handler: @escaping @MainActor () -> Void) throws(SystemCallError) -> any ScheduledWork
    /// Watches another process of the service (an upgrade's predecessor) by its pid: `handler` once it has exited.
    /// Opened while the process certainly runs (it is waiting for this one), so a reused pid is never watched; nil
    /// when the kernel offers no way (no pidfd).
    var watchProcess: (Int32, _ handler: @escaping @MainActor () -> Void) -> (any ScheduledWork)?
    /// Runs work after a delay (the loop's timers).
    var schedule: WorkScheduler
    /// Now.
    var now: @MainActor () -> ContinuousClock.Instant
    /// Tells systemd the main process is the one with this pid (`MAINPID=`).
    var nameMainPID: (Int32) throws -> Void
    /// Waits (at most the duration) until systemd has read the notifications sent so far (`BARRIER=1`).
    var confirm: (Duration) throws -> Void
    /// This process's pid.
    var pid: Int32
}

/// What an upgrade starts: the program, its command line and environment, and the descriptors it is passed as 3, 4, …
/// (`LISTEN_FDS`).
struct SuccessorLaunch: Sendable {
    var path: String
    var arguments: [String]
    var environment: [String: String]
    /// Variables set to the successor's own pid once it exists (`LISTEN_PID`, `WATCHDOG_PID`).
    var pidVariables: [String]
    var descriptors: [Int32]
}

extension UpgradeEffects {
    /// The daemon's: the main loop's sources and timers, systemd's notification socket, fork and exec.
    static func live(loop: MainLoop, effects: DaemonEffects) -> UpgradeEffects {
        UpgradeEffects(
            executablePath: Daemon.upgradePath(),
            cannotExecute: { path in access(path, X_OK) == 0 ? nil : Errno(rawValue: errno) },
            makeChannel: { () throws(SystemCallError) -> (Int32, Int32) in
                var pair: [Int32] = [-1, -1]
                let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                guard socketpair(AF_UNIX, type, 0, &pair) == 0 else {
                    throw SystemCallError(operation: "socketpair", errno: Errno(rawValue: errno))
                }
                return (pair[0], pair[1])
            },
            sealedFile: { bytes, name throws(SystemCallError) in
                try FileDescriptorStore.sealedMemfd(bytes, name: name)
            },
            spawn: { launch throws(SystemCallError) in
                try KeptProcess(
                    path: launch.path,
                    arguments: launch.arguments,
                    environment: launch.environment,
                    pidVariables: launch.pidVariables,
                    descriptors: launch.descriptors
                )
            },
            watchExit: { process, handler throws(SystemCallError) in
                guard let kept = process as? KeptProcess else {
                    preconditionFailure("the live effects watch only the processes they started")
                }
                return try loop.addIO(fd: kept.statusDescriptor, events: .readable) { _ in
                    MainActor.assumeIsolated {
                        if kept.readStatus() { handler(kept.exitCode) }
                    }
                }
            },
            watchReadable: { descriptor, handler throws(SystemCallError) in
                try loop.addIO(fd: descriptor, events: .readable) { _ in MainActor.assumeIsolated { handler() } }
            },
            watchProcess: { pid, handler in
                ProcessWatch.start(pid: pid, loop: loop, handler: handler)
            },
            schedule: effects.schedule,
            now: effects.now,
            nameMainPID: { pid in try effects.notify([.mainPID(pid)]) },
            confirm: { timeout in try effects.notifyBarrier(timeout) },
            pid: getpid()
        )
    }
}
