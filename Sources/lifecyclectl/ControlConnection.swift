//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import LifecycleIPC
import LifecyclePrimitives
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// How lifecyclectl finds the daemon and how it prints: the options every command shares.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: [.customShort("u"), .customLong("unit")],
        help: ArgumentHelp(
            "The service whose daemon to talk to; its socket is control in the unit's RuntimeDirectory=.",
            valueName: "unit"
        )
    )
    var unit: String?

    @Flag(name: .customLong("user"), help: "The unit is one of the user's service manager (systemctl --user).")
    var user = false

    @Option(
        name: .customLong("socket"),
        help: ArgumentHelp("The control socket's path, instead of finding it by unit.", valueName: "path"),
        completion: .file()
    )
    var socket: String?

    @Flag(name: .customLong("json"), help: "Print JSON: the reply's parameters, as docs/control.md describes them.")
    var json = false

    @Option(
        name: .customLong("timeout"),
        help: ArgumentHelp("Seconds to wait for the daemon's reply.", valueName: "seconds")
    )
    var timeout: Double = 30

    /// The shipped unit, when no `-u` is given.
    static let defaultUnit = "lifecycled.service"

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout needs a positive number of seconds") }
        if let unit, unit.isEmpty { throw ValidationError("--unit needs a unit name") }
    }

    /// The unit's full name (`.service` added when the name has no suffix).
    var unitName: String {
        let name = unit ?? Self.defaultUnit
        return name.contains(".") ? name : name + ".service"
    }

    /// What the daemon is called in messages: its unit, or the socket given.
    var target: String { socket ?? unitName }

    /// The socket's path: `--socket`, else `control` in the unit's `RuntimeDirectory=` (asked of systemctl), else
    /// `/run/<unit name>/control`; without `-u`, a daemon run by hand (`$XDG_RUNTIME_DIR/lifecycled/control`) is
    /// found too.
    func socketPath() -> String {
        if let socket { return socket }
        let base = String(unitName.prefix { $0 != "." })
        var runtime = user ? (environmentValue("XDG_RUNTIME_DIR") ?? "/run/user/\(getuid())") : "/run"
        if runtime.hasSuffix("/") { runtime.removeLast() }
        let directory = Self.runtimeDirectory(of: unitName, user: user) ?? base
        let path = "\(runtime)/\(directory)/control"
        if unit == nil, access(path, F_OK) != 0, let xdg = environmentValue("XDG_RUNTIME_DIR") {
            let byHand = "\(xdg)/\(base)/control"
            if access(byHand, F_OK) == 0 { return byHand }
        }
        return path
    }

    /// The first directory of the unit's `RuntimeDirectory=`, as systemctl shows it; nil when systemctl cannot tell.
    static func runtimeDirectory(of unit: String, user: Bool) -> String? {
        var argv = ["systemctl"]
        if user { argv.append("--user") }
        argv += ["show", "--property=RuntimeDirectory", "--value", "--", unit]
        guard let output = Subprocess.output(of: argv), let first = output.split(whereSeparator: { $0 == " " || $0 == "\n" }).first
        else { return nil }
        return String(first)
    }

    /// Connects to the daemon.
    func connect(timeout override: Duration? = nil) throws -> VarlinkClient {
        let path = socketPath()
        do {
            // At most a year: a larger figure would trap converting to milliseconds.
            let milliseconds = Int64(min(timeout, 365 * 86_400) * 1000)
            return try VarlinkClient(path: path, timeout: override ?? .milliseconds(milliseconds))
        } catch {
            throw ControlFailure.unreachable(target: target, path: path, error: error)
        }
    }

    /// Calls a method of the lifecycle interface and returns the reply's parameters; `atLeast` raises the time the
    /// reply may take above `--timeout` (a call that itself waits that long).
    func call(_ method: String, _ parameters: JSONObject = [:], waitingAtLeast atLeast: Duration? = nil) throws -> JSONObject {
        let client = try connect(timeout: atLeast.map { max($0, .milliseconds(Int64(min(timeout, 365 * 86_400) * 1000))) })
        return try ControlFailure.wrap(target: target) { () throws(VarlinkClientError) in
            try client.call("io.lifecyclekit.Lifecycle.\(method)", parameters: parameters)
        }
    }
}

