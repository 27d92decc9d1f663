//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import LifecycleIPC
import LifecycleKit
import LifecyclePrimitives
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// lifecyclectl: see and drive a running LifecycleKit daemon through its control socket (docs/control.md).
@main
struct Lifecyclectl: ParsableCommand {
    static let configuration = CommandConfiguration(
        // Set explicitly: the generated completions and man page are named after it, whatever the binary is called.
        commandName: "lifecyclectl",
        abstract: "See and drive a running LifecycleKit daemon through its control socket.",
        discussion: """
            The daemon is found by its systemd unit (-u, default lifecycled.service: the socket is control in the \
            unit's RuntimeDirectory=) or by --socket. It answers its own user, root and the group its [Control] \
            Group= names. Requests go through the same path as signals and logind, with the cause `control`: the \
            journal shows them with LIFECYCLE_CAUSE=control. Every command prints JSON with --json (the schemas are \
            in docs/control.md). Exit status: 0 done, 1 the request was dropped, 64 usage, 65 no scene session has \
            the identifier, 69 the daemon cannot be reached (or does not use scenes), 75 it closed the connection or \
            did not answer in time, 76 it answered an error, 77 permission denied.
            """,
        version: "0.2.0",
        subcommands: [
            Status.self, Tree.self, Tasks.self, Trace.self, Scenes.self, SceneCommand.self,
            RequestCommand<Background>.self, RequestCommand<Foreground>.self, RequestCommand<Inactive>.self,
            RequestCommand<Reload>.self, RequestCommand<MemoryWarning>.self, RequestCommand<Terminate>.self,
            Check.self, Upgrade.self,
        ],
        defaultSubcommand: Status.self
    )

    /// Runs a command's body: failures print their message on stderr and exit with their status.
    static func perform(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let failure as ControlFailure {
            writeError("lifecyclectl: \(TerminalSafe.escaped(failure.description))")
            throw ExitCode(failure.exitCode)
        }
    }

    static func writeError(_ text: String) {
        let line = Array((text + "\n").utf8)
        _ = line.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    /// Writes text to stdout at once (a follower's lines must not wait in a buffer).
    static func write(_ text: String) {
        guard !text.isEmpty else { return }
        // swift-system's writeAll retries interrupted and short writes; a closed stdout ends the output silently.
        _ = try? FileDescriptor.standardOutput.writeAll(text.utf8)
    }

    /// Colour for stdout: on a terminal, unless NO_COLOR is set.
    static var style: TerminalStyle {
        let environment = ["NO_COLOR", "TERM"].reduce(into: [String: String]()) { $0[$1] = environmentValue($1) }
        return TerminalStyle(isTerminal: isatty(STDOUT_FILENO) == 1, environment: environment)
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract:
            "The state, pid, uptime, tree size, scenes, background tasks, inhibitors, memory pressure and watchdog."
    )

    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let unit = connection.socket == nil ? connection.unitName : nil
        try connection.show(ControlProtocol.Method.getStatus) { Output.status($0, unit: unit, style: Lifecyclectl.style) }
    }
}

struct Tree: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tree",
        abstract: "The live controller tree, as UIKit's hierarchy dump prints it (--views: with each controller's views).",
        discussion: """
            In an application that uses scenes, every connected scene's tree, in the order they connected (paths \
            scene:ID/root/...); --scene ID shows one (nothing while it is not connected; exit 65 when no session has \
            the identifier).
            """
    )

    @OptionGroup var connection: ConnectionOptions

    @Flag(name: .customLong("views"), help: "List each controller's views too.")
    var views = false

    @Option(name: .customLong("scene"), help: ArgumentHelp("Only this scene's tree.", valueName: "id"))
    var scene: String?

    func validate() throws {
        if let scene { try validateSceneIdentifier(scene, option: "--scene") }
    }

    func run() throws {
        var parameters: JSONObject = [ControlProtocol.Field.views: .bool(views)]
        if let scene { parameters[ControlProtocol.Field.scene] = .string(scene) }
        try connection.show(ControlProtocol.Method.getTree, parameters) {
            Output.tree($0, scene: scene, style: Lifecyclectl.style)
        }
    }
}

struct Tasks: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tasks",
        abstract: "The background tasks, with the budget that bounds each and the time left."
    )

    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        try connection.show(ControlProtocol.Method.getBackgroundTasks, as: Output.tasks)
    }
}

