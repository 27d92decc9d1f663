//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@testable import LifecycleIPC

@Suite struct VarlinkFramingTests {
    @Test func messagesSplitOnNULWhateverPiecesTheyArriveIn() throws {
        var framer = VarlinkFramer(maximumMessageSize: 64)
        framer.append(Array("{\"a\":".utf8))
        #expect(try framer.next() == nil)
        framer.append(Array("1}".utf8) + [0] + Array("{}".utf8) + [0] + Array("{\"b".utf8))
        #expect(try framer.next().map { Array($0) } == Array("{\"a\":1}".utf8))
        #expect(try framer.next().map { Array($0) } == Array("{}".utf8))
        #expect(try framer.next() == nil)
        #expect(framer.pendingByteCount == 3)
    }

    @Test func unterminatedInputBeyondTheLimitIsRefused() throws {
        var framer = VarlinkFramer(maximumMessageSize: 8)
        framer.append(Array(repeating: UInt8(ascii: "x"), count: 8))
        #expect(try framer.next() == nil)
        framer.append([UInt8(ascii: "x")])
        #expect(throws: VarlinkFramingError.self) { try framer.next() }
    }

    @Test func aTerminatedMessageOverTheLimitIsRefusedToo() {
        var framer = VarlinkFramer(maximumMessageSize: 4)
        framer.append(Array("123456".utf8) + [0])
        #expect(throws: VarlinkFramingError.messageTooLarge(6)) { try framer.next() }
    }

    @Test func thousandsOfSmallMessagesInOneBufferCostLinearTime() throws {
        var framer = VarlinkFramer(maximumMessageSize: 64)
        let one = Array("{}".utf8) + [0]
        framer.append(Array((0..<20_000).map { _ in one }.joined()))
        var count = 0
        while try framer.next() != nil { count += 1 }
        #expect(count == 20_000)
        #expect(framer.pendingByteCount == 0)
    }
}

@Suite struct VarlinkCallTests {
    private func decode(_ text: String) throws(VarlinkCallError) -> VarlinkCall {
        try VarlinkCall.decode(Array(text.utf8))
    }

    @Test func aCallDecodesWithItsFlags() throws {
        let call = try decode(#"{"method":"io.lifecyclekit.Lifecycle.Trace","parameters":{"backlog":3},"more":true}"#)
        #expect(call.interface == "io.lifecyclekit.Lifecycle")
        #expect(call.name == "Trace")
        #expect(call.parameters["backlog"] == .integer(3))
        #expect(call.more && !call.oneway)
        #expect(try VarlinkCall.decode(call.message.dropLast()) == call)
    }

    @Test(arguments: [
        ("not json", "malformed"), ("[1]", "malformed"), (#""text""#, "malformed"),
        (#"{}"#, "method"), (#"{"method":3}"#, "method"), (#"{"method":"Ping"}"#, "method"),
        (#"{"method":"a.b.ping"}"#, "method"), (#"{"method":"a..b.Ping"}"#, "method"),
        (#"{"method":"a.b.Ping","parameters":[]}"#, "parameters"), (#"{"method":"a.b.Ping","more":"yes"}"#, "more"),
        (#"{"method":"a.b.Ping","oneway":1}"#, "oneway"), (#"{"method":"a.b.Ping","more":true,"oneway":true}"#, "oneway"),
        (#"{"method":"a.b.Ping","upgrade":true}"#, "upgrade"), (#"{"method":"a.b.Ping","extra":1}"#, "extra"),
    ])
    func brokenCallsAreRefusedNamingWhatIsWrong(text: String, what: String) {
        do {
            _ = try decode(text)
            Issue.record("\(text) decoded")
        } catch {
            switch error {
            case .malformed: #expect(what == "malformed")
            case .invalid(let varlink): #expect(varlink == .invalidParameter(what))
            }
        }
    }

    @Test func declarationsCheckEveryParameter() {
        let declaration = VarlinkMethodDeclaration(
            "GetTree", parameters: [.init("views", .bool, optional: true), .init("depth", .int)]
        )
        func check(_ parameters: JSONObject, more: Bool = false) -> VarlinkError? {
            do {
                try declaration.validate(VarlinkCall(method: "x.y.GetTree", parameters: parameters, more: more))
                return nil
            } catch {
                return error
            }
        }
        #expect(check(["depth": 2]) == nil)
        #expect(check(["depth": 2, "views": nil]) == nil)
        #expect(check(["depth": 2.0]) == nil)
        #expect(check([:]) == .invalidParameter("depth"))
        #expect(check(["depth": "2"]) == .invalidParameter("depth"))
        #expect(check(["depth": 2.5]) == .invalidParameter("depth"))
        #expect(check(["depth": 2, "views": "yes"]) == .invalidParameter("views"))
        #expect(check(["depth": 2, "colour": true]) == .invalidParameter("colour"))
        let streaming = VarlinkMethodDeclaration("Trace", requiresMore: true)
        #expect(throws: VarlinkError.expectedMore) { try streaming.validate(VarlinkCall(method: "x.y.Trace")) }
    }

    @Test func repliesEncodeAndDecode() throws {
        let reply = VarlinkMessage.reply(["a": 1], continues: true)
        #expect(reply.last == 0)
        #expect(try VarlinkReply.decode(reply.dropLast()) == .parameters(["a": 1], continues: true))
        let error = VarlinkMessage.error(.methodNotFound("x.y.Z"))
        #expect(try VarlinkReply.decode(error.dropLast()) == .error(.methodNotFound("x.y.Z")))
    }
}
