//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import Logging
import Synchronization
import Testing

@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

// The writer against a stand-in for journald's socket: a bound AF_UNIX datagram socket in a temporary directory that
// the test reads, or does not read (a stopped or hung journald), or binds only later (no journald yet).
//
// How many datagrams an unread socket takes before a send would block depends on the host: its queue holds
// net.unix.max_dgram_qlen of them (the kernel's 10, or 512 on a machine systemd booted), and the sender's own SO_SNDBUF
// holds their bytes until they are read. So the tests that fill journald's queue give the writer a small send buffer
// (``JournalWriterTests/smallSendBuffer``): it fills after a few dozen entries, whichever of the two limits the host
// has, and every count the tests assert is taken from the writer's statistics, not from the host's settings.

/// A datagram socket at a path, standing in for /run/systemd/journal/socket.
final class FakeJournald {
    let path: String
    private(set) var fd: Int32 = -1

    init(path: String, bind: Bool = true) throws {
        self.path = path
        if bind { try self.bind() }
    }

    deinit { if fd >= 0 { close(fd) } }

    func bind() throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard bound == 0 else { throw TestFailure("bind \(path): errno \(errno)") }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// One entry: a datagram's bytes, or the contents of the memfd it carried (and that memfd's seals); nil after two
    /// seconds without one.
    func receive() -> (bytes: [UInt8], seals: Int32?)? {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        // struct cmsghdr (size_t len, int level, int type) then one int: CMSG_SPACE(sizeof(int)) is 24 on LP64.
        var control = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { controlBytes in
                var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlBytes.baseAddress
                    message.msg_controllen = controlBytes.count
                    let received = recvmsg(fd, &message, 0)
                    return (received, message.msg_controllen)
                }
            }
        }
        guard count.0 >= 0 else { return nil }
        if count.0 == 0, count.1 >= 20 {
            let level = control.withUnsafeBytes { $0.load(fromByteOffset: 8, as: Int32.self) }
            let type = control.withUnsafeBytes { $0.load(fromByteOffset: 12, as: Int32.self) }
            guard level == SOL_SOCKET, type == 1 /* SCM_RIGHTS */ else { return nil }
            let memfd = control.withUnsafeBytes { $0.load(fromByteOffset: 16, as: Int32.self) }
            defer { close(memfd) }
            var contents: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            var offset: off_t = 0
            while true {
                let read = chunk.withUnsafeMutableBytes { pread(memfd, $0.baseAddress, $0.count, offset) }
                guard read > 0 else { break }
                contents += chunk[..<read]
                offset += off_t(read)
            }
            return (contents, fcntl(memfd, 1034 /* F_GET_SEALS */))
        }
        return (Array(buffer[..<count.0]), nil)
    }

    /// The text fields of one received entry (no value with a newline).
    func receiveFields() -> [String: String]? {
        guard let (bytes, _) = receive() else { return nil }
        var fields: [String: String] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return fields
    }
}

// The reader thread alone uses it while it runs.
extension FakeJournald: @unchecked Sendable {}

/// A journald that takes one entry every `pause` microseconds, on a thread of its own: slowed down, never stopped.
final class SlowReader: Sendable {
    private final class Shared: Sendable {
        let taken = ConditionLock<[Int]>([])
        let stopping = Atomic<Bool>(false)
    }

    private let state: Shared
    private let thread: pthread_t

    init(_ journald: FakeJournald, pause: useconds_t) throws {
        let state = Shared()
        guard case .success(let thread) = SystemThread.start(blockingSignals: true, {
            while !state.stopping.load(ordering: .relaxed) {
                guard let fields = journald.receiveFields() else { continue }
                if let number = fields["LIFECYCLE_SEQ"].flatMap({ Int($0) }) { state.taken.withLock { $0.append(number) } }
                usleep(pause)
            }
        }) else { throw TestFailure("pthread_create") }
        self.state = state
        self.thread = thread
    }

    /// Stops once it has taken the entry numbered `last` (or after 30 s) and returns the numbers it took, in order.
    func stop(after last: Int) -> [Int] {
        let deadline = ContinuousClock.now + .seconds(30)
        while state.taken.withLock({ $0.last }) != last, ContinuousClock.now < deadline { usleep(10_000) }
        state.stopping.store(true, ordering: .relaxed)
        pthread_join(thread, nil)
        return state.taken.withLock { $0 }
    }
}

@Suite struct JournalWriterTests {
    /// A fresh directory (removed when the test ends) and the socket path in it.
    static func place() throws -> (TemporaryDirectory, String) {
        let directory = try TemporaryDirectory()
        return (directory, directory.path + "/journal")
    }

    /// A send buffer that a few dozen short entries fill (the kernel doubles it and counts each datagram's overhead),
    /// fewer than the tests send, whatever `net.unix.max_dgram_qlen` is.
    static let smallSendBuffer: Int32 = 8 << 10

