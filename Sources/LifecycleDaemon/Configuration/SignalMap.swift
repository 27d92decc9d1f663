//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecycleKit
public import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

/// Which signal asks for what (docs/lifecycle.md §6); SIGKILL and SIGSTOP can never be mapped, nor SIGABRT and the
/// synchronous fault signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS), which report a crash, nor SIGCHLD,
/// which reports a child's exit.
@_spi(Internal) public struct SignalMap: Sendable, Hashable {
    /// What each mapped signal asks for; a signal left at its default disposition (`default` in the configuration) is
    /// not in it.
    @_spi(Internal) public private(set) var requests: [UnixSignal: LifecycleRequest]

    /// The defaults of docs/lifecycle.md §6.
    @_spi(Internal) public static var standard: SignalMap {
        var requests: [UnixSignal: LifecycleRequest] = [:]
        for (name, request) in standardSignalRequests {
            // Every name in the table is one UnixSignal reads (the configuration tests check the whole map).
            requests[UnixSignal(name: name)!] = request
        }
        return SignalMap(requests: requests)
    }

    /// Creates a map.
    package init(requests: [UnixSignal: LifecycleRequest]) {
        self.requests = requests
    }

    /// Maps one signal to a request, or (nil: `default`) leaves it at its default disposition.
    @_spi(Internal) public mutating func set(_ signal: UnixSignal, to request: LifecycleRequest?) {
        requests[signal] = request
    }

    /// The signals that are mapped, in number order.
    @_spi(Internal) public var signals: [UnixSignal] { requests.keys.sorted { $0.rawValue < $1.rawValue } }

    /// Parses `SIG=REQUEST` (`default` for none); the error message names the text and what would be valid.
    @_spi(Internal) public static func parseEntry(_ text: String) throws(ConfigurationError) -> (UnixSignal, LifecycleRequest?) {
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
    /// make it look as if it crashed. They keep their default action: the process ends, with a core. `SIGCHLD` tells
    /// the daemon a child exited: mapped, every exit of the upgrade's keeper process (or, as PID 1, of an orphan) would
    /// become a request, and as PID 1 the reaper's own watch of it would fail (EBUSY) and the daemon exit 71.
    static func reservedReason(_ signal: UnixSignal) -> String? {
        switch signal.rawValue {
        case SIGABRT:
            "it reports a crash (abort(), a failed precondition, the watchdog's abort) and must end the process"
        case SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS:
            "the kernel sends it for a fault of the process itself (a crash), which must end the process"
        case SIGCHLD:
            "the kernel sends it when a child exits (the upgrade's keeper process; as PID 1, every orphan the "
                + "daemon reaps), so a child's exit would be taken for a request"
        default:
            nil
        }
    }

    /// A request's name, or nil for `default` (the signal keeps its default disposition).
    static func parseAction(_ value: String, source: String, line: Int?) throws(ConfigurationError) -> LifecycleRequest? {
        if value == "default" { return nil }
        guard let request = LifecycleRequest(rawValue: value) else {
            throw ConfigurationError(
                source: source,
                line: line,
                message: "\"\(value)\" is not an action; valid: "
                    + (LifecycleRequest.allCases.map(\.rawValue) + ["default"]).joined(separator: ", ")
            )
        }
        return request
    }
}
