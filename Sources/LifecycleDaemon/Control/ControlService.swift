//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecycleKit
import LifecycleSystemd
import LifecyclePrimitives
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A call to the control interface as the service sees it: what was asked, by whom, and how to answer. The socket's
/// ``VarlinkRequest`` is one; tests use their own.
protocol ControlCall: AnyObject {
    /// The fully qualified method.
    var method: String { get }
    /// Its parameters, already checked against the method's declaration.
    var parameters: JSONObject { get }
    /// Whether the caller takes several replies.
    var more: Bool { get }
    /// Who asked.
    var peer: PeerCredentials { get }
    /// Whether the caller still waits.
    var isConnected: Bool { get }
    /// Runs if the caller goes before the final reply.
    var onDisconnect: (() -> Void)? { get set }
    /// The final reply.
    func reply(_ parameters: JSONObject)
    /// One reply of several.
    func send(_ parameters: JSONObject)
    /// One reply of several that other callers get alike (encoded once for all).
    func send(_ shared: SharedReply)
    /// The final reply: an error.
    func fail(_ error: VarlinkError)
    /// Counts work done for the call against its dispatch's budget, in reply bytes it is worth.
    func charge(_ cost: Int)
}

extension ControlCall {
    func send(_ shared: SharedReply) { send(shared.parameters) }
    func charge(_ cost: Int) {}
}

extension VarlinkRequest: ControlCall {
    var method: String { call.method }
    var parameters: JSONObject { call.parameters }
    var more: Bool { call.more }
}

/// The lifecycle interface (`io.lifecyclekit.Lifecycle`) and systemd's service interface (`io.systemd.service`) over
/// a daemon: what each method does, apart from the socket that carries it.
///
/// Requests go through the daemon's router with the cause `control`, as signals and logind's do, and are answered once
/// their transition has run, after the trace lines of its events were written. The service reaches the daemon only
/// through ``ControlHost``.
@MainActor
final class ControlService {
    unowned let daemon: any ControlHost
    let hub: ControlTraceHub
    /// Where peers find the socket, for status reports.
    let socketDescription: String
    /// The server's counters and open connections, for status reports.
    var serverStatistics: () -> (VarlinkServer.Statistics, connections: Int) = { (VarlinkServer.Statistics(), 0) }
    private let startedAt: ContinuousClock.Instant
    private let serviceUID: uid_t

    init(daemon: any ControlHost, socketDescription: String, serviceUID: uid_t = geteuid()) {
        self.daemon = daemon
        self.socketDescription = socketDescription
        self.serviceUID = serviceUID
        self.startedAt = daemon.now
        self.hub = ControlTraceHub(trace: daemon.application.trace, capacity: daemon.configuration.control.traceBacklog)
    }

    /// Whether a peer may connect at all: the service's own user, root, or a member of `[Control] Group=`.
    func allows(_ peer: PeerCredentials) -> Bool {
        daemon.configuration.control.allows(peer, serviceUID: serviceUID)
    }

    var logger: Logger { daemon.logger }

