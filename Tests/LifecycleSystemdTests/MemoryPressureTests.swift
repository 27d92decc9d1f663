import Logging
import Synchronization
import Testing

@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

@Suite struct MemoryPressurePlanTests {
    @Test func theDefaultTriggerIsSystemdsInMicrosecondsWithATerminatingNul() {
        let trigger = MemoryPressureTrigger()
        #expect(trigger.text == "some 200000 2000000")
        #expect(trigger.bytes == Array("some 200000 2000000".utf8) + [0])
        #expect(trigger.description == "some 200 ms per 2 s")
        let full = MemoryPressureTrigger(kind: .full, threshold: .milliseconds(150), window: .seconds(4))
        #expect(full.text == "full 150000 4000000")
    }

    @Test func theCgroup2LineMapsUnderTheUnifiedMountOnAHybridHierarchy() {
        let procSelfCgroup = """
            12:memory:/system.slice/lifecycled.service
            1:name=systemd:/system.slice/lifecycled.service
            0::/system.slice/lifecycled.service
            """
        #expect(
            MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: procSelfCgroup, layout: .hybrid)
                == "/sys/fs/cgroup/unified/system.slice/lifecycled.service/memory.pressure"
        )
        #expect(
            MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: "0::/system.slice/x.service\n", layout: .unified)
                == "/sys/fs/cgroup/system.slice/x.service/memory.pressure"
        )
        #expect(
            MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: "0::/\n", layout: .unified)
                == "/sys/fs/cgroup/memory.pressure"
        )
    }

    @Test func withoutACgroup2LineOrMountThereIsNoCgroupFile() {
        #expect(MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: "0::/a.service\n", layout: .legacy) == nil)
        #expect(MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: "4:memory:/a\n", layout: .hybrid) == nil)
        #expect(
            MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: "0::/gone.service (deleted)\n", layout: .hybrid)
                == nil
        )
    }

    @Test func theLayoutComesFromWhereCgroup2IsMounted() {
        let hybrid = """
            25 1 0:22 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
            26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate
            27 25 0:24 / /sys/fs/cgroup/memory rw,nosuid shared:11 - cgroup cgroup rw,memory
            """
        let unified = "30 1 0:26 / /sys/fs/cgroup rw,nosuid,nodev shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
        let legacy = "27 25 0:24 / /sys/fs/cgroup/memory rw,nosuid shared:11 - cgroup cgroup rw,memory\n"
        #expect(CgroupLayout.detect(mountinfo: hybrid) == .hybrid)
        #expect(CgroupLayout.detect(mountinfo: unified) == .unified)
        #expect(CgroupLayout.detect(mountinfo: legacy) == .legacy)
        #expect(CgroupLayout.detect(mountinfo: "") == .legacy)
    }

    @Test func withoutTheEnvironmentTheCgroupFileComesFirstThenTheSystemWideOne() throws {
        let plan = try MemoryPressurePlan.make(
            environment: [:],
            procSelfCgroup: "0::/system.slice/lifecycled.service\n",
            layout: .hybrid,
            trigger: MemoryPressureTrigger(threshold: .milliseconds(100), window: .seconds(2))
        )
        let bytes = Array("some 100000 2000000".utf8) + [0]
        #expect(
            plan == .sources([
                MemoryPressureSource(
                    path: "/sys/fs/cgroup/unified/system.slice/lifecycled.service/memory.pressure",
                    origin: .cgroup,
                    write: bytes
                ),
                MemoryPressureSource(path: "/proc/pressure/memory", origin: .systemWide, write: bytes),
            ])
        )
    }

    @Test func systemdsVariablesReplaceTheDefaultsWithNoFallback() throws {
        let plan = try MemoryPressurePlan.make(
            environment: [
                "MEMORY_PRESSURE_WATCH": "/sys/fs/cgroup/system.slice/x.service/memory.pressure",
                // systemd 254's default: "some 200000 2000000" and its NUL.
                "MEMORY_PRESSURE_WRITE": "c29tZSAyMDAwMDAgMjAwMDAwMAA=",
            ],
            procSelfCgroup: "0::/ignored\n",
            layout: .unified,
            trigger: MemoryPressureTrigger(threshold: .milliseconds(50))
        )
        #expect(
            plan == .sources([
                MemoryPressureSource(
                    path: "/sys/fs/cgroup/system.slice/x.service/memory.pressure",
                    origin: .environment,
                    write: Array("some 200000 2000000".utf8) + [0]
                )
            ])
        )
        let withoutWrite = try MemoryPressurePlan.make(
            environment: ["MEMORY_PRESSURE_WATCH": "/run/pressure.fifo"],
            procSelfCgroup: nil,
            layout: .hybrid,
            trigger: MemoryPressureTrigger()
        )
        let fifo = MemoryPressureSource(path: "/run/pressure.fifo", origin: .environment, write: [])
        #expect(withoutWrite == .sources([fifo]))
    }

    @Test func anEmptyOrDevNullWatchSwitchesWatchingOffAsSystemdDoes() throws {
        for value in ["", "/dev/null"] {
            let plan = try MemoryPressurePlan.make(
                environment: ["MEMORY_PRESSURE_WATCH": value],
                procSelfCgroup: "0::/x\n",
                layout: .hybrid,
                trigger: MemoryPressureTrigger()
            )
            guard case .disabled = plan else {
                Issue.record("MEMORY_PRESSURE_WATCH=\(value) gave \(plan)")
                continue
            }
        }
    }

    @Test func aRelativeWatchOrBadBase64IsAnErrorNamingTheVariable() {
        #expect {
            try MemoryPressurePlan.make(
                environment: ["MEMORY_PRESSURE_WATCH": "memory.pressure"],
                procSelfCgroup: nil,
                layout: .hybrid,
                trigger: MemoryPressureTrigger()
            )
        } throws: {
            ($0 as? MemoryPressureError)?.description.contains("MEMORY_PRESSURE_WATCH=memory.pressure") == true
        }
        #expect {
            try MemoryPressurePlan.make(
                environment: ["MEMORY_PRESSURE_WATCH": "/x/../y"],
                procSelfCgroup: nil,
                layout: .hybrid,
                trigger: MemoryPressureTrigger()
            )
        } throws: { $0 is MemoryPressureError }
        #expect {
            try MemoryPressurePlan.make(
                environment: ["MEMORY_PRESSURE_WATCH": "/proc/pressure/memory", "MEMORY_PRESSURE_WRITE": "not*base64"],
                procSelfCgroup: nil,
                layout: .hybrid,
                trigger: MemoryPressureTrigger()
            )
        } throws: { ($0 as? MemoryPressureError)?.description.contains("MEMORY_PRESSURE_WRITE=not*base64") == true }
    }

    @Test func base64DecodesPaddedTextAndRejectsTheRest() {
        #expect(Base64.decode("") == [])
        #expect(Base64.decode("Zg==") == Array("f".utf8))
        #expect(Base64.decode("Zm8=") == Array("fo".utf8))
        #expect(Base64.decode("Zm9v") == Array("foo".utf8))
        #expect(Base64.decode("Zm9vYg==\n") == Array("foob".utf8))
        #expect(Base64.decode("+/+/") == [0xfb, 0xff, 0xbf])
        #expect(Base64.decode("Zm9") == nil)
        #expect(Base64.decode("Z===") == nil)
        #expect(Base64.decode("Zg==Zg==") == nil)
        #expect(Base64.decode("Zm-v") == nil)
    }
}

