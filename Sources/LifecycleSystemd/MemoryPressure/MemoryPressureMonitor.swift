//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// CSystemd's shim declares socket helpers whose bodies name glibc's SOCK_* constants; once the target compiles them,
// those constants resolve through CSystemd, so this file, which uses them too, imports it.
import CSystemd
import LifecyclePrimitives
package import Logging
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension CgroupLayout {
    /// The layout of this mount namespace: two statfs(2) calls, as systemd makes them (reading /proc/self/mountinfo
    /// instead had the kernel format every mount and the daemon split every line, at each start).
    package static func detect() -> CgroupLayout {
        detect { path in
            let type = csystemd_file_system_type(path)
            return type < 0 ? nil : UInt(type)
        }
    }
}

/// Watches memory pressure with a PSI trigger polled by the main loop (`EPOLLPRI`, no timer), and calls a handler,
/// at most once per minimum interval.
///
/// Sources, in order: `$MEMORY_PRESSURE_WATCH` (+ `$MEMORY_PRESSURE_WRITE`) when systemd 254+ set them; else the
/// process's own cgroup2 `memory.pressure` (under /sys/fs/cgroup/unified on a hybrid hierarchy); else
/// `/proc/pressure/memory`. A FIFO or socket named by `$MEMORY_PRESSURE_WATCH` is read instead (any data is an
/// event), as sd-event does. Like ``MainLoop``, a monitor lives on the loop's thread.
package final class MemoryPressureMonitor {
    /// What to watch for and how often to report.
    package struct Settings: Hashable, Sendable {
        /// The trigger written to a PSI file (ignored when `$MEMORY_PRESSURE_WRITE` supplies one).
        package var trigger: MemoryPressureTrigger
        /// At most one report per this interval; events in between are counted and dropped.
        package var minimumInterval: Duration

        /// Creates settings; the defaults are systemd's trigger and one report per 10 s.
        package init(
            trigger: MemoryPressureTrigger = MemoryPressureTrigger(),
            minimumInterval: Duration = .seconds(10)
        ) {
            self.trigger = trigger
            self.minimumInterval = minimumInterval
        }
    }

    /// The source being watched, once ``start(environment:handler:)`` succeeded.
    package private(set) var source: MemoryPressureSource?
    /// The sources tried before ``source`` and why each was passed over (e.g. a read-only cgroup file).
    package private(set) var skipped: [MemoryPressureError.Attempt] = []
    /// Events seen since start (reported or not).
    package private(set) var eventCount = 0
    /// Events dropped by the rate limit since start.
    package private(set) var suppressedCount = 0
    /// The settings in force; changing ``Settings/minimumInterval`` takes effect at the next event, a new trigger
    /// only at the next start.
    package var settings: Settings {
        didSet { limiter.minimumInterval = settings.minimumInterval }
    }

    /// Where the PSI trigger's descriptor is kept beside this process (systemd's file descriptor store), and what an
    /// earlier process of the service kept there: see ``TriggerKeeping``.
    package var keeping: TriggerKeeping?
    /// The name the trigger in use is kept under, while it is.
    private var keptName: String?

    private let loop: MainLoop
    private let logger: Logger
    private let now: () -> Duration
    private var limiter: RateLimiter
    private var fd: Int32 = -1
    private var ioSource: MainLoop.Source?
    private var readsData = false
    private var handler: (() -> Void)?

    /// Creates a monitor on the loop; `clock` times the rate limit (tests pass a manual clock).
    package init<C: Clock>(loop: MainLoop, settings: Settings, clock: C, logger: Logger) where C.Duration == Duration {
        self.loop = loop
        self.settings = settings
        self.logger = logger
        self.limiter = RateLimiter(minimumInterval: settings.minimumInterval)
        let origin = clock.now
        self.now = { origin.duration(to: clock.now) }
    }

    /// Creates a monitor whose rate limit runs on the monotonic clock.
    package convenience init(loop: MainLoop, settings: Settings, logger: Logger) {
        self.init(loop: loop, settings: settings, clock: ContinuousClock(), logger: logger)
    }

    deinit {
        stop()
    }

    /// The two variables systemd 254+ sets for `MemoryPressureWatch=`, read from the process environment.
    package static var processEnvironment: [String: String] {
        var result: [String: String] = [:]
        for name in ["MEMORY_PRESSURE_WATCH", "MEMORY_PRESSURE_WRITE"] {
            if let value = ProcessEnvironment.value(name) { result[name] = value }
        }
        return result
    }

    /// Opens the first usable source, writes its trigger, and polls it on the loop; returns what it watches, or
    /// nil when the environment switched watching off. Throws, naming every source tried, when none works.
    @discardableResult
    package func start(
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
    package func start(sources: [MemoryPressureSource], handler: @escaping () -> Void) throws(MemoryPressureError)
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
    ///
    /// The close of a PSI file waits for an RCU grace period (`psi_trigger_destroy` calls `synchronize_rcu`): 4–8 ms
    /// with a 250 Hz tick, several times that on a busy machine. It runs on a thread of its own, so the loop never
    /// waits for it; the process still exits only once it has returned (exit waits for every thread), which is why
    /// the daemon stops watching as soon as termination begins. A FIFO or socket is closed at once.
    package func stop() {
        stop(keepingTheStoredTrigger: false)
    }

    /// Stops watching; with `keepingTheStoredTrigger`, a trigger kept in the file descriptor store stays there (the
    /// process exits: the next one of the service reuses it), and this process's close of it is not the last, so it
    /// costs no grace period.
    package func stop(keepingTheStoredTrigger: Bool) {
        ioSource?.cancel()
        ioSource = nil
        if fd >= 0 {
            if readsData {
                Glibc.close(fd)
            } else if keptName != nil, keepingTheStoredTrigger {
                Glibc.close(fd)
            } else {
                if let keptName { keeping?.drop(keptName) }
                Self.closeTrigger(fd)
            }
        }
        keptName = nil
        fd = -1
        source = nil
        handler = nil
    }

    /// Closes a PSI trigger's descriptor on a short-lived thread (with every signal blocked, so none is delivered
    /// there), or here when no thread can be started.
    private static func closeTrigger(_ descriptor: Int32) {
        let started = SystemThread.start(blockingSignals: true) { _ = Glibc.close(descriptor) }
        switch started {
        case .success(let thread):
            // Nobody joins it: it ends when the close returns.
            pthread_detach(thread)
        case .failure:
            Glibc.close(descriptor)
        }
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
            if let reused = reuseKeptTrigger(for: candidate, file: info) {
                // The same trigger on the same file, kept by an earlier process of the service: nothing to open,
                // write or close.
                do {
                    ioSource = try loop.addIO(fd: reused, events: .priority) { [unowned self] revents in
                        self.ready(revents)
                    }
                } catch {
                    Glibc.close(reused)
                    throw OpenFailure(reason: error.description)
                }
                fd = reused
                readsData = false
                return
            }
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
        if type == S_IFREG, !candidate.write.isEmpty, let keeping {
            let name = TriggerKeeping.name(for: candidate)
            if keeping.keep(descriptor, name) { keptName = name }
        }
    }

    /// The descriptor an earlier process kept for this very trigger on this very file (same device and inode, same
    /// trigger text in its name), taken; nil when there is none. One kept for anything else is dropped from the store
    /// and closed (on a thread: its close may be the last).
    private func reuseKeptTrigger(for candidate: MemoryPressureSource, file: stat) -> Int32? {
        guard let keeping, let kept = keeping.kept else { return nil }
        self.keeping?.kept = nil
        var held = stat()
        let name = TriggerKeeping.name(for: candidate)
        if kept.name == name, !candidate.write.isEmpty, fstat(kept.descriptor, &held) == 0,
            held.st_dev == file.st_dev, held.st_ino == file.st_ino
        {
            keptName = name
            logger.debug("memory pressure: reusing the PSI trigger kept in the file descriptor store (\(name))")
            return kept.descriptor
        }
        keeping.drop(kept.name)
        Self.closeTrigger(kept.descriptor)
        return nil
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
                    LogKey.psiEvents: "\(eventCount)",
                    LogKey.psiSuppressed: "\(suppressedCount)",
                    LogKey.psiNextIn: "\(limiter.wait(at: at).formattedForLog)",
                ]
            )
            return
        }
        logger.info(
            "memory pressure: \(settings.trigger) exceeded on \(source?.path ?? "?")",
            metadata: [
                LogKey.psiEvents: "\(eventCount)",
                LogKey.psiSuppressed: "\(suppressedCount)",
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

/// Where a PSI trigger's descriptor is kept beside the process: systemd's file descriptor store (`FDSTORE=1`,
/// `FDNAME=lifecycle-psi-<trigger>`). The close of a PSI trigger's last descriptor waits for an RCU grace period
/// (docs/benchmarks.md, "Terminate"); with a copy in the store, the exiting process's close is not the last one, so
/// its exit does not wait, and the next process of the service (a restart after a crash, a watchdog kill) takes the
/// same trigger back instead of arming a new one. systemd closes it when the service stops.
package struct TriggerKeeping {
    /// What an earlier process of the service kept (passed back in `LISTEN_FDS`), if anything.
    package var kept: (name: String, descriptor: Int32)?
    /// Keeps a descriptor under a name; false when the store refused it.
    package var keep: (Int32, String) -> Bool
    /// Drops what is kept under a name (`FDSTOREREMOVE=1`).
    package var drop: (String) -> Void

    /// The names' prefix.
    package static let prefix = "lifecycle-psi-"

    /// Creates a keeping.
    package init(kept: (name: String, descriptor: Int32)?, keep: @escaping (Int32, String) -> Bool, drop: @escaping (String) -> Void) {
        self.kept = kept
        self.keep = keep
        self.drop = drop
    }

    /// `lifecycle-psi-some-200000-2000000`: the trigger's text in the name, so a changed trigger is not reused.
    package static func name(for source: MemoryPressureSource) -> String {
        prefix + String(source.writtenText.map { $0.isLetter || $0.isNumber ? $0 : "-" })
    }
}
