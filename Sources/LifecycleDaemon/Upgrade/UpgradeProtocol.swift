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
    /// Each passed listener's state: `name=origin`, with `:closed` and the address it listened on (percent-encoded)
    /// when it is shut down: `http=socket-unit,admin=bound:closed:127.0.0.1%3A41234`.
    static let listeners = "LIFECYCLE_UPGRADE_LISTENERS"
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
        previousPID, listeners, controlPath, applicationState, "LISTEN_FDS", "LISTEN_FDNAMES", "LISTEN_PID",
        "WATCHDOG_PID",
    ]

    /// What the next process learns of a passed listener besides its descriptor.
    struct ListenerState: Sendable, Hashable {
        var origin: ListenerOrigin
        /// Shut down by the close policy in the background: it refuses connections until a server claims it.
        var isShutDown = false
        /// Where it listened before it was shut down.
        var address: String?
    }

    /// `http=socket-unit,admin=bound:closed:127.0.0.1%3A41234`.
    static func encode(_ listeners: [ListenerHandOver]) -> String {
        listeners.map { listener in
            var entry = "\(listener.name)=\(listener.origin.rawValue)"
            if listener.isShutDown {
                entry += ":closed"
                if let address = listener.address { entry += ":" + percentEncoded(address) }
            }
            return entry
        }.joined(separator: ",")
    }

    /// The states `encode(_:)` wrote; entries it cannot read are left out.
    static func decodeListeners(_ text: String) -> [String: ListenerState] {
        var states: [String: ListenerState] = [:]
        for entry in text.split(separator: ",") {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty else { continue }
            let fields = parts[1].split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard let origin = ListenerOrigin(rawValue: fields[0]) else { continue }
            var state = ListenerState(origin: origin)
            if fields.count >= 2 {
                guard fields[1] == "closed" else { continue }
                state.isShutDown = true
                if fields.count == 3 { state.address = percentDecoded(fields[2]) }
            }
            states[parts[0]] = state
        }
        return states
    }

    /// `text` with `%`, `,`, `:` and `=` (the encoding's separators) and every byte outside printable ASCII as `%XX`.
    private static func percentEncoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            if byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "%"), byte != UInt8(ascii: ","),
                byte != UInt8(ascii: ":"), byte != UInt8(ascii: "=")
            {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (byte < 0x10 ? "0" : "") + hex
            }
        }
        return result
    }

    /// What `percentEncoded(_:)` encoded; nil for a malformed escape.
    private static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else { return nil }
            bytes.append(value)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