@Suite struct RateLimiterTests {
    @Test func theFirstEventPassesAndTheNextOnlyAfterTheInterval() {
        var limiter = RateLimiter(minimumInterval: .seconds(10))
        var admitted: [Bool] = []
        for time in [Duration.seconds(100), .seconds(100), .milliseconds(109_999)] {
            admitted.append(limiter.admit(at: time))
        }
        #expect(admitted == [true, false, false])
        #expect(limiter.wait(at: .seconds(105)) == .seconds(5))
        admitted = []
        // A dropped event does not push the next window back.
        for time in [Duration.seconds(110), .seconds(119), .seconds(120)] {
            admitted.append(limiter.admit(at: time))
        }
        #expect(admitted == [true, false, true])
        #expect(limiter.lastAdmitted == .seconds(120))
        #expect(limiter.wait(at: .seconds(125)) == .seconds(5))
    }

    @Test func aNewIntervalAppliesToTheNextEvent() {
        var limiter = RateLimiter(minimumInterval: .seconds(10))
        var admitted = [limiter.admit(at: .zero)]
        limiter.minimumInterval = .seconds(2)
        admitted.append(limiter.admit(at: .seconds(2)))
        limiter.minimumInterval = .zero
        admitted.append(limiter.admit(at: .seconds(2)))
        #expect(admitted == [true, true, true])
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

    private let current = Mutex(Instant(offset: .zero))

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

/// Log records kept in memory.
final class CapturedLog: Sendable {
    struct Record: Sendable {
        let level: Logger.Level
        let message: String
    }

    private let storage = Mutex<[Record]>([])

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
