//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecycleIPC
import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

/// The interfaces the control socket serves besides `org.varlink.service`: their definitions (the text
/// `GetInterfaceDescription` returns and docs/control.md prints), their methods' declarations, and the JSON shapes
/// of their replies.
@_spi(Internal) public enum ControlInterface {
    typealias Method = ControlProtocol.Method
    typealias ServiceMethod = ControlProtocol.ServiceMethod
    typealias ErrorName = ControlProtocol.ErrorName
    typealias Field = ControlProtocol.Field
    /// LifecycleKit's own interface.
    @_spi(Internal) public static let name = ControlProtocol.interface
    /// systemd's standard service interface, as journald and logind serve it.
    @_spi(Internal) public static let serviceName = ControlProtocol.serviceInterface


    /// The most events a `Request` reply lists; the rest are counted in `eventsOmitted`.
    package static let maximumEventsPerReply = 10_000

    /// How many kept events `Trace` replays when the call does not say (without `more`; with `more` it replays none).
    package static let defaultBacklog = ControlProtocol.defaultTraceBacklog

    /// The most nodes a `GetTree` reply lists; a larger tree is refused with `TreeTooLarge` before it is walked.
    static let maximumTreeNodes = 20_000

    /// What a call that walks the tree costs in a dispatch's budget (``VarlinkServer/Limits/replyBytesPerDispatch``),
    /// per node walked: about what a node's JSON takes in a `GetTree` reply. A status that counts a large tree costs
    /// as much as the reply it would be.
    static let costPerNode = 200

