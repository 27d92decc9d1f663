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

// Serialized with the other tests that run loops or change the environment (see ProcessStateTests).
extension ProcessStateTests {
    @Suite struct MemoryPressureMonitorTests {
        @Test func eventsFromAFifoReachTheHandlerAtMostOncePerInterval() async throws {
            let (calls, seen, suppressed, origin) = try await onDedicatedThread {
                let directory = try TemporaryDirectory()
                defer { directory.remove() }
                let fifo = directory.path + "/pressure.fifo"
                guard mkfifo(fifo, 0o600) == 0 else { throw TestFailure("mkfifo: errno \(errno)") }
                let loop = try MainLoop(onCurrentThread: ())
                let clock = ManualClock()
                let monitor = MemoryPressureMonitor(
                    loop: loop,
                    settings: .init(minimumInterval: .seconds(10)),
                    clock: clock,
                    logger: CapturedLog().logger()
                )
                var calls: [Duration] = []
                let source = try monitor.start(environment: ["MEMORY_PRESSURE_WATCH": fifo]) {
                    calls.append(clock.now.offset)
                }
                let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                guard writer >= 0 else { throw TestFailure("open fifo: errno \(errno)") }
                defer { close(writer) }
                // Events at 0 s, 3 s, 9.9 s, 10 s and 12 s: the first and the one at 10 s pass.
                for step in [Duration.zero, .seconds(3), .milliseconds(6900), .milliseconds(100), .seconds(2)] {
                    clock.advance(by: step)
                    let before = monitor.eventCount
                    _ = write(writer, "x", 1)
                    guard try runLoop(loop, until: { monitor.eventCount == before + 1 }) else {
                        throw TestFailure("event \(before + 1) never arrived")
                    }
                }
                return (calls, monitor.eventCount, monitor.suppressedCount, source?.origin)
            }
            #expect(calls == [.zero, .seconds(10)])
            #expect(seen == 5)
            #expect(suppressed == 3)
            #expect(origin == .environment)
        }

        @Test func aSocketNamedByTheEnvironmentGetsTheDecodedWriteAndItsDataAreEvents() async throws {
            let (received, calls, watchingAfterClose, warnings) = try await onDedicatedThread {
                let directory = try TemporaryDirectory()
                defer { directory.remove() }
                let path = directory.path + "/pressure.sock"
                let listener = try UnixListener(path: path)
                let loop = try MainLoop(onCurrentThread: ())
                let log = CapturedLog()
                let monitor = MemoryPressureMonitor(
                    loop: loop,
                    settings: .init(minimumInterval: .zero),
                    clock: ManualClock(),
                    logger: log.logger()
                )
                var calls = 0
                // "some 100000 2000000" and its NUL.
                let write = "c29tZSAxMDAwMDAgMjAwMDAwMAA="
                try monitor.start(environment: ["MEMORY_PRESSURE_WATCH": path, "MEMORY_PRESSURE_WRITE": write]) {
                    calls += 1
                }
                let connection = try listener.accept()
                let received = connection.read(count: 20)
                connection.write("pressure")
                guard try runLoop(loop, until: { calls == 1 }) else { throw TestFailure("no event from the socket") }
                connection.close()
                _ = try runLoop(loop, until: { monitor.source == nil })
                return (received, calls, monitor.source != nil, log.messages(.warning))
            }
            #expect(received == Array("some 100000 2000000".utf8) + [0])
            #expect(calls == 1)
            #expect(!watchingAfterClose)
            #expect(warnings.count == 1)
            #expect(warnings.first?.contains("closed") == true)
        }

        @Test func aTriggerKeptInTheStoreIsReusedByTheNextProcessAndOnlyDroppedWhenItChanges() async throws {
            let (stored, reused, dropped, closedFirst) = try await onDedicatedThread {
                let loop = try MainLoop(onCurrentThread: ())
                let source = MemoryPressureSource(path: "/proc/pressure/memory", origin: .systemWide, write: Array("some 200000 2000000\0".utf8))
                var stored: [(Int32, String)] = []
                var dropped: [String] = []
                // The first process arms the trigger and keeps a copy (as systemd's store would: a dup).
                let first = MemoryPressureMonitor(loop: loop, settings: .init(), logger: CapturedLog().logger())
                first.keeping = TriggerKeeping(kept: nil, keep: { descriptor, name in stored.append((dup(descriptor), name)); return true }, drop: { dropped.append($0) })
                try first.start(sources: [source]) {}
                first.stop(keepingTheStoredTrigger: true)
                // The next one is handed the copy back and reuses it: nothing stored again, nothing dropped.
                let second = MemoryPressureMonitor(loop: loop, settings: .init(), logger: CapturedLog().logger())
                var storedAgain = 0
                second.keeping = TriggerKeeping(kept: (stored[0].1, stored[0].0), keep: { _, _ in storedAgain += 1; return true }, drop: { dropped.append($0) })
                try second.start(sources: [source]) {}
                let reused = storedAgain == 0
                let closedFirst = dropped
                // A reload's stop (the trigger changes) drops it from the store.
                second.stop()
                return (stored.map(\.1), reused, dropped, closedFirst)
            }
            #expect(stored == ["lifecycle-psi-some-200000-2000000"])
            #expect(reused)
            #expect(closedFirst.isEmpty)
            #expect(dropped == ["lifecycle-psi-some-200000-2000000"])
        }

