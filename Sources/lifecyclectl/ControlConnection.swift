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
        if let unit, let problem = Self.unitNameProblem(Self.fullUnitName(unit)) {
            throw ValidationError(
                "--unit '\(TerminalSafe.escaped(unit))' is not a unit name: \(problem); a unit name is letters, digits "
                    + "and : _ . \\ - @, at most 255 bytes with its suffix (lifecycled, lifecycled.service, app@1.service)"
            )
        }
    }

    /// The suffixes of systemd's unit types (systemd.unit(5)).
    static let unitSuffixes: Set<Substring> = [
        "service", "socket", "device", "mount", "automount", "swap", "target", "path", "timer", "slice", "scope",
    ]

    /// `name` with `.service` added unless it ends in a unit type's suffix, as systemctl completes a name.
    static func fullUnitName(_ name: String) -> String {
        guard let dot = name.lastIndex(of: "."), unitSuffixes.contains(name[name.index(after: dot)...]) else {
            return name + ".service"
        }
        return name
    }

    /// Why `name` (with its suffix) is not the name of a unit systemd could run, or nil: systemd's rules
    /// (`unit_name_is_valid`: the characters `[A-Za-z0-9:_.\\-]` and `@`, not first, before the suffix; under 256
    /// bytes; not a template), and not `.` or `..` before the suffix, which would name a directory above `/run`.
    static func unitNameProblem(_ name: String) -> String? {
        guard let dot = name.lastIndex(of: ".") else { return "it has no suffix" }
        let prefix = name[..<dot]
        if prefix.isEmpty { return "it is empty" }
        if name.utf8.count > 255 { return "it is \(name.utf8.count) bytes long" }
        if let bad = prefix.unicodeScalars.first(where: { !isUnitNameScalar($0) }) {
            return "'\(TerminalSafe.escaped(String(bad)))' is not allowed in it"
        }
        if prefix.first == "@" { return "it begins with @" }
        if prefix.last == "@" { return "it is a template; name an instance (\(TerminalSafe.escaped(String(prefix)))NAME)" }
        if prefix == "." || prefix == ".." { return "it names no unit" }
        return nil
    }

    private static func isUnitNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", ":", "_", ".", "\\", "-", "@": true
        default: false
        }
    }

    /// The unit's full name (`.service` added when the name has no unit type's suffix).
    var unitName: String {
        Self.fullUnitName(unit ?? Self.defaultUnit)
    }

    /// What the daemon is called in messages: its unit, or the socket given.
    var target: String { socket ?? unitName }

    /// The socket's path: `--socket`, else `control` in the unit's `RuntimeDirectory=` (asked of systemctl, which
    /// must answer before `deadline`), else `/run/<unit name>/control`; without `-u`, a daemon run by hand
    /// (`$XDG_RUNTIME_DIR/lifecycled/control`) is found too.
    func socketPath(before deadline: ContinuousClock.Instant) throws(ControlFailure) -> String {
        if let socket { return socket }
        // The unit's name without its suffix (validate() made sure it has one of them, and no '/').
        let base = String(unitName[..<unitName.lastIndex(of: ".")!])
        var runtime = user ? (environmentValue("XDG_RUNTIME_DIR") ?? "/run/user/\(getuid())") : "/run"
        if runtime.hasSuffix("/") { runtime.removeLast() }
        let found: String?
        do {
            found = try Self.runtimeDirectory(of: unitName, user: user, before: deadline)
        } catch {
            throw .unavailable(
                target: target,
                reason: "systemctl show did not tell the unit's RuntimeDirectory= within --timeout "
                    + "\(Duration.seconds(timeout).formattedForLog) (--socket PATH needs no look-up)"
            )
        }
        let directory = found ?? base
        let path = "\(runtime)/\(directory)/control"
        if unit == nil, access(path, F_OK) != 0, let xdg = environmentValue("XDG_RUNTIME_DIR") {
            let byHand = "\(xdg)/\(base)/control"
            if access(byHand, F_OK) == 0 { return byHand }
        }
        return path
    }

    /// The first directory of the unit's `RuntimeDirectory=`, as systemctl shows it; nil when systemctl cannot tell.
    /// Throws when systemctl has not answered by `deadline` (it is stopped then).
    static func runtimeDirectory(
        of unit: String,
        user: Bool,
        before deadline: ContinuousClock.Instant,
        systemctl: String = "systemctl"
    ) throws(Subprocess.TimedOut) -> String? {
        guard
            let output = try show(
                unit,
                ["RuntimeDirectory"],
                valuesOnly: true,
                user: user,
                before: deadline,
                systemctl: systemctl
            ),
            let first = output.split(whereSeparator: { $0 == " " || $0 == "\n" }).first
        else { return nil }
        return String(first)
    }

    /// What `systemctl show` says of `unit`'s `properties`: `KEY=VALUE` lines, or the values alone with `valuesOnly`;
    /// nil when systemctl fails. Throws when it has not answered by `deadline` (it is stopped then).
    static func show(
        _ unit: String,
        _ properties: [String],
        valuesOnly: Bool = false,
        user: Bool,
        before deadline: ContinuousClock.Instant,
        systemctl: String = "systemctl"
    ) throws(Subprocess.TimedOut) -> String? {
        var argv = [systemctl]
        if user { argv.append("--user") }
        argv += ["show", "--property=" + properties.joined(separator: ",")]
        if valuesOnly { argv.append("--value") }
        argv += ["--", unit]
        return try Subprocess.output(of: argv, before: deadline)
    }

    /// `--timeout`, at most a year: a larger figure would trap converting to milliseconds.
    var timeoutDuration: Duration {
        .milliseconds(Int64(min(timeout, 365 * 86_400) * 1000))
    }

    /// Connects to the daemon. Finding the socket (systemctl, for `-u`) and the reply share one deadline, `--timeout`
    /// from now; `override` gives the reply its own time instead (a call that itself waits longer).
    func connect(timeout override: Duration? = nil) throws -> VarlinkClient {
        let deadline = ContinuousClock.now + timeoutDuration
        let path = try socketPath(before: deadline)
        do {
            // What the look-up left of the deadline, never nothing: a reply already on its way is still read.
            return try VarlinkClient(path: path, timeout: override ?? max(deadline - .now, .milliseconds(1)))
        } catch {
            throw ControlFailure(connectingTo: path, target: target, error: error)
        }
    }

    /// Calls a method of the lifecycle interface and returns the reply's parameters; `atLeast` raises the time the
    /// reply may take above `--timeout` (a call that itself waits that long).
    func call(
        _ method: ControlProtocol.Method,
        _ parameters: JSONObject = [:],
        waitingAtLeast atLeast: Duration? = nil
    ) throws -> JSONObject {
        let client = try connect(timeout: atLeast.map { max($0, timeoutDuration) })
        return try ControlFailure.wrap(target: target) { () throws(VarlinkClientError) in
            try client.call(method.qualifiedName, parameters: parameters)
        }
    }

    /// Calls a method and prints its reply: as JSON with `--json`, else as `text` renders it.
    func show(
        _ method: ControlProtocol.Method,
        _ parameters: JSONObject = [:],
        waitingAtLeast atLeast: Duration? = nil,
        as text: (JSONObject) -> String
    ) throws {
        try Lifecyclectl.perform {
            let reply = try call(method, parameters, waitingAtLeast: atLeast)
            Lifecyclectl.write(json ? TerminalSafe.json(.object(reply)) + "\n" : text(reply))
        }
    }
}