    /// The definition of `io.lifecyclekit.Lifecycle`.
    @_spi(Internal) public static let description = """
        # The lifecycle of a LifecycleKit daemon: the application's state, its controller and view tree, its
        # background tasks, its scene sessions, requests that move it or one scene (their cause is `control`), and the
        # live trace.
        interface io.lifecyclekit.Lifecycle

        # One trace event: the journal's LIFECYCLE_* fields of one callback.
        type Event (
          # LIFECYCLE_SEQ: +1 per event, from 1 at launch.
          seq: int,
          # LIFECYCLE_EVENT: the callback, e.g. applicationDidEnterBackground.
          event: string,
          # LIFECYCLE_TARGET: delegate, or a path in the tree such as root/modes/serving.
          target: string,
          # LIFECYCLE_STATE: the application state when it fired.
          state: string,
          # LIFECYCLE_CAUSE: what asked for the transition: control for this interface's requests.
          cause: string,
          # LIFECYCLE_DETAIL, when the callback's argument matters.
          detail: ?string,
          # LIFECYCLE_SCENE: the scene it belongs to (its delegate's, its tree's, or the application delegate's
          # callback about it), by its session's persistent identifier.
          scene: ?string
        )

        # A rectangle in the view tree's coordinates.
        type Rect (x: float, y: float, width: float, height: float)

        # A node of the controller and view tree.
        type Node (
          # controller or view.
          kind: string,
          # Its path in the trace.
          path: string,
          # Its Swift type.
          type: string,
          # 0 for the root controller; children, presented controllers and root views one deeper than their owner.
          depth: int,
          # Controllers: disappeared, appearing, appeared or disappearing.
          appearance: ?string,
          # Controllers: whether the root view is loaded.
          viewLoaded: ?bool,
          # A view's frame, or a loaded controller's root view's.
          frame: ?Rect,
          # Views: whether the view is in the window.
          inWindow: ?bool,
          # What the node's own views last drew into the status line; empty when nothing.
          status: string,
          # Presented controllers: automatic, fullScreen or overCurrentContext.
          presentation: ?string
        )

        # A background task that has begun and not ended.
        type BackgroundTask (
          id: int,
          name: string,
          # What bounds it now: background time, termination or sleep; null while nothing does (in the foreground).
          budget: ?string,
          # Seconds left of that budget.
          remainingSec: ?float
        )

        # Work bound to a controller's lifecycle (task(_:while:), a ServiceController's services) and its supervision.
        type LifecycleTask (
          # The path of the controller it belongs to.
          controller: string,
          name: string,
          # running, stopping, restarting (waiting for its backoff), exhausted (past its restart policy), cancelled or
          # stopped (its controller off screen, or in the background).
          state: string,
          # Runs started, runs that failed, restarts after a failure.
          runs: int,
          failures: int,
          restarts: int,
          # never, or onFailure with its limits: "onFailure 5 in 60 s, 100 ms–10 s".
          policy: string,
          # The error of the last failed run.
          lastError: ?string
        )

        # The failures and restarts of lifecycle-bound work, over the whole tree.
        type Supervision (
          tasks: int,
          failures: int,
          restarts: int,
          # Tasks past their restart policy.
          exhausted: int
        )

        # A logind inhibitor lock the daemon holds.
        type Inhibitor (
          # sleep or shutdown.
          what: string,
          # delay.
          mode: string
        )

        # Where memory warnings from memory pressure come from.
        type MemoryPressure (
          watched: bool,
          # cgroup, system or environment (systemd's MEMORY_PRESSURE_WATCH).
          source: ?string,
          path: ?string,
          # The PSI trigger armed on the file, e.g. "some 200000 2000000".
          trigger: ?string,
          # At most one warning from pressure per this interval.
          minimumIntervalSec: float
        )

        # systemd's watchdog and the stall detector.
        type Watchdog (
          # Whether systemd asked for WATCHDOG=1 pings (WatchdogSec=).
          enabled: bool,
          intervalSec: ?float,
          # After how long the stall detector names a callback that blocks the main loop; null when it is off.
          stallWarningSec: ?float
        )

        # The control socket itself, since the daemon started.
        type Control (
          socket: string,
          connections: int,
          accepted: int,
          refused: int,
          overLimit: int,
          calls: int,
          errorReplies: int,
          closedMalformed: int,
          closedOversized: int,
          closedIdle: int,
          closedBacklog: int,
          # Replies replaced by ReplyTooLarge.
          repliesTooLarge: int,
          # Times accept failed for want of a descriptor or memory (the socket then rests 250 ms).
          acceptErrors: int
        )

        # A listening socket the application's servers accept on.
        type Listener (
          # The socket unit's FileDescriptorName=, the name a server asks for it by.
          name: string,
          # Where it listens: 127.0.0.1:8080, [::1]:8080, /run/hello.sock.
          address: string,
          # socket-unit (a .socket unit passed it), fd-store (systemd's file descriptor store gave it back), bound (this
          # service bound it).
          origin: string,
          # The pid of the process that handed it over in an upgrade, if one did.
          handedOverBy: ?int,
          # serving (a server accepts on it), paused (open: connections wait in its backlog, in the background, between
          # runs, or passed by the fd store or an upgrade and not asked for yet), closed (shut down in the background:
          # connections are refused), unclaimed (passed by a socket unit under a name no server asked for).
          state: string
        )

        # A scene session: one unit of the application (a connected client, a tenant), which outlives its scene.
        type SceneSession (
          # Its persistent identifier: scene:<id> in the trace's targets, LIFECYCLE_SCENE=<id> in the journal.
          id: string,
          # What its scene is for (the application delegate picks a configuration by it).
          role: string,
          # Its scene's state: unattached (no scene connected), foregroundInactive, foregroundActive or background.
          state: string,
          # The application's values for it (a client's address, a tenant's name).
          userInfo: [string]string,
          # Whether it keeps a saved state, which its scene is restored from when it connects again.
          savedState: bool,
          # The name of the configuration its scene was last connected with.
          configuration: ?string
        )

        # The scene sessions of an application that uses scenes, counted.
        type Scenes (
          sessions: int,
          # Connected scenes, by state.
          foregroundActive: int,
          foregroundInactive: int,
          background: int
        )

        # The daemon at a glance.
        method GetStatus() -> (
          program: string,
          version: string,
          pid: int,
          uptimeSec: float,
          # notRunning, inactive, active, background or terminated.
          state: string,
          # The status line systemd shows (STATUS=).
          statusText: string,
          controllers: int,
          views: int,
          # The number of the last trace event.
          traceSeq: int,
          backgroundTasks: []BackgroundTask,
          supervision: Supervision,
          inhibitors: []Inhibitor,
          # off, awake, or the logind announcement in progress: preparing PrepareForSleep, released PrepareForSleep, ...
          logind: string,
          memoryPressure: MemoryPressure,
          watchdog: Watchdog,
          control: Control,
          listeners: []Listener,
          # Only in an application that uses scenes.
          scenes: ?Scenes
        )

        # The controller tree, pre-order; with views, each controller's own views right after it. In an application
        # that uses scenes, each connected scene's tree (paths scene:<id>/root/...), in the order they connected; with
        # scene, that scene's alone (none while it is not connected; SceneRefused for an identifier no session has). A
        # tree of more than 20000 nodes is refused with TreeTooLarge.
        method GetTree(views: ?bool, scene: ?string) -> (nodes: []Node)

        # The background tasks, oldest first; the lifecycle-bound work of the tree, pre-order.
        method GetBackgroundTasks() -> (tasks: []BackgroundTask, lifecycleTasks: []LifecycleTask)

        # The scene sessions, in the order they were made, that match every filter given: role; state (unattached,
        # foregroundInactive, foregroundActive, background, or connected for any but unattached); userInfo, KEY=VALUE;
        # prefix, of the identifier. The first 10000 that match are listed. An application without scenes has none.
        method GetScenes(role: ?string, state: ?string, userInfo: ?string, prefix: ?string) -> (
          sessions: []SceneSession,
          # The sessions that match, listed or not.
          matched: int,
          # Every session.
          total: int
        )

        # Asks for background, foreground, inactive, reload, memory-warning or terminate, with the cause control, and
        # replies once the request's steps have all run, with the events it caused.
        method Request(request: string) -> (
          request: string,
          # performed; coalesced (folded into an identical request in progress, whose events these are);
          # noChange (the application was in that state already).
          outcome: string,
          # The application state afterwards.
          state: string,
          events: []Event,
          # Events left out of events, beyond 10000.
          eventsOmitted: int
        )

        # Asks for foreground, background, disconnect or discard of the scene session id, with the cause control, and
        # replies once the request's steps have all run, with the events it caused. foreground and background connect
        # a session whose scene is not connected (restored from its saved state); disconnect keeps the session and its
        # saved state; discard deletes it. The process-level state bounds a scene's: foreground while the application
        # is in the background waits for its return.
        method RequestScene(request: string, id: string) -> (
          request: string,
          id: string,
          # performed, or noChange (the scene was where it was asked to be).
          outcome: string,
          # The scene's state afterwards; unattached once disconnected or discarded.
          sceneState: string,
          # The application state afterwards.
          state: string,
          events: []Event,
          eventsOmitted: int
        )

        # Answers an orchestrator's probe: ready (launched, active, every listener served, not stopping), live (the
        # main loop answered this call) or started (launch and restoration are over). lifecyclectl check is its exec
        # probe.
        method Check(probe: string) -> (
          probe: string,
          passed: bool,
          # Why, in a few words: "active, 1 listener serving", "in the background", "stopping (lame duck, not ready)".
          reason: string
        )

        # Starts the service's binary as it is on disk now beside this process, handing it the listening sockets, the
        # control socket and the saved state; once it has launched, restored and serves, makes it systemd's main
        # process (MAINPID=, BARRIER=1); then this process stops accepting, drains and exits. Replies after the
        # hand-over. timeoutSec (default \(ControlProtocol.defaultUpgradeTimeout.components.seconds)) bounds the wait for the new process to serve.
        method Upgrade(timeoutSec: ?float) -> (
          # This process, which now drains and exits.
          previousPid: int,
          # The new main process.
          pid: int,
          # From its start to its report that it serves.
          readySec: float
        )

        # A record the daemon logged while the trace was followed, in its place among the events.
        type LogRecord (
          # The number of the last event before it: the record comes after that event and before the next.
          after: int,
          # trace, debug, info, notice, warning, error or critical.
          level: string,
          message: string,
          # Its metadata, as the journal's fields have it (lower case, with dots).
          metadata: ?[string]string
        )

        # The trace. Without more: the most recent events the daemon kept, up to backlog (default 50). With more: the
        # last backlog kept events (default 0), then the events as they happen, a batch per reply, with the records
        # logged among them, until the daemon stops.
        method Trace(backlog: ?int) -> (events: []Event, records: ?[]LogRecord)

        # The request could not run: the application has not launched, or termination has started.
        error RequestDropped (request: string, reason: string)

        # A request about a scene that cannot be made. kind: scenes-not-adopted (the application does not use scenes),
        # invalid-identifier (not 1 to 128 characters without /, spaces or control characters), unknown-session (no
        # session has id: never made, or discarded) or duplicate-identifier; reason says it in a sentence.
        error SceneRefused (kind: string, id: string, reason: string)

        # The reload ran and was refused, so nothing applied it: by its configuration file (file:line: what is wrong),
        # the delegate or a controller (its path), whom reason names, with why.
        error ReloadRefused (reason: string)

        # The tree has more nodes than a GetTree reply lists.
        error TreeTooLarge (nodes: int, limit: int)

        # The reply would be larger than the daemon sends (8 MiB): size and limit in bytes.
        error ReplyTooLarge (size: int, limit: int)

        # No upgrade happened. kind names the cause (docs/control.md lists them, with lifecyclectl's exit status for
        # each): the daemon cannot upgrade now (in-progress, terminating, container-init, ...), the new binary could
        # not be started, exited or was not ready in time (it was stopped), or systemd could not be told it is the main
        # process. reason says it in a sentence that ends with what the daemon does now ("the daemon serves on as it
        # was" or "the daemon is terminating"); servesOn says the same.
        error UpgradeFailed (kind: string, reason: string, servesOn: bool)

        """

