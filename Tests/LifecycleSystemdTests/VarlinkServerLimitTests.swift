//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import Logging
import Testing

@testable import LifecycleIPC
@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

// The varlink server against peers that try to exhaust it (docs/control.md, "What is refused, and the limits";
// docs/security.md): each limit exceeded, and what the loop still does meanwhile.

/// Descriptors a test opens on the server's thread before the server starts, closed by the test's client.
private final class HeldDescriptors: Sendable {
    private let descriptors = ConditionLock<[Int32]>([])

    func hold(_ fd: Int32) { descriptors.withLock { $0.append(fd) } }

    var all: [Int32] { descriptors.withLock { $0 } }

    func closeAll() {
        for fd in descriptors.withLock({ $0 }) { close(fd) }
        descriptors.withLock { $0.removeAll() }
    }
}

/// `test.Logged.Note(bytes)`: logs `note`, replies `bytes` bytes of text.
private func loggedInterface(_ log: SharedLog) -> VarlinkServer.Interface {
    VarlinkServer.Interface(
        name: "test.Logged",
        description: "interface test.Logged\nmethod Note(bytes: int) -> (text: string)\n",
        methods: [
            .init(.init("Note", parameters: [.init("bytes", .int)])) { request in
                log.append("note")
                let size = Int(request.call.parameters["bytes"]!.integerValue!)
                request.reply(["text": .string(String(repeating: "x", count: size))])
            }
        ]
    )
}

/// The longest run of `entry` in `log` with nothing else between.
private func longestRun(of entry: String, in log: [String]) -> Int {
    var longest = 0
    var current = 0
    for line in log {
        current = line == entry ? current + 1 : 0
        longest = max(longest, current)
    }
    return longest
}

