//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit

#if canImport(Glibc)
import Glibc
#endif

/// What the running process and the next one tell each other during an upgrade, over a `SOCK_SEQPACKET` pair the
/// running one makes and passes down (named ``UpgradeEnvironment/channelName`` among `LISTEN_FDS`): one line of words
/// per message.
enum UpgradeMessage: Sendable, Hashable {
    /// Next → running: launched, restored, and its servers accept on the listening sockets.
    case ready
    /// Running → next: systemd has made it the service's main process (`MAINPID=` then `BARRIER=1`); it tells
    /// systemd everything from now on, and takes the application state the running process was in at that moment
    /// (`main background`): what was asked of the running process while the next one launched is not lost. A bare
    /// `main` (nil) leaves the state as it is.
    case main(ApplicationState?)
    /// Running → next: the upgrade is called off (systemd refused the hand-over); terminate.
    case abort

    /// The message's words on the channel.
    var text: String {
        switch self {
        case .ready: "ready"
        case .main(nil): "main"
        case .main(let state?): "main \(state.rawValue)"
        case .abort: "abort"
        }
    }

    /// The message `text` is, if it is one.
    init?(text: String) {
        switch text.split(separator: " ", omittingEmptySubsequences: false) {
        case ["ready"]: self = .ready
        case ["abort"]: self = .abort
        case ["main"]: self = .main(nil)
        case let words where words.count == 2 && words[0] == "main":
            guard let state = ApplicationState(rawValue: String(words[1])) else { return nil }
            self = .main(state)
        default: return nil
        }
    }

    /// Sends the message; false when the peer is gone.
    @discardableResult
    func send(on descriptor: Int32) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            == bytes.count
    }

    /// What can be read from the channel now.
    enum Reading: Equatable {
        case message(UpgradeMessage)
        /// The peer closed its end (it exited, or gave up).
        case closed
        /// Nothing to read yet.
        case nothing
        /// A message that is none of the words.
        case garbled(String)
    }

    /// Reads one message from the (non-blocking) channel.
    static func read(from descriptor: Int32) -> Reading {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count == 0 { return .closed }
        if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? .nothing : .closed }
        let text = String(decoding: buffer[..<count], as: UTF8.self)
        return UpgradeMessage(text: text).map { .message($0) } ?? .garbled(text)
    }
}

/// The variables an upgrade sets for the next process, beside `LISTEN_FDS`, `LISTEN_FDNAMES` and `LISTEN_PID`.
enum UpgradeEnvironment {
    /// The pid of the process that started this one in an upgrade.
    static let previousPID = "LIFECYCLE_UPGRADE_FROM"
    /// Where each passed listener came from: `name=origin,…` (`socket-unit`, `fd-store`, `bound`).
    static let listenerOrigins = "LIFECYCLE_UPGRADE_LISTENERS"
    /// The path of the control socket's file, which the next process removes when it stops.
    static let controlPath = "LIFECYCLE_UPGRADE_CONTROL_PATH"
    /// The application state the running process was in when the upgrade began: the next one launches into the
    /// background if it was there, and becomes active otherwise (whatever `[Launch] Into=` says: the service was running).
    static let applicationState = "LIFECYCLE_UPGRADE_STATE"
    /// The name of the channel among `LISTEN_FDNAMES`.
    static let channelName = "lifecycle-upgrade"

    /// Every variable the upgrade sets, and the ones systemd set for the running process that must not reach the next
    /// one as they were.
    static let replaced: Set<String> = [
        previousPID, listenerOrigins, controlPath, applicationState, "LISTEN_FDS", "LISTEN_FDNAMES", "LISTEN_PID",
        "WATCHDOG_PID",
    ]

    /// `http=socket-unit,admin=bound`.
    static func encode(origins: [(name: String, origin: ListenerOrigin)]) -> String {
        origins.map { "\($0.name)=\($0.origin.rawValue)" }.joined(separator: ",")
    }

    /// The origins `encode(origins:)` wrote; entries it cannot read are left out.
    static func decodeOrigins(_ text: String) -> [String: ListenerOrigin] {
        var origins: [String: ListenerOrigin] = [:]
        for entry in text.split(separator: ",") {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2, let origin = ListenerOrigin(rawValue: parts[1]) { origins[parts[0]] = origin }
        }
        return origins
    }
}

/// Why an upgrade did not happen, and what became of the running process: it serves on, unchanged, unless it is
/// terminating (a termination request came first, or during the upgrade).
struct UpgradeFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// A full sentence: what went wrong, and what became of the new process.
    var reason: String
    /// False when the running process is terminating: it does not serve on.
    var servesOn = true

    /// The reason, and what the running process does now: what the log and `lifecyclectl upgrade` say.
    var description: String {
        reason + (servesOn ? "; the daemon serves on as it was" : "; the daemon is terminating")
    }
}
