import LifecycleKit
import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// What the command line (and the environment) say, before the configuration file is read.
public struct DaemonOptions: Sendable, Hashable {
    /// The configuration file, re-read on every reload; without one, ``defaultConfigurationPath`` if it exists.
    public var configurationPath: String?

    /// Read when no `--config` is given and the file exists (`make install` puts it there).
    public static let defaultConfigurationPath = "/etc/lifecycled.conf"
    /// `--trace` or `LIFECYCLE_TRACE=all`: every callback at info.
    public var traceAll = false
    /// `--launch-into`.
    public var launchInto: LaunchTarget?
    /// `--signal SIG=ACTION`, applied over the file.
    public var signalOverrides: [String] = []
    /// `--hang-in CALLBACK` or `LIFECYCLE_HANG_IN`: debug switch for the watchdog test.
    public var hangIn: String?
    /// `--work-interval SECONDS`.
    public var workInterval: Duration?
    /// `--termination-task-seconds SECONDS`.
    public var terminationTask: Duration?

    /// No options: the defaults.
    public init() {}

    /// Reads `LIFECYCLE_TRACE` and `LIFECYCLE_HANG_IN` from the environment into options the flags left unset.
    public mutating func applyEnvironment(_ environment: [String: String]) {
        if environment["LIFECYCLE_TRACE"] == "all" { traceAll = true }
        if hangIn == nil, let hang = environment["LIFECYCLE_HANG_IN"], !hang.isEmpty { hangIn = hang }
    }

    /// The configuration these options make: the defaults, then the file, then the flags.
    public func resolveConfiguration() throws(ConfigurationError) -> DaemonConfiguration {
        var configuration = DaemonConfiguration()
        if let configurationPath {
            try configuration.load(file: configurationPath)
        } else if access(Self.defaultConfigurationPath, F_OK) == 0 {
            try configuration.load(file: Self.defaultConfigurationPath)
        }
        var seen: [UnixSignal: String] = [:]
        for entry in signalOverrides {
            let (signal, action) = try SignalMap.parseEntry(entry)
            if let first = seen[signal] {
                throw ConfigurationError(
                    source: "--signal",
                    line: nil,
                    message: "\(signal.name) is mapped twice (\"\(first)\" and \"\(entry)\"); map each signal once"
                )
            }
            seen[signal] = entry
            configuration.signalMap.set(signal, to: action)
        }
        if traceAll { configuration.traceAll = true }
        if let launchInto { configuration.launchInto = launchInto }
        if let hangIn { configuration.hangIn = hangIn }
        if let workInterval { configuration.demo.workInterval = workInterval }
        if let terminationTask { configuration.demo.terminationTask = terminationTask }
        return configuration
    }
}