/// Why a command failed, with its message and its exit status (sysexits).
enum ControlFailure: Error, CustomStringConvertible {
    /// The socket could not be reached (69, EX_UNAVAILABLE).
    case unreachable(target: String, path: String, error: VarlinkClientError)
    /// The daemon refused this user (77, EX_NOPERM).
    case permissionDenied(target: String)
    /// The file system refused this user the socket: a directory on the way or the socket itself (77, EX_NOPERM).
    case noAccess(target: String, path: String, reason: String)
    /// The request was dropped (1).
    case dropped(request: String, reason: String)
    /// The reload was refused: nothing applied it (1).
    case reloadRefused(reason: String)
    /// The upgrade did not happen; the reason says whether the daemon serves on as it was or is terminating. The exit
    /// status is the kind's (``UpgradeFailureKind/exitStatus``): 1 when it was tried and failed, 75 when asked at the
    /// wrong moment, 69 when the daemon cannot upgrade; 1 for a kind this lifecyclectl does not know.
    case upgradeFailed(kind: UpgradeFailureKind?, reason: String)
    /// A request about a scene could not be made: the exit status is the kind's (``SceneRefusalKind/exitStatus``): 65
    /// for an identifier no session has, 69 for an application without scenes, 64 for one that cannot name a session;
    /// 76 for a kind this lifecyclectl does not know.
    case sceneRefused(kind: SceneRefusalKind?, reason: String)
    /// The daemon closed the connection or did not answer in time (75, EX_TEMPFAIL).
    case unavailable(target: String, reason: String)
    /// Anything else the daemon answered (76, EX_PROTOCOL).
    case failed(target: String, reason: String)

    var exitCode: Int32 {
        switch self {
        case .unreachable: 69
        case .permissionDenied, .noAccess: 77
        case .dropped, .reloadRefused: 1
        case .upgradeFailed(let kind, _): kind?.exitStatus ?? 1
        case .sceneRefused(let kind, _): kind?.exitStatus ?? 76
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
        case .noAccess(let target, let path, let reason):
            let place = target == path ? path : "\(target) at \(path)"
            return "cannot reach \(place): permission denied: \(reason); run it as a user who may (the service's own, "
                + "or root)"
        case .permissionDenied(let target):
            return "\(target) refused the connection: only its own user, root and its [Control] Group= may use it "
                + "(you are uid \(geteuid()))"
        case .dropped(let request, let reason):
            return "\(request) was dropped: \(reason)"
        case .reloadRefused(let reason):
            return "the reload was refused by \(reason); the daemon keeps its previous configuration"
        case .upgradeFailed(_, let reason):
            // The daemon's reason ends with what became of it: it serves on as it was, or it is terminating.
            return "the upgrade failed: \(reason)"
        case .sceneRefused(_, let reason):
            // The daemon's sentence names the identifier and what would be valid.
            return reason + Self.sceneHint
        case .unavailable(let target, let reason), .failed(let target, let reason):
            return "\(target): \(reason)"
        }
    }

