import CSystemd
import Logging
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A PSI trigger: report when tasks stalled on memory for at least `threshold` within any `window`.
///
/// The kernel accepts a window of 500 ms to 10 s; an unprivileged process only a multiple of 2 s (Linux 6.5+),
/// which is why systemd's default, and this one, is 200 ms per 2 s.
public struct MemoryPressureTrigger: Hashable, Sendable, CustomStringConvertible {
    /// Which stall counts: `some` (at least one task stalled) or `full` (all non-idle tasks stalled).
    public enum Kind: String, Hashable, Sendable {
        /// At least one task stalled on memory.
        case some
        /// Every non-idle task stalled on memory at once.
        case full
    }

    /// Which stall counts.
    public var kind: Kind
    /// The stall time within one window that fires the trigger.
    public var threshold: Duration
    /// The window the stall is measured over.
    public var window: Duration

    /// Creates a trigger; systemd's default is `some` 200 ms per 2 s.
    public init(kind: Kind = .some, threshold: Duration = .milliseconds(200), window: Duration = .seconds(2)) {
        self.kind = kind
        self.threshold = threshold
        self.window = window
    }

    /// What is written to a `memory.pressure` file: `some 200000 2000000`, in microseconds.
    public var text: String {
        "\(kind.rawValue) \(threshold.microsecondsRoundedUp) \(window.microsecondsRoundedUp)"
    }

    /// The bytes written: the text and a NUL. /proc/pressure/* overwrites the last byte written with a NUL before
    /// parsing, so without a terminator the window would lose its last digit.
    public var bytes: [UInt8] { Array(text.utf8) + [0] }

    /// For logs: `some 200 ms per 2 s`.
    public var description: String {
        "\(kind.rawValue) \(threshold.formattedForLog) per \(window.formattedForLog)"
    }
}

/// How the cgroup hierarchies are mounted under /sys/fs/cgroup.
public enum CgroupLayout: String, Hashable, Sendable {
    /// cgroup2 only, mounted at /sys/fs/cgroup.
    case unified
    /// cgroup v1 controllers, plus cgroup2 at /sys/fs/cgroup/unified (systemd's "hybrid" mode).
    case hybrid
    /// cgroup v1 only: no per-cgroup pressure files.
    case legacy

    /// The layout of this mount namespace, from /proc/self/mountinfo.
    public static func detect() -> CgroupLayout {
        detect(mountinfo: (try? SystemFiles.readText("/proc/self/mountinfo")) ?? "")
    }

    /// The layout a /proc/self/mountinfo text describes: where (if anywhere) a cgroup2 file system is mounted.
    public static func detect(mountinfo: String) -> CgroupLayout {
        var cgroup2MountPoints: Set<Substring> = []
        for line in mountinfo.split(separator: "\n") {
            // "id parent major:minor root mountpoint options [optional fields] - fstype source superoptions"
            let fields = line.split(separator: " ")
            guard fields.count > 4, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { continue }
            if fields[dash + 1] == "cgroup2" { cgroup2MountPoints.insert(fields[4]) }
        }
        if cgroup2MountPoints.contains("/sys/fs/cgroup") { return .unified }
        if cgroup2MountPoints.contains("/sys/fs/cgroup/unified") { return .hybrid }
        return .legacy
    }

    /// Where this layout mounts cgroup2, or nil for `legacy`.
    public var cgroup2Root: String? {
        switch self {
        case .unified: "/sys/fs/cgroup"
        case .hybrid: "/sys/fs/cgroup/unified"
        case .legacy: nil
        }
    }
}

/// One file (or FIFO, or socket) a ``MemoryPressureMonitor`` can watch, and what it writes there first.
public struct MemoryPressureSource: Hashable, Sendable, CustomStringConvertible {
    /// Where the path came from.
    public enum Origin: String, Hashable, Sendable {
        /// `$MEMORY_PRESSURE_WATCH`, set by systemd 254+ (`MemoryPressureWatch=`).
        case environment
        /// The `memory.pressure` of the process's own cgroup (cgroup2).
        case cgroup
        /// `/proc/pressure/memory`: the whole system.
        case systemWide = "system-wide"
    }

