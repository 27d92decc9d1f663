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

/// `lifecyclectl scenes`: the scene sessions, narrowed by filters, as an operator looks for one client's unit among
/// thousands.
struct Scenes: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenes",
        abstract: "The scene sessions: identifier, role, state, saved state, configuration, values.",
        discussion: """
            Sessions are listed in the order they were made, those that match every filter given; the daemon lists \
            the first \(ControlProtocol.maximumScenesPerReply) and counts the rest. A session's identifier is its \
            name everywhere: scene:ID in the trace, LIFECYCLE_SCENE=ID in the journal (journalctl \
            LIFECYCLE_SCENE=ID shows one session's life), the ID of lifecyclectl scene and tree --scene.
            """
    )

    @OptionGroup var connection: ConnectionOptions

    @Option(name: .customLong("role"), help: ArgumentHelp("Only sessions of this role.", valueName: "role"))
    var role: String?

    @Option(
        name: .customLong("state"),
        help: ArgumentHelp(
            "Only sessions whose scene is in this state: \(ControlProtocol.SceneStateFilter.validNames).",
            valueName: "state"
        )
    )
    var state: String?

    @Option(
        name: .customLong("user-info"),
        help: ArgumentHelp(
            "Only sessions whose values hold KEY with VALUE (a client's address, a tenant).",
            valueName: "key=value"
        )
    )
    var userInfo: String?

    @Option(
        name: .customLong("prefix"),
        help: ArgumentHelp("Only sessions whose identifier starts so.", valueName: "prefix")
    )
    var prefix: String?

    func validate() throws {
        if let state, ControlProtocol.SceneStateFilter(rawValue: state) == nil {
            throw ValidationError(
                "--state '\(TerminalSafe.escaped(state))' is not a state; use "
                    + ControlProtocol.SceneStateFilter.validNames
            )
        }
        if let userInfo, userInfo.firstIndex(of: "=").map({ $0 == userInfo.startIndex }) ?? true {
            throw ValidationError(
                "--user-info '\(TerminalSafe.escaped(userInfo))' is not KEY=VALUE (a key, '=', its value)"
            )
        }
    }

    /// The call's filters: the options given.
    var filters: JSONObject {
        var parameters: JSONObject = [:]
        for (name, value) in [
            (ControlProtocol.Field.role, role), (ControlProtocol.Field.state, state),
            (ControlProtocol.Field.userInfo, userInfo), (ControlProtocol.Field.prefix, prefix),
        ] {
            if let value { parameters[name] = .string(value) }
        }
        return parameters
    }

    func run() throws {
        let filtered = !filters.members.isEmpty
        try connection.show(ControlProtocol.Method.getScenes, filters) {
            Output.scenes($0, filtered: filtered, style: Lifecyclectl.style)
        }
    }
}

/// `lifecyclectl scene ACTION ID`: one request about one scene session.
struct SceneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scene",
        abstract: "Bring one scene to the foreground or the background, disconnect it, or discard its session.",
        discussion: """
            Each waits until the request's steps have run and prints the events it caused (the cause is control), \
            then the scene's state and the application's. The process-level state bounds a scene's: a scene asked \
            to the foreground while the application is in the background comes with its return. Exit status: 0 \
            done (also when the scene was there already), 1 dropped (termination has begun), 64 an identifier that \
            cannot name a session, 65 no session has it, 69 the application does not use scenes (or the daemon \
            cannot be reached).
            """,
        subcommands: [
            SceneRequestCommand<SceneForeground>.self, SceneRequestCommand<SceneBackground>.self,
            SceneRequestCommand<SceneDisconnect>.self, SceneDiscardCommand.self,
        ]
    )
}

/// The requests `lifecyclectl scene` makes, one command each, named as the control interface names them.
protocol SceneCommandKind {
    /// The request the command makes.
    static var action: ControlProtocol.SceneAction { get }
}

extension SceneCommandKind {
    /// The command's line in `--help`.
    static var abstract: String {
        switch action {
        case .foreground:
            "Bring the scene to the foreground (connecting it, restored from its saved state, if it is not)."
        case .background: "Send the scene to the background (connecting it into the background if it is not)."
        case .disconnect: "Disconnect the scene; its session keeps its saved state for its next connection."
        case .discard: "Delete the session (its scene disconnects first); the application delegate hears it."
        }
    }
}

enum SceneForeground: SceneCommandKind { static let action = ControlProtocol.SceneAction.foreground }
enum SceneBackground: SceneCommandKind { static let action = ControlProtocol.SceneAction.background }
enum SceneDisconnect: SceneCommandKind { static let action = ControlProtocol.SceneAction.disconnect }
enum SceneDiscard: SceneCommandKind { static let action = ControlProtocol.SceneAction.discard }

/// A scene request command: submits the request about session ID with the cause `control`, waits for its steps,
/// prints its events.
struct SceneRequestCommand<Kind: SceneCommandKind>: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: Kind.action.rawValue, abstract: Kind.abstract)
    }

    @OptionGroup var connection: ConnectionOptions

    @Argument(
        help: ArgumentHelp("The session's persistent identifier (lifecyclectl scenes lists them).", valueName: "id")
    )
    var id: String

    func validate() throws {
        try validateSceneIdentifier(id, option: "ID")
    }

    func run() throws {
        try Lifecyclectl.perform { try connection.requestScene(Kind.action, id: id) }
    }
}