    /// Answers a call whose method is one of ``ControlInterface``'s (its parameters already checked).
    func handle(_ call: any ControlCall) {
        switch call.method {
        case ControlProtocol.Method.getStatus.qualifiedName:
            call.reply(status(charging: call))
        case ControlProtocol.Method.getTree.qualifiedName:
            tree(call)
        case ControlProtocol.Method.getBackgroundTasks.qualifiedName:
            let counts = daemon.application.treeCounts()
            call.charge(counts.controllers * ControlInterface.costPerNode)
            call.reply(["tasks": .array(backgroundTasks()), "lifecycleTasks": .array(lifecycleTasks().map(ControlInterface.json))])
        case ControlProtocol.Method.getScenes.qualifiedName:
            scenes(call)
        case ControlProtocol.Method.requestScene.qualifiedName:
            requestScene(call)
        case ControlProtocol.Method.request.qualifiedName:
            let name = call.parameters[ControlProtocol.Field.request]?.stringValue ?? ""
            guard let request = LifecycleRequest(rawValue: name) else {
                call.fail(.invalidParameter(ControlProtocol.Field.request))
                return
            }
            submit(request, for: call)
        case ControlProtocol.Method.trace.qualifiedName:
            trace(call)
        case ControlProtocol.Method.check.qualifiedName:
            guard let probe = call.parameters[ControlProtocol.Field.probe]?.stringValue.flatMap(HealthProbe.init(rawValue:)) else {
                call.fail(.invalidParameter(ControlProtocol.Field.probe))
                return
            }
            let check = daemon.application.check(probe)
            call.reply(["probe": .string(probe.rawValue), "passed": .bool(check.passed), "reason": .string(check.reason)])
        case ControlProtocol.Method.upgrade.qualifiedName:
            upgrade(call)
        case ControlProtocol.ServiceMethod.ping.qualifiedName:
            call.reply([:])
        case ControlProtocol.ServiceMethod.reload.qualifiedName:
            submit(.reload, for: call)
        case ControlProtocol.ServiceMethod.setLogLevel.qualifiedName:
            setLogLevel(call)
        default:
            call.fail(.methodNotImplemented(call.method))
        }
    }

    /// Routes the request with the cause `control` and replies once its transition has run: the events it caused
    /// (lifecycle interface), or nothing (`io.systemd.service.Reload`).
    /// The name a reply gives a request's outcome (`performed`, `coalesced`, `noChange`), or nil once `call` has
    /// failed with the outcome's error: `RequestDropped` for a dropped request, `ReloadRefused` for a refused one.
    static func outcomeName(_ outcome: RequestOutcome, of request: String, failing call: any ControlCall) -> String? {
        switch outcome {
        case .performed: return "performed"
        case .coalesced: return "coalesced"
        case .noChange: return "noChange"
        case .dropped(let reason):
            call.fail(ControlInterface.requestDropped(request, reason: reason))
            return nil
        case .refused(let reason, _):
            call.fail(ControlInterface.reloadRefused(reason: reason))
            return nil
        }
    }

    private func submit(_ request: LifecycleRequest, for call: any ControlCall) {
        let application = daemon.application
        let lifecycleCall = call.method.hasPrefix(ControlInterface.name + ".")
        logger.info(
            "control: \(request.rawValue) requested by \(call.peer)",
            metadata: [LogKey.request: .string(request.rawValue), LogKey.cause: "control"]
        )
        hub.requestStarted()
        daemon.submitControlRequest(request) { [hub, unowned daemon = daemon] outcome in
            let (events, omitted) = hub.requestFinished(range: outcome.events)
            // journald has taken the transition's lines before the caller hears it is over.
            daemon.deliverTraceLines()
            // Both interfaces: `systemctl reload` (ExecReload=lifecyclectl reload) fails on a refusal, naming who and why.
            guard let name = Self.outcomeName(outcome, of: request.rawValue, failing: call) else { return }
            guard lifecycleCall else {
                call.reply([:])
                return
            }
            call.reply([
                "request": .string(request.rawValue),
                "outcome": .string(name),
                "state": .string(application.applicationState.rawValue),
                "events": .array(events.map(ControlInterface.json)),
                "eventsOmitted": .int(omitted),
            ])
        }
    }

    /// `GetTree`, unless the tree has more nodes than a reply lists: counted first (a walk without copies), so that a
    /// peer cannot make the daemon build a reply of any size.
    private func tree(_ call: any ControlCall) {
        let views = call.parameters[ControlProtocol.Field.views]?.boolValue ?? false
        if let scene = call.parameters[ControlProtocol.Field.scene]?.stringValue {
            sceneTree(call, identifier: scene, views: views)
            return
        }
        let counts = daemon.application.treeCounts()
        let nodes = counts.controllers + (views ? counts.views : 0)
        call.charge(counts.controllers * ControlInterface.costPerNode)
        guard nodes <= ControlInterface.maximumTreeNodes else {
            call.fail(ControlInterface.treeTooLarge(nodes: nodes, limit: ControlInterface.maximumTreeNodes))
            return
        }
        let application = daemon.application
        // The application's window (none with scenes), then every connected scene's, in the order they connected.
        var snapshot = application.treeSnapshot(includingViews: views)
        for scene in application.connectedScenes {
            snapshot += application.treeSnapshot(of: scene, includingViews: views)
        }
        call.reply(["nodes": .array(snapshot.map(ControlInterface.json))])
    }

