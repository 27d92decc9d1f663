//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import Synchronization
import Testing

@testable import LifecycleIPC

#if canImport(Glibc)
import Glibc
#endif

extension ProcessStateTests {
    @Suite struct UnixSocketTests {
        @Test func theSocketAppearsAtItsPathWithItsModeAlreadySetWhateverTheUmask() async throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let path = directory.path + "/control"
            // Someone watching the path as fast as it can: every socket it ever sees there must have its final mode
            // (bound and chmod-ed by path afterwards, it would be seen with the umask's mode in between).
            let stop = Atomic(false)
            let seen = ConditionLock<Set<mode_t>>([])
            let watcher = Task.detached {
                var status = stat()
                while !stop.load(ordering: .relaxed) {
                    if lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK {
                        seen.withLock { _ = $0.insert(status.st_mode & 0o777) }
                    }
                }
            }
            let previous = umask(0o077)
            defer { umask(previous) }
            for _ in 0..<300 {
                let fd = try UnixSocket.listen(at: path)
                close(fd)
                unlink(path)
            }
            stop.store(true, ordering: .relaxed)
            await watcher.value
            #expect(seen.withLock { $0 } == [0o666])
            // And no private directory is left beside it.
            #expect(try directoryEntries(directory.path).isEmpty)
        }

        @Test func aDirectoryOthersMayWriteIsRefused() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            chmod(directory.path, 0o777)
            let path = directory.path + "/control"
            #expect(throws: UnixSocketError.unsafeDirectory(directory.path, reason: "is writable by everyone (mode 777)")) {
                _ = try UnixSocket.listen(at: path)
            }
            chmod(directory.path, 0o770)
            #expect(throws: UnixSocketError.unsafeDirectory(directory.path, reason: "is writable by its group (mode 770)")) {
                _ = try UnixSocket.listen(at: path)
            }
            // The sticky /tmp too: another user could have put something at the path first.
            #expect(throws: UnixSocketError.self) { _ = try UnixSocket.listen(at: "/tmp/lifecyclekit-\(getpid())-control") }
            #expect(access(path, F_OK) != 0)
        }

        @Test(.enabled(if: geteuid() == 0, "chown needs root"))
        func aDirectoryOfAnotherUserIsRefused() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            chown(directory.path, 65534, 65534)
            #expect(throws: UnixSocketError.unsafeDirectory(directory.path, reason: "belongs to uid 65534, not to this user (uid 0) or root")) {
                _ = try UnixSocket.listen(at: directory.path + "/control")
            }
        }

        @Test func aPathTooLongForAPrivateDirectoryBesideItIsBoundWithItsModeAllTheSame() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            // 107 bytes: the socket fits, a private directory beside it would not.
            let path = directory.path + "/" + String(repeating: "c", count: UnixSocket.maximumPathLength - directory.path.utf8.count - 1)
            let previous = umask(0o077)
            defer { umask(previous) }
            let fd = try UnixSocket.listen(at: path)
            defer {
                close(fd)
                unlink(path)
            }
            var status = stat()
            #expect(lstat(path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o666)
            let client = try UnixSocket.connect(to: path)
            close(client)
        }
    }
}

private func directoryEntries(_ path: String) throws -> [String] {
    guard let stream = opendir(path) else { throw TestFailure("opendir \(path)") }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}
