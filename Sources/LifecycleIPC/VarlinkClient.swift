//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
package import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Why a varlink call did not return parameters.
package enum VarlinkClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The socket could not be reached.
    case connect(UnixSocketError)
    /// Reading or writing failed.
    case io(operation: String, errno: Errno)
    /// The service closed the connection before the reply.
    case closed
    /// No reply within the timeout.
    case timedOut(Duration)
    /// The reply broke the protocol.
    case protocolViolation(VarlinkProtocolError)
    /// The service answered with an error.
    case error(VarlinkError)

    package var description: String {
        switch self {
        case .connect(let error): "\(error)"
        case .io(let operation, let errno): "\(operation) failed: \(errno)"
        case .closed: "the service closed the connection before it replied"
        case .timedOut(let duration): "no reply within \(duration.formattedForLog)"
        case .protocolViolation(let error): "the service broke the varlink protocol: \(error)"
        case .error(let error): "the service answered \(error)"
        }
    }
}

/// A blocking varlink client over an AF_UNIX stream socket: one call at a time, each reply waited for (with a timeout,
/// for all but streams that run until the caller stops them).
package final class VarlinkClient {
    private let fd: Int32
    private var framer: VarlinkFramer
    /// How long a call waits for each reply; nil waits forever.
    package var timeout: Duration?

    /// Connects to the service listening at `path`.
    package init(path: String, timeout: Duration? = .seconds(30), maximumMessageSize: Int = 64 << 20) throws(VarlinkClientError) {
        do {
            fd = try UnixSocket.connect(to: path)
        } catch {
            throw .connect(error)
        }
        self.timeout = timeout
        framer = VarlinkFramer(maximumMessageSize: maximumMessageSize)
    }

    deinit { close(fd) }

    /// Calls a method and returns the parameters of its (single) reply; an error reply throws ``VarlinkClientError/error(_:)``.
    package func call(_ method: String, parameters: JSONObject = [:]) throws(VarlinkClientError) -> JSONObject {
        try write(VarlinkCall(method: method, parameters: parameters).message)
        switch try readReply() {
        case .parameters(let parameters, _): return parameters
        case .error(let error): throw .error(error)
        }
    }

    /// Calls a method with `more` and hands each reply to `body` until the last one (or until `body` returns false).
    package func stream(
        _ method: String,
        parameters: JSONObject = [:],
        _ body: (JSONObject) throws(VarlinkClientError) -> Bool
    ) throws(VarlinkClientError) {
        try write(VarlinkCall(method: method, parameters: parameters, more: true).message)
        while true {
            switch try readReply() {
            case .parameters(let parameters, let continues):
                guard try body(parameters), continues else { return }
            case .error(let error):
                throw .error(error)
            }
        }
    }

    /// Sends raw bytes (tests send broken messages with it).
    package func write(_ bytes: [UInt8]) throws(VarlinkClientError) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if count >= 0 {
                offset += count
                continue
            }
            if errno == EINTR { continue }
            // The service may have answered and closed already (a refusal): what it said is still to be read.
            if errno == EPIPE || errno == ECONNRESET { return }
            throw .io(operation: "send", errno: Errno(rawValue: errno))
        }
    }

    /// Reads the next reply.
    package func readReply() throws(VarlinkClientError) -> VarlinkReply {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let message: ArraySlice<UInt8>?
            do {
                message = try framer.next()
            } catch {
                throw .protocolViolation(VarlinkProtocolError(reason: "\(error)"))
            }
            if let message {
                do {
                    return try VarlinkReply.decode(message)
                } catch {
                    throw .protocolViolation(error)
                }
            }
            if let deadline {
                let left = deadline - .now
                guard left > .zero else { throw .timedOut(timeout ?? .zero) }
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&descriptor, 1, Int32(clamping: left.wholeMilliseconds + 1))
                if ready < 0, errno != EINTR { throw .io(operation: "poll", errno: Errno(rawValue: errno)) }
                if ready <= 0 { continue }
            }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                framer.append(buffer[..<count])
            } else if count == 0 {
                throw .closed
            } else if errno == ECONNRESET {
                throw .closed
            } else if errno != EINTR {
                throw .io(operation: "recv", errno: Errno(rawValue: errno))
            }
        }
    }
}
