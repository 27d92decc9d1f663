//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import Logging
import Testing

@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// Runs the body on a new thread of its own and returns its result.
///
/// sd-event loops belong to one thread, and a signal reaches a loop only through a thread that blocks it. The
/// test process's main thread is parked by Dispatch, and its pool threads are shared by tests, so each loop test
/// gets a fresh pthread where it can block signals without affecting anything else. `#expect` needs the test's
/// task context, so bodies return what they saw and the test asserts on it afterwards.
func onDedicatedThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let start = ThreadStart { continuation.resume(with: Result { try body() }) }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(start).toOpaque()
        let result = pthread_create(
            &thread,
            nil,
            { context in
                Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue().body()
                return nil
            },
            context
        )
        precondition(result == 0, "pthread_create failed with \(result)")
        pthread_detach(thread)
    }
}

private final class ThreadStart: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// A bound AF_UNIX datagram socket in the abstract namespace, standing in for systemd's notification socket.
final class NotifySocketPeer {
    let fd: Int32
    /// The address as `$NOTIFY_SOCKET` names it: `@` stands for the abstract namespace's leading NUL.
    let address: String

    init() throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        let name = "lifecyclekit-test-\(getpid())-\(UInt64.random(in: 0 ... .max))"
        address = "@" + name
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8)
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { path in
            path[0] = 0
            for (index, byte) in bytes.enumerated() { path[index + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + 1 + bytes.count)
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw TestFailure("bind: errno \(errno)") }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// The next datagram, or nil after two seconds without one.
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// Every datagram already queued, without waiting.
    func drain() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count >= 0 else { return messages }
            messages.append(String(decoding: buffer[..<count], as: UTF8.self))
        }
    }
}

/// A pipe whose ends close with it.
final class Pipe {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw TestFailure("pipe: errno \(errno)") }
        readEnd = ends[0]
        writeEnd = ends[1]
        // A test that finds nothing to read fails instead of hanging.
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    func write(_ text: String) {
        var text = text
        _ = text.withUTF8 { Glibc.write(writeEnd, $0.baseAddress, $0.count) }
    }

    /// Reads what is there (one non-blocking read(2)); empty when nothing is.
    func readAvailable() -> String {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = read(readEnd, &buffer, buffer.count)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : ""
    }
}

/// Sets environment variables for the duration of the body, then restores what was there.
func withEnvironment<T>(_ values: [String: String?], _ body: () throws -> T) rethrows -> T {
    let saved = values.keys.map { ($0, getenv($0).map { String(cString: $0) }) }
    for (name, value) in values {
        if let value { setenv(name, value, 1) } else { unsetenv(name) }
    }
    defer {
        for (name, value) in saved {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }
    return try body()
}

/// Sets environment variables for the duration of the async body, then restores what was there.
func withEnvironment<T>(_ values: [String: String?], _ body: () async throws -> T) async rethrows -> T {
    let saved = values.keys.map { ($0, getenv($0).map { String(cString: $0) }) }
    for (name, value) in values {
        if let value { setenv(name, value, 1) } else { unsetenv(name) }
    }
    defer {
        for (name, value) in saved {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }
    return try await body()
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Tests that change the process environment or run sd-event loops.
///
/// They are serialized: setenv(3) may free the environment another thread's getenv(3) is reading (sd-event and
/// sd_notify read it), and the notifier and watchdog tests point `$NOTIFY_SOCKET` at their own peer.
@Suite(.serialized)
struct ProcessStateTests {}

/// Log records kept in memory.
final class CapturedLog: Sendable {
    struct Record: Sendable {
        let level: Logger.Level
        let message: String
    }

    private let storage = ConditionLock<[Record]>([])

    var records: [Record] { storage.withLock { $0 } }

    func messages(_ level: Logger.Level) -> [String] {
        records.filter { $0.level == level }.map(\.message)
    }

    func logger(label: String = "test") -> Logger {
        var logger = Logger(label: label) { _ in Handler(log: self) }
        logger.logLevel = .debug
        return logger
    }

    fileprivate func append(_ record: Record) {
        storage.withLock { $0.append(record) }
    }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.append(Record(level: event.level, message: event.message.description))
        }
    }
}

/// Runs the loop until the condition holds or the time is up; returns whether it holds.
func runLoop(_ loop: MainLoop, until condition: () -> Bool, timeout: Duration = .seconds(5)) throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try loop.runOnce(timeout: .milliseconds(20))
    }
    return true
}

/// A fresh directory under /tmp, removed with its files by `remove()`.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/lifecyclekit-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw TestFailure("mkdtemp: errno \(errno)")
        }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func remove() {
        if let directory = opendir(path) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { unlink(path + "/" + name) }
            }
            closedir(directory)
        }
        rmdir(path)
    }
}