    /// The path.
    public var path: String
    /// Where the path came from.
    public var origin: Origin
    /// Written once after opening: a PSI trigger, or `$MEMORY_PRESSURE_WRITE`; empty for none.
    public var write: [UInt8]

    /// Describes a source.
    public init(path: String, origin: Origin, write: [UInt8]) {
        self.path = path
        self.origin = origin
        self.write = write
    }

    /// What is written, as text up to its NUL (a trigger such as `some 200000 2000000`).
    public var writtenText: String {
        String(decoding: write.prefix { $0 != 0 }, as: UTF8.self)
    }

    public var description: String { "\(path) (\(origin.rawValue))" }
}

/// The process's own cgroup2 path and what the environment says, turned into the sources to try, in order.
public enum MemoryPressurePlan: Hashable, Sendable {
    /// Watching is switched off (`MEMORY_PRESSURE_WATCH=` empty or `/dev/null`, as systemd does).
    case disabled(reason: String)
    /// Try these sources in order; the first that opens and accepts its write is watched.
    case sources([MemoryPressureSource])

    /// The systemd-wide fallback: every task of the machine.
    public static let systemWidePath = "/proc/pressure/memory"

    /// Decides what to watch: `$MEMORY_PRESSURE_WATCH` (with `$MEMORY_PRESSURE_WRITE`, base64) when set, with no
    /// fallback, as sd-event does; else the cgroup's own `memory.pressure`, then `/proc/pressure/memory`.
    ///
    /// - Parameters:
    ///   - environment: the process environment (only the two variables are read).
    ///   - procSelfCgroup: the text of /proc/self/cgroup; its `0::PATH` line names the cgroup2 group.
    ///   - layout: where cgroup2 is mounted.
    ///   - trigger: the trigger to write when the environment names none.
    public static func make(
        environment: [String: String],
        procSelfCgroup: String?,
        layout: CgroupLayout,
        trigger: MemoryPressureTrigger
    ) throws(MemoryPressureError) -> MemoryPressurePlan {
        if let watch = environment["MEMORY_PRESSURE_WATCH"] {
            if watch.isEmpty || watch == "/dev/null" {
                return .disabled(reason: "MEMORY_PRESSURE_WATCH=\(watch) switches it off")
            }
            guard watch.hasPrefix("/"), !watch.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) else {
                throw MemoryPressureError(
                    attempts: [],
                    summary: "MEMORY_PRESSURE_WATCH=\(watch) is not an absolute, normalized path"
                )
            }
            var write: [UInt8] = []
            if let encoded = environment["MEMORY_PRESSURE_WRITE"] {
                guard let decoded = Base64.decode(encoded) else {
                    throw MemoryPressureError(
                        attempts: [],
                        summary: "MEMORY_PRESSURE_WRITE=\(encoded) is not valid base64"
                    )
                }
                write = decoded
            }
            return .sources([MemoryPressureSource(path: watch, origin: .environment, write: write)])
        }
        var sources: [MemoryPressureSource] = []
        if let procSelfCgroup, let path = cgroupPressurePath(procSelfCgroup: procSelfCgroup, layout: layout) {
            sources.append(MemoryPressureSource(path: path, origin: .cgroup, write: trigger.bytes))
        }
        sources.append(MemoryPressureSource(path: systemWidePath, origin: .systemWide, write: trigger.bytes))
        return .sources(sources)
    }

    /// The `memory.pressure` file of the cgroup2 group that /proc/self/cgroup names (`0::/system.slice/x.service`),
    /// or nil when there is no cgroup2 line or no cgroup2 mount.
    public static func cgroupPressurePath(procSelfCgroup: String, layout: CgroupLayout) -> String? {
        guard let root = layout.cgroup2Root else { return nil }
        for line in procSelfCgroup.split(separator: "\n") where line.hasPrefix("0::") {
            let group = line.dropFirst(3)
            guard group.hasPrefix("/") else { return nil }
            // A cgroup removed under us is reported with this suffix; its files are gone.
            guard !group.hasSuffix(" (deleted)") else { return nil }
            let trimmed = group.hasSuffix("/") ? String(group.dropLast()) : String(group)
            return root + trimmed + "/memory.pressure"
        }
        return nil
    }
}

