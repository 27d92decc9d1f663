//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import ArgumentParser
public import LifecycleKit
import LifecycleSystemd

/// UIKit's `UIApplicationMain` for a daemon: put `@main` on an application delegate that adopts this protocol and
/// it is a whole program.
///
/// The default ``main()`` blocks the mapped signals before any thread exists, parses the standard command line
/// (`--config`, `--trace`, `--launch-into`, `--log-format`, `--signal`, `--help`, `--version`, shell completions)
/// together with the application's own ``Options``, reads the configuration file with the application's own
/// ``Settings`` section, runs the daemon (the sd-event loop on the main thread, systemd's notifications, journald)
/// and exits with a sysexits code: 0 after a clean termination, 64 for a bad command line, 75 when the application
/// terminated as a failure (its restarts exhausted), 78 for a bad configuration.
///
/// ```swift
/// @main
/// final class AppDelegate: ApplicationMain {
///     func application(_ application: Application, didFinishLaunchingWithOptions options: LaunchOptions) -> Bool {
///         application.window = Window(rootViewController: FeedController())
///         return true
///     }
/// }
/// ```
///
/// The program logs, and the journal files its entries (`SYSLOG_IDENTIFIER`), under its own name: the command
/// name of ``commandConfiguration``, by default the name it was started as.
public protocol ApplicationMain: ApplicationDelegate {
    /// The application's own command-line options, parsed beside the standard ones; ``NoOptions`` by default.
    associatedtype Options: ParsableArguments & Sendable = NoOptions
    /// The application's own section of the configuration file, read and re-read on reload beside the daemon's;
    /// ``NoSettings`` by default.
    associatedtype Settings: ConfigurationSection = NoSettings

    /// The command's name, abstract, discussion and version for `--help` and `--version`; the name (default: the
    /// name the program was started as) is also its log label and journal identifier.
    nonisolated static var commandConfiguration: CommandConfiguration { get }

    /// Makes the delegate, before anything is launched.
    init()

    /// Hands the delegate its options and its configuration section: once before launch (before
    /// `willFinishLaunching`), then after every reload that read a valid file (before `applicationDidReload`).
    func configure(options: Options, settings: Settings)
}

extension ApplicationMain {
    public nonisolated static var commandConfiguration: CommandConfiguration {
        CommandConfiguration(commandName: DaemonOptions.processName)
    }

    public func configure(options: Options, settings: Settings) {}

    /// The program: parses the command line, runs the daemon, exits with its sysexits code.
    public static func main() {
        main(arguments: Array(CommandLine.arguments.dropFirst()))
    }

    /// The program with these arguments instead of the process's (without the program name): for a wrapper that
    /// adds arguments of its own, or a test.
    public static func main(arguments: [String]) {
        // First, before anything can start a thread: every thread inherits this mask, and a mapped signal left
        // unblocked on some thread would be delivered there with its default action.
        MainLoop.blockSignals(Daemon.signalsToBlockAtStart)
        DaemonCommand<Self>.main(arguments)
    }
}

/// No options of the application's own.
public struct NoOptions: ParsableArguments, Sendable {
    public init() {}
}

