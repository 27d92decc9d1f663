import LifecycleKit
import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// What a mapped signal asks the application for.
public enum SignalAction: String, Sendable, Hashable, CaseIterable {
    /// Enter the background.
    case background
    /// Return to the foreground (active).
    case foreground
    /// Reload the configuration.
    case reload
    /// Terminate.
    case terminate
    /// Deliver a memory warning.
    case memoryWarning = "memory-warning"
    /// Not handled by lifecycled: the signal keeps its default disposition.
    case `default`
}

/// Which signal asks for what (LIFECYCLE.md §6); SIGKILL and SIGSTOP can never be mapped.
public struct SignalMap: Sendable, Hashable {
    /// The actions, by signal; `default` entries are left out.
    public private(set) var actions: [UnixSignal: SignalAction]

    /// The defaults of LIFECYCLE.md §6.
    public static var standard: SignalMap {
        SignalMap(actions: [
            .user1: .background,
            .terminalStop: .background,
            .user2: .foreground,
            .continue: .foreground,
            .hangup: .reload,
            .terminate: .terminate,
            .interrupt: .terminate,
            .memoryWarning: .memoryWarning,
        ])
    }

    /// Creates a map.
    public init(actions: [UnixSignal: SignalAction]) {
        self.actions = actions.filter { $0.value != .default }
    }

    /// Sets (or, with `default`, removes) the action of one signal.
    public mutating func set(_ signal: UnixSignal, to action: SignalAction) {
        actions[signal] = action == .default ? nil : action
    }

    /// The signals that are mapped, in number order.
    public var signals: [UnixSignal] { actions.keys.sorted { $0.rawValue < $1.rawValue } }

    /// Parses `SIG=ACTION`; the error message names the text and what would be valid.
    public static func parseEntry(_ text: String) throws(ConfigurationError) -> (UnixSignal, SignalAction) {
        guard let equals = text.firstIndex(of: "=") else {
            throw ConfigurationError(
                source: "--signal",
                line: nil,
                message: "\"\(text)\" is not SIGNAL=ACTION (for example SIGUSR1=background)"
            )
        }
        let name = String(text[..<equals]).trimmed
        let value = String(text[text.index(after: equals)...]).trimmed
        return try (parseSignal(name, source: "--signal", line: nil), parseAction(value, source: "--signal", line: nil))
    }

    static func parseSignal(_ name: String, source: String, line: Int?) throws(ConfigurationError) -> UnixSignal {
        guard let signal = UnixSignal(name: name) else {
            throw ConfigurationError(
                source: source,
                line: line,
                message: "\"\(name)\" is not a signal; use a name such as SIGUSR1, SIGHUP or SIGRTMIN+2"
            )
        }
        guard !signal.isUncatchable else {
            throw ConfigurationError(
                source: source,
                line: line,
                message: "\(signal.name) cannot be mapped: no process can catch or block it"
            )
        }
        return signal
    }

    static func parseAction(_ value: String, source: String, line: Int?) throws(ConfigurationError) -> SignalAction {
        guard let action = SignalAction(rawValue: value) else {
            throw ConfigurationError(
                source: source,
                line: line,
                message: "\"\(value)\" is not an action; valid: "
                    + SignalAction.allCases.map(\.rawValue).joined(separator: ", ")
            )
        }
        return action
    }
}

/// A configuration that cannot be used: the message names the file, the line and what would be valid.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file (or `--signal`, or another flag) the bad value came from.
    public var source: String
    /// The line in the file, if the value came from a file.
    public var line: Int?
    /// What is wrong and what would be valid.
    public var message: String

    /// Creates an error.
    public init(source: String, line: Int?, message: String) {
        self.source = source
        self.line = line
        self.message = message
    }

    public var description: String {
        if let line { return "\(source):\(line): \(message)" }
        return "\(source): \(message)"
    }
}

