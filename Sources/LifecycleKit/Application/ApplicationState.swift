//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The execution states of an application, as UIKit names them, plus the two ends of its life.
public enum ApplicationState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The process has not launched the application yet.
    case notRunning
    /// Running in the foreground but not receiving events: launching, or between active and background.
    case inactive
    /// Running in the foreground and serving.
    case active
    /// Running in the background: work is paused or reduced.
    case background
    /// Terminated: `applicationWillTerminate` has run and the tree is torn down.
    case terminated

    public var description: String { rawValue }
}

/// What asked for a transition; written to the trace as `LIFECYCLE_CAUSE`.
public struct Cause: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The text of the cause, such as `signal:SIGUSR1`.
    public let rawValue: String

    /// Wraps a cause text.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Wraps a cause written as a literal.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    public var description: String { rawValue }

    /// A call of the application's API, from the application itself or a test.
    public static let api = Cause(rawValue: "api")
    /// The launch of the process.
    public static let launch = Cause(rawValue: "launch")
    /// Memory pressure reported by the kernel (PSI).
    public static let psi = Cause(rawValue: "psi")

    /// A Unix signal, by its conventional name: `signal(named: "SIGUSR1")` is `signal:SIGUSR1`.
    public static func signal(named name: String) -> Cause {
        Cause(rawValue: "signal:\(name)")
    }

    /// A logind announcement: `logind(member: "PrepareForSleep")` is `logind:PrepareForSleep`.
    public static func logind(member: String) -> Cause {
        Cause(rawValue: "logind:\(member)")
    }
}

/// Where a launch ends: in the foreground (active) or directly in the background.
public enum LaunchTarget: String, Sendable, Hashable, CaseIterable {
    /// Launch, show the window's root controller, and become active.
    case active
    /// Launch into the background: nothing appears until the first return to the foreground.
    case background
}

/// Facts a host fills in when it launches the application, passed to the launch callbacks.
public struct LaunchOptions: Sendable, Hashable {
    /// Why the process was started.
    public enum Reason: String, Sendable, Hashable {
        /// Started by hand, in a terminal.
        case user
        /// Started by the service manager.
        case serviceManager
        /// Started again after the last run ended abnormally (systemd's `Restart=` after a crash, a kill, the
        /// watchdog, an OOM kill, an exit with a status): ``LaunchOptions/lastRun`` says how.
        case restart
        /// Started by a test.
        case test
    }

    /// Why the process was started.
    public var reason: Reason
    /// The state saved by an earlier run, if any (restoration decodes it between the two launch callbacks).
    public var restoredState: Archive?
    /// Facts about the environment the process runs in, such as `underSystemd` or `invocationID`.
    public var environment: [String: String]
    /// How the previous run of the service ended (nil at the first launch, or where no record was kept): what
    /// `application(_:shouldRestoreApplicationState:)` can weigh (docs/restoration.md, "Why the last run ended").
    public var lastRun: RunEnd?

    /// Creates launch options.
    public init(
        reason: Reason = .user,
        restoredState: Archive? = nil,
        environment: [String: String] = [:],
        lastRun: RunEnd? = nil
    ) {
        self.reason = reason
        self.restoredState = restoredState
        self.environment = environment
        self.lastRun = lastRun
    }
}
