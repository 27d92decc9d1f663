//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import SystemPackage
import Testing

@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

// Each test runs its loop on a thread of its own (see `onDedicatedThread`): the process's main thread is Dispatch's,
// and signals are aimed at the loop's thread with rt_tgsigqueueinfo, since other test threads leave them unblocked.
// Draining Dispatch's main queue needs the real main thread, so integrateMainDispatchQueue() is covered end to end
// by the daemon's tests instead.
extension ProcessStateTests {
    @Suite struct MainLoopTests {
        @Test func aTimerFiresOnceAfterItsDelayAndRunReturnsTheExitCode() async throws {
            let (code, fired, elapsed, stillActive) = try await onDedicatedThread {
                let loop = try MainLoop(onCurrentThread: ())
                var fired = 0
                var elapsed: UInt64 = 0
                let start = monotonicMicroseconds()
                let timer = try loop.addTimer(after: .milliseconds(30)) { [unowned loop] in
                    fired += 1
                    elapsed = monotonicMicroseconds() - start
                    loop.exit(code: 42)
                }
                let code = try loop.run()
                return (code, fired, elapsed, timer.isActive)
            }
            #expect(code == 42)
            #expect(fired == 1)
            #expect(elapsed >= 30_000)
            #expect(elapsed < 1_000_000)
            #expect(!stillActive)
        }

        @Test func aCancelledTimerNeverFires() async throws {
            let fired = try await onDedicatedThread {
                let loop = try MainLoop(onCurrentThread: ())
                var fired: [String] = []
                let early = try loop.addTimer(after: .milliseconds(5)) { fired.append("early") }
                try loop.addTimer(after: .milliseconds(40)) { [unowned loop] in
                    fired.append("late")
                    loop.exit(code: 0)
                }
                early.cancel()
                early.cancel()
                _ = try loop.run()
                return fired
            }
            #expect(fired == ["late"])
        }

        @Test func anIOSourceReportsReadableDataUntilCancelled() async throws {
            let (code, seen, leftOver) = try await onDedicatedThread {
                let loop = try MainLoop(onCurrentThread: ())
                let pipe = try Pipe()
                var seen: [String] = []
                var io: MainLoop.Source?
                // Each step is scheduled by the one before, so a descheduled test thread cannot reorder them.
                io = try loop.addIO(fd: pipe.readEnd, events: .readable) { [unowned loop] events in
                    seen.append("\(events == .readable) \(pipe.readAvailable())")
                    _ = try? loop.addTimer(after: .milliseconds(5)) {
                        io?.cancel()
                        io = nil  // the source's handler holds this variable: no cycle left behind
                        pipe.write("unseen")
                        _ = try? loop.addTimer(after: .milliseconds(30)) { loop.exit(code: 3) }
                    }
                }
                try loop.addTimer(after: .milliseconds(5)) { pipe.write("hello") }
                let code = try loop.run()
                return (code, seen, pipe.readAvailable())
            }
            #expect(code == 3)
            #expect(seen == ["true hello"])
            #expect(leftOver == "unseen")
        }

        @Test func aSourceCanCancelItselfFromItsOwnHandler() async throws {
            let calls = try await onDedicatedThread {
                let loop = try MainLoop(onCurrentThread: ())
                let pipe = try Pipe()
                final class Holder { weak var source: MainLoop.Source? }
                let holder = Holder()
                var calls = 0
                // The data is never read, so a level-triggered source would fire on every iteration.
                holder.source = try loop.addIO(fd: pipe.readEnd, events: .readable) { _ in
                    calls += 1
                    holder.source?.cancel()
                }
                pipe.write("x")
                try loop.addTimer(after: .milliseconds(30)) { [unowned loop] in loop.exit(code: 0) }
                _ = try loop.run()
                return calls
            }
            #expect(calls == 1)
        }

        @Test func theTurnEndHandlerRunsOncePerTurnAfterEverySourceOfThatTurnAndNeverWhenIdle() async throws {
            let (turns, idleDispatched) = try await onDedicatedThread {
                let loop = try MainLoop(onCurrentThread: ())
                let first = try Pipe()
                let second = try Pipe()
                var log: [String] = []
                try loop.addIO(fd: first.readEnd, events: .readable) { _ in
                    _ = first.readAvailable()
                    log.append("first")
                }
                try loop.addIO(fd: second.readEnd, events: .readable) { _ in
                    _ = second.readAvailable()
                    log.append("second")
                }
                try loop.setTurnEndHandler { log.append("end") }
                var turns: [[String]] = []

                first.write("1")
                second.write("1")
                while try loop.runOnce(timeout: .zero) {}
                turns.append(log)
                log = []

                let idleDispatched = try loop.runOnce(timeout: .milliseconds(50))
                turns.append(log)
                log = []

                try loop.setTurnEndHandler { log.append("replaced end") }
                first.write("2")
                while try loop.runOnce(timeout: .zero) {}
                turns.append(log)
                return (turns, idleDispatched)
            }
            #expect(turns.count == 3)
            #expect(Set(turns[0].prefix(2)) == ["first", "second"])
            #expect(turns[0].count == 3 && turns[0].last == "end")
            #expect(!idleDispatched)
            #expect(turns[1].isEmpty)
            #expect(turns[2] == ["first", "replaced end"])
        }

