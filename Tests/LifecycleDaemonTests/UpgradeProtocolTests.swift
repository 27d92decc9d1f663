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
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("What an upgrade's two processes tell each other")
struct UpgradeProtocolTests {
    @Test func theListenersOriginsTravelInOneVariableAndWhatCannotBeReadIsLeftOut() {
        let text = UpgradeEnvironment.encode(origins: [
            ("http", .socketUnit), ("admin", .bound), ("metrics", .fileDescriptorStore),
        ])
        #expect(text == "http=socket-unit,admin=bound,metrics=fd-store")
        #expect(
            UpgradeEnvironment.decodeOrigins(text) == [
                "http": .socketUnit, "admin": .bound, "metrics": .fileDescriptorStore,
            ]
        )
        #expect(UpgradeEnvironment.decodeOrigins("http=socket-unit,broken,x=elsewhere,=bound") == ["http": .socketUnit])
    }

    @Test func theVariablesSystemdSetForTheRunningProcessAreReplacedNotPassedOn() {
        for name in ["LISTEN_FDS", "LISTEN_FDNAMES", "LISTEN_PID", "WATCHDOG_PID", UpgradeEnvironment.previousPID] {
            #expect(UpgradeEnvironment.replaced.contains(name), "\(name)")
        }
        #expect(!UpgradeEnvironment.replaced.contains("NOTIFY_SOCKET"))
        #expect(!UpgradeEnvironment.replaced.contains("WATCHDOG_USEC"))
    }

    @Test func messagesCrossTheChannelOneWordAtATimeAndAnEndIsSeen() {
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #expect(socketpair(AF_UNIX, type, 0, &pair) == 0)
        #expect(UpgradeMessage.read(from: pair[1]) == .nothing)
        #expect(UpgradeMessage.ready.send(on: pair[0]))
        #expect(UpgradeMessage.main.send(on: pair[0]))
        #expect(UpgradeMessage.read(from: pair[1]) == .message(.ready))
        #expect(UpgradeMessage.read(from: pair[1]) == .message(.main))
        _ = "readiness".withCString { send(pair[0], $0, 9, 0) }
        #expect(UpgradeMessage.read(from: pair[1]) == .garbled("readiness"))
        close(pair[0])
        #expect(UpgradeMessage.read(from: pair[1]) == .closed)
        #expect(!UpgradeMessage.abort.send(on: pair[1]))
        close(pair[1])
    }

    @MainActor
    @Test func anUpgradeIsRefusedWithTheReasonWhereItCannotWork() {
        let harness = DaemonHarness()
        var reasons: [String] = []
        func ask() {
            harness.daemon.startUpgrade(timeout: nil) { result in
                if case .failure(let failure) = result { reasons.append(failure.reason) }
            }
        }
        ask()
        harness.launch()
        ask()
        harness.signal(.terminate)
        ask()
        #expect(
            reasons == [
                "the application has not launched yet",
                "an upgrade needs systemd (a Type=notify unit): no NOTIFY_SOCKET",
                "the application is terminating",
            ]
        )
    }
}
