//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecycleKit
import LifecyclePrimitives
import Logging

// The scene sessions over the control interface (docs/control.md): `GetScenes`, `RequestScene`, `GetTree`'s `scene`
// and `GetStatus`'s `scenes`. An operator finds one client's unit among thousands by its role, state, values or
// identifier, and drives it as signals drive the whole application, with the cause `control`.
extension ControlService {
    /// `GetScenes`: the sessions that match every filter, in the order they were made, the first
    /// ``ControlProtocol/maximumScenesPerReply``; each session looked at is charged.
    func scenes(_ call: any ControlCall) {
        let filter: SceneFilter
        do {
            filter = try SceneFilter(call.parameters)
        } catch {
            call.fail(error)
            return
        }
        let sessions = daemon.application.sceneSessionSnapshots()
        call.charge(sessions.count * ControlInterface.costPerSession)
        var listed: [JSONValue] = []
        var matched = 0
        for session in sessions where filter.matches(session) {
            matched += 1
            if listed.count < ControlProtocol.maximumScenesPerReply { listed.append(ControlInterface.json(session)) }
        }
        call.reply([
            ControlProtocol.Field.sessions: .array(listed),
            ControlProtocol.Field.matched: .int(matched),
            ControlProtocol.Field.total: .int(sessions.count),
        ])
    }

    /// `RequestScene`: submits the request about one session with the cause `control` and replies once its steps have
    /// run, with the events it caused; a request that cannot be made fails with `SceneRefused`, naming its kind.
    func requestScene(_ call: any ControlCall) {
        let application = daemon.application
        guard let name = call.parameters[ControlProtocol.Field.request]?.stringValue,
            let action = ControlProtocol.SceneAction(rawValue: name)
        else {
            call.fail(.invalidParameter(ControlProtocol.Field.request))
            return
        }
        let identifier = call.parameters[ControlProtocol.Field.id]?.stringValue ?? ""
        // What is wrong with the request itself first: an application without scenes, an identifier that names none.
        if let code: SceneError.Code = !application.usesScenes ? .scenesNotAdopted
            : !SceneError.isValid(identifier) ? .invalidIdentifier : nil
        {
            call.fail(ControlInterface.sceneRefused(SceneError(code, identifier: identifier)))
            return
        }
        let request = SceneRequest(action, identifier)
        logger.info(
            "control: scene \(request) requested by \(call.peer)",
            metadata: [
                LogKey.request: .string("scene \(name)"), LogKey.cause: "control", LogKey.scene: .string(identifier),
            ]
        )
        hub.requestStarted()
        do {
            try daemon.submitControlSceneRequest(request) { [hub, unowned daemon = daemon] outcome in
                let (events, omitted) = hub.requestFinished(range: outcome.events)
                daemon.deliverTraceLines()
                // Scene requests are never offered to anybody; should one ever be, its refusal reads as a reload's.
                guard let name = Self.outcomeName(outcome, of: request.description, failing: call) else { return }
                let scene = application.sceneSession(withPersistentIdentifier: identifier)?.scene
                call.reply([
                    ControlProtocol.Field.request: .string(action.rawValue),
                    ControlProtocol.Field.id: .string(identifier),
                    "outcome": .string(name),
                    ControlProtocol.Field.sceneState: .string((scene?.activationState ?? .unattached).rawValue),
                    ControlProtocol.Field.state: .string(application.applicationState.rawValue),
                    ControlProtocol.Field.events: .array(events.map(ControlInterface.json)),
                    "eventsOmitted": .int(omitted),
                ])
            }
        } catch {
            _ = hub.requestFinished(range: nil)
            call.fail(ControlInterface.sceneRefused(error))
        }
    }

    /// `GetTree` with `scene`: that scene's tree, none while it is not connected; an identifier no session has fails.
    /// Counted first, as the whole tree is.
    func sceneTree(_ call: any ControlCall, identifier: String, views: Bool) {
        let application = daemon.application
        guard application.usesScenes else {
            call.fail(ControlInterface.sceneRefused(SceneError(.scenesNotAdopted, identifier: identifier)))
            return
        }
        guard let session = application.sceneSession(withPersistentIdentifier: identifier) else {
            let code: SceneError.Code = SceneError.isValid(identifier) ? .unknownSession : .invalidIdentifier
            call.fail(ControlInterface.sceneRefused(SceneError(code, identifier: identifier)))
            return
        }
        guard let scene = session.scene else {
            call.reply(["nodes": []])
            return
        }
        let counts = application.treeCounts(of: scene)
        let nodes = counts.controllers + (views ? counts.views : 0)
        call.charge(counts.controllers * ControlInterface.costPerNode)
        guard nodes <= ControlInterface.maximumTreeNodes else {
            call.fail(ControlInterface.treeTooLarge(nodes: nodes, limit: ControlInterface.maximumTreeNodes))
            return
        }
        let snapshot = application.treeSnapshot(of: scene, includingViews: views)
        call.reply(["nodes": .array(snapshot.map(ControlInterface.json))])
    }