/// Everything lifecycled reads from its configuration file and flags.
public struct DaemonConfiguration: Sendable, Hashable {
    /// Which signal asks for what.
    public var signalMap = SignalMap.standard
    /// Launch into the foreground or the background.
    public var launchInto = LaunchTarget.active
    /// Log controller and view events at info too.
    public var traceAll = false
    /// How long termination waits for background tasks before their expiration handlers run.
    public var backgroundTaskBudget = Duration.seconds(30)
    /// Memory pressure: the stall (`some`) that triggers a warning, within ``memoryPressureWindow``.
    public var memoryPressureThreshold = Duration.milliseconds(200)
    /// Memory pressure: the window the stall is measured over.
    public var memoryPressureWindow = Duration.seconds(2)
    /// At most one memory warning from pressure per this interval.
    public var memoryWarningMinimumInterval = Duration.seconds(10)
    /// Whether to watch memory pressure at all.
    public var watchMemoryPressure = true
    /// Whether to watch logind's sleep and shutdown announcements.
    public var watchLogind = true
    /// The demo application's settings.
    public var demo = DemoSettings()
    /// Debug: the callback that blocks the main thread forever when it fires (the watchdog test).
    public var hangIn: String?

    /// The defaults of LIFECYCLE.md and this project's docs.
    public init() {}

    /// The sections and keys the file may contain, for error messages.
    static let keys: [String: [String]] = [
        "Signals": ["<signal name>"],
        "Launch": ["Into"],
        "Trace": ["All"],
        "BackgroundTasks": ["BudgetSec"],
        "MemoryPressure": ["Watch", "ThresholdMSec", "WindowSec", "MinimumIntervalSec"],
        "Logind": ["Watch"],
        "Demo": ["WorkIntervalSec", "Mode", "TerminationTaskSec", "BackgroundTaskSec", "AllocateMiB"],
        "Debug": ["HangIn"],
    ]

    /// Reads a configuration file over the current values; errors name the file and line.
    public mutating func load(file path: String) throws(ConfigurationError) {
        let text = try Self.readFile(path)
        try apply(text: text, source: path)
    }

