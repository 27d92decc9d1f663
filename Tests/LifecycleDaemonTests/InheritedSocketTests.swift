//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
@_spi(Internal) import LifecycleKit
import LifecycleSystemd
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

@MainActor
@Suite("Sockets passed to the daemon, with every effect a stand-in")
struct InheritedSocketTests {
    private static func streamSocket() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        return fd
    }

    private static func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) >= 0 }

    /// Found by reading the daemon: a socket unit with two `ListenStream=` passes both under its one
    /// `FileDescriptorName=`. The second replaced the first in the table without a word, and the first stayed open,
    /// served by nobody: its connections waited for ever.
    @Test func aSecondSocketUnderOneNameIsClosedWithAWarningThatSaysWhatToChange() throws {
        let harness = DaemonHarness()
        let first = try Self.streamSocket()
        let second = try Self.streamSocket()
        let stored = try Self.streamSocket()
        let storedTwice = try Self.streamSocket()
        // Only what the daemon keeps: a number it closed may be another test's descriptor by now.
        defer { for fd in [first, stored] { close(fd) } }
        harness.stage.inherited = [
            SocketActivation.Socket(name: "http", descriptor: first),
            SocketActivation.Socket(name: "http", descriptor: second),
            SocketActivation.Socket(name: ListenerNames.storePrefix + "admin", descriptor: stored),
            SocketActivation.Socket(name: ListenerNames.storePrefix + "admin", descriptor: storedTwice),
        ]
        _ = harness.daemon.takePassedSockets(harness.stage.inherited, upgrade: nil)
        let table = harness.application.listeners
        #expect(table.passed["http"]?.descriptor == first)
        #expect(table.passed["http"]?.origin == .socketUnit)
        #expect(table.passed["admin"]?.descriptor == stored)
        #expect(table.passed["admin"]?.origin == .fileDescriptorStore)
        #expect(Self.isOpen(first) && Self.isOpen(stored))
        let warnings = harness.log.messages(.warning)
        #expect(
            warnings == [
                "two sockets passed as http by systemd (fd \(first) and fd \(second)): a listener serves one socket, so fd \(second) is closed and not served; give each socket a name of its own (a socket unit each, with its own FileDescriptorName=)",
                "two sockets passed as admin by the file descriptor store (fd \(stored) and fd \(storedTwice)): a listener serves one socket, so fd \(storedTwice) is closed and not served; a restart of the service (systemctl restart) empties the store",
            ]
        )
    }

    /// Issue 30, defect 2: after an upgrade made in the background, `lifecyclectl status` called the listener
    /// "unclaimed", though connections waited in its backlog and were served on the return: it is paused. A socket
    /// unit's socket nobody asked for is still unclaimed; one handed over shut down is closed.
    @Test func aSocketHandedOverByAnUpgradeIsPausedOrClosedAsItWasNotUnclaimed() throws {
        let harness = DaemonHarness()
        let http = try Self.streamSocket()
        let admin = try Self.streamSocket()
        let stray = try Self.streamSocket()
        defer { for fd in [http, admin, stray] { close(fd) } }
        let (channel, ours) = try channelPair()
        defer { close(channel) }
        var passed = [SocketActivation.Socket(name: UpgradeEnvironment.channelName, descriptor: ours)]
        let environment = [
            UpgradeEnvironment.previousPID: "77",
            UpgradeEnvironment.listeners: "http=socket-unit,admin=bound:closed:127.0.0.1%3A41234",
        ]
        let incoming = try #require(UpgradeFromPredecessor(environment: environment, passed: &passed))
        _ = harness.daemon.takePassedSockets(
            [
                SocketActivation.Socket(name: "http", descriptor: http),
                SocketActivation.Socket(name: "admin", descriptor: admin),
            ],
            upgrade: incoming
        )
        let unit = DaemonHarness()
        _ = unit.daemon.takePassedSockets([SocketActivation.Socket(name: "stray", descriptor: stray)], upgrade: nil)
        let states = harness.application.listeners.passed.mapValues(\.state)
        #expect(states == ["http": .paused, "admin": .closed])
        #expect(unit.application.listeners.passed["stray"]?.state == .unclaimed)
        #expect(harness.application.listeners.passed["admin"]?.condition == .shutDown(rebindTo: "127.0.0.1:41234"))
        #expect(harness.application.listeners.passed["http"]?.handedOverBy == 77)
    }

    /// A socket unit's socket and one this service stored under the same name are not two of one kind: the socket
    /// unit's wins, as before, and the stored one is dropped without this warning.
    @Test func aSocketUnitsSocketStillReplacesAStoredOneOfTheSameName() throws {
        let harness = DaemonHarness()
        let unit = try Self.streamSocket()
        let stored = try Self.streamSocket()
        defer { close(unit) }
        harness.stage.inherited = [
            SocketActivation.Socket(name: ListenerNames.storePrefix + "http", descriptor: stored),
            SocketActivation.Socket(name: "http", descriptor: unit),
        ]
        _ = harness.daemon.takePassedSockets(harness.stage.inherited, upgrade: nil)
        #expect(harness.application.listeners.passed["http"]?.descriptor == unit)
        #expect(!harness.log.messages(.warning).contains { $0.hasPrefix("two sockets passed as") })
    }
}
