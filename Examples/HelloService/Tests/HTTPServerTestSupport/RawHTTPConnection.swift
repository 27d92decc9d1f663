//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import NIOCore
import NIOPosix

/// One HTTP/1.1 response as it came off the wire.
public struct RawResponse: Equatable, Sendable {
    /// The status code.
    public let status: Int
    /// The header fields, names lowercased, in their order.
    public let headers: [Header]
    /// The body (by Content-Length, or chunked).
    public let body: String

    /// A response with these parts.
    public init(status: Int, headers: [Header], body: String) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// One header field.
    public struct Header: Equatable, Sendable {
        /// The name, lowercased.
        public let name: String
        /// The value.
        public let value: String
    }

    /// The values of the header `name`, in order.
    public func values(_ name: String) -> [String] {
        headers.filter { $0.name == name.lowercased() }.map(\.value)
    }

    /// Whether the response says the connection ends after it.
    public var closesConnection: Bool { values("connection").contains { $0.lowercased() == "close" } }
}

/// How a connection ended.
public enum ConnectionEnd: Equatable, Sendable {
    /// The server closed it (FIN) with nothing more sent.
    case closed
    /// It ended with an error (such as a reset).
    case failed(String)
    /// Bytes came that were not expected.
    case unexpected(String)
}

/// Why a client could not read a response.
public struct ClientError: Error, CustomStringConvertible {
    /// What happened.
    public let description: String
}

/// A client connection to 127.0.0.1 that writes raw bytes and reads raw responses, so the tests see exactly what the
/// server sent and when it closed.
public struct RawHTTPConnection {
    private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private var received = ByteBuffer()

    /// Connects to `port` (the kernel completes the connection even if no server accepts yet), runs `body`, closes.
    public static func connect<Result: Sendable>(
        to port: Int,
        _ body: (inout RawHTTPConnection) async throws -> Result
    ) async throws -> Result {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var connection = RawHTTPConnection(inbound: inbound.makeAsyncIterator(), outbound: outbound)
            return try await body(&connection)
        }
    }

    private init(
        inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    ) {
        self.inbound = inbound
        self.outbound = outbound
    }

    /// Sends `text` as it is.
    public func send(_ text: String) async throws {
        try await outbound.write(ByteBuffer(string: text))
    }

    /// Sends `GET path` (HTTP/1.1, keep-alive).
    public func get(_ path: String) async throws {
        try await send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
    }

    /// Reads the next response; `bodyless`: the answer to a HEAD request, which has no body whatever its head says.
    public mutating func response(bodyless: Bool = false) async throws -> RawResponse {
        while true {
            if let response = try parse(bodyless: bodyless) { return response }
            let chunk: ByteBuffer?
            do {
                chunk = try await inbound.next()
            } catch {
                throw ClientError(description: "failed before a whole response (\(error)): \(receivedText)")
            }
            guard var chunk else { throw ClientError(description: "closed before a whole response: \(receivedText)") }
            received.writeBuffer(&chunk)
        }
    }

    /// Reads until the connection ends.
    public mutating func end() async -> ConnectionEnd {
        guard received.readableBytes == 0 else { return .unexpected(String(buffer: received)) }
        do {
            if let chunk = try await inbound.next() { return .unexpected(String(buffer: chunk)) }
            return .closed
        } catch {
            return .failed("\(error)")
        }
    }

    // What came so far, quoted.
    private var receivedText: String { String(buffer: received).debugDescription }

    // A response if `received` holds a whole one (consumed), else nil.
    private mutating func parse(bodyless: Bool) throws -> RawResponse? {
        let text = String(buffer: received)
        guard let headEnd = text.utf8.firstRange(of: "\r\n\r\n".utf8) else { return nil }
        let lines = text[..<headEnd.lowerBound].split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines[0].split(separator: " ")
        guard statusLine.count >= 2, statusLine[0] == "HTTP/1.1", let status = Int(statusLine[1]) else {
            throw ClientError(description: "not a status line: \(lines[0])")
        }
        let headers = lines.dropFirst().map { line in
            let colon = line.firstIndex(of: ":") ?? line.endIndex
            let value = line[colon...].dropFirst().drop { $0 == " " }
            return RawResponse.Header(name: line[..<colon].lowercased(), value: String(value))
        }
        let headBytes = text.utf8.distance(from: text.startIndex, to: headEnd.upperBound)
        var rest = received.getSlice(at: received.readerIndex + headBytes, length: received.readableBytes - headBytes)!
        let body: String
        if bodyless || status == 204 || status == 304 || (100..<200).contains(status) {
            body = ""
        } else if headers.contains(where: { $0.name == "transfer-encoding" && $0.value.lowercased() == "chunked" }) {
            guard let chunked = Self.dechunk(&rest) else { return nil }
            body = chunked
        } else {
            let length = headers.first { $0.name == "content-length" }.flatMap { Int($0.value) } ?? 0
            guard let bytes = rest.readString(length: length) else { return nil }
            body = bytes
        }
        received = rest
        received.discardReadBytes()
        return RawResponse(status: status, headers: headers, body: body)
    }

    // A chunked body (RFC 9112 §7.1, no extensions or trailers) read from `buffer`, or nil if it is not all there yet.
    private static func dechunk(_ buffer: inout ByteBuffer) -> String? {
        var body = ""
        while true {
            let text = String(buffer: buffer)
            guard let lineEnd = text.utf8.firstRange(of: "\r\n".utf8),
                let size = Int(text[..<lineEnd.lowerBound], radix: 16)
            else { return nil }
            let sizeLineBytes = text.utf8.distance(from: text.startIndex, to: lineEnd.upperBound)
            guard buffer.readableBytes >= sizeLineBytes + size + 2 else { return nil }
            buffer.moveReaderIndex(forwardBy: sizeLineBytes)
            body += buffer.readString(length: size) ?? ""
            buffer.moveReaderIndex(forwardBy: 2)
            if size == 0 { return body }
        }
    }
}