    /// `GetStatus`'s `scenes`, in an application that uses scenes: its sessions, and its connected scenes by state.
    func sceneCounts() -> JSONObject? {
        let application = daemon.application
        guard application.usesScenes else { return nil }
        var byState: [Scene.ActivationState: Int] = [:]
        for scene in application.connectedScenes { byState[scene.activationState, default: 0] += 1 }
        return [
            ControlProtocol.Field.sessions: .int(application.sceneSessions.count),
            Scene.ActivationState.foregroundActive.rawValue: .int(byState[.foregroundActive] ?? 0),
            Scene.ActivationState.foregroundInactive.rawValue: .int(byState[.foregroundInactive] ?? 0),
            Scene.ActivationState.background.rawValue: .int(byState[.background] ?? 0),
        ]
    }
}

/// `GetScenes`' filters, read from the call: each one given must match.
struct SceneFilter {
    var role: String?
    var state: ControlProtocol.SceneStateFilter?
    var userInfo: (key: String, value: String)?
    var prefix: String?

    /// The filters of a call; a state that is none, or a `userInfo` without `=`, is an invalid parameter.
    init(_ parameters: JSONObject) throws(VarlinkError) {
        role = parameters[ControlProtocol.Field.role]?.stringValue
        prefix = parameters[ControlProtocol.Field.prefix]?.stringValue
        if let name = parameters[ControlProtocol.Field.state]?.stringValue {
            guard let state = ControlProtocol.SceneStateFilter(rawValue: name) else {
                throw .invalidParameter(ControlProtocol.Field.state)
            }
            self.state = state
        }
        if let pair = parameters[ControlProtocol.Field.userInfo]?.stringValue {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw .invalidParameter(ControlProtocol.Field.userInfo)
            }
            userInfo = (String(pair[..<equals]), String(pair[pair.index(after: equals)...]))
        }
    }

    /// Whether `session` is listed.
    func matches(_ session: SceneSessionSnapshot) -> Bool {
        if let role, session.role != role { return false }
        if let state, !state.matches(session.state.rawValue) { return false }
        if let prefix, !session.identifier.hasPrefix(prefix) { return false }
        if let userInfo, session.userInfo[userInfo.key] != userInfo.value { return false }
        return true
    }
}

extension SceneRequest {
    /// The request the control interface's `action` names about session `identifier`.
    init(_ action: ControlProtocol.SceneAction, _ identifier: String) {
        switch action {
        case .foreground: self = .foreground(identifier)
        case .background: self = .background(identifier)
        case .disconnect: self = .disconnect(identifier)
        case .discard: self = .discard(identifier)
        }
    }
}

extension SceneRefusalKind {
    /// The wire's name for a `SceneError`'s code.
    init(_ code: SceneError.Code) {
        switch code {
        case .scenesNotAdopted: self = .scenesNotAdopted
        case .invalidIdentifier: self = .invalidIdentifier
        case .unknownSession: self = .unknownSession
        case .duplicateIdentifier: self = .duplicateIdentifier
        }
    }
}

extension ControlInterface {
    /// What a call that lists the scene sessions costs in a dispatch's budget, per session looked at: about what a
    /// session's JSON takes in a `GetScenes` reply.
    static let costPerSession = 200

    /// A `SceneSession`.
    static func json(_ session: SceneSessionSnapshot) -> JSONValue {
        var object: JSONObject = [
            "id": .string(session.identifier),
            "role": .string(session.role),
            "state": .string(session.state.rawValue),
            "userInfo": .object(
                JSONObject(session.userInfo.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
            ),
            "savedState": .bool(session.hasSavedState),
        ]
        if let configuration = session.configuration { object["configuration"] = .string(configuration) }
        return .object(object)
    }

    /// The `SceneRefused` error: the kind of `error`, the identifier, and the error's sentence.
    static func sceneRefused(_ error: SceneError) -> VarlinkError {
        VarlinkError(
            ControlProtocol.ErrorName.sceneRefused.qualifiedName,
            parameters: [
                ControlProtocol.Field.kind: .string(SceneRefusalKind(error.code).rawValue),
                ControlProtocol.Field.id: .string(error.identifier),
                ControlProtocol.Field.reason: .string(error.description),
            ]
        )
    }
}
