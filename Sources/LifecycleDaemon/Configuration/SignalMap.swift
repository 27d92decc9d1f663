//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
public import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// What a mapped signal asks the application for.
public enum SignalAction: String, Sendable, Hashable, CaseIterable {
    /// Enter the background.
    case background
    /// Return to the foreground (active).
    case foreground
    /// Reload the configuration.
    case reload
    /// Terminate.
    case terminate
    /// Deliver a memory warning.
    case memoryWarning = "memory-warning"
    /// Not handled by lifecycled: the signal keeps its default disposition.
    case `default`
    /// Become inactive: an interruption (the seeds' incoming call); a foreground request makes it active again.
    case inactive
}

/// Which signal asks for what (docs/lifecycle.md §6); SIGKILL and SIGSTOP can never be mapped, nor SIGABRT and the
/// synchronous fault signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS), which report a crash.
public struct SignalMap: Sendable, Hashable {
    /// The actions, by signal; `default` entries are left out.
    public private(set) var actions: [UnixSignal: SignalAction]

    /// The defaults of docs/lifecycle.md §6.
    public static var standard: SignalMap {
        SignalMap(actions: [
            .user1: .background,
            .terminalStop: .background,
            .user2: .foreground,
            .continue: .foreground,
            .hangup: .reload,
            .terminate: .terminate,
            .interrupt: .terminate,
            .memoryWarning: .memoryWarning,
            .interruption: .inactive,
        ])
    }

    /// Creates a map.
    public init(actions: [UnixSignal: SignalAction]) {
        self.actions = actions.filter { $0.value != .default }
    }

    /// Sets (or, with `default`, removes) the action of one signal.
    public mutating func set(_ signal: UnixSignal, to action: SignalAction) {
        actions[signal] = action == .default ? nil : action
    }

    /// The signals that are mapped, in number order.
    public var signals: [UnixSignal] { actions.keys.sorted { $0.rawValue < $1.rawValue } }

    /// Parses `SIG=ACTION`; the error message names the text and what would be valid.
    public static func parseEntry(_ text: String) throws(ConfigurationError) -> (UnixSignal, SignalAction) {
        guard let equals = text.firstIndex(of: "=") else {
            throw ConfigurationError(
                source: "--signal",
                line: nil,
                message: "\"\(text)\" is not SIGNAL=ACTION (for example SIGUSR1=background)"
            )
        }
        let name = String(text[..<equals]).trimmed
        let value = String(text[text.index(after: equals)...]).trimmed
        return try (parseSignal(name, source: "--signal", line: nil), parseAction(value, source: "--signal", line: nil))
    }

    static func parseSignal(_ name: String, source: String, line: Int?) throws(ConfigurationError) -> UnixSignal {
        guard let signal = UnixSignal(name: name) else {
            throw ConfigurationError(
                source: source,
                line: line,
                message: "\"\(name)\" is not a signal; use a name such as SIGUSR1, SIGHUP or SIGRTMIN+2"
            )
        }
        guard !signal.isUncatchable else {
            throw ConfigurationError(
                source: source,
                line: line,
                message: "\(signal.name) cannot be mapped: no process can catch or block it"
            )
        }
        if let reason = reservedReason(signal) {
            throw ConfigurationError(source: source, line: line, message: "\(signal.name) cannot be mapped: \(reason)")
        }
        return signal
    }

    /// Why a signal is reserved, or nil. `SIGABRT` and the synchronous fault signals report a crash of the process
    /// itself (a failed precondition, the watchdog's abort, a bad access): blocked and read from a signalfd, a fault
    /// would loop for ever or the crash be taken for a lifecycle request, and anyone allowed to signal the service could
    /// make it look as if it crashed. They keep their default action: the process ends, with a core.
    static func reservedReason(_ signal: UnixSignal) -> String? {
        switch signal.rawValue {
        case SIGABRT:
            "it reports a crash (abort(), a failed precondition, the watchdog's abort) and must end the process"
        case SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS:
            "the kernel sends it for a fault of the process itself (a crash), which must end the process"
        default:
            nil
        }
    }

    static func parseAction(_ value: String, source: String, line: Int?) throws(ConfigurationError) -> SignalAction {
        guard let action = SignalAction(rawValue: value) else {
            throw ConfigurationError(
                source: source,
                line: line,
                message: "\"\(value)\" is not an action; valid: "
                    + SignalAction.allCases.map(\.rawValue).joined(separator: ", ")
            )
        }
        return action
    }
}
