//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Why an upgrade did not happen, as the daemon's `UpgradeFailed` error names it on the wire (`kind`) and lifecyclectl
/// reads it: one name per cause (docs/control.md, "Upgrade"), each with the exit status `lifecyclectl upgrade` ends with.
package enum UpgradeFailureKind: String, Sendable, Hashable, CaseIterable {
    // Refused before anything started: asked at the wrong moment; the same request later may work (75, EX_TEMPFAIL).

    /// Another upgrade is under way.
    case inProgress = "in-progress"
    /// The new process of the last, failed upgrade is still being stopped.
    case previousStillStopping = "previous-still-stopping"
    /// The application has not launched yet.
    case notLaunched = "not-launched"
    /// This process is an upgrade's new process, not the main process yet.
    case notMainProcess = "not-main-process"

    // Refused: this process cannot upgrade (69, EX_UNAVAILABLE).

    /// This process handed the service to another one already and drains.
    case handedOver = "handed-over"
    /// The application is terminating.
    case terminating
    /// A termination was requested and the daemon is in its lame-duck delay.
    case lameDuck = "lame-duck"
    /// No service manager would supervise the new process (no `NOTIFY_SOCKET`).
    case noServiceManager = "no-service-manager"
    /// This process is PID 1 of its namespace (a container's init): the new process would end with it.
    case containerInit = "container-init"
    /// The daemon runs without a main loop (a test's stand-ins).
    case noMainLoop = "no-main-loop"

    // Tried, and the new process did not take over; the daemon serves on unless it is terminating (1).

    /// The path of the program is unknown.
    case executableUnknown = "executable-unknown"
    /// The binary at the path cannot be executed (missing, not executable, exec failed).
    case cannotExecute = "cannot-execute"
    /// The channel to the new process could not be made.
    case channelFailed = "channel-failed"
    /// The new process could not be watched; it was stopped.
    case cannotWatch = "cannot-watch"
    /// The new process exited (or was killed) before it was ready.
    case exitedBeforeReady = "exited-before-ready"
    /// The new process was not ready in time; it was stopped.
    case notReadyInTime = "not-ready-in-time"
    /// The new process sent something other than `ready`; it was stopped.
    case protocolViolation = "protocol-violation"
    /// systemd could not be told that the new process is the main process (`MAINPID=`); it was stopped.
    case mainPIDRefused = "main-pid-refused"
    /// The new process went away while it was made the main process.
    case successorVanished = "successor-vanished"
    /// This process began to terminate before the new one was ready; it was stopped.
    case terminationRequested = "termination-requested"
    /// A termination was requested (a lame-duck delay began) before the new process was ready; it was stopped.
    case lameDuckBegan = "lame-duck-began"

    /// What `lifecyclectl upgrade` exits with for this kind (docs/control.md): 75 (`EX_TEMPFAIL`) for a request at
    /// the wrong moment, 69 (`EX_UNAVAILABLE`) where this process cannot upgrade, 1 when the upgrade was tried and
    /// the new process did not take over.
    package var exitStatus: Int32 {
        switch self {
        case .inProgress, .previousStillStopping, .notLaunched, .notMainProcess: 75
        case .handedOver, .terminating, .lameDuck, .noServiceManager, .containerInit, .noMainLoop: 69
        case .executableUnknown, .cannotExecute, .channelFailed, .cannotWatch, .exitedBeforeReady, .notReadyInTime,
            .protocolViolation, .mainPIDRefused, .successorVanished, .terminationRequested, .lameDuckBegan:
            1
        }
    }
}