/// `lifecyclectl scene discard ID [--state-directory DIR]`: the discard request, through the control socket; with
/// `--state-directory`, when the service is not running (its socket does not answer), an edit of its saved state
/// instead, which the next launch reports to `application(_:didDiscardSceneSessions:)` (``OfflineSceneDiscard``).
struct SceneDiscardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: SceneDiscard.action.rawValue,
        abstract: SceneDiscard.abstract,
        discussion: """
            With --state-directory DIR (the unit's StateDirectory=, /var/lib/NAME; with -u UNIT, or --socket PATH \
            for a daemon run by hand), a service that is stopped has the session marked discarded in \
            DIR/state.archive, as UIKit marks a session closed while the app was not running: the next launch \
            reports it to application(_:didDiscardSceneSessions:) and drops it. The edit holds DIR's lock, is \
            crash-safe, keeps the file's owner and mode and raises the state's generation; nothing else in it \
            changes. A service whose socket answers is asked through it, as without the option. Exit status, \
            besides the request's: 66 no saved state in DIR; 65 one that cannot be read, that this lifecyclectl \
            would not write back as it is, or that has no such session; 75 the unit is not stopped, or a process \
            of the service holds DIR; 73 the state could not be written back. Nothing is changed but by 0.
            """
    )

    @OptionGroup var connection: ConnectionOptions

    @Argument(
        help: ArgumentHelp("The session's persistent identifier (lifecyclectl scenes lists them).", valueName: "id")
    )
    var id: String

    @Option(
        name: .customLong("state-directory"),
        help: ArgumentHelp(
            "The service's state directory: edit its saved state when the service is not running.",
            valueName: "directory"
        ),
        completion: .directory
    )
    var stateDirectory: String?

    func validate() throws {
        try validateSceneIdentifier(id, option: "ID")
        if let stateDirectory {
            guard !stateDirectory.isEmpty else {
                throw ValidationError("--state-directory needs a directory (the unit's StateDirectory=, /var/lib/NAME)")
            }
            // The directory names one service: so must the socket tried first, or another service's session could
            // be discarded instead.
            guard connection.unit != nil || connection.socket != nil else {
                throw ValidationError(
                    "--state-directory needs the service it belongs to: -u UNIT (or --socket PATH for a daemon run by hand)"
                )
            }
        }
    }

    func run() throws {
        try Lifecyclectl.perform {
            do {
                try connection.requestScene(SceneDiscard.action, id: id)
            } catch ControlFailure.unreachable(let target, let path, let error) where stateDirectory != nil {
                try discardOffline(unreachable: "\(target) (\(path)): \(error)")
            }
        }
    }

    /// The edit of the saved state, once the socket did not answer.
    private func discardOffline(unreachable: String) throws {
        guard let stateDirectory else { return }
        let outcome: OfflineSceneDiscard.Outcome
        do {
            if connection.unit != nil {
                let deadline = ContinuousClock.now + connection.timeoutDuration
                let show = try? ConnectionOptions.show(
                    connection.unitName,
                    OfflineSceneDiscard.unitProperties,
                    user: connection.user,
                    before: deadline
                )
                try OfflineSceneDiscard.checkStopped(unit: connection.unitName, show: show)
            }
            outcome = try OfflineSceneDiscard.discard(id, inDirectory: stateDirectory)
        } catch {
            Lifecyclectl.writeError("lifecyclectl: scene discard: \(TerminalSafe.escaped(error.description))")
            throw ExitCode(error.exitCode)
        }
        let path = TerminalSafe.escaped(outcome.path)
        if connection.json {
            let reply: JSONObject = [
                "id": .string(id), "path": .string(outcome.path), "generation": .int(outcome.generation),
                "written": .bool(!outcome.alreadyDiscarded),
            ]
            Lifecyclectl.write(TerminalSafe.json(.object(reply)) + "\n")
        } else if outcome.alreadyDiscarded {
            Lifecyclectl.write(
                "scene \(TerminalSafe.escaped(id)): already discarded in \(path) (generation \(outcome.generation)); "
                    + "nothing written\n"
            )
        } else {
            Lifecyclectl.write(
                "scene \(TerminalSafe.escaped(id)): discarded in \(path), generation \(outcome.generation) → "
                    + "\(outcome.generation + 1) (the service is not running: \(TerminalSafe.escaped(unreachable))); "
                    + "its next launch reports it to application(_:didDiscardSceneSessions:)\n"
            )
        }
    }
}

extension ConnectionOptions {
    /// Submits the request `action` about session `id` with the cause `control`, waits for its steps, prints its
    /// events (or the reply, with `--json`).
    func requestScene(_ action: ControlProtocol.SceneAction, id: String) throws {
        let reply = try call(
            ControlProtocol.Method.requestScene,
            [ControlProtocol.Field.request: .string(action.rawValue), ControlProtocol.Field.id: .string(id)]
        )
        Lifecyclectl.write(
            json ? TerminalSafe.json(.object(reply)) + "\n" : Output.sceneRequest(reply, style: Lifecyclectl.style)
        )
    }
}

/// Refuses, as a usage error (64), an identifier no session can have: the daemon's rule, checked before connecting.
func validateSceneIdentifier(_ identifier: String, option: String) throws {
    guard !SceneError.isValid(identifier) else { return }
    throw ValidationError(
        "\(option) '\(TerminalSafe.escaped(identifier))' is not a scene identifier: use 1 to "
            + "\(SceneError.maximumIdentifierLength) characters, without /, spaces or control characters"
    )
}
