import ArgumentParser
import LifecycleDaemon
import LifecycleKit
import LifecycleSystemd

/// The process entry: block the mapped signals before anything can start a thread, then parse the command line.
@main
enum Entry {
    static func main() {
        MainLoop.blockSignals(Daemon.signalsToBlockAtStart)
        Lifecycled.main()
    }
}

struct Lifecycled: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lifecycled",
        abstract: "A daemon with the iOS application lifecycle, driven by Unix signals and systemd.",
        discussion: """
            Signals (defaults): SIGUSR1, SIGTSTP → background; SIGUSR2, SIGCONT → foreground; SIGHUP → reload; \
            SIGTERM, SIGINT → terminate; SIGRTMIN+2 → memory warning. In a terminal, Ctrl-Z backgrounds and stops \
            the process, `fg` brings it back. Exit codes: 0 clean termination, 64 usage, 78 configuration.
            """,
        version: "0.1.0"
    )

    @Option(name: .long, help: "Configuration file (INI style), re-read on reload (SIGHUP).")
    var config: String?

    @Flag(name: .long, help: "Log every callback at info, not only the delegate's (same as LIFECYCLE_TRACE=all).")
    var trace = false

    @Option(name: .customLong("launch-into"), help: "Launch into 'active' (default) or 'background'.")
    var launchInto: String?

    @Option(name: .customLong("signal"), help: "Map a signal: SIGNAL=ACTION (background, foreground, reload, terminate, memory-warning, default). Repeatable.")
    var signals: [String] = []

    @Option(name: .customLong("work-interval"), help: "Seconds between the demo worker's jobs while active (0: none).")
    var workInterval: Double?

    @Option(name: .customLong("termination-task-seconds"), help: "Begin a background task of this length in applicationWillTerminate.")
    var terminationTaskSeconds: Double?

    @Option(name: .customLong("hang-in"), help: "Debug: block the main thread forever when this callback fires (LIFECYCLE_HANG_IN).")
    var hangIn: String?

    func validate() throws {
        if let launchInto, LaunchTarget(rawValue: launchInto) == nil {
            throw ValidationError("--launch-into \(launchInto) is not a launch target; use active or background")
        }
        for value in [workInterval, terminationTaskSeconds].compactMap({ $0 }) where !(value >= 0 && value.isFinite) {
            throw ValidationError("durations must be non-negative numbers of seconds, not \(value)")
        }
    }

    func run() throws {
        var options = DaemonOptions()
        options.configurationPath = config
        options.traceAll = trace
        options.launchInto = launchInto.flatMap(LaunchTarget.init(rawValue:))
        options.signalOverrides = signals
        options.hangIn = hangIn
        options.workInterval = workInterval.map { Duration.milliseconds(Int64($0 * 1000)) }
        options.terminationTask = terminationTaskSeconds.map { Duration.milliseconds(Int64($0 * 1000)) }
        options.applyEnvironment(Daemon.environmentVariables())
        let code = MainActor.assumeIsolated { Daemon.run(options: options) }
        if code != 0 { throw ExitCode(code) }
    }
}
