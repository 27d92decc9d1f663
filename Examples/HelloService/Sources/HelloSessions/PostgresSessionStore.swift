//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import FoundationEssentials
public import Logging
public import PostgresNIO

/// Sessions in PostgreSQL (postgres-nio), for several replicas: a session resumes on whichever replica its client
/// reaches next. One table, `hello_sessions` (made if missing): the identifier, the generation, when the record was
/// last written, and the record itself (JSON). A write is an upsert that keeps the row of a higher generation.
public struct PostgresSessionStore: SessionStore {
    private let client: PostgresClient
    private let logger: Logger
    public let description: String

    /// A store on the server `configuration` names; `description` says where, for the log (without the password).
    public init(configuration: PostgresClient.Configuration, description: String, logger: Logger) {
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.description = description
        self.logger = logger
    }

    public func prepare() async throws {
        try await client.query(
            """
            CREATE TABLE IF NOT EXISTS hello_sessions (
                id text PRIMARY KEY,
                generation integer NOT NULL,
                written_at double precision NOT NULL,
                record text NOT NULL
            )
            """,
            logger: logger
        )
    }

    public func run() async {
        await client.run()
    }

    public func load(_ id: String) async throws -> SessionRecord? {
        let rows = try await client.query("SELECT record FROM hello_sessions WHERE id = \(id)", logger: logger)
        for try await record in rows.decode(String.self) {
            return try JSONDecoder().decode(SessionRecord.self, from: Data(record.utf8))
        }
        return nil
    }

    // Every commit is durable (PostgreSQL's own fsync), so `durably` asks nothing more.
    public func save(_ records: [SessionRecord], durably: Bool) async throws {
        guard !records.isEmpty else { return }
        let encoder = JSONEncoder()
        let ids = records.map(\.id)
        let generations = records.map { Int32(truncatingIfNeeded: $0.generation) }
        let written = records.map(\.writtenAt)
        let texts = try records.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
        // One statement for the whole checkpoint.
        try await client.query(
            """
            INSERT INTO hello_sessions (id, generation, written_at, record)
            SELECT * FROM unnest(\(ids)::text[], \(generations)::integer[], \(written)::double precision[], \(texts)::text[])
            ON CONFLICT (id) DO UPDATE SET generation = EXCLUDED.generation, written_at = EXCLUDED.written_at,
                record = EXCLUDED.record
            WHERE hello_sessions.generation <= EXCLUDED.generation
            """,
            logger: logger
        )
    }

    public func delete(_ id: String, generation: Int) async throws {
        let generation = Int32(truncatingIfNeeded: generation)
        try await client.query(
            "DELETE FROM hello_sessions WHERE id = \(id) AND generation <= \(generation)",
            logger: logger
        )
    }

    public func expire(notWrittenSince cutoff: Double) async throws -> [String] {
        let rows = try await client.query(
            "DELETE FROM hello_sessions WHERE written_at < \(cutoff) RETURNING id",
            logger: logger
        )
        var expired: [String] = []
        for try await id in rows.decode(String.self) { expired.append(id) }
        return expired
    }
}

extension PostgresClient.Configuration {
    /// The configuration a `postgresql://user[:password]@host[:port]/database` URL names; a host that is a path (
    /// `postgresql://user@%2Frun%2Fpostgresql/db`, or `?host=/run/postgresql`) is a Unix socket's directory. Nil, with
    /// what is wrong, for anything else.
    public static func parse(url text: String) -> Result<PostgresClient.Configuration, StoreError> {
        guard let components = URLComponents(string: text), ["postgresql", "postgres"].contains(components.scheme ?? "")
        else {
            return .failure(StoreError(message: "\(text) is not a postgresql://user@host:port/database URL"))
        }
        guard let user = components.user, !user.isEmpty else {
            return .failure(StoreError(message: "\(text) names no user (postgresql://USER@host/database)"))
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty else {
            return .failure(StoreError(message: "\(text) names no database (postgresql://user@host/DATABASE)"))
        }
        let socketDirectory = components.queryItems?.first { $0.name == "host" }?.value
            ?? components.host.flatMap { $0.hasPrefix("/") ? $0 : nil }
        if let socketDirectory {
            let port = components.port ?? 5432
            return .success(
                .init(
                    unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)",
                    username: user,
                    password: components.password,
                    database: database
                )
            )
        }
        guard let host = components.host, !host.isEmpty else {
            return .failure(StoreError(message: "\(text) names no host (postgresql://user@HOST/database)"))
        }
        return .success(
            .init(
                host: host,
                port: components.port ?? 5432,
                username: user,
                password: components.password,
                database: database,
                tls: .disable
            )
        )
    }
}