        @Test func realTimeSignalsQueueWithTheirValuesAndSender() async throws {
            let signal = UnixSignal(rawValue: UnixSignal.realTimeMin + 3)
            let (code, infos) = try await onDedicatedThread {
                MainLoop.blockSignals([signal])
                let loop = try MainLoop(onCurrentThread: ())
                var infos: [SignalInfo] = []
                try loop.addSignal(signal) { [unowned loop] info in
                    infos.append(info)
                    if infos.count == 3 { loop.exit(code: 0) }
                }
                // A safety net, so a lost signal fails the test instead of hanging it.
                try loop.addTimer(after: .seconds(5)) { [unowned loop] in loop.exit(code: 1) }
                for value: Int32 in [1, 2, 3] {
                    try signal.queue(toThread: MainLoop.threadID, value: value)
                }
                return (try loop.run(), infos)
            }
            #expect(code == 0)
            #expect(infos.map(\.value) == [1, 2, 3])
            #expect(infos.allSatisfy { $0.signal == signal && $0.senderPID == getpid() && $0.isQueued })
            #expect(infos.allSatisfy { $0.senderUID == getuid() })
        }

        @Test func standardSignalsSentWhilePendingCoalesceIntoOneDelivery() async throws {
            let infos = try await onDedicatedThread {
                MainLoop.blockSignals([.user2])
                let loop = try MainLoop(onCurrentThread: ())
                var infos: [SignalInfo] = []
                try loop.addSignal(.user2) { infos.append($0) }
                for value: Int32 in [1, 2, 3] {
                    try UnixSignal.user2.queue(toThread: MainLoop.threadID, value: value)
                }
                try loop.addTimer(after: .milliseconds(50)) { [unowned loop] in loop.exit(code: 0) }
                _ = try loop.run()
                return infos
            }
            #expect(infos.count == 1)
            #expect(infos.first?.value == 1)
        }

        @Test func addingASignalThatIsNotBlockedThrowsBusy() async throws {
            let error = try await onDedicatedThread { () throws -> SystemCallError? in
                var set = sigset_t()
                sigemptyset(&set)
                sigaddset(&set, SIGWINCH)
                pthread_sigmask(SIG_UNBLOCK, &set, nil)
                let loop = try MainLoop(onCurrentThread: ())
                do throws(SystemCallError) {
                    try loop.addSignal(UnixSignal(rawValue: SIGWINCH)) { _ in }
                    return nil
                } catch {
                    return error
                }
            }
            let thrown = try #require(error)
            #expect(thrown.errno == .resourceBusy)
            #expect(thrown.operation == "sd_event_add_signal(SIGWINCH)")
            #expect(thrown.description == "sd_event_add_signal(SIGWINCH) failed: Device or resource busy (errno 16).")
        }

        @Test func aLoopThatHasExitedCannotRunAgain() async throws {
            let (first, secondError) = try await onDedicatedThread { () throws -> (Int32, SystemCallError?) in
                let loop = try MainLoop(onCurrentThread: ())
                try loop.addTimer(after: .zero) { [unowned loop] in loop.exit(code: 9) }
                let first = try loop.run()
                do throws(SystemCallError) {
                    _ = try loop.run()
                    return (first, nil)
                } catch {
                    return (first, error)
                }
            }
            #expect(first == 9)
            #expect(secondError?.operation == "sd_event_loop")
        }

        @Test func withoutWatchdogUsecTheWatchdogStaysOff() async throws {
            let peer = try NotifySocketPeer()
            let enabled = try await withEnvironment(
                ["NOTIFY_SOCKET": peer.address, "WATCHDOG_USEC": nil, "WATCHDOG_PID": nil]
            ) {
                try await onDedicatedThread {
                    let loop = try MainLoop(onCurrentThread: ())
                    let enabled = try loop.enableWatchdog()
                    try loop.addTimer(after: .milliseconds(30)) { [unowned loop] in loop.exit(code: 0) }
                    _ = try loop.run()
                    return enabled
                }
            }
            #expect(!enabled)
            #expect(peer.drain().isEmpty)
        }

        @Test func theLoopPingsTheWatchdogAtHalfItsTimeoutWithoutEndingTurns() async throws {
            let peer = try NotifySocketPeer()
            let (enabled, turnEnds) = try await withEnvironment(
                ["NOTIFY_SOCKET": peer.address, "WATCHDOG_USEC": "100000", "WATCHDOG_PID": "\(getpid())"]
            ) {
                try await onDedicatedThread {
                    let loop = try MainLoop(onCurrentThread: ())
                    var turnEnds = 0
                    try loop.setTurnEndHandler { turnEnds += 1 }
                    let enabled = try loop.enableWatchdog()
                    try loop.addTimer(after: .milliseconds(20)) {}
                    try loop.addTimer(after: .milliseconds(260)) { [unowned loop] in loop.exit(code: 0) }
                    _ = try loop.run()
                    return (enabled, turnEnds)
                }
            }
            let pings = peer.drain()
            #expect(enabled)
            // One at once, then one every 50–75 ms (sd-event picks a point between 1/2 and 3/4 of the timeout).
            #expect(pings.count >= 4)
            #expect(pings.allSatisfy { $0 == "WATCHDOG=1" })
            // Watchdog wake-ups dispatch no source: only the 20 ms timer's turn ended (the exit skips its own).
            #expect(turnEnds == 1)
        }
    }
}
