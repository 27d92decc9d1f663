//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Where sessions live between connections and across processes: a directory in the service's `StateDirectory=` on
/// one machine (``DirectorySessionStore``), PostgreSQL for several replicas (``PostgresSessionStore``).
///
/// A session is owned by the process that holds its connection: that process writes its record (at its creation, each
/// resume, each change of its state, every checkpoint while it is connected, and once more before its connection is
/// closed); between connections nobody holds it and any process of the service may load it. A write never replaces a
/// record of a higher ``SessionRecord/generation``.
public protocol SessionStore: Sendable {
    /// Where it is, for the log (`/var/lib/hello-service/sessions`, `postgresql://…@host/db`).
    var description: String { get }
    /// Makes what it needs (the directory, the table); throws when it cannot be reached.
    func prepare() async throws
    /// Runs what it needs while it is used (a connection pool); returns when cancelled.
    func run() async
    /// The record of `id`, or nil.
    func load(_ id: String) async throws -> SessionRecord?
    /// Writes `records`, each unless the store has one of a higher generation; `durably`: on the disk (not only in the
    /// kernel's cache) before it returns, for the last write of a process.
    func save(_ records: [SessionRecord], durably: Bool) async throws
    /// Deletes the record of `id` unless the store has one of a higher generation than `generation`.
    func delete(_ id: String, generation: Int) async throws
    /// Deletes the records not written since `cutoff` (seconds since 1970) and returns their identifiers.
    func expire(notWrittenSince cutoff: Double) async throws -> [String]
}