/// Why memory pressure cannot be watched: every source tried and what each reported.
public struct MemoryPressureError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Each source tried, with the error that ruled it out.
    public var attempts: [Attempt]
    /// A reason that applies before any source is tried (a bad environment variable), if any.
    public var summary: String?

    /// One source that could not be used.
    public struct Attempt: Hashable, Sendable, CustomStringConvertible {
        /// The source.
        public var source: MemoryPressureSource
        /// What went wrong, e.g. `open: Read-only file system (errno 30)`.
        public var reason: String

        public var description: String { "\(source.path): \(reason)" }
    }

    /// Creates an error.
    public init(attempts: [Attempt], summary: String? = nil) {
        self.attempts = attempts
        self.summary = summary
    }

    public var description: String {
        var parts: [String] = []
        if let summary { parts.append(summary) }
        parts += attempts.map(\.description)
        return "Memory pressure cannot be watched: " + parts.joined(separator: "; ") + "."
    }
}

/// At most one event per interval: the first event passes, the next only once the interval has passed since it.
public struct RateLimiter: Hashable, Sendable {
    /// The shortest time between two admitted events.
    public var minimumInterval: Duration
    /// When the last admitted event happened, on the caller's clock.
    public private(set) var lastAdmitted: Duration?

    /// Creates a limiter that has admitted nothing yet.
    public init(minimumInterval: Duration) {
        self.minimumInterval = minimumInterval
    }

    /// Whether an event at `now` (time since any fixed origin) passes; if it does, it becomes the last admitted.
    public mutating func admit(at now: Duration) -> Bool {
        if let lastAdmitted, now - lastAdmitted < minimumInterval { return false }
        lastAdmitted = now
        return true
    }

    /// How long after `now` the next event would pass (zero if it would pass now).
    public func wait(at now: Duration) -> Duration {
        guard let lastAdmitted else { return .zero }
        return max(.zero, lastAdmitted + minimumInterval - now)
    }
}

/// Watches memory pressure with a PSI trigger polled by the main loop (`EPOLLPRI`, no timer), and calls a handler,
/// at most once per minimum interval.
///
/// Sources, in order: `$MEMORY_PRESSURE_WATCH` (+ `$MEMORY_PRESSURE_WRITE`) when systemd 254+ set them; else the
/// process's own cgroup2 `memory.pressure` (under /sys/fs/cgroup/unified on a hybrid hierarchy); else
/// `/proc/pressure/memory`. A FIFO or socket named by `$MEMORY_PRESSURE_WATCH` is read instead (any data is an
/// event), as sd-event does. Like ``MainLoop``, a monitor lives on the loop's thread.
public final class MemoryPressureMonitor {
    /// What to watch for and how often to report.
    public struct Settings: Hashable, Sendable {
        /// The trigger written to a PSI file (ignored when `$MEMORY_PRESSURE_WRITE` supplies one).
        public var trigger: MemoryPressureTrigger
        /// At most one report per this interval; events in between are counted and dropped.
        public var minimumInterval: Duration

        /// Creates settings; the defaults are systemd's trigger and one report per 10 s.
        public init(
            trigger: MemoryPressureTrigger = MemoryPressureTrigger(),
            minimumInterval: Duration = .seconds(10)
        ) {
            self.trigger = trigger
            self.minimumInterval = minimumInterval
        }
    }

    /// The source being watched, once ``start(environment:handler:)`` succeeded.
    public private(set) var source: MemoryPressureSource?
    /// The sources tried before ``source`` and why each was passed over (e.g. a read-only cgroup file).
    public private(set) var skipped: [MemoryPressureError.Attempt] = []
    /// Events seen since start (reported or not).
    public private(set) var eventCount = 0
    /// Events dropped by the rate limit since start.
    public private(set) var suppressedCount = 0
    /// The settings in force; changing ``Settings/minimumInterval`` takes effect at the next event, a new trigger
    /// only at the next start.
    public var settings: Settings {
        didSet { limiter.minimumInterval = settings.minimumInterval }
    }

    private let loop: MainLoop
    private let logger: Logger
    private let now: () -> Duration
    private var limiter: RateLimiter
    private var fd: Int32 = -1
    private var ioSource: MainLoop.Source?
    private var readsData = false
    private var handler: (() -> Void)?

