//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleSystemd

/// Where the daemon's log records go and in what form: `--log-format`, `[Logging] Format=` (docs/configuration.md;
/// docs/operations.md, "Log formats"). Chosen once, at start.
@_spi(Internal) public enum LogFormat: String, Sendable, Hashable, CaseIterable {
    /// The journal when stderr is a journald stream, the text format on a terminal, JSON lines anywhere else.
    case auto
    /// The journal's native protocol, whatever stderr is.
    case journal
    /// One JSON object per line per record on stderr.
    case json
    /// `key=value` lines on stderr; on a terminal, the trace in its human format.
    case text

    /// The logging backend this format means for the process, where stderr goes now.
    var backend: LoggingBackend {
        switch self {
        case .auto: LoggingBackend.detect()
        case .journal: .journal
        case .json: .json
        case .text: .text
        }
    }

    /// The formats as a command line or a file names them: `auto, journal, json, text`.
    static var validNames: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

extension DaemonConfiguration {
    /// `[Logging]`.
    static let loggingKeys: [ConfigurationKey<DaemonConfiguration>] = [
        .choice("Format", \.logFormat, what: "a log format")
    ]
}
