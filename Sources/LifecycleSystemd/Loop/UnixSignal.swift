//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CSystemd
import LifecyclePrimitives

#if canImport(Glibc)
import Glibc
#endif

/// A Unix signal, named as `kill -l` and signal(7) name it (`SIGUSR1`, `SIGRTMIN+2`).
public struct UnixSignal: Hashable, Sendable, CustomStringConvertible {
    /// The signal number.
    public let rawValue: Int32

    /// Wraps a signal number.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    private static let standard: [(String, Int32)] = [
        ("SIGHUP", SIGHUP), ("SIGINT", SIGINT), ("SIGQUIT", SIGQUIT), ("SIGILL", SIGILL),
        ("SIGTRAP", SIGTRAP), ("SIGABRT", SIGABRT), ("SIGBUS", SIGBUS), ("SIGFPE", SIGFPE),
        ("SIGKILL", SIGKILL), ("SIGUSR1", SIGUSR1), ("SIGSEGV", SIGSEGV), ("SIGUSR2", SIGUSR2),
        ("SIGPIPE", SIGPIPE), ("SIGALRM", SIGALRM), ("SIGTERM", SIGTERM), ("SIGCHLD", SIGCHLD),
        ("SIGCONT", SIGCONT), ("SIGSTOP", SIGSTOP), ("SIGTSTP", SIGTSTP), ("SIGTTIN", SIGTTIN),
        ("SIGTTOU", SIGTTOU), ("SIGURG", SIGURG), ("SIGXCPU", SIGXCPU), ("SIGXFSZ", SIGXFSZ),
        ("SIGVTALRM", SIGVTALRM), ("SIGPROF", SIGPROF), ("SIGWINCH", SIGWINCH), ("SIGIO", SIGIO),
        ("SIGPWR", SIGPWR), ("SIGSYS", SIGSYS),
    ]

    /// The lowest real-time signal available to applications (glibc reserves the first few).
    public static var realTimeMin: Int32 { Int32(__libc_current_sigrtmin()) }
    /// The highest real-time signal.
    public static var realTimeMax: Int32 { Int32(__libc_current_sigrtmax()) }

    /// Parses `SIGUSR1`, `USR1`, `usr1`, `SIGRTMIN+2`, `RTMIN`, `SIGRTMAX-1`; nil when no such signal exists.
    public init?(name: String) {
        var text = name.uppercased()
        if !text.hasPrefix("SIG") { text = "SIG" + text }
        if let match = Self.standard.first(where: { $0.0 == text }) {
            self.rawValue = match.1
            return
        }
        for (base, value, sign) in [("SIGRTMIN", Self.realTimeMin, Int32(1)), ("SIGRTMAX", Self.realTimeMax, Int32(-1))]
        where text.hasPrefix(base) {
            let rest = text.dropFirst(base.count)
            var offset: Int32 = 0
            if !rest.isEmpty {
                let expectedSign: Character = sign > 0 ? "+" : "-"
                // Digits only: Int32(_:) would also take a second sign (`SIGRTMIN++2`).
                let digits = rest.dropFirst()
                guard rest.first == expectedSign, !digits.isEmpty, digits.allSatisfy({ ("0"..."9").contains($0) }),
                    let n = Int32(digits)
                else { return nil }
                offset = n * sign
            }
            // An offset past the range is no signal, never an overflow (`SIGRTMIN+2147483647`: a fuzzing finding).
            let (number, overflow) = value.addingReportingOverflow(offset)
            guard !overflow, number >= Self.realTimeMin, number <= Self.realTimeMax else { return nil }
            self.rawValue = number
            return
        }
        return nil
    }

    /// The conventional name: `SIGUSR1`, or `SIGRTMIN+n` for real-time signals.
    public var name: String {
        if let match = Self.standard.first(where: { $0.1 == rawValue }) { return match.0 }
        if rawValue >= Self.realTimeMin, rawValue <= Self.realTimeMax {
            let offset = rawValue - Self.realTimeMin
            return offset == 0 ? "SIGRTMIN" : "SIGRTMIN+\(offset)"
        }
        return "signal \(rawValue)"
    }

    /// The conventional name, as ``name``.
    public var description: String { name }

    /// True for `SIGKILL` and `SIGSTOP`, which no process can catch, block or map.
    public var isUncatchable: Bool { rawValue == SIGKILL || rawValue == SIGSTOP }

    /// `SIGHUP`: reload by convention.
    public static let hangup = UnixSignal(rawValue: SIGHUP)
    /// `SIGINT`: Ctrl-C in a terminal.
    public static let interrupt = UnixSignal(rawValue: SIGINT)
    /// `SIGTERM`: systemd's stop request.
    public static let terminate = UnixSignal(rawValue: SIGTERM)
    /// `SIGUSR1`.
    public static let user1 = UnixSignal(rawValue: SIGUSR1)
    /// `SIGUSR2`.
    public static let user2 = UnixSignal(rawValue: SIGUSR2)
    /// `SIGTSTP`: Ctrl-Z in a terminal.
    public static let terminalStop = UnixSignal(rawValue: SIGTSTP)
    /// `SIGCONT`: resumes a stopped process.
    public static let `continue` = UnixSignal(rawValue: SIGCONT)
    /// The memory-warning signal by default: `SIGRTMIN+2`.
    public static var memoryWarning: UnixSignal { UnixSignal(rawValue: realTimeMin + 2) }
    /// The interruption signal by default (the application becomes inactive): `SIGRTMIN+3`.
    public static var interruption: UnixSignal { UnixSignal(rawValue: realTimeMin + 3) }

    /// Sends the signal with sigqueue(3)'s integer to one thread of this process (a gettid(2) ID).
    ///
    /// Tests use it: a test process has threads that leave every signal unblocked, so only a signal aimed at the
    /// loop's own thread, which blocks it, is sure to reach the loop.
    func queue(toThread thread: pid_t, value: Int32) throws(SystemCallError) {
        try SystemCallError.check(
            csystemd_thread_sigqueue(thread, rawValue, value),
            "rt_tgsigqueueinfo(\(name), thread \(thread))"
        )
    }
}
