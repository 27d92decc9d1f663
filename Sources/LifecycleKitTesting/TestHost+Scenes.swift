//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecycleKit

// Driving the scenes of an application that uses them (docs/lifecycle.md, "Scenes"), as a hosted server does when a
// client connects, goes away or closes for good, and as an operator does with `lifecyclectl scene`: each call makes
// one request, ends the turn, and returns what became of it.
extension TestHost {
    /// Connects a scene for a new session named `identifier` (of `role`, holding `userInfo`), into the foreground or,
    /// `inBackground`, into the background, and ends the turn. Returns the session.
    @discardableResult
    public func connectScene(
        _ identifier: String,
        role: SceneSession.Role = .windowApplication,
        userInfo: [String: String] = [:],
        inBackground: Bool = false,
        cause: Cause = "test"
    ) throws(SceneError) -> SceneSession {
        let session = try application.requestSceneSessionActivation(
            role: role,
            persistentIdentifier: identifier,
            userInfo: userInfo,
            inBackground: inBackground,
            cause: cause
        )
        endTurn()
        return session
    }

    /// Brings the scene of session `identifier` to the foreground — connecting it again, restored from its saved
    /// state, when it is disconnected — and ends the turn.
    @discardableResult
    public func foregroundScene(_ identifier: String, cause: Cause = "test") throws(SceneError) -> RequestOutcome? {
        try sendScene(.foreground(identifier), cause: cause)
    }

    /// Sends the scene of session `identifier` to the background and ends the turn.
    @discardableResult
    public func backgroundScene(_ identifier: String, cause: Cause = "test") throws(SceneError) -> RequestOutcome? {
        try sendScene(.background(identifier), cause: cause)
    }

    /// Disconnects the scene of session `identifier`, keeping the session and its saved state, and ends the turn.
    @discardableResult
    public func disconnectScene(_ identifier: String, cause: Cause = "test") throws(SceneError) -> RequestOutcome? {
        try sendScene(.disconnect(identifier), cause: cause)
    }

    /// Deletes session `identifier` (its scene disconnects first) and ends the turn.
    @discardableResult
    public func discardScene(_ identifier: String, cause: Cause = "test") throws(SceneError) -> RequestOutcome? {
        try sendScene(.discard(identifier), cause: cause)
    }

    /// The connected scene of session `identifier`, or nil.
    public func scene(_ identifier: String) -> Scene? {
        application.sceneSession(withPersistentIdentifier: identifier)?.scene
    }

    private func sendScene(_ request: SceneRequest, cause: Cause) throws(SceneError) -> RequestOutcome? {
        var outcome: RequestOutcome?
        try application.submitScene(request, cause: cause) { outcome = $0 }
        endTurn()
        return outcome
    }
}