/// Why a command failed, with its message and its exit status (sysexits).
enum ControlFailure: Error, CustomStringConvertible {
    /// The socket could not be reached (69, EX_UNAVAILABLE).
    case unreachable(target: String, path: String, error: VarlinkClientError)
    /// The daemon refused this user (77, EX_NOPERM).
    case permissionDenied(target: String)
    /// The request was dropped (1).
    case dropped(request: String, reason: String)
    /// The reload was refused: nothing applied it (1).
    case reloadRefused(reason: String)
    /// The upgrade did not happen; the reason says whether the daemon serves on as it was or is terminating (1).
    case upgradeFailed(reason: String)
    /// The daemon closed the connection or did not answer in time (75, EX_TEMPFAIL).
    case unavailable(target: String, reason: String)
    /// Anything else the daemon answered (76, EX_PROTOCOL).
    case failed(target: String, reason: String)

    var exitCode: Int32 {
        switch self {
        case .unreachable: 69
        case .permissionDenied: 77
        case .dropped, .reloadRefused, .upgradeFailed: 1
        case .unavailable: 75
        case .failed: 76
        }
    }

    var description: String {
        switch self {
        case .unreachable(let target, let path, let error):
            let reason: String =
                if case .connect(.system(let system)) = error { "\(system.errno)" } else { "\(error)" }
            return "cannot reach \(target) at \(path): \(reason) (is it running? --socket names another socket)"
        case .permissionDenied(let target):
            return "\(target) refused the connection: only its own user, root and its [Control] Group= may use it "
                + "(you are uid \(geteuid()))"
        case .dropped(let request, let reason):
            return "\(request) was dropped: \(reason)"
        case .reloadRefused(let reason):
            return "the reload was refused by \(reason); the daemon keeps its previous configuration"
        case .upgradeFailed(let reason):
            // The daemon's reason ends with what became of it: it serves on as it was, or it is terminating.
            return "the upgrade failed: \(reason)"
        case .unavailable(let target, let reason), .failed(let target, let reason):
            return "\(target): \(reason)"
        }
    }

    /// Runs a call, turning client errors into failures with clear messages.
    static func wrap<T>(target: String, _ body: () throws(VarlinkClientError) -> T) throws(ControlFailure) -> T {
        do {
            return try body()
        } catch {
            throw ControlFailure(error, target: target)
        }
    }

    init(_ error: VarlinkClientError, target: String) {
        switch error {
        case .error(let varlink) where varlink.name == VarlinkError.permissionDenied.name:
            self = .permissionDenied(target: target)
        case .error(let varlink) where varlink.name == "io.lifecyclekit.Lifecycle.ReloadRefused":
            self = .reloadRefused(reason: varlink.parameters["reason"]?.stringValue ?? "no reason given")
        case .error(let varlink) where varlink.name == "io.lifecyclekit.Lifecycle.UpgradeFailed":
            self = .upgradeFailed(reason: varlink.parameters["reason"]?.stringValue ?? "no reason given")
        case .error(let varlink) where varlink.name == "io.lifecyclekit.Lifecycle.RequestDropped":
            self = .dropped(
                request: varlink.parameters["request"]?.stringValue ?? "the request",
                reason: varlink.parameters["reason"]?.stringValue ?? "no reason given"
            )
        case .closed:
            self = .unavailable(
                target: target,
                reason: "the daemon closed the connection without a reply (too many connections, or it is stopping)"
            )
        case .timedOut(let duration):
            self = .unavailable(target: target, reason: "no reply within \(duration.formattedForLog)")
        default:
            self = .failed(target: target, reason: "\(error)")
        }
    }
}

/// Runs a program and reads what it prints, for systemctl.
enum Subprocess {
    /// The standard output of `argv` (found on `$PATH`) when it exits 0; nil otherwise.
    static func output(of argv: [String]) -> String? {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { return nil }
        defer { close(pipeEnds[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], STDOUT_FILENO)
        posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid = pid_t()
        let spawned = posix_spawnp(&pid, argv[0], &actions, nil, &cArguments, environ)
        close(pipeEnds[1])
        guard spawned == 0 else { return nil }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while let count = try? buffer.withUnsafeMutableBytes({ try FileDescriptor(rawValue: pipeEnds[0]).read(into: $0) }),
            count > 0
        {
            output += buffer[..<count]
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        // WIFEXITED and WEXITSTATUS are macros Swift cannot call.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else { return nil }
        return String(decoding: output, as: UTF8.self)
    }
}

/// The value of an environment variable, or nil when it is unset.
func environmentValue(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}