    private func trace(_ call: any ControlCall) {
        let asked = call.parameters[ControlProtocol.Field.backlog]?.integerValue
        guard asked.map({ $0 >= 0 }) ?? true else {
            call.fail(.invalidParameter(ControlProtocol.Field.backlog))
            return
        }
        if call.more {
            hub.follow(call, backlog: Int(clamping: asked ?? 0))
        } else {
            let events = hub.recent(Int(clamping: asked ?? Int64(ControlInterface.defaultBacklog)))
            call.reply(["events": .array(events.map(ControlInterface.json))])
        }
    }

    /// `Upgrade`: replies once the new process is the main process, or fails with why there was no upgrade.
    private func upgrade(_ call: any ControlCall) {
        let seconds = call.parameters[ControlProtocol.Field.timeoutSec]?.doubleValue
        let longest = Double(ControlProtocol.longestUpgradeTimeout.components.seconds)
        if let seconds, !(seconds > 0 && seconds <= longest) {
            call.fail(.invalidParameter(ControlProtocol.Field.timeoutSec))
            return
        }
        logger.info("control: upgrade requested by \(call.peer)", metadata: [LogKey.upgrade: "requested"])
        daemon.startUpgrade(timeout: seconds.map { .milliseconds(Int64($0 * 1000)) }) { [unowned daemon = daemon] result in
            daemon.deliverTraceLines()
            switch result {
            case .success(let handOver):
                call.reply([
                    ControlProtocol.Field.previousPid: .int(Int(handOver.previousPID)),
                    ControlProtocol.Field.pid: .int(Int(handOver.pid)),
                    ControlProtocol.Field.readySec: .seconds(handOver.readyAfter),
                ])
            case .failure(let failure):
                call.fail(ControlInterface.upgradeFailed(failure))
            }
        }
    }

    private func setLogLevel(_ call: any ControlCall) {
        // As systemd's daemons: the service's own user and root only, not the group.
        guard call.peer.uid == 0 || call.peer.uid == serviceUID else {
            call.fail(.permissionDenied)
            return
        }
        guard let priority = call.parameters[ControlProtocol.Field.level]?.integerValue,
            let level = LoggingBackend.level(syslogPriority: Int(clamping: priority))
        else {
            call.fail(.invalidParameter(ControlProtocol.Field.level))
            return
        }
        LoggingBackend.levelOverride = level
        logger.notice("log level set to \(level) by \(call.peer)")
        call.reply([:])
    }

    // MARK: Status