    /// Creates a monitor on the loop; `clock` times the rate limit (tests pass a manual clock).
    public init<C: Clock>(loop: MainLoop, settings: Settings, clock: C, logger: Logger) where C.Duration == Duration {
        self.loop = loop
        self.settings = settings
        self.logger = logger
        self.limiter = RateLimiter(minimumInterval: settings.minimumInterval)
        let origin = clock.now
        self.now = { origin.duration(to: clock.now) }
    }

    /// Creates a monitor whose rate limit runs on the monotonic clock.
    public convenience init(loop: MainLoop, settings: Settings, logger: Logger) {
        self.init(loop: loop, settings: settings, clock: ContinuousClock(), logger: logger)
    }

    deinit {
        stop()
    }

    /// The two variables systemd 254+ sets for `MemoryPressureWatch=`, read from the process environment.
    public static var processEnvironment: [String: String] {
        var result: [String: String] = [:]
        for name in ["MEMORY_PRESSURE_WATCH", "MEMORY_PRESSURE_WRITE"] {
            if let value = ProcessEnvironment.value(name) { result[name] = value }
        }
        return result
    }

    /// Opens the first usable source, writes its trigger, and polls it on the loop; returns what it watches, or
    /// nil when the environment switched watching off. Throws, naming every source tried, when none works.
    @discardableResult
    public func start(
        environment: [String: String] = MemoryPressureMonitor.processEnvironment,
        handler: @escaping () -> Void
    ) throws(MemoryPressureError) -> MemoryPressureSource? {
        stop()
        let plan = try MemoryPressurePlan.make(
            environment: environment,
            procSelfCgroup: try? SystemFiles.readText("/proc/self/cgroup"),
            layout: .detect(),
            trigger: settings.trigger
        )
        switch plan {
        case .disabled(let reason):
            logger.info("memory pressure is not watched: \(reason)")
            return nil
        case .sources(let sources):
            return try start(sources: sources, handler: handler)
        }
    }

    /// Watches the first of these sources that works (the plan already made).
    @discardableResult
    public func start(sources: [MemoryPressureSource], handler: @escaping () -> Void) throws(MemoryPressureError)
        -> MemoryPressureSource
    {
        stop()
        var attempts: [MemoryPressureError.Attempt] = []
        for candidate in sources {
            do {
                try open(candidate)
                self.handler = handler
                self.source = candidate
                self.skipped = attempts
                eventCount = 0
                suppressedCount = 0
                limiter = RateLimiter(minimumInterval: settings.minimumInterval)
                return candidate
            } catch {
                attempts.append(MemoryPressureError.Attempt(source: candidate, reason: error.reason))
            }
        }
        throw MemoryPressureError(attempts: attempts)
    }

    /// Stops watching and closes the descriptor; the trigger goes with it.
    public func stop() {
        ioSource?.cancel()
        ioSource = nil
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        source = nil
        handler = nil
    }

    // MARK: Opening

    private struct OpenFailure: Error {
        let reason: String
        init(_ step: String, _ code: Int32 = errno) {
            reason = "\(step): \(Errno(rawValue: code).description) (errno \(code))"
        }
        init(reason: String) { self.reason = reason }
    }

