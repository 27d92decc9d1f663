//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd
public import LifecyclePrimitives

/// Sends sd_notify(3) messages to the service manager, or does nothing when not started by one.
public struct SystemdNotifier: Sendable {
    /// The notification socket named by `$NOTIFY_SOCKET` when the notifier was made; nil outside a notify service.
    public let socketPath: String?

    /// A notifier whose every `notify` is a silent no-op.
    public static let disabled = SystemdNotifier(socketPath: nil)

    private init(socketPath: String?) {
        self.socketPath = socketPath
    }

    /// Reads `$NOTIFY_SOCKET`; without it the notifier is disabled.
    public static func fromEnvironment() -> SystemdNotifier {
        SystemdNotifier(socketPath: ProcessEnvironment.value("NOTIFY_SOCKET"))
    }

    /// Whether messages are sent at all.
    public var isEnabled: Bool { socketPath != nil }

    /// True when a service manager started this process (`$INVOCATION_ID` or `$NOTIFY_SOCKET` is set).
    public static var isUnderSystemd: Bool {
        ProcessEnvironment.value("INVOCATION_ID") != nil || ProcessEnvironment.value("NOTIFY_SOCKET") != nil
    }

    /// Sends the assignments as one datagram, one per line; a no-op when disabled.
    public func notify(_ assignments: [NotifyAssignment]) throws(SystemCallError) {
        guard isEnabled, !assignments.isEmpty else { return }
        let message = assignments.map(\.line).joined(separator: "\n")
        // sd_notify reads $NOTIFY_SOCKET again at every call; it is left in the environment so that
        // sd_event's watchdog (which calls sd_notify itself) keeps working.
        try SystemCallError.check(sd_notify(0, message), "sd_notify(\(message.debugDescription))")
    }

    /// Sends the assignments as one datagram, one per line; a no-op when disabled.
    public func notify(_ assignments: NotifyAssignment...) throws(SystemCallError) {
        try notify(assignments)
    }

    /// Waits until the service manager has processed every message sent before (`BARRIER=1`, sd_notify_barrier(3)),
    /// at most `timeout`; a no-op when disabled.
    public func barrier(timeout: Duration) throws(SystemCallError) {
        guard isEnabled else { return }
        try SystemCallError.check(sd_notify_barrier(0, UInt64(timeout.components.seconds) * 1_000_000 + UInt64(timeout.components.attoseconds / 1_000_000_000_000)), "sd_notify_barrier")
    }

    /// The watchdog timeout systemd expects pings within (`$WATCHDOG_USEC` for this PID), or nil when none is set.
    public func watchdogInterval() -> Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0 else { return nil }
        return .microseconds(Int64(clamping: usec))
    }
}