struct Trace: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract:
            "The trace: the application's recent transitions the daemon kept (its delegate's events), or (--follow) "
            + "the live trace, the tree's events too.",
        discussion: """
            One line per event: sequence number, state, the cause when it changes, the target indented by its depth \
            in the tree, the event. Repeats of one event (a view redrawn on a timer) are folded into a count. \
            With --json, one Event object per line.
            """
    )

    @OptionGroup var connection: ConnectionOptions

    @Flag(name: [.customShort("f"), .customLong("follow")], help: "Keep printing events as they happen, until interrupted.")
    var follow = false

    @Option(
        name: [.customShort("n"), .customLong("lines")],
        help: ArgumentHelp(
            "How many recent events to print first (default \(ControlProtocol.defaultTraceBacklog), or 10 with --follow).",
            valueName: "count"
        )
    )
    var lines: Int?

    func validate() throws {
        if let lines, lines < 0 { throw ValidationError("--lines needs a count of 0 or more") }
    }

    func run() throws {
        try Lifecyclectl.perform {
            var formatter = TraceFormatter(style: Lifecyclectl.style)
            let json = connection.json
            // The events of a reply, and the records the daemon logged among them, each in its place: a record comes
            // after the event it names in `after` and before the next one.
            func print(_ reply: JSONObject) {
                let events = (reply[ControlProtocol.Field.events]?.arrayValue ?? []).compactMap(\.objectValue)
                var records = (reply[ControlProtocol.Field.records]?.arrayValue ?? []).compactMap(\.objectValue)[...]
                var text = ""
                func printRecords(before sequence: Int64?) {
                    while let record = records.first,
                        sequence.map({ (record["after"]?.integerValue ?? 0) < $0 }) ?? true
                    {
                        records = records.dropFirst()
                        if json {
                            text += JSONValue.object(record).text + "\n"
                        } else {
                            let metadata = (record["metadata"]?.objectValue ?? [:]).map { ($0.key, $0.value.stringValue ?? "") }
                            text += formatter.format(
                                logLevel: record["level"]?.stringValue ?? "",
                                message: record["message"]?.stringValue ?? "",
                                metadata: metadata.map { (key: $0.0, value: $0.1) }
                            )
                        }
                    }
                }
                for event in events {
                    printRecords(before: event["seq"]?.integerValue)
                    if json {
                        text += TerminalSafe.json(.object(event)) + "\n"
                    } else if let record = TraceRecord(json: TerminalSafe.escaped(event)) {
                        text += formatter.format(record)
                    }
                }
                printRecords(before: nil)
                Lifecyclectl.write(text)
            }
            let backlog = Int64(lines ?? (follow ? 10 : ControlProtocol.defaultTraceBacklog))
            guard follow else {
                let reply = try connection.call(ControlProtocol.Method.trace, [ControlProtocol.Field.backlog: .integer(backlog)])
                print(reply)
                Lifecyclectl.write(formatter.flush())
                return
            }
            let client = try connection.connect()
            // Finding the socket and connecting are bounded by --timeout; the stream then runs until interrupted: an
            // idle daemon sends nothing for as long as nothing happens.
            client.timeout = nil
            try ControlFailure.wrap(target: connection.target) { () throws(VarlinkClientError) in
                try client.stream(ControlProtocol.Method.trace.qualifiedName, parameters: [ControlProtocol.Field.backlog: .integer(backlog)]) {
                    reply in
                    print(reply)
                    return true
                }
            }
            Lifecyclectl.write(formatter.flush())
        }
    }
}

/// The requests lifecyclectl can make, one command each, named as the daemon's configuration names them
/// (``LifecycleRequest``'s raw values).
protocol RequestCommandKind {
    /// The request the command makes.
    static var request: LifecycleRequest { get }
}

extension RequestCommandKind {
    /// The command's line in `--help`.
    static var abstract: String {
        switch request {
        case .enterBackground: "Enter the background (what SIGUSR1 asks for), and print the events it caused."
        case .becomeActive: "Return to the foreground, active (what SIGUSR2 asks for), and print the events it caused."
        case .resignActive:
            "Become inactive, an interruption (what SIGRTMIN+3 asks for), and print the events it caused."
        case .reload: "Reload the configuration (what SIGHUP asks for), and print the events it caused."
        case .memoryWarning: "Deliver a memory warning (what SIGRTMIN+2 asks for), and print the events it caused."
        case .terminate: "Terminate (what SIGTERM asks for): the daemon exits once its background tasks end."
        }
    }
}

enum Background: RequestCommandKind { static let request = LifecycleRequest.enterBackground }
enum Foreground: RequestCommandKind { static let request = LifecycleRequest.becomeActive }
enum Inactive: RequestCommandKind { static let request = LifecycleRequest.resignActive }
enum Reload: RequestCommandKind { static let request = LifecycleRequest.reload }
enum MemoryWarning: RequestCommandKind { static let request = LifecycleRequest.memoryWarning }
enum Terminate: RequestCommandKind { static let request = LifecycleRequest.terminate }