private func call(_ method: String, _ parameters: String = "{}", oneway: Bool = false) -> [UInt8] {
    Array(#"{"method":"\#(method)","parameters":\#(parameters)\#(oneway ? #","oneway":true"# : "")}"#.utf8) + [0]
}

extension ProcessStateTests {
    @Suite struct VarlinkServerLimitTests {
        @Test func aPeerThatPipelinesOnewayCallsWithoutPausingHoldsNoMoreThanAMessageOfInput() async throws {
            let limits = VarlinkServer.Limits()
            let ((last, sent), statistics, _) = try await withVarlinkServer(limits: limits) { path in
                let peer = try RawPeer(path)
                // 4 MiB of oneway calls in one go: the server reads them as fast as it handles them, no faster; the
                // rest waits in the kernel's socket buffer, and this send blocks meanwhile.
                let one = call("test.Example.Echo", #"{"text":"flood"}"#, oneway: true)
                var flood: [UInt8] = []
                flood.reserveCapacity(4 << 20 + one.count)
                var count = 0
                while flood.count < 4 << 20 {
                    flood += one
                    count += 1
                }
                peer.send(flood + call("test.Example.Echo", #"{"text":"last"}"#))
                return (peer.receive(), count + 1)
            }
            #expect(last == #"{"parameters":{"text":"last"}}"#)
            #expect(statistics.calls == sent)
            // A message's worth, plus at most one read's chunk that crossed it.
            #expect(statistics.peakBufferedInput <= limits.maximumMessageSize + 1 + 16_384)
        }

        @Test func aOnewayCallAnsweredLaterLeavesItsConnectionFreeForTheNextCall() async throws {
            let (seen, _, _) = try await withVarlinkServer { path in
                let peer = try RawPeer(path)
                peer.send(call("test.Example.Later", #"{"ms":20}"#, oneway: true) + call("test.Example.Echo", #"{"text":"next"}"#))
                return peer.receive()
            }
            #expect(seen == #"{"parameters":{"text":"next"}}"#)
        }

        @Test func aSlowSenderIsClosedWhenItsMessageIsNotCompleteInTimeHoweverOftenBytesArrive() async throws {
            var limits = VarlinkServer.Limits()
            limits.idleTimeout = .milliseconds(300)
            let (outcome, statistics, _) = try await withVarlinkServer(limits: limits) { path in
                let peer = try RawPeer(path)
                let message = call("test.Example.Echo", #"{"text":"a slow one"}"#)
                let started = ContinuousClock.now
                // One byte every 50 ms: the message would be complete after about 3 s.
                for byte in message {
                    var probe: UInt8 = 0
                    if recv(peer.fd, &probe, 1, Int32(MSG_DONTWAIT)) == 0 {
                        return "closed after \(ContinuousClock.now - started < .seconds(2) ? "less than 2 s" : "2 s or more")"
                    }
                    peer.send([byte])
                    usleep(50_000)
                }
                return "answered: \(peer.receive())"
            }
            #expect(outcome == "closed after less than 2 s")
            #expect(statistics.closedIdle == 1)
        }

        @Test func aReplyLargerThanTheLimitIsReplacedByReplyTooLargeAndTheConnectionStays() async throws {
            var limits = VarlinkServer.Limits()
            limits.maximumReplySize = 10_000
            let (seen, statistics, _) = try await withVarlinkServer(limits: limits) { path in
                let client = try VarlinkClient(path: path, timeout: .seconds(5))
                var seen: [String] = []
                do {
                    _ = try client.call("test.Example.Big", parameters: ["bytes": 20_000])
                    seen.append("answered")
                } catch {
                    seen.append("\(error)")
                }
                seen.append(JSONValue.object(try client.call("test.Example.Big", parameters: ["bytes": 3])).text)
                return seen
            }
            #expect(seen == [
                #"the service answered test.Example.ReplyTooLarge {"size":20027,"limit":10000}"#, #"{"text":"xxx"}"#,
            ])
            #expect(statistics.repliesTooLarge == 1)
        }

        @Test func repliesLeftUnreadOverAllConnectionsStayBoundedByClosingTheWorstReader() async throws {
            var limits = VarlinkServer.Limits()
            limits.maximumOutputBacklog = 64 << 20
            limits.maximumTotalOutput = 2_000_000
            let marks = SharedLog()
            let (received, statistics, _) = try await withVarlinkServer(limits: limits, configure: { server, _, _, _ in
                server.add(loggedInterface(marks))
            }) { path in
                // A asks for 1.5 MB and never reads: the kernel takes a part (a few hundred kB), the server keeps the
                // rest.
                let reader = try RawPeer(path)
                reader.send(call("test.Logged.Note", #"{"bytes":1500000}"#))
                while marks.all.count < 1 { usleep(1000) }
                // B's 1.5 MB would pass the bound: A, who left the most unread, goes.
                let client = try VarlinkClient(path: path, timeout: .seconds(5))
                let reply = try client.call("test.Logged.Note", parameters: ["bytes": 1_500_000])
                return reply["text"]?.stringValue?.count ?? 0
            }
            #expect(received == 1_500_000)
            #expect(statistics.closedBacklog == 1)
            #expect(statistics.peakPendingOutput <= 2_000_000)
        }

        @Test func aBusyConnectionLetsTheLoopEndItsTurnBetweenBatchesOfCalls() async throws {
            var limits = VarlinkServer.Limits()
            limits.callsPerDispatch = 2
            let (replies, _, log) = try await withVarlinkServer(limits: limits, configure: { server, loop, log, _ in
                server.add(loggedInterface(log))
                try loop.setTurnEndHandler { log.append("turn end") }
            }) { path in
                let peer = try RawPeer(path)
                peer.send((0..<10).flatMap { _ in call("test.Logged.Note", #"{"bytes":1}"#) })
                return (0..<10).map { _ in peer.receive() }
            }
            #expect(replies == Array(repeating: #"{"parameters":{"text":"x"}}"#, count: 10))
            #expect(log.filter { $0 == "note" }.count == 10)
            #expect(longestRun(of: "note", in: log.filter { $0 == "note" || $0 == "turn end" }) == 2)
        }

        @Test func aDispatchEndsOnceItsRepliesPassTheirBudgetInBytes() async throws {
            var limits = VarlinkServer.Limits()
            limits.replyBytesPerDispatch = 2_000
            let (replies, _, log) = try await withVarlinkServer(limits: limits, configure: { server, loop, log, _ in
                server.add(loggedInterface(log))
                try loop.setTurnEndHandler { log.append("turn end") }
            }) { path in
                let peer = try RawPeer(path)
                peer.send((0..<6).flatMap { _ in call("test.Logged.Note", #"{"bytes":1500}"#) })
                return (0..<6).map { _ in peer.receive().count }
            }
            #expect(replies == Array(repeating: 1_526, count: 6))
            // 1,526 bytes each: the second call of a dispatch passes 2,000, so a dispatch handles two.
            #expect(longestRun(of: "note", in: log.filter { $0 == "note" || $0 == "turn end" }) == 2)
        }

        @Test func aCallThatChargesItsWorkEndsTheDispatchLikeALargeReply() async throws {
            var limits = VarlinkServer.Limits()
            limits.replyBytesPerDispatch = 1_000
            let (replies, _, log) = try await withVarlinkServer(limits: limits, configure: { server, loop, log, _ in
                server.add(
                    VarlinkServer.Interface(
                        name: "test.Costly",
                        description: "interface test.Costly\nmethod Walk() -> ()\n",
                        methods: [
                            .init(.init("Walk")) { request in
                                log.append("walk")
                                // A small reply for a large walk (a status that counts a large tree).
                                request.charge(5_000)
                                request.reply()
                            }
                        ]
                    )
                )
                try loop.setTurnEndHandler { log.append("turn end") }
            }) { path in
                let peer = try RawPeer(path)
                peer.send((0..<5).flatMap { _ in call("test.Costly.Walk") })
                return (0..<5).map { _ in peer.receive() }
            }
            #expect(replies == Array(repeating: #"{"parameters":{}}"#, count: 5))
            #expect(longestRun(of: "walk", in: log.filter { $0 == "walk" || $0 == "turn end" }) == 1)
        }

        @Test func aMessageWithoutItsNULPastTheLimitIsClosedAtOnceWhateverTheChunksItCameIn() async throws {
            // Exactly four of the server's 16 KiB reads: reading must not stop at the limit before the framer can tell.
            let (seen, statistics, _) = try await withVarlinkServer { path in
                let peer = try RawPeer(path)
                peer.send(Array(repeating: UInt8(ascii: "x"), count: 70_000))
                let started = ContinuousClock.now
                let outcome = peer.receive()
                return outcome + (ContinuousClock.now - started < .seconds(2) ? " at once" : " late")
            }
            #expect(seen == "closed at once")
            #expect(statistics.closedOversized == 1)
        }

        @Test func inputPastAMessagesWorthBehindACallInProgressClosesTheConnection() async throws {
            let (seen, statistics, _) = try await withVarlinkServer(settled: { $0.contains("hold: peer gone") }) { path in
                let peer = try RawPeer(path)
                // Hold is never answered; 100 kB of calls pile up behind it.
                peer.send(call("test.Example.Hold") + (0..<2_000).flatMap { _ in call("test.Example.Echo", #"{"text":"x"}"#) })
                return peer.receive()
            }
            #expect(seen == "closed")
            #expect(statistics.closedOversized == 1)
        }

        @Test func aConnectFloodLetsTheLoopEndItsTurnBetweenBatchesOfRefusals() async throws {
            var limits = VarlinkServer.Limits()
            limits.acceptsPerDispatch = 4
            let held = HeldDescriptors()
            let (refusals, statistics, log) = try await withVarlinkServer(limits: limits, refuse: true, configure: { _, loop, log, path in
                try loop.setTurnEndHandler { log.append("turn end") }
                // Twenty connections wait in the backlog before the server starts: it refuses each.
                for _ in 0..<20 { held.hold(try UnixSocket.connect(to: path)) }
            }) { _ in
                defer { held.closeAll() }
                while held.all.count < 20 { usleep(1000) }
                return held.all.map { fd in
                    var buffer = [UInt8](repeating: 0, count: 256)
                    let count = recv(fd, &buffer, buffer.count, 0)
                    return String(decoding: buffer[..<max(0, count)].prefix { $0 != 0 }, as: UTF8.self)
                }
            }
            #expect(refusals == Array(repeating: #"{"error":"org.varlink.service.PermissionDenied","parameters":{}}"#, count: 20))
            #expect(statistics.refused == 20)
            let accepts = log.filter { $0.hasPrefix("peer uid") || $0 == "turn end" }.map { $0.hasPrefix("peer") ? "peer" : $0 }
            #expect(accepts.filter { $0 == "peer" }.count == 20)
            #expect(longestRun(of: "peer", in: accepts) <= 4)
        }

        @Test func theConnectionCapacityLeavesTheDescriptorReserveToTheProcess() {
            var limits = VarlinkServer.Limits()
            limits.maximumConnections = 5
            limits.descriptorReserve = 0
            #expect(VarlinkServer.capacity(limits) == 5)
            // A reserve larger than the limit leaves one connection (a socket that serves nobody would be no socket).
            limits.descriptorReserve = 1 << 40
            #expect(VarlinkServer.capacity(limits) == 1)
        }

        @Test func anAcceptThatFailsForWantOfDescriptorsRestsInsteadOfSpinning() async throws {
            var limits = VarlinkServer.Limits()
            limits.acceptRetryDelay = .milliseconds(100)
            // The first four accepts fail with EMFILE, as in a process out of descriptors; then one succeeds.
            let attempts = ConditionLock<[ContinuousClock.Instant]>([])
            let (reply, statistics, _) = try await withVarlinkServer(limits: limits, configure: { server, _, _, _ in
                let real = server.acceptConnection
                server.acceptConnection = { fd in
                    let failed = attempts.withLock { times in
                        times.append(.now)
                        return times.count <= 4
                    }
                    return failed ? -EMFILE : real(fd)
                }
            }) { path in
                let client = try VarlinkClient(path: path, timeout: .seconds(5))
                return JSONValue.object(try client.call("test.Example.Echo", parameters: ["text": "in"])).text
            }
            #expect(reply == #"{"text":"in"}"#)
            #expect(statistics.acceptErrors == 4)
            // Each failure rests 100 ms before the next try: four failures span at least 300 ms (a spin: microseconds).
            let times = attempts.withLock { $0 }
            #expect(times.count >= 5)
            if times.count >= 5 { #expect(times[4] - times[0] >= .milliseconds(300)) }
        }
    }
}
