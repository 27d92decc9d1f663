//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The exit statuses from sysexits(3) that the daemon itself returns; the command line's own errors exit with
/// 64 (EX_USAGE) through swift-argument-parser, and a clean termination with 0.
package enum ExitStatus: Int32, Sendable {
    /// The service gave up after too many abnormal ends in a row (EX_UNAVAILABLE): the shipped units'
    /// `RestartPreventExitStatus=` names it, so systemd stops restarting and a socket unit keeps listening
    /// (docs/restoration.md, "Crash loops").
    case unavailable = 69
    /// Something the daemon needs from the system failed (EX_OSERR).
    case osError = 71
    /// The application terminated as a failure, its restarts exhausted (EX_TEMPFAIL): systemd's `Restart=` takes over.
    case temporaryFailure = 75
    /// The configuration file is wrong (EX_CONFIG).
    case configuration = 78
}
