//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) import LifecycleDaemon
import LifecycleIPC
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Logging

#if canImport(Glibc)
    import Glibc
#endif

// MARK: Framing

/// A small deterministic generator, seeded from the input, so one input always splits into the same chunks.
package struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    package init(seed bytes: [UInt8]) {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        state = hash
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Feeds `stream` to a `VarlinkFramer` in chunks of random sizes and checks every answer against a model that reads
/// the whole stream at once: each message is the bytes up to the next NUL, never more than was given, never one with
/// a NUL inside; a message over the limit, or more unterminated input than the limit, is `messageTooLarge` with its
/// size, at the first `next()` that can see it, as docs/control.md documents (65,536 bytes on the control socket).
///
/// Returns the messages handed out before the end or the error.
@discardableResult
package func checkFraming(_ stream: [UInt8], limit: Int, chunks: inout SplitMix64) -> [ArraySlice<UInt8>] {
    var framer = VarlinkFramer(maximumMessageSize: limit)
    var messages: [ArraySlice<UInt8>] = []
    var fed = 0
    var consumed = 0
    while fed < stream.count || fed == 0 {
        let size =
            stream.isEmpty ? 0 : Int.random(in: 1...min(stream.count - fed, 1 + stream.count / 3), using: &chunks)
        framer.append(stream[fed..<fed + size])
        fed += size
        while true {
            check(
                framer.pendingByteCount == fed - consumed,
                "\(framer.pendingByteCount) bytes pending, \(fed - consumed) unread"
            )
            // The model: the next NUL among the bytes fed and not yet handed out.
            let nul = stream[consumed..<fed].firstIndex(of: 0)
            let answer: ArraySlice<UInt8>?
            do {
                answer = try framer.next()
            } catch {
                let expected = nul.map { $0 - consumed } ?? (fed - consumed)
                check(expected > limit, "refused \(expected) bytes under the limit \(limit): \(error)")
                check(error == .messageTooLarge(expected), "\(error), expected a message of \(expected) bytes")
                return messages
            }
            guard let answer else {
                check(nul == nil, "no message although a NUL arrived at \(nul ?? -1)")
                check(fed - consumed <= limit, "\(fed - consumed) bytes without a NUL wait, over the limit \(limit)")
                break
            }
            guard let nul else {
                check(false, "a message of \(answer.count) bytes without a NUL")
                return messages
            }
            check(nul - consumed <= limit, "a message of \(nul - consumed) bytes, over the limit \(limit)")
            check(answer.elementsEqual(stream[consumed..<nul]), "the message is not the bytes up to the NUL")
            check(!answer.contains(0), "a message with a NUL inside")
            consumed = nul + 1
            check(consumed <= fed, "handed out \(consumed) bytes of \(fed)")
            messages.append(answer)
        }
        if stream.isEmpty { break }
    }
    return messages
}

// MARK: Messages

/// The method names varlink calls may use, as docs/control.md and `VarlinkCall` document them, read independently:
/// at most 255 bytes; an interface of two or more dot-separated labels, each a letter then letters, digits and `-`;
/// a method that starts with an upper-case letter, then letters and digits (ASCII).
package func isDocumentedMethodName(_ method: String) -> Bool {
    func isLetter(_ c: Character) -> Bool { c.isASCII && c.isLetter }
    func isDigit(_ c: Character) -> Bool { c.isASCII && c.isNumber }
    guard method.utf8.count <= 255 else { return false }
    let parts = method.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count >= 3, let name = parts.last, let first = name.first, first.isASCII, first.isUppercase,
        name.allSatisfy({ isLetter($0) || isDigit($0) })
    else { return false }
    return parts.dropLast().allSatisfy { label in
        guard let first = label.first, isLetter(first) else { return false }
        return label.allSatisfy { isLetter($0) || isDigit($0) || $0 == "-" }
    }
}

/// What the decoders must do with one message (its bytes without the NUL), whatever the bytes:
///
/// - the JSON in it, if any, passes ``checkJSON(_:maximumDepth:)``;
/// - `VarlinkCall.decode` refuses as malformed exactly what is not a JSON object, answers `InvalidParameter` naming a
///   member the object has (or `method`), and what it accepts has a documented method name, not both `more` and
///   `oneway`, and is written as a message with its one NUL at the end that reads back as the same call;
/// - `VarlinkReply.decode` (lifecyclectl's side) accepts only objects, and its replies written again read back the same;
///   the trace events in a reply read and print (`TraceRecord`, `TraceFormatter`) and survive their own JSON.
///
/// Returns the decoded call (or why there is none), for the server's model.
@discardableResult
package func checkMessage(_ message: ArraySlice<UInt8>) -> Result<VarlinkCall, VarlinkCallError> {
    let json = checkJSON(Array(message))
    let result: Result<VarlinkCall, VarlinkCallError>
    do throws(VarlinkCallError) {
        result = .success(try VarlinkCall.decode(message))
    } catch {
        result = .failure(error)
    }
    switch result {
    case .success(let call):
        guard let object = json?.objectValue else {
            check(false, "a call was read from bytes that are not a JSON object")
            return result
        }
        check(object["method"]?.stringValue == call.method, "the call's method is not the message's")
        check(isDocumentedMethodName(call.method), "\(call.method.debugDescription) was accepted as a method")
        check(
            call.interface + "." + call.name == call.method,
            "\(call.method) splits as \(call.interface) \(call.name)"
        )
        check(!(call.more && call.oneway), "a call with both more and oneway was accepted")
        let written = call.message
        check(written.firstIndex(of: 0) == written.count - 1, "a call's message has a NUL before its end")
        check((try? VarlinkCall.decode(written.dropLast())) == call, "a call written and read again changed")
    case .failure(.malformed(let reason)):
        check(json?.objectValue == nil, "a JSON object was refused as malformed: \(reason)")
        check(!reason.isEmpty, "malformed without a reason")
    case .failure(.invalid(let error)):
        guard let object = json?.objectValue else {
            check(false, "bytes that are not a JSON object were answered with \(error) instead of closing")
            return result
        }
        check(error.name == "org.varlink.service.InvalidParameter", "a call refused with \(error)")
        let member = error.parameters["parameter"]?.stringValue ?? ""
        check(member == "method" || object[member] != nil, "InvalidParameter names \(member), not in the call")
        if member == "method", let method = object["method"]?.stringValue,
            object.keys.allSatisfy({
                ["method", "parameters", "more", "oneway", "upgrade"].contains($0)
            })
        {
            check(!isDocumentedMethodName(method), "\(method.debugDescription), a documented name, was refused")
        }
    }

    // The client's side: lifecyclectl reads replies with the same parser.
    if let reply = try? VarlinkReply.decode(message) {
        check(json?.objectValue != nil, "a reply was read from bytes that are not a JSON object")
        let written: [UInt8]
        switch reply {
        case .parameters(let parameters, let continues):
            written = VarlinkMessage.reply(parameters, continues: continues)
            var formatter = TraceFormatter(style: TerminalStyle(colour: true))
            for event in parameters["events"]?.arrayValue ?? [] {
                guard let object = event.objectValue, let record = TraceRecord(json: object) else { continue }
                check(TraceRecord(json: record.json) == record, "a trace event changed through its JSON")
                check(formatter.line(record, showCause: true).utf8.last == 0x0A, "a trace line without its newline")
                _ = formatter.format(record)
            }
            _ = formatter.flush()
        case .error(let error):
            check(json?["error"]?.stringValue == error.name, "the error's name is not the message's")
            written = VarlinkMessage.error(error)
        }
        check(written.firstIndex(of: 0) == written.count - 1, "a reply's message has a NUL before its end")
        check((try? VarlinkReply.decode(written.dropLast())) == reply, "a reply written and read again changed")
    } else {
        check(
            json?.objectValue == nil || json?["error"].map { $0.stringValue == nil } == true,
            "an object was refused as a reply"
        )
    }
    return result
}

// MARK: The server

/// A `VarlinkServer` on this thread's main loop, serving the control socket's interfaces (their real declarations,
/// ``ControlInterface``) with a handler that echoes each call, and a model of what it must answer to a byte stream.
///
/// ``exchange(_:)`` connects, sends the stream, closes its sending side and runs the loop until the server closes the
/// connection, reading every reply; the replies are compared with the model's (decoding each message as
/// ``checkMessage(_:)`` does, then routing, the declarations' checks, `org.varlink.service`).
package final class VarlinkExchange {
    /// The largest message the server takes here: smaller than the control socket's 64 KiB so that inputs of a
    /// fuzzer's size reach the limit.
    package static let maximumMessageSize = 2048

    let loop: MainLoop
    let server: VarlinkServer
    /// The socket's address, in the abstract namespace (it goes with the process, even one a finding ends).
    let address: sockaddr_un
    let addressLength: socklen_t

    package init() {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array("lifecyclekit-fuzz-varlink-\(getpid())".utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw[0] = 0
            for (index, byte) in name.enumerated() { raw[index + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + 1 + name.count)
        self.address = address
        addressLength = length
        do {
            loop = try MainLoop()
            let fd = Self.socket(nonBlocking: true)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            guard bound == 0, listen(fd, SOMAXCONN) == 0 else { fatalError("cannot listen: errno \(errno)") }
            var limits = VarlinkServer.Limits()
            limits.maximumMessageSize = Self.maximumMessageSize
            server = VarlinkServer(
                loop: loop,
                listeningDescriptor: fd,
                info: .init(vendor: "LifecycleKit", product: "fuzz-varlink", version: "0", url: "https://varlink.org"),
                limits: limits,
                logger: Logger(label: "fuzz-varlink") { _ in SwiftLogNoOpLogHandler() }
            )
            let echo: (VarlinkRequest) -> Void = { request in
                if request.call.more { request.send(["partial": .object(request.call.parameters)]) }
                request.reply(["method": .string(request.call.method), "parameters": .object(request.call.parameters)])
            }
            server.add(
                .init(
                    name: ControlInterface.name,
                    description: ControlInterface.description,
                    methods: ControlInterface.methods.map { .init($0, handler: echo) }
                )
            )
            server.add(
                .init(
                    name: ControlInterface.serviceName,
                    description: ControlInterface.serviceDescription,
                    methods: ControlInterface.serviceMethods.map { .init($0, handler: echo) }
                )
            )
            try server.start()
        } catch {
            fatalError("cannot start the server: \(error)")
        }
    }

    /// An AF_UNIX stream socket, close-on-exec (SOCK_STREAM, SOCK_NONBLOCK, SOCK_CLOEXEC: Linux's values, which
    /// Glibc's module may not show here; see UnixSocket.swift).
    static func socket(nonBlocking: Bool) -> Int32 {
        let fd = Glibc.socket(AF_UNIX, 1 | 0o2_000_000 | (nonBlocking ? 0o4000 : 0), 0)
        guard fd >= 0 else { fatalError("socket: errno \(errno)") }
        return fd
    }

    /// How the model expects the connection to end.
    enum Ending: Equatable {
        /// The peer's input ended and everything was answered.
        case inputEnded
        /// Closed for bytes that are not a JSON object.
        case malformed
        /// Closed for a message, or unterminated input, over the limit.
        case oversized
    }

    /// The replies the server owes for a stream (each message decoded as `VarlinkCall.decode` does; oneway calls
    /// answered with nothing, calls it refuses with their error, even oneway), and how the connection ends.
    func expectedReplies(for stream: [UInt8]) -> (replies: [VarlinkReply], ending: Ending) {
        var replies: [VarlinkReply] = []
        var segments = stream.split(separator: 0, omittingEmptySubsequences: false)
        let tail = segments.removeLast()
        for message in segments {
            if message.count > Self.maximumMessageSize { return (replies, .oversized) }
            do throws(VarlinkCallError) {
                let call = try VarlinkCall.decode(message)
                let answer = expectedAnswer(to: call)
                if !call.oneway { replies += answer }
            } catch {
                switch error {
                case .malformed: return (replies, .malformed)
                case .invalid(let error): replies.append(.error(error))
                }
            }
        }
        return (replies, tail.count > Self.maximumMessageSize ? .oversized : .inputEnded)
    }

    /// What the server answers a well-formed call: `org.varlink.service` itself; otherwise the interface, the method,
    /// the declaration's checks, then the echo (one `continues` reply first when the call takes several).
    func expectedAnswer(to call: VarlinkCall) -> [VarlinkReply] {
        let interfaces = [
            ControlInterface.name: (ControlInterface.description, ControlInterface.methods),
            ControlInterface.serviceName: (ControlInterface.serviceDescription, ControlInterface.serviceMethods),
        ]
        if call.interface == Varlink.serviceInterface {
            switch call.name {
            case "GetInfo":
                if let first = call.parameters.keys.first { return [.error(.invalidParameter(first))] }
                let names = [Varlink.serviceInterface, ControlInterface.name, ControlInterface.serviceName]
                return [
                    .parameters(
                        [
                            "vendor": "LifecycleKit", "product": "fuzz-varlink", "version": "0",
                            "url": "https://varlink.org",
                            "interfaces": .array(names.map(JSONValue.string)),
                        ],
                        continues: false
                    )
                ]
            case "GetInterfaceDescription":
                let keys = call.parameters.keys
                if let unknown = keys.first(where: { $0 != "interface" }) {
                    return [.error(.invalidParameter(unknown))]
                }
                guard let name = call.parameters["interface"]?.stringValue else {
                    return [.error(.invalidParameter("interface"))]
                }
                let description =
                    name == Varlink.serviceInterface ? Varlink.serviceInterfaceDescription : interfaces[name]?.0
                guard let description else { return [.error(.interfaceNotFound(name))] }
                return [.parameters(["description": .string(description)], continues: false)]
            default:
                return [.error(.methodNotFound(call.method))]
            }
        }
        guard let (_, methods) = interfaces[call.interface] else { return [.error(.interfaceNotFound(call.interface))] }
        guard let method = methods.first(where: { $0.name == call.name }) else {
            return [.error(.methodNotFound(call.method))]
        }
        // The declaration's checks, read from the documentation: no unknown parameter, every required one there
        // and not null, each of its type (an integer may be written as a float without a fraction).
        if let unknown = call.parameters.keys.first(where: { key in !method.parameters.contains { $0.name == key } }) {
            return [.error(.invalidParameter(unknown))]
        }
        for parameter in method.parameters {
            guard let value = call.parameters[parameter.name], value != .null else {
                if parameter.isOptional { continue }
                return [.error(.invalidParameter(parameter.name))]
            }
            let fits: Bool =
                switch (parameter.type, value) {
                case (.string, .string), (.bool, .bool), (.object, .object), (.array, .array): true
                case (.float, .integer), (.float, .double), (.int, .integer): true
                case (.int, .double(let number)): number.rounded() == number && abs(number) < 9e15
                default: false
                }
            if !fits { return [.error(.invalidParameter(parameter.name))] }
        }
        if method.requiresMore, !call.more { return [.error(.expectedMore)] }
        let final = VarlinkReply.parameters(
            ["method": .string(call.method), "parameters": .object(call.parameters)],
            continues: false
        )
        return call.more ? [.parameters(["partial": .object(call.parameters)], continues: true), final] : [final]
    }

    /// Sends `stream` on a new connection and checks the replies against the model.
    package func exchange(_ stream: [UInt8]) {
        let (expected, ending) = expectedReplies(for: stream)
        let before = server.statistics

        // A blocking connect, as clients make them (the listen backlog takes it; the server accepts on the loop),
        // then non-blocking for the exchange.
        let fd = Self.socket(nonBlocking: false)
        defer { close(fd) }
        var address = address
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, addressLength) }
        }
        check(connected == 0, "cannot connect: errno \(errno)")
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var sent = 0
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var closed = false
        var idleTurns = 0
        if stream.isEmpty { shutdown(fd, Int32(SHUT_WR)) }
        while !closed {
            if sent < stream.count {
                let count = stream[sent...].withUnsafeBytes {
                    send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if count > 0 {
                    sent += count
                } else if count < 0, errno != EAGAIN, errno != EINTR {
                    sent = stream.count  // The server closed its end: the rest is never read.
                }
                if sent == stream.count { shutdown(fd, Int32(SHUT_WR)) }
            }
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count > 0 {
                    received += buffer[..<count]
                    continue
                }
                if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) { closed = true }
                break
            }
            if closed { break }
            let dispatched: Bool
            do {
                dispatched = try loop.runOnce(timeout: sent < stream.count ? .zero : .seconds(2))
            } catch {
                fatalError("the loop failed: \(error)")
            }
            idleTurns = dispatched || sent < stream.count ? 0 : idleTurns + 1
            check(idleTurns < 2, "the server neither answers nor closes the connection (\(received.count) bytes back)")
        }
        // The server's end is closed once the peer saw it: its bookkeeping is done, nothing is left open.
        check(server.connectionCount == 0, "\(server.connectionCount) connections open after the peer saw the close")

        var replies: [VarlinkReply] = []
        var segments = received.split(separator: 0, omittingEmptySubsequences: false)
        check(segments.removeLast().isEmpty, "a reply without its NUL at the end of the stream")
        for segment in segments {
            do {
                replies.append(try VarlinkReply.decode(segment))
            } catch {
                check(false, "the server sent a reply its client cannot read: \(error)")
            }
        }
        let after = server.statistics
        check(after.accepted == before.accepted + 1, "the connection was not accepted")
        check(
            after.closedMalformed - before.closedMalformed == (ending == .malformed ? 1 : 0),
            "closedMalformed counted \(after.closedMalformed - before.closedMalformed), the connection ended \(ending)"
        )
        check(
            after.closedOversized - before.closedOversized == (ending == .oversized ? 1 : 0),
            "closedOversized counted \(after.closedOversized - before.closedOversized), the connection ended \(ending)"
        )
        // Closing for a bad message may drop replies the peer had not yet read; an orderly end answers everything.
        if ending == .inputEnded {
            check(
                replies == expected,
                "the replies differ from the model's:\n\(describe(replies))\nexpected:\n\(describe(expected))"
            )
        } else {
            check(
                replies.count <= expected.count && zip(replies, expected).allSatisfy(==),
                "the replies are not the model's, before a close for \(ending):\n\(describe(replies))\nexpected:\n\(describe(expected))"
            )
        }
    }

    private func describe(_ replies: [VarlinkReply]) -> String {
        replies.map { reply in
            switch reply {
            case .parameters(let parameters, let continues):
                "  \(JSONValue.object(parameters).text)\(continues ? " (continues)" : "")"
            case .error(let error): "  error \(error)"
            }
        }.joined(separator: "\n")
    }
}