        @Test func theKernelAcceptsTheDefaultTriggerOnThisMachine() async throws {
            let (source, skipped, stillWatching) = try await onDedicatedThread {
                let loop = try MainLoop(onCurrentThread: ())
                let monitor = MemoryPressureMonitor(loop: loop, settings: .init(), logger: CapturedLog().logger())
                let source = try monitor.start(environment: [:]) {}
                let skipped = monitor.skipped
                monitor.stop()
                return (source, skipped, monitor.source != nil)
            }
            // Here (root, hybrid hierarchy) the cgroup's own file takes the trigger; without write access it would be
            // skipped with its reason, and /proc/pressure/memory used.
            let origin = try #require(source?.origin)
            #expect(origin == .cgroup || origin == .systemWide)
            if origin == .cgroup {
                #expect(source?.path.hasSuffix("/memory.pressure") == true)
                #expect(skipped.isEmpty)
            } else {
                #expect(skipped.count == 1)
            }
            #expect(!stillWatching)
        }

        @Test func aTriggerTheKernelRejectsFailsOverToTheNextSourceAndThenNamesEveryAttempt() async throws {
            let (fallback, skipped, failure) = try await onDedicatedThread {
                let loop = try MainLoop(onCurrentThread: ())
                let monitor = MemoryPressureMonitor(loop: loop, settings: .init(), logger: CapturedLog().logger())
                let good = MemoryPressureTrigger().bytes
                // A threshold beyond its window: the kernel refuses it with EINVAL.
                let bad = MemoryPressureTrigger(threshold: .seconds(3), window: .seconds(2)).bytes
                let fallback = try monitor.start(sources: [
                    MemoryPressureSource(path: "/nonexistent/memory.pressure", origin: .cgroup, write: good),
                    MemoryPressureSource(path: "/proc/pressure/memory", origin: .systemWide, write: good),
                ]) {}
                let skipped = monitor.skipped.map(\.description)
                var failure: MemoryPressureError?
                do throws(MemoryPressureError) {
                    try monitor.start(sources: [
                        MemoryPressureSource(path: "/proc/pressure/memory", origin: .systemWide, write: bad),
                        MemoryPressureSource(path: "/proc/self/status", origin: .systemWide, write: []),
                    ]) {}
                } catch {
                    failure = error
                }
                return (fallback.path, skipped, failure)
            }
            #expect(fallback == "/proc/pressure/memory")
            #expect(skipped == ["/nonexistent/memory.pressure: stat: No such file or directory (errno 2)"])
            let error = try #require(failure)
            #expect(error.attempts.count == 2)
            #expect(
                error.description.hasPrefix(
                    "Memory pressure cannot be watched: /proc/pressure/memory: "
                        + "write \"some 3000000 2000000\": Invalid argument"
                )
            )
            #expect(error.description.contains("/proc/self/status"))
        }
    }
}

/// A clock the test moves by hand (swift-async-algorithms' ManualClock, reduced to what the rate limit reads).
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let current = ConditionLock(Instant(offset: .zero))

    var now: Instant { current.withLock { $0 } }
    var minimumResolution: Duration { .nanoseconds(1) }

    func advance(by duration: Duration) {
        current.withLock { $0 = $0.advanced(by: duration) }
    }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        // The rate limit only reads the time; nothing sleeps on this clock.
        preconditionFailure("ManualClock does not sleep")
    }
}

/// A listening AF_UNIX stream socket at a path, standing in for a memory pressure socket.
final class UnixListener {
    let fd: Int32

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(fd, 4) == 0 else { throw TestFailure("bind/listen: errno \(errno)") }
    }

    deinit { close(fd) }

    func accept() throws -> Connection {
        let connection = Glibc.accept(fd, nil, nil)
        guard connection >= 0 else { throw TestFailure("accept: errno \(errno)") }
        return Connection(fd: connection)
    }

    final class Connection {
        private(set) var fd: Int32

        init(fd: Int32) { self.fd = fd }
        deinit { close() }

        /// Reads exactly `count` bytes (or fewer at end of file).
        func read(count: Int) -> [UInt8] {
            var result: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: count)
            while result.count < count {
                let got = Glibc.read(fd, &buffer, count - result.count)
                if got <= 0 { break }
                result += buffer[..<got]
            }
            return result
        }

        func write(_ text: String) {
            _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        }

        func close() {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }
}