    private func open(_ candidate: MemoryPressureSource) throws(OpenFailure) {
        var info = stat()
        guard stat(candidate.path, &info) == 0 else { throw OpenFailure("stat") }
        let type = info.st_mode & S_IFMT
        let descriptor: Int32
        let events: IOEvents
        switch type {
        case S_IFSOCK:
            descriptor = try Self.connectUnixSocket(candidate.path)
            events = .readable
        case S_IFREG:
            // A PSI file: the trigger lives as long as this descriptor, and fires EPOLLPRI.
            descriptor = Glibc.open(candidate.path, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
            guard descriptor >= 0 else { throw OpenFailure("open") }
            events = .priority
        case S_IFIFO, S_IFCHR:
            // Read and write, unlike sd-event: a FIFO opened for reading alone reports EPOLLHUP forever once its
            // last writer goes, which would spin the loop.
            descriptor = Glibc.open(candidate.path, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
            guard descriptor >= 0 else { throw OpenFailure("open") }
            events = .readable
        default:
            throw OpenFailure(reason: "not a PSI file, FIFO or socket")
        }
        // The trigger must be written before the descriptor is polled: a PSI file polled without a trigger never
        // wakes its poller.
        if !candidate.write.isEmpty {
            let written = candidate.write.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written != candidate.write.count {
                let code = written < 0 ? errno : EIO
                Glibc.close(descriptor)
                throw OpenFailure("write \"\(candidate.writtenText)\"", code)
            }
        }
        do {
            ioSource = try loop.addIO(fd: descriptor, events: events) { [unowned self] revents in
                self.ready(revents)
            }
        } catch {
            Glibc.close(descriptor)
            throw OpenFailure(reason: error.description)
        }
        fd = descriptor
        readsData = events == .readable
    }

    private static func connectUnixSocket(_ path: String) throws(OpenFailure) -> Int32 {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let descriptor = socket(AF_UNIX, type, 0)
        guard descriptor >= 0 else { throw OpenFailure("socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            Glibc.close(descriptor)
            throw OpenFailure(reason: "socket path too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) }
        }
        guard result == 0 || errno == EINPROGRESS else {
            let code = errno
            Glibc.close(descriptor)
            throw OpenFailure("connect", code)
        }
        return descriptor
    }

    // MARK: Events

    private func ready(_ revents: IOEvents) {
        if readsData, revents.contains(.readable) {
            if !drain() {
                fail("the peer closed \(source?.path ?? "the memory pressure source")")
                return
            }
        } else if revents.contains(.error) || revents.contains(.hangup) {
            // A PSI trigger reports EPOLLERR once its cgroup is gone; it never fires again.
            fail("\(source?.path ?? "the memory pressure file") reported an error")
            return
        }
        eventCount += 1
        let at = now()
        guard limiter.admit(at: at) else {
            suppressedCount += 1
            logger.debug(
                "memory pressure event rate-limited",
                metadata: [
                    "lifecycle.psi_events": "\(eventCount)",
                    "lifecycle.psi_suppressed": "\(suppressedCount)",
                    "lifecycle.psi_next_in": "\(limiter.wait(at: at).formattedForLog)",
                ]
            )
            return
        }
        logger.info(
            "memory pressure: \(settings.trigger) exceeded on \(source?.path ?? "?")",
            metadata: [
                "lifecycle.psi_events": "\(eventCount)",
                "lifecycle.psi_suppressed": "\(suppressedCount)",
            ]
        )
        handler?()
    }

    /// Reads and drops what a FIFO or socket delivered; false at end of file.
    private func drain() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count > 0 { continue }
            if count == 0 { return false }
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
        }
    }

    private func fail(_ reason: String) {
        logger.warning("memory pressure is no longer watched: \(reason)")
        stop()
    }
}

/// RFC 4648 base64 (standard alphabet, padded), the encoding of `$MEMORY_PRESSURE_WRITE`.
enum Base64 {
    /// The bytes, or nil when the text is not padded base64; whitespace is ignored.
    static func decode(_ text: String) -> [UInt8]? {
        let symbols = text.utf8.filter { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) }
        guard symbols.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(symbols.count / 4 * 3)
        var start = 0
        while start < symbols.count {
            var quad: [UInt8] = []
            var padding = 0
            for offset in 0..<4 {
                let symbol = symbols[start + offset]
                if symbol == UInt8(ascii: "=") {
                    // Padding only in the last two places of the last group.
                    guard start + 4 == symbols.count, offset >= 2 else { return nil }
                    padding += 1
                    continue
                }
                guard padding == 0, let value = value(of: symbol) else { return nil }
                quad.append(value)
            }
            output.append(quad[0] << 2 | quad[1] >> 4)
            if quad.count > 2 { output.append((quad[1] & 0x0f) << 4 | quad[2] >> 2) }
            if quad.count > 3 { output.append((quad[2] & 0x03) << 6 | quad[3]) }
            start += 4
        }
        return output
    }

    private static func value(of symbol: UInt8) -> UInt8? {
        switch symbol {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): symbol - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): symbol - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): symbol - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