    /// `GetStatus`'s reply; counting the tree is charged to `call`.
    func status(charging call: (any ControlCall)? = nil) -> JSONObject {
        let application = daemon.application
        let configuration = daemon.configuration
        let counts = application.treeCounts()
        call?.charge(counts.controllers * ControlInterface.costPerNode)
        let events = daemon.systemStatus
        var logind = "off"
        if let events, events.isWatchingLogind {
            switch events.phase {
            case .awake: logind = "awake"
            case .preparing(let event): logind = "preparing \(event.member)"
            case .released(let event): logind = "released \(event.member)"
            }
        }
        let inhibitors: [JSONValue] = (events?.heldLocks ?? []).sorted { $0.rawValue < $1.rawValue }.map {
            ["what": .string($0.rawValue), "mode": "delay"]
        }
        var memory: JSONObject = [
            "watched": .bool(events?.isWatchingMemoryPressure ?? false),
            "minimumIntervalSec": .seconds(configuration.memoryWarningMinimumInterval),
        ]
        if let source = events?.memoryPressureSource {
            memory["source"] = .string(source.origin.rawValue)
            memory["path"] = .string(source.path)
            memory["trigger"] = .string(
                source.origin == .environment
                    ? source.writtenText : SystemEvents.memorySettings(configuration).trigger.text
            )
        }
        let interval = daemon.watchdogInterval
        var watchdog: JSONObject = ["enabled": .bool(interval != nil)]
        if let interval { watchdog["intervalSec"] = .seconds(interval) }
        if configuration.watchStalls {
            watchdog["stallWarningSec"] = .seconds(
                configuration.stallWarning ?? StallDetector.Thresholds.forWatchdog(interval).warning
            )
        }
        let (statistics, connections) = serverStatistics()
        let control: JSONObject = [
            "socket": .string(socketDescription),
            "connections": .int(connections),
            "accepted": .int(statistics.accepted),
            "refused": .int(statistics.refused),
            "overLimit": .int(statistics.overLimit),
            "calls": .int(statistics.calls),
            "errorReplies": .int(statistics.errorReplies),
            "closedMalformed": .int(statistics.closedMalformed),
            "closedOversized": .int(statistics.closedOversized),
            "closedIdle": .int(statistics.closedIdle),
            "closedBacklog": .int(statistics.closedBacklog),
            "repliesTooLarge": .int(statistics.repliesTooLarge),
            "acceptErrors": .int(statistics.acceptErrors),
        ]
        var reply: JSONObject = [
            "program": .string(daemon.programName),
            "version": .string(daemon.programVersion ?? ""),
            "pid": .int(getpid()),
            "uptimeSec": .seconds(daemon.now - startedAt),
            "state": .string(application.applicationState.rawValue),
            "statusText": .string(application.statusText),
            "controllers": .int(counts.controllers),
            "views": .int(counts.views),
            "traceSeq": .int(application.trace.sequence),
            "backgroundTasks": .array(backgroundTasks()),
            "supervision": .object(supervision()),
            "inhibitors": .array(inhibitors),
            "logind": .string(logind),
            "memoryPressure": .object(memory),
            "watchdog": .object(watchdog),
            "control": .object(control),
            "listeners": .array(listeners()),
        ]
        if let scenes = sceneCounts() { reply[ControlProtocol.Field.scenes] = .object(scenes) }
        if let lastRun = daemon.lastRunStatus { reply["lastRun"] = .object(lastRun) }
        return reply
    }

    /// The application's listening sockets, in the order they were opened, then the ones passed that no server
    /// claimed.
    func listeners() -> [JSONValue] {
        daemon.application.listeners.inUseAndPassed.map(ControlInterface.json)
    }

    /// The lifecycle-bound work of the tree, pre-order.
    func lifecycleTasks() -> [LifecycleTask] {
        daemon.application.controllersInTreeOrder().flatMap(\.lifecycleTasks)
    }

    /// `GetStatus`'s counts of failures and restarts over the tree.
    func supervision() -> JSONObject {
        let tasks = lifecycleTasks()
        return [
            "tasks": .int(tasks.count),
            "failures": .int(tasks.reduce(0) { $0 + $1.failureCount }),
            "restarts": .int(tasks.reduce(0) { $0 + $1.restartCount }),
            "exhausted": .int(tasks.filter(\.hasExhaustedRestarts).count),
        ]
    }

    /// Each running background task with the budget that bounds it now and what is left of it: termination's wait
    /// while the daemon terminates, else a sleep's, else the background time.
    func backgroundTasks() -> [JSONValue] {
        var budget: (String, Duration)?
        if let left = daemon.terminationRemaining {
            budget = ("termination", left)
        } else if let deadline = daemon.systemStatus?.sleepDeadline {
            budget = ("sleep", max(.zero, deadline - daemon.now))
        } else if let left = daemon.application.backgroundTimeRemaining {
            budget = ("background time", left)
        }
        return daemon.application.backgroundTasks.map { task in
            var object: JSONObject = ["id": .int(task.identifier.rawValue), "name": .string(task.name)]
            if let (name, left) = budget {
                object["budget"] = .string(name)
                object["remainingSec"] = .seconds(left)
            }
            return .object(object)
        }
    }
}