    /// Applies configuration text (systemd's INI style: `[Section]`, `Key=Value`, `#` comments).
    public mutating func apply(text: String, source: String) throws(ConfigurationError) {
        var section: String?
        var seenSignals: [UnixSignal: Int] = [:]
        var seenKeys: [String: Int] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = String(rawLine).trimmed
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else {
                    throw ConfigurationError(source: source, line: number, message: "\"\(line)\" is not a [Section] header")
                }
                let name = String(line.dropFirst().dropLast())
                guard Self.keys[name] != nil else {
                    throw ConfigurationError(
                        source: source,
                        line: number,
                        message: "unknown section [\(name)]; valid: " + Self.keys.keys.sorted().map { "[\($0)]" }.joined(separator: ", ")
                    )
                }
                section = name
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigurationError(source: source, line: number, message: "\"\(line)\" is not Key=Value")
            }
            let key = String(line[..<equals]).trimmed
            let value = String(line[line.index(after: equals)...]).trimmed
            guard let section else {
                throw ConfigurationError(source: source, line: number, message: "\(key)= comes before any [Section]")
            }
            if section == "Signals" {
                let signal = try SignalMap.parseSignal(key, source: source, line: number)
                if let first = seenSignals[signal] {
                    throw ConfigurationError(
                        source: source,
                        line: number,
                        message: "\(signal.name) is mapped twice (first on line \(first)); map each signal once"
                    )
                }
                seenSignals[signal] = number
                signalMap.set(signal, to: try SignalMap.parseAction(value, source: source, line: number))
                continue
            }
            let qualified = "\(section).\(key)"
            if let first = seenKeys[qualified] {
                throw ConfigurationError(
                    source: source,
                    line: number,
                    message: "\(key)= is set twice in [\(section)] (first on line \(first))"
                )
            }
            seenKeys[qualified] = number
            try set(section: section, key: key, value: value, source: source, line: number)
        }
    }

    private mutating func set(section: String, key: String, value: String, source: String, line: Int) throws(ConfigurationError) {
        func fail(_ message: String) -> ConfigurationError {
            ConfigurationError(source: source, line: line, message: message)
        }
        func duration(_ scale: Duration) throws(ConfigurationError) -> Duration {
            guard let number = Double(value), number >= 0, number.isFinite else {
                throw fail("\(key)=\(value) is not a non-negative number")
            }
            return scale * number
        }
        func boolean() throws(ConfigurationError) -> Bool {
            switch value.lowercased() {
            case "yes", "true", "on", "1": return true
            case "no", "false", "off", "0": return false
            default: throw fail("\(key)=\(value) is not a boolean; use yes or no")
            }
        }
        switch (section, key) {
        case ("Launch", "Into"):
            guard let target = LaunchTarget(rawValue: value) else {
                throw fail("Into=\(value) is not a launch target; valid: active, background")
            }
            launchInto = target
        case ("Trace", "All"): traceAll = try boolean()
        case ("BackgroundTasks", "BudgetSec"): backgroundTaskBudget = try duration(.seconds(1))
        case ("MemoryPressure", "Watch"): watchMemoryPressure = try boolean()
        case ("MemoryPressure", "ThresholdMSec"): memoryPressureThreshold = try duration(.milliseconds(1))
        case ("MemoryPressure", "WindowSec"): memoryPressureWindow = try duration(.seconds(1))
        case ("MemoryPressure", "MinimumIntervalSec"): memoryWarningMinimumInterval = try duration(.seconds(1))
        case ("Logind", "Watch"): watchLogind = try boolean()
        case ("Demo", "WorkIntervalSec"): demo.workInterval = try duration(.seconds(1))
        case ("Demo", "Mode"):
            guard !value.isEmpty, value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
                throw fail("Mode=\(value) is not a mode name (letters, digits, '-')")
            }
            demo.mode = value
        case ("Demo", "TerminationTaskSec"): demo.terminationTask = try duration(.seconds(1))
        case ("Demo", "BackgroundTaskSec"): demo.backgroundTask = try duration(.seconds(1))
        case ("Demo", "AllocateMiB"):
            guard let mib = Int(value), mib >= 0 else { throw fail("AllocateMiB=\(value) is not a whole number") }
            demo.allocateMiB = mib
        case ("Debug", "HangIn"): hangIn = value.isEmpty ? nil : value
        default:
            throw fail(
                "unknown key \(key)= in [\(section)]; valid: " + (Self.keys[section] ?? []).map { "\($0)=" }.joined(separator: ", ")
            )
        }
        if memoryPressureThreshold > memoryPressureWindow {
            throw fail("the memory pressure threshold must not exceed its window")
        }
    }

    /// Reads a whole file as UTF-8; errors name the file and the system's reason.
    static func readFile(_ path: String) throws(ConfigurationError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ConfigurationError(source: path, line: nil, message: "cannot be read: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw ConfigurationError(source: path, line: nil, message: "cannot be read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Settings of the demo application that lifecycled runs.
public struct DemoSettings: Sendable, Hashable {
    /// How often the worker does a job while active; zero: only when asked.
    public var workInterval = Duration.seconds(5)
    /// The serving mode shown by the navigation stack; a reload that changes it hands over to a new controller.
    public var mode = "serving"
    /// A background task of this length begun in `applicationWillTerminate` (termination waits for it).
    public var terminationTask = Duration.zero
    /// A background task of this length begun in `applicationDidEnterBackground` (a sleep's inhibitor waits for it).
    public var backgroundTask = Duration.zero
    /// Debug: allocate and touch this many MiB in the cache at launch (memory pressure tests).
    public var allocateMiB = 0

    /// The defaults.
    public init() {}
}

extension String {
    var trimmed: String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice = slice.dropFirst() }
        while let last = slice.last, last.isWhitespace { slice = slice.dropLast() }
        return String(slice)
    }
}