/// The words of the control protocol (`io.lifecyclekit.Lifecycle`, docs/control.md) that the daemon and lifecyclectl
/// both write: method, error, parameter and reply-field names, and the defaults both sides assume. One place, so the
/// two ends cannot drift apart.
package enum ControlProtocol {
    /// The interface's name.
    package static let interface = "io.lifecyclekit.Lifecycle"
    /// systemd's interface for services, which the daemon serves beside its own.
    package static let serviceInterface = "io.systemd.service"

    /// The methods of ``interface``.
    package enum Method: String, Sendable, CaseIterable {
        case getStatus = "GetStatus"
        case getTree = "GetTree"
        case getBackgroundTasks = "GetBackgroundTasks"
        case getScenes = "GetScenes"
        case request = "Request"
        case requestScene = "RequestScene"
        case check = "Check"
        case upgrade = "Upgrade"
        case trace = "Trace"

        /// The method's full name on the wire: `io.lifecyclekit.Lifecycle.GetStatus`.
        package var qualifiedName: String { "\(ControlProtocol.interface).\(rawValue)" }
    }

    /// The methods of ``serviceInterface``.
    package enum ServiceMethod: String, Sendable, CaseIterable {
        case ping = "Ping"
        case reload = "Reload"
        case setLogLevel = "SetLogLevel"

        /// The method's full name on the wire: `io.systemd.service.Reload`.
        package var qualifiedName: String { "\(ControlProtocol.serviceInterface).\(rawValue)" }
    }

    /// The errors of ``interface``.
    package enum ErrorName: String, Sendable, CaseIterable {
        case requestDropped = "RequestDropped"
        case reloadRefused = "ReloadRefused"
        case treeTooLarge = "TreeTooLarge"
        case replyTooLarge = "ReplyTooLarge"
        case upgradeFailed = "UpgradeFailed"
        case sceneRefused = "SceneRefused"

        /// The error's full name on the wire: `io.lifecyclekit.Lifecycle.UpgradeFailed`.
        package var qualifiedName: String { "\(ControlProtocol.interface).\(rawValue)" }
    }

    /// The parameters of the methods, and the fields of errors and of the replies both ends read.
    package enum Field {
        // Parameters.
        package static let request = "request"
        package static let probe = "probe"
        package static let views = "views"
        package static let backlog = "backlog"
        package static let timeoutSec = "timeoutSec"
        package static let level = "level"
        /// `GetTree`'s scene, `RequestScene`'s session and `SceneRefused`'s: a persistent identifier.
        package static let scene = "scene"
        package static let id = "id"
        // `GetScenes`' filters.
        package static let role = "role"
        package static let state = "state"
        package static let userInfo = "userInfo"
        package static let prefix = "prefix"
        // Errors' fields.
        package static let reason = "reason"
        package static let kind = "kind"
        package static let servesOn = "servesOn"
        // Replies' fields that lifecyclectl reads by name beyond printing them.
        package static let previousPid = "previousPid"
        package static let pid = "pid"
        package static let readySec = "readySec"
        package static let passed = "passed"
        package static let events = "events"
        package static let records = "records"
        package static let sessions = "sessions"
        package static let matched = "matched"
        package static let total = "total"
        package static let scenes = "scenes"
        package static let sceneState = "sceneState"
    }

    /// What `RequestScene` asks of one scene session (`lifecyclectl scene ACTION ID`).
    package enum SceneAction: String, Sendable, Hashable, CaseIterable {
        /// Bring its scene to the foreground, connecting it first (restored from its saved state) when it is not.
        case foreground
        /// Send its scene to the background, connecting it into the background when it is not connected.
        case background
        /// Disconnect its scene, keeping the session and its saved state.
        case disconnect
        /// Delete the session (its scene disconnects first).
        case discard
    }

    /// The states `GetScenes` lists sessions by (its `state` filter, `lifecyclectl scenes --state`): a scene's
    /// activation state, or `connected` for any of the three a connected scene may be in.
    package enum SceneStateFilter: String, Sendable, Hashable, CaseIterable {
        // Named as `Scene.ActivationState`'s cases are (LifecycleKit's; the wire does not depend on it).

        /// No scene connected: the session and its saved state only.
        case unattached
        /// Connected, in the foreground, not active.
        case foregroundInactive
        /// Connected and active.
        case foregroundActive
        /// Connected, in the background.
        case background
        /// Connected, in any of the three states above.
        case connected

        /// Whether a session whose scene is in `state` (an activation state's name) is listed.
        package func matches(_ state: String) -> Bool {
            self == .connected ? state != Self.unattached.rawValue : state == rawValue
        }

        /// `unattached, foregroundInactive, foregroundActive, background or connected`, for messages.
        package static var validNames: String {
            let names = allCases.map(\.rawValue)
            return names.dropLast().joined(separator: ", ") + " or " + names.last!
        }
    }

    /// The most sessions a `GetScenes` reply lists; the others that match are only counted (`matched`).
    package static let maximumScenesPerReply = 10_000

    /// How many kept events `Trace` replays when the call does not say (without `more`; with `more` it replays none).
    package static let defaultTraceBacklog = 50

    /// How long the daemon waits for an upgrade's new process to serve, unless the call says otherwise.
    package static let defaultUpgradeTimeout = Duration.seconds(30)
    /// The longest ready timeout a call may ask for.
    package static let longestUpgradeTimeout = Duration.seconds(3600)
    /// How long lifecyclectl waits for an upgrade's reply beyond its ready timeout: the state is saved first, and the
    /// hand-over confirmed by systemd.
    package static let upgradeReplyMargin = Duration.seconds(15)
}

/// Why a request about a scene could not be made, as the daemon's `SceneRefused` error names it on the wire (`kind`)
/// and lifecyclectl reads it: one name per kind of `SceneError` (docs/control.md), each with the exit status
/// `lifecyclectl scene` ends with.
package enum SceneRefusalKind: String, Sendable, Hashable, CaseIterable {
    /// The application does not use scenes (69, EX_UNAVAILABLE).
    case scenesNotAdopted = "scenes-not-adopted"
    /// The identifier cannot name a session: empty, longer than 128 characters, or holding `/`, a space or a control
    /// character (64, EX_USAGE).
    case invalidIdentifier = "invalid-identifier"
    /// No session has this identifier: it was never made, or it was discarded (65, EX_DATAERR).
    case unknownSession = "unknown-session"
    /// A session with this identifier exists already (65, EX_DATAERR).
    case duplicateIdentifier = "duplicate-identifier"

    /// What `lifecyclectl scene` (and `tree --scene`) exits with for this kind.
    package var exitStatus: Int32 {
        switch self {
        case .scenesNotAdopted: 69
        case .invalidIdentifier: 64
        case .unknownSession, .duplicateIdentifier: 65
        }
    }
}