/// The options every LifecycleKit daemon has.
package struct StandardOptions: ParsableArguments, Sendable {
    @Option(name: .long, help: "Configuration file (INI style), re-read on reload (SIGHUP); default /etc/<program>.conf.")
    package var config: String?

    @Flag(name: .long, help: "Log every callback at info, not only the delegate's (same as LIFECYCLE_TRACE=all).")
    package var trace = false

    @Option(name: .customLong("launch-into"), help: "Launch into 'active' (default) or 'background'.")
    package var launchInto: String?

    @Option(
        name: .customLong("log-format"),
        help: """
            Logs as 'journal', 'json' (lines on stderr), 'text' (on stderr; human on a terminal) or 'auto' (default: \
            the journal under journald, text on a terminal, else JSON); [Logging] Format=.
            """
    )
    package var logFormat: String?

    @Option(
        name: .customLong("signal"),
        help: "Map a signal: SIGNAL=ACTION (background, foreground, reload, terminate, memory-warning, inactive, default). Repeatable."
    )
    package var signals: [String] = []

    @Option(
        name: .long,
        help: "The controller tree to launch with (a storyboard file), re-applied on reload; [Launch] Storyboard=."
    )
    package var storyboard: String?

    @Option(
        name: .customLong("state-directory"),
        help: "Where the saved state is kept ([State] Directory=); default $STATE_DIRECTORY (the unit's StateDirectory=)."
    )
    package var stateDirectory: String?

    package init() {}

    package func validate() throws {
        if let launchInto, LaunchTarget(rawValue: launchInto) == nil {
            throw ValidationError("--launch-into \(launchInto) is not a launch target; use active or background")
        }
        if let logFormat, LogFormat(rawValue: logFormat) == nil {
            throw ValidationError("--log-format \(logFormat) is not a log format; use \(LogFormat.validNames)")
        }
    }

    /// The daemon options these flags and the environment make, for a program called `programName`.
    package func daemonOptions(programName: String, environment: [String: String]) -> DaemonOptions {
        var options = DaemonOptions(programName: programName)
        options.configurationPath = config
        options.traceAll = trace
        options.launchInto = launchInto.flatMap(LaunchTarget.init(rawValue:))
        options.logFormat = logFormat.flatMap(LogFormat.init(rawValue:))
        options.signalOverrides = signals
        options.storyboardPath = storyboard
        options.stateDirectory = stateDirectory
        options.applyEnvironment(environment)
        return options
    }
}

/// The command line of an ``ApplicationMain`` program: the standard options and the application's own.
struct DaemonCommand<Delegate: ApplicationMain>: ParsableCommand {
    static var configuration: CommandConfiguration {
        var configuration = Delegate.commandConfiguration
        if configuration.commandName == nil { configuration.commandName = DaemonOptions.processName }
        // Without an abstract, --help would open with an empty `OVERVIEW:` line.
        if configuration.abstract.isEmpty {
            configuration.abstract = standardAbstract(programName: configuration.commandName ?? "")
        }
        if configuration.discussion.isEmpty { configuration.discussion = Self.standardDiscussion }
        return configuration
    }

    /// The abstract of a program whose ``ApplicationMain/commandConfiguration`` gives none.
    static func standardAbstract(programName: String) -> String {
        "\(programName), a LifecycleKit daemon: an application lifecycle driven by Unix signals and systemd."
    }

    static var standardDiscussion: String {
        """
        Signals (defaults): SIGUSR1, SIGTSTP → background; SIGUSR2, SIGCONT → foreground; SIGHUP → reload; \
        SIGTERM, SIGINT → terminate; SIGRTMIN+2 → memory warning; SIGRTMIN+3 → inactive. In a terminal, Ctrl-Z \
        backgrounds and stops the process, `fg` brings it back. Exit codes: 0 clean termination, 64 usage, \
        71 the main loop cannot run, 75 terminated as a failure (restarts exhausted; systemd's Restart= takes over), \
        78 configuration.
        """
    }

    @OptionGroup(title: "Daemon options")
    var standard: StandardOptions

    @OptionGroup(title: "Application options")
    var application: Delegate.Options

    func run() throws {
        let programName = Self.configuration.commandName ?? DaemonOptions.processName
        var options = standard.daemonOptions(programName: programName, environment: ProcessEnvironment.all())
        options.version = Self.configuration.version.isEmpty ? nil : Self.configuration.version
        let applicationOptions = application
        let code = MainActor.assumeIsolated {
            // The delegate is made once logging is set up, so loggers it makes reach the journal.
            Daemon.run(options: options, applicationSection: Delegate.Settings.self, makeDelegate: { Delegate() }) {
                delegate, configuration in
                delegate.configure(
                    options: applicationOptions,
                    settings: configuration.applicationSettings as? Delegate.Settings ?? Delegate.Settings()
                )
            }
        }
        if code != 0 { throw ExitCode(code) }
    }
}