    static func entry(_ number: Int) -> [String] {
        ["MESSAGE=line \(number)", "PRIORITY=6", "SYSLOG_IDENTIFIER=test", "LIFECYCLE_SEQ=\(number)"]
    }

    @Test func theNativeProtocolWritesTextFieldsAsLinesAndValuesWithANewlineWithTheirLength() {
        let bytes = JournalWriter.encode(["MESSAGE=hello", "PRIORITY=6", "MULTI=a\nb", "NOEQUALS", "=nameless", "EMPTY="])
        var expected = Array("MESSAGE=hello\nPRIORITY=6\nMULTI\n".utf8)
        expected += [3, 0, 0, 0, 0, 0, 0, 0]
        expected += Array("a\nb\nEMPTY=\n".utf8)
        #expect(bytes == expected)
    }

    @Test func whileJournaldTakesEntriesTheyAreSentAtOnceInOrderFromTheCaller() throws {
        let (directory, socketPath) = try Self.place()
        defer { directory.remove() }
        let journald = try FakeJournald(path: socketPath)
        let writer = JournalWriter(socketPath: socketPath)
        defer { writer.stop() }
        for number in 1...5 {
            writer.submit(Self.entry(number), identifier: "test")
            // Read as journald does, so that its queue never fills.
            let received = try #require(journald.receive())
            #expect(received.bytes == JournalWriter.encode(Self.entry(number)))
        }
        let statistics = writer.statistics
        #expect(statistics.sentDirectly == 5)
        #expect(statistics.sentLate == 0 && statistics.dropped == 0 && statistics.waiting == 0)
    }

