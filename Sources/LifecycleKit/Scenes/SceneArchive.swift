//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

extension Archive {
    /// One scene session of a saved state (docs/restoration.md, "Scene sessions"): what it is, whether its scene was
    /// connected, and its scene's tree.
    @_spi(Internal) public struct Session: Codable, Sendable, Hashable {
        /// The session's persistent identifier.
        @_spi(Internal) public var identifier: String
        /// Its role.
        @_spi(Internal) public var role: String
        /// The application's values for it.
        @_spi(Internal) public var userInfo: [String: String]
        /// The name of the configuration its scene was last connected with.
        @_spi(Internal) public var configuration: String?
        /// The state its scene was connected in when the state was saved (`active` or `background`: what it wanted);
        /// nil when it was not connected.
        @_spi(Internal) public var connected: String?
        /// Deleted while the service was not running: the next launch reports it (`didDiscardSceneSessions`) and drops it.
        @_spi(Internal) public var discarded: Bool
        /// Its scene's tree: the shape and the values of its restorable controllers; nil when none was preserved.
        @_spi(Internal) public var tree: Node?

        enum CodingKeys: String, CodingKey {
            case identifier = "id"
            case role, userInfo, configuration, connected, discarded, tree
        }

        /// A session record.
        @_spi(Internal) public init(
            identifier: String,
            role: String,
            userInfo: [String: String] = [:],
            configuration: String? = nil,
            connected: String? = nil,
            discarded: Bool = false,
            tree: Node? = nil
        ) {
            self.identifier = identifier
            self.role = role
            self.userInfo = userInfo
            self.configuration = configuration
            self.connected = connected
            self.discarded = discarded
            self.tree = tree
        }

        /// Decodes a session; everything but its identifier and role may be absent.
        @_spi(Internal) public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            identifier = try container.decode(String.self, forKey: .identifier)
            role = try container.decode(String.self, forKey: .role)
            userInfo = try container.decodeIfPresent([String: String].self, forKey: .userInfo) ?? [:]
            configuration = try container.decodeIfPresent(String.self, forKey: .configuration)
            connected = try container.decodeIfPresent(String.self, forKey: .connected)
            discarded = try container.decodeIfPresent(Bool.self, forKey: .discarded) ?? false
            tree = try container.decodeIfPresent(Node.self, forKey: .tree)
        }

        /// Encodes what is there; an empty or absent member is left out.
        @_spi(Internal) public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(identifier, forKey: .identifier)
            try container.encode(role, forKey: .role)
            if !userInfo.isEmpty { try container.encode(userInfo, forKey: .userInfo) }
            try container.encodeIfPresent(configuration, forKey: .configuration)
            try container.encodeIfPresent(connected, forKey: .connected)
            if discarded { try container.encode(true, forKey: .discarded) }
            try container.encodeIfPresent(tree, forKey: .tree)
        }
    }

    /// Marks the session `identifier` as discarded, for a tool that edits the saved state while the service is not
    /// running: the next launch reports it to `application(_:didDiscardSceneSessions:)` and drops it. False when the
    /// archive has no such session.
    @_spi(Internal) public mutating func discardSession(withIdentifier identifier: String) -> Bool {
        guard let index = sessions.firstIndex(where: { $0.identifier == identifier }) else { return false }
        sessions[index].discarded = true
        sessions[index].connected = nil
        sessions[index].tree = nil
        return true
    }
}

/// What discarding a session in a saved state's bytes came to (``Archive/discardSession(_:inSavedState:source:)``).
package enum SavedStateSessionDiscard: Equatable, Sendable {
    /// The session is marked: the saved state to write back, one generation newer than `generation`.
    case discarded(bytes: [UInt8], generation: Int)
    /// The session was marked already: nothing to write.
    case alreadyDiscarded(generation: Int)
    /// The saved state has no such session; it has `sessions`.
    case noSuchSession(sessions: Int)
    /// The bytes are not a saved state this build reads.
    case unreadable(reason: String)
    /// This build would not write the saved state back as it is (members it does not know, another writer's
    /// encoding): rewriting it would lose them.
    case notRewritable
}

extension Archive {
    /// Marks session `identifier` discarded in the saved state `bytes` (read from `source`), for a tool that edits it
    /// while the service is not running (`lifecyclectl scene discard --state-directory`): decoded and checked as a
    /// launch checks it, the session marked (``discardSession(withIdentifier:)``), the generation raised by one so the
    /// edited copy is the newest a launch finds, everything else as it was. Refused (``SavedStateSessionDiscard/notRewritable``)
    /// unless this build encodes the unedited state back to exactly `bytes`: a newer LifecycleKit's members would be
    /// lost otherwise.
    package static func discardSession(
        _ identifier: String,
        inSavedState bytes: [UInt8],
        source: String
    ) -> SavedStateSessionDiscard {
        var archive: Archive
        do {
            archive = try Archive.decodeState(bytes, source: source)
        } catch {
            return .unreadable(reason: error.reason)
        }
        guard archive.encodedState() == bytes else { return .notRewritable }
        let generation = archive.generation
        guard let session = archive.sessions.first(where: { $0.identifier == identifier }) else {
            return .noSuchSession(sessions: archive.sessions.count)
        }
        if session.discarded { return .alreadyDiscarded(generation: generation) }
        _ = archive.discardSession(withIdentifier: identifier)
        archive.generation = generation < Int.max ? generation + 1 : generation
        return .discarded(bytes: archive.encodedState(), generation: generation)
    }
}
