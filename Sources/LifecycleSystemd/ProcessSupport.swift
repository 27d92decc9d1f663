import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// The few process-level helpers every module shares: the environment, whole-file reads, and durations in the units
// the kernel and systemd speak. One place each, so their edge cases (EINTR, unset versus empty, rounding) are
// settled once.

/// The process environment.
public enum ProcessEnvironment {
    /// The value of a variable, or nil when it is unset.
    public static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Every variable, read without Foundation.
    public static func all() -> [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}

/// Whole-file reads, for configuration files and the small files of /proc and /sys.
public enum SystemFiles {
    /// The file's bytes; throws the errno of the open or read that failed.
    public static func readBytes(_ path: String) throws(Errno) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Errno(rawValue: errno) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw Errno(rawValue: errno)
            }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }

    /// The file as UTF-8 text (invalid sequences replaced).
    public static func readText(_ path: String) throws(Errno) -> String {
        String(decoding: try readBytes(path), as: UTF8.self)
    }
}

extension Duration {
    /// Whole microseconds, rounded up so that a deadline is never early; negative durations are zero.
    public var microsecondsRoundedUp: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, !(seconds == 0 && attoseconds <= 0) else { return 0 }
        let attosecondsPerMicrosecond: Int64 = 1_000_000_000_000
        let (wholeMicros, remainder) = attoseconds.quotientAndRemainder(dividingBy: attosecondsPerMicrosecond)
        let micros = UInt64(wholeMicros) + (remainder > 0 ? 1 : 0)
        let (total, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return .max }
        return total.addingReportingOverflow(micros).overflow ? .max : total + micros
    }

    /// Whole milliseconds, truncated (for log fields).
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Whole nanoseconds, truncated.
    public var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// A short human form for logs: `200 ms`, `2 s`, `1.5 s`.
    public var formattedForLog: String {
        let micro = microsecondsRoundedUp
        if micro % 1_000_000 == 0 { return "\(micro / 1_000_000) s" }
        if micro >= 1_000_000 {
            let tenths = (micro + 50_000) / 100_000
            return "\(tenths / 10).\(tenths % 10) s"
        }
        if micro % 1000 == 0 { return "\(micro / 1000) ms" }
        return "\(micro) µs"
    }
}

/// CLOCK_MONOTONIC in microseconds, the clock systemd's `MONOTONIC_USEC=` and sd-event timers use.
func monotonicMicroseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
}