    @Test func whenJournaldReadsNothingEntriesWaitThenAreDroppedAndOneReportCountsBoth() throws {
        let (directory, socketPath) = try Self.place()
        defer { directory.remove() }
        let journald = try FakeJournald(path: socketPath)
        // Durations far apart, so that what is measured does not depend on the machine's speed: a send that waited
        // would wait the stall timeout (2 s); a wait lasts its budget (1 s) from the moment it is called.
        let writer = JournalWriter(
            socketPath: socketPath, limits: .init(entries: 20, bytes: 1 << 20), stallTimeout: .seconds(2),
            sendBufferSize: Self.smallSendBuffer
        )
        defer { writer.stop() }
        writer.deliveryBudget = .seconds(1)
        var slowest = Duration.zero
        for number in 1...100 {
            let began = ContinuousClock.now
            writer.submit(Self.entry(number), identifier: "test")
            slowest = max(slowest, ContinuousClock.now - began)
        }
        // Never blocked: the socket's queue took a few, 20 wait, the rest were dropped.
        #expect(slowest < .seconds(1))
        let full = writer.statistics
        #expect(full.sentDirectly > 0 && full.sentDirectly < 100)
        #expect(full.waiting == 20)
        #expect(full.dropped == 100 - full.sentDirectly - 20)

        // Waiting for delivery gives up after its budget, then returns at once until the queue has drained.
        var began = ContinuousClock.now
        writer.waitForDelivery()
        let firstWait = ContinuousClock.now - began
        #expect(firstWait >= .milliseconds(990) && firstWait < .milliseconds(1900), "\(firstWait)")
        began = ContinuousClock.now
        writer.waitForDelivery()
        #expect(ContinuousClock.now - began < .milliseconds(500))

        // journald reads again: everything sent, in order, then the report.
        var numbers: [Int] = []
        var report: [String: String]?
        while report == nil, let fields = journald.receiveFields() {
            if fields["LIFECYCLE_JOURNAL_DROPPED"] != nil { report = fields } else { numbers.append(Int(fields["LIFECYCLE_SEQ"]!)!) }
        }
        #expect(numbers == Array(1...(full.sentDirectly + 20)))
        let summary = try #require(report)
        #expect(summary["LIFECYCLE_JOURNAL_DROPPED"] == "\(full.dropped)")
        #expect(summary["LIFECYCLE_JOURNAL_DELAYED"] == "20")
        #expect(summary["PRIORITY"] == "4")
        #expect(summary["SYSLOG_IDENTIFIER"] == "test")
        #expect(summary["MESSAGE"]?.hasPrefix("journald did not take log lines at once for ") == true)
        #expect(summary["MESSAGE"]?.hasSuffix(
            ": 20 lines waited and reached it late, \(full.dropped) were dropped (at most 20 lines wait)") == true)

        // Back to normal: the next entry goes at once.
        writer.submit(Self.entry(101), identifier: "test")
        #expect(journald.receiveFields()?["LIFECYCLE_SEQ"] == "101")
        let after = writer.statistics
        #expect(after.sentDirectly == full.sentDirectly + 1)
        #expect((after.sentLate, after.waiting, after.reports) == (20, 0, 1))
    }

    @Test func entriesWaitForASocketThatIsNotThereAndGoOnceItIs() throws {
        let (directory, socketPath) = try Self.place()
        defer { directory.remove() }
        let journald = try FakeJournald(path: socketPath, bind: false)
        let writer = JournalWriter(socketPath: socketPath, stallTimeout: .milliseconds(50))
        defer { writer.stop() }
        for number in 1...3 { writer.submit(Self.entry(number), identifier: "test") }
        #expect(writer.statistics.waiting == 3)
        usleep(150_000)
        try journald.bind()
        var received: [[String: String]] = []
        while received.count < 4, let fields = journald.receiveFields() { received.append(fields) }
        #expect(received.prefix(3).map { $0["MESSAGE"] } == ["line 1", "line 2", "line 3"])
        // No drop: a notice that lines waited.
        #expect(received.last?["PRIORITY"] == "5")
        #expect(received.last?["LIFECYCLE_JOURNAL_DROPPED"] == "0")
        #expect(received.last?["MESSAGE"]?.hasSuffix(": 3 lines waited and reached it late; none was dropped") == true)
    }

    @Test func anEntryTooLargeForADatagramGoesInASealedMemfd() throws {
        let (directory, socketPath) = try Self.place()
        defer { directory.remove() }
        let journald = try FakeJournald(path: socketPath)
        let writer = JournalWriter(socketPath: socketPath, sendBufferSize: 16 << 10)
        defer { writer.stop() }
        let large = ["MESSAGE=" + String(repeating: "x", count: 200_000), "DETAIL=two\nlines", "PRIORITY=6"]
        writer.submit(large, identifier: "test")
        let received = try #require(journald.receive())
        #expect(received.bytes == JournalWriter.encode(large))
        // F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE, which journald requires, and F_SEAL_SEAL.
        #expect(received.seals.map { $0 & 0xF } == 0xF)
        #expect(writer.statistics.sentInMemfd == 1)
        #expect(writer.statistics.sentDirectly == 1)
    }

    @Test func aJournaldThatKeepsTakingEntriesSlowlyHoldsAWaitNoLongerThanItsBudgetAndTheNextWaitsNotAtAll() throws {
        // journald slowed down (a local user throttling it): it takes an entry every 5 ms, never pausing long enough to
        // count as a stall (10 s here), so only the budget ends a wait.
        let (directory, socketPath) = try Self.place()
        defer { directory.remove() }
        let journald = try FakeJournald(path: socketPath)
        let writer = JournalWriter(
            socketPath: socketPath, limits: .init(entries: 2000, bytes: 4 << 20), stallTimeout: .seconds(10),
            sendBufferSize: Self.smallSendBuffer
        )
        defer { writer.stop() }
        writer.deliveryBudget = .milliseconds(500)
        for number in 1...800 { writer.submit(Self.entry(number), identifier: "test") }
        let queued = writer.statistics.waiting
        #expect(queued > 700)
        let reader = try SlowReader(journald, pause: 5_000)
        var began = ContinuousClock.now
        writer.waitForDelivery()
        let firstWait = ContinuousClock.now - began
        // The budget, not the 4 s journald needs for the queue: it was still taking entries when the wait ended.
        #expect(firstWait >= .milliseconds(490) && firstWait < .seconds(3), "\(firstWait)")
        #expect(writer.statistics.waiting > 0)
        began = ContinuousClock.now
        writer.waitForDelivery()
        #expect(ContinuousClock.now - began < .milliseconds(250))
        // Once journald has caught up, a wait waits for it again (and returns as soon as the queue is empty).
        while writer.statistics.waiting > 0 { usleep(10_000) }
        writer.waitForDelivery()
        writer.submit(Self.entry(801), identifier: "test")
        let received = reader.stop(after: 801)
        #expect(received == Array(1...801))
    }

    @Test func theHandlerSendsTheSameFieldsItComputes() throws {
        let (directory, socketPath) = try Self.place()
        defer { directory.remove() }
        let journald = try FakeJournald(path: socketPath)
        let writer = JournalWriter(socketPath: socketPath)
        defer { writer.stop() }
        var handler = JournalLogHandler(label: "lifecycle", identifier: "lifecycled", logLevel: .debug, writer: writer)
        handler[metadataKey: "lifecycle.cause"] = "signal:SIGUSR1"
        let event = LogEvent(
            level: .info, message: "applicationDidEnterBackground delegate",
            metadata: ["lifecycle.event": "applicationDidEnterBackground", "lifecycle.seq": "7"],
            source: nil, file: "LifecycleKit/Trace.swift", function: "write", line: 9
        )
        handler.log(event: event)
        let received = try #require(journald.receive())
        #expect(received.bytes == JournalWriter.encode(handler.journalFields(for: event)))
        #expect(String(decoding: received.bytes, as: UTF8.self).contains("LIFECYCLE_EVENT=applicationDidEnterBackground\n"))
    }
}
