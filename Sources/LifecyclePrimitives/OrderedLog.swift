//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Log lines that wait to be written, in order (the trace's, written when the loop's dispatch returns), which every
/// other record of the process's log handlers is written after: what keeps a process's log in the order things
/// happened (docs/lifecycle.md §7). LifecycleKit's trace buffer is the one; the log handlers (LifecycleSystemd) reach it
/// through this protocol, so neither module depends on the other.
package protocol OrderedLog: AnyObject, Sendable {
    /// Writes every waiting line, then runs `body` (a handler writing one record), under one lock: whatever thread
    /// logs, its record comes after the lines recorded before it and before any line recorded after it.
    func writeInOrder(_ body: () -> Void)
}

/// What a log handler knows of the line it is asked to write while an ``OrderedLog`` writes its waiting lines.
package enum OrderedLogContext {
    /// True on a thread while it writes the waiting lines: a handler those lines reach writes them straight away (they
    /// are what ``OrderedLog/writeInOrder(_:)`` would write first, and the lock is held).
    @TaskLocal package static var isWritingLines = false

    /// While a waiting line is written, the moment its event happened: a handler stamps the line with it rather than
    /// with the time it writes it (docs/operations.md, "Log formats"). nil for any other record.
    @TaskLocal package static var eventTime: WallTime?
}