    /// Why connecting to `path` failed: the file system's permission (EACCES, EPERM), naming what this user may not
    /// do, or any other reason the socket cannot be reached.
    init(
        connectingTo path: String,
        target: String,
        error: VarlinkClientError,
        mayAccess: (String, Int32) -> Bool = { access($0, $1) == 0 }
    ) {
        guard case .connect(.system(let system)) = error, system.errno == .permissionDenied || system.errno == .notPermitted
        else {
            self = .unreachable(target: target, path: path, error: error)
            return
        }
        self = .noAccess(target: target, path: path, reason: Self.accessProblem(path, mayAccess: mayAccess))
    }

    /// What this user may not do to reach the socket at `path`: search the first directory on the way it may not,
    /// else write to the socket.
    static func accessProblem(_ path: String, mayAccess: (String, Int32) -> Bool) -> String {
        let you = "you (uid \(getuid()))"
        var directory = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/").dropLast() {
            directory += "/" + component
            if !mayAccess(directory, X_OK) { return "\(you) may not search the directory \(directory)" }
        }
        if !mayAccess(path, W_OK) { return "\(you) may not write to the socket" }
        return "\(you) may not connect to the socket"
    }

    /// What a scene refusal's message ends with: where to see the identifiers there are.
    static let sceneHint = " (lifecyclectl scenes lists the sessions)"

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
        case .error(let varlink) where varlink.name == ControlProtocol.ErrorName.reloadRefused.qualifiedName:
            self = .reloadRefused(reason: varlink.parameters[ControlProtocol.Field.reason]?.stringValue ?? "no reason given")
        case .error(let varlink) where varlink.name == ControlProtocol.ErrorName.upgradeFailed.qualifiedName:
            self = .upgradeFailed(
                kind: varlink.parameters[ControlProtocol.Field.kind]?.stringValue.flatMap(UpgradeFailureKind.init(rawValue:)),
                reason: varlink.parameters[ControlProtocol.Field.reason]?.stringValue ?? "no reason given"
            )
        case .error(let varlink) where varlink.name == ControlProtocol.ErrorName.sceneRefused.qualifiedName:
            self = .sceneRefused(
                kind: varlink.parameters[ControlProtocol.Field.kind]?.stringValue.flatMap(SceneRefusalKind.init(rawValue:)),
                reason: varlink.parameters[ControlProtocol.Field.reason]?.stringValue ?? "no reason given"
            )
        case .error(let varlink) where varlink.name == ControlProtocol.ErrorName.requestDropped.qualifiedName:
            self = .dropped(
                request: varlink.parameters[ControlProtocol.Field.request]?.stringValue ?? "the request",
                reason: varlink.parameters[ControlProtocol.Field.reason]?.stringValue ?? "no reason given"
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
    /// The program did not finish by its deadline; it was killed.
    struct TimedOut: Error {}

    /// The standard output of `argv` (found on `$PATH`) when it exits 0; nil otherwise. A program that has not
    /// finished by `deadline` is killed, with anything it started (it runs in a process group of its own), and
    /// this throws.
    static func output(of argv: [String], before deadline: ContinuousClock.Instant) throws(TimedOut) -> String? {
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
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid = pid_t()
        let spawned = posix_spawnp(&pid, argv[0], &actions, &attributes, &cArguments, environ)
        close(pipeEnds[1])
        guard spawned == 0 else { return nil }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var status: Int32 = 0
        while true {
            let left = deadline - .now
            guard left > .zero else {
                // Its own process group: a wrapper script's children go too, and none keeps the pipe open.
                kill(-pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                throw TimedOut()
            }
            var descriptor = pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: left.wholeMilliseconds + 1))
            if ready < 0, errno != EINTR { break }
            guard ready > 0 else { continue }
            guard let count = try? buffer.withUnsafeMutableBytes({ try FileDescriptor(rawValue: pipeEnds[0]).read(into: $0) }),
                count > 0
            else { break }
            output += buffer[..<count]
        }
        // Its output is over; its exit, by the same deadline.
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped > 0 { break }
            if reaped < 0 {
                guard errno == EINTR else { return nil }
                continue
            }
            guard deadline > .now else {
                kill(-pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                throw TimedOut()
            }
            usleep(1_000)
        }
        // WIFEXITED and WEXITSTATUS are macros Swift cannot call.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else { return nil }
        return String(decoding: output, as: UTF8.self)
    }
}

/// The value of an environment variable, or nil when it is unset.
func environmentValue(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}
