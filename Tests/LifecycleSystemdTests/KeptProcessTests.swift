//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import LifecycleSystemd
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The next process of an upgrade, started beside this one under a keeper (KeptProcess, CLifecycleProcess).
@Suite("Starting the next process of a service")
struct KeptProcessTests {
    /// A pipe; the read end returned first. Neither end is close-on-exec, like a connection SwiftNIO accepted.
    private func pipeEnds() -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        precondition(pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    /// Everything the other end writes, until it closes.
    private func readAll(_ descriptor: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func itGetsThePassedDescriptorsInPlaceItsOwnPidAndNothingElseOfThisProcess() throws {
        let output = pipeEnds()
        // Open in this process and not close-on-exec: it must not reach the new program (nor stay open in the keeper).
        let stray = pipeEnds()
        let child = try KeptProcess(
            path: "/bin/sh",
            arguments: ["sh", "-c", "echo \"$LISTEN_PID $$ $LISTEN_FDS\" >&3; ls /proc/self/fd >&3"],
            environment: ["LISTEN_FDS": "1", "PATH": "/usr/bin:/bin"],
            pidVariables: ["LISTEN_PID"],
            descriptors: [output.write]
        )
        close(output.write)
        close(stray.read)
        let lines = readAll(output.read).split(separator: "\n").map(String.init)
        close(output.read)
        close(stray.write)
        #expect(lines.first == "\(child.pid) \(child.pid) 1", "\(lines)")
        // 0, 1, 2, the one passed as 3, and the directory `ls` reads.
        let descriptors = Set(lines.dropFirst().compactMap { Int32($0) })
        #expect(descriptors.isSubset(of: [0, 1, 2, 3, 4]), "\(lines)")
        #expect(descriptors.isSuperset(of: [0, 1, 2, 3]), "\(lines)")
        child.release()
    }

    @Test func anExitBeforeTheReleaseComesBackWithItsStatus() throws {
        let child = try KeptProcess(
            path: "/bin/sh",
            arguments: ["sh", "-c", "exit 3"],
            environment: [:],
            pidVariables: [],
            descriptors: []
        )
        var polls = 0
        while !child.readStatus(), polls < 5000 {
            usleep(1000)
            polls += 1
        }
        #expect(child.exitCode == 3)
    }

    @Test func aProgramThatCannotBeExecutedIsAnErrorNamingIt() {
        #expect(throws: SystemCallError.self) {
            _ = try KeptProcess(
                path: "/nonexistent/program",
                arguments: ["program"],
                environment: [:],
                pidVariables: [],
                descriptors: []
            )
        }
    }

    @Test func onceReleasedItIsNoLongerThisProcesssChild() throws {
        let ready = pipeEnds()
        let child = try KeptProcess(
            path: "/bin/sh",
            arguments: ["sh", "-c", "echo started >&3; exec sleep 30"],
            environment: ["PATH": "/usr/bin:/bin"],
            pidVariables: [],
            descriptors: [ready.write]
        )
        close(ready.write)
        var byte: UInt8 = 0
        _ = read(ready.read, &byte, 1)
        close(ready.read)
        child.release()
        // Re-parented to the nearest subreaper or PID 1: this process cannot wait for it any more.
        var status: Int32 = 0
        #expect(waitpid(child.pid, &status, WNOHANG) == -1 && errno == ECHILD)
        kill(child.pid, SIGKILL)
    }
}