/// A request command: submits the request with the cause `control`, waits for its transition, prints its events.
struct RequestCommand<Kind: RequestCommandKind>: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: Kind.request.rawValue,
            abstract: Kind.abstract,
            discussion: """
                Waits until the transition is over and prints the events it caused (the ones with the cause control), \
                then the state reached. A request for the state the application is in changes nothing and succeeds; \
                one the daemon drops (termination has started) exits 1 and says why.
                """
        )
    }

    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        try Lifecyclectl.perform {
            let reply = try connection.call(ControlProtocol.Method.request, [ControlProtocol.Field.request: .string(Kind.request.rawValue)])
            Lifecyclectl.write(
                connection.json
                    ? TerminalSafe.json(.object(reply)) + "\n"
                    : Output.request(reply, target: connection.target, style: Lifecyclectl.style)
            )
        }
    }
}

struct Upgrade: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Replace the daemon with its binary as it is on disk now, without refusing a connection.",
        discussion: """
            The daemon starts the new binary beside itself and hands it the listening sockets, the control socket and \
            the saved state; once the new process has launched, restored and serves, it becomes systemd's main \
            process, and the old one stops accepting, drains and exits. Prints both pids and how long the new one \
            took to serve. A new binary that fails to start, exits, or does not serve within --ready-timeout is \
            stopped: the command exits 1 with the reason, and the daemon serves on as it was. It exits 75 when asked \
            at the wrong moment (another upgrade in progress or being stopped, not launched yet) and 69 where the \
            daemon cannot upgrade (terminating, no systemd, a container's PID 1). Needs a Type=notify unit with \
            NotifyAccess=main (docs/operations.md, docs/control.md: every kind of failure).
            """
    )

    @OptionGroup var connection: ConnectionOptions

    @Option(
        name: .customLong("ready-timeout"),
        help: ArgumentHelp(
            "How long the new process may take to serve (default \(ControlProtocol.defaultUpgradeTimeout.components.seconds)).",
            valueName: "seconds"
        )
    )
    var readyTimeout: Double?

    func validate() throws {
        let longest = ControlProtocol.longestUpgradeTimeout.components.seconds
        if let readyTimeout, !(readyTimeout > 0 && readyTimeout <= Double(longest)) {
            throw ValidationError("--ready-timeout needs a number of seconds above 0, at most \(longest)")
        }
    }

    func run() throws {
        var parameters: JSONObject = [:]
        if let readyTimeout { parameters[ControlProtocol.Field.timeoutSec] = .double(readyTimeout) }
        let target = connection.target
        // The daemon answers once the new process serves: up to the ready timeout, and the saving before it.
        let timeout = readyTimeout.map { Duration.milliseconds(Int64($0 * 1000)) } ?? ControlProtocol.defaultUpgradeTimeout
        try connection.show(ControlProtocol.Method.upgrade, parameters, waitingAtLeast: timeout + ControlProtocol.upgradeReplyMargin) {
            Output.upgrade($0, target: target)
        }
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "An orchestrator's exec probe: exit 0 when the daemon is ready, live or started, else 1.",
        discussion: """
            ready: launched, active, every listener served, and not stopping (in the background, during a lame-duck \
            delay or termination it is not). live: its main loop answered. started: launch and state restoration are \
            over. Prints nothing unless --verbose; a daemon that cannot be reached or does not answer within \
            --timeout fails the probe (exit 1) like any "no". Kubernetes: exec probe `lifecyclectl check ready \
            --socket /run/PROGRAM/control --timeout 1`.
            """
    )

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("ready, live or started.", valueName: "probe"))
    var probe: String

    @Flag(name: [.customShort("v"), .customLong("verbose")], help: "Print the answer and why.")
    var verbose = false

    func validate() throws {
        guard HealthProbe(rawValue: probe) != nil else {
            throw ValidationError("'\(probe)' is not a probe; use ready, live or started")
        }
    }

    func run() throws {
        let reply: JSONObject
        do {
            reply = try connection.call(ControlProtocol.Method.check, [ControlProtocol.Field.probe: .string(probe)])
        } catch let failure as ControlFailure {
            // For a probe, a daemon that cannot answer is a "no", not a usage or availability error.
            if verbose { Lifecyclectl.write("\(probe): no (\(TerminalSafe.escaped(failure.description)))\n") }
            throw ExitCode(1)
        }
        let passed = reply[ControlProtocol.Field.passed]?.boolValue == true
        if connection.json {
            Lifecyclectl.write(TerminalSafe.json(.object(reply)) + "\n")
        } else if verbose {
            let reason = TerminalSafe.escaped(reply[ControlProtocol.Field.reason]?.stringValue ?? "")
            Lifecyclectl.write("\(probe): \(passed ? "yes" : "no") (\(reason))\n")
        }
        if !passed { throw ExitCode(1) }
    }
}