    /// The definition of `io.systemd.service`.
    @_spi(Internal) public static let serviceDescription = """
        # An interface to control basic properties of systemd services (as journald and logind serve it).
        interface io.systemd.service

        # Checks if the service is running.
        method Ping() -> ()

        # Reloads the configuration: the transition SIGHUP asks for, with the cause control; replies when it is over.
        method Reload() -> ()

        # Sets the maximum log level, as a syslog priority from 0 (emerg) to 7 (debug). The service's own user and
        # root only.
        method SetLogLevel(level: int) -> ()

        """

    /// The methods of `io.lifecyclekit.Lifecycle`, as declared to the server (public for the fuzz target of the control
    /// protocol, which checks the server's answers against them).
    @_spi(Internal) public static let methods: [VarlinkMethodDeclaration] = [
        VarlinkMethodDeclaration(Method.getStatus.rawValue),
        VarlinkMethodDeclaration(
            Method.getTree.rawValue,
            parameters: [.init(Field.views, .bool, optional: true), .init(Field.scene, .string, optional: true)]
        ),
        VarlinkMethodDeclaration(Method.getBackgroundTasks.rawValue),
        VarlinkMethodDeclaration(
            Method.getScenes.rawValue,
            parameters: [
                .init(Field.role, .string, optional: true), .init(Field.state, .string, optional: true),
                .init(Field.userInfo, .string, optional: true), .init(Field.prefix, .string, optional: true),
            ]
        ),
        VarlinkMethodDeclaration(Method.request.rawValue, parameters: [.init(Field.request, .string)]),
        VarlinkMethodDeclaration(
            Method.requestScene.rawValue,
            parameters: [.init(Field.request, .string), .init(Field.id, .string)]
        ),
        VarlinkMethodDeclaration(Method.check.rawValue, parameters: [.init(Field.probe, .string)]),
        VarlinkMethodDeclaration(Method.upgrade.rawValue, parameters: [.init(Field.timeoutSec, .float, optional: true)]),
        VarlinkMethodDeclaration(Method.trace.rawValue, parameters: [.init(Field.backlog, .int, optional: true)]),
    ]

    /// The methods of `io.systemd.service`, as declared to the server.
    @_spi(Internal) public static let serviceMethods: [VarlinkMethodDeclaration] = [
        VarlinkMethodDeclaration(ServiceMethod.ping.rawValue),
        VarlinkMethodDeclaration(ServiceMethod.reload.rawValue),
        VarlinkMethodDeclaration(ServiceMethod.setLogLevel.rawValue, parameters: [.init(Field.level, .int)]),
    ]

    // MARK: Reply shapes

    /// An `Event`.
    static func json(_ event: TraceEvent) -> JSONValue {
        .object(
            TraceRecord(
                sequence: event.sequence,
                event: event.event,
                target: event.target,
                state: event.state.rawValue,
                cause: event.cause.rawValue,
                detail: event.detail,
                scene: event.scene
            ).json
        )
    }

    /// A `LogRecord`.
    static func json(_ record: WrittenRecord, after: Int) -> JSONValue {
        var object: JSONObject = [
            "after": .int(after),
            "level": .string(record.level.rawValue),
            "message": .string(record.message),
        ]
        if !record.metadata.isEmpty {
            object["metadata"] = .object(
                JSONObject(record.metadata.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string("\($0.value)")) })
            )
        }
        return .object(object)
    }

    /// A `Node`.
    static func json(_ node: TreeNode) -> JSONValue {
        var object: JSONObject = [
            "kind": .string(node.kind.rawValue),
            "path": .string(node.path),
            "type": .string(node.typeName),
            "depth": .int(node.depth),
        ]
        if let appearance = node.appearance { object["appearance"] = .string(appearance.rawValue) }
        if let loaded = node.isViewLoaded { object["viewLoaded"] = .bool(loaded) }
        if let frame = node.frame {
            object["frame"] = [
                "x": .double(frame.x), "y": .double(frame.y), "width": .double(frame.width), "height": .double(frame.height),
            ]
        }
        if let inWindow = node.isInWindow { object["inWindow"] = .bool(inWindow) }
        object["status"] = .string(node.statusText)
        if let presentation = node.presentationStyle { object["presentation"] = .string(presentation) }
        return .object(object)
    }

    /// A `LifecycleTask`.
    @MainActor
    static func json(_ task: LifecycleTask) -> JSONValue {
        var object: JSONObject = [
            "controller": .string(task.controllerPath),
            "name": .string(task.name),
            "state": .string(task.supervisionState),
            "runs": .int(task.runCount),
            "failures": .int(task.failureCount),
            "restarts": .int(task.restartCount),
            "policy": .string(policyText(task.restartPolicy)),
        ]
        if let error = task.lastError { object["lastError"] = .string("\(error)") }
        return .object(object)
    }

    /// A restart policy as the interface writes it: `never`, or `onFailure 5 in 60 s, 100 ms–10 s`.
    static func policyText(_ policy: RestartPolicy) -> String {
        switch policy {
        case .never:
            "never"
        case .onFailure(let maxRestarts, let within, .exponential(let initial, let maximum)):
            "onFailure \(maxRestarts) in \(within.formattedForLog), \(initial.formattedForLog)–\(maximum.formattedForLog)"
        }
    }

    /// The `ReloadRefused` error.
    static func reloadRefused(reason: String) -> VarlinkError {
        VarlinkError(ErrorName.reloadRefused.qualifiedName, parameters: [Field.reason: .string(reason)])
    }

    /// The `UpgradeFailed` error: its kind, the sentence, and whether the daemon serves on.
    static func upgradeFailed(_ error: UpgradeError) -> VarlinkError {
        VarlinkError(
            ControlProtocol.ErrorName.upgradeFailed.qualifiedName,
            parameters: [
                ControlProtocol.Field.kind: .string(error.kind.rawValue),
                ControlProtocol.Field.reason: .string(error.description),
                ControlProtocol.Field.servesOn: .bool(error.servesOn),
            ]
        )
    }

    /// A `Listener`.
    static func json(_ listener: ListenerTable.Entry) -> JSONValue {
        var object: JSONObject = [
            "name": .string(listener.name),
            "address": .string(listener.address),
            "origin": .string(listener.origin.rawValue),
            "state": .string(listener.state.rawValue),
        ]
        if let pid = listener.handedOverBy { object["handedOverBy"] = .int(Int(pid)) }
        return .object(object)
    }

    /// The `TreeTooLarge` error.
    static func treeTooLarge(nodes: Int, limit: Int) -> VarlinkError {
        VarlinkError(ErrorName.treeTooLarge.qualifiedName, parameters: ["nodes": .int(nodes), "limit": .int(limit)])
    }

    /// The `RequestDropped` error.
    static func requestDropped(_ request: String, reason: String) -> VarlinkError {
        VarlinkError(
            ErrorName.requestDropped.qualifiedName,
            parameters: [Field.request: .string(request), Field.reason: .string(reason)]
        )
    }
}
