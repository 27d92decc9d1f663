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

extension ProcessStateTests {
    @Suite struct NotifierTests {
        @Test func withoutNotifySocketTheNotifierIsDisabledAndNotifyingDoesNothing() throws {
            try withEnvironment(["NOTIFY_SOCKET": nil]) {
                let notifier = SystemdNotifier.fromEnvironment()
                #expect(!notifier.isEnabled)
                #expect(notifier.socketPath == nil)
                try notifier.notify(.ready, .status("unheard"))
            }
        }

        @Test func assignmentsArriveAsOneDatagramOnePerLine() throws {
            let peer = try NotifySocketPeer()
            try withEnvironment(["NOTIFY_SOCKET": peer.address]) {
                let notifier = SystemdNotifier.fromEnvironment()
                #expect(notifier.isEnabled)
                #expect(notifier.socketPath == peer.address)
                try notifier.notify([.ready, .status("active: serving")])
                try notifier.notify(.stopping)
            }
            #expect(peer.receive() == "READY=1\nSTATUS=active: serving")
            #expect(peer.receive() == "STOPPING=1")
        }

        @Test func readyNextToAStatusOfAnyLengthArrivesInADatagramSystemdTakes() throws {
            let peer = try NotifySocketPeer()
            try withEnvironment(["NOTIFY_SOCKET": peer.address]) {
                try SystemdNotifier.fromEnvironment().notify([.ready, .status(String(repeating: "x", count: 100_000))])
            }
            let message = try #require(peer.receive())
            // systemd 252 ignores a whole datagram of 4 KiB or more.
            #expect(message.utf8.count < 4096)
            #expect(message.hasPrefix("READY=1\nSTATUS=xxx"))
        }

        @Test func aStoredMemfdIsSealedAndCanNeverBeMadeExecutableWhereTheKernelCanSaySo() throws {
            let fd = try FileDescriptorStore.sealedMemfd(Array("state".utf8), name: "lifecycle-state-1")
            defer { close(fd) }
            let seals = fcntl(fd, 1034 /* F_GET_SEALS */)
            // F_SEAL_SEAL, SHRINK, GROW, WRITE.
            #expect(seals & 0x0F == 0x0F)
            var status = stat()
            #expect(fstat(fd, &status) == 0)
            var release = utsname()
            uname(&release)
            let version = withUnsafeBytes(of: release.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                .split(separator: ".").prefix(2).compactMap { Int($0.prefix { $0.isNumber }) }
            if version.count == 2, (version[0], version[1]) >= (6, 3) {
                // MFD_NOEXEC_SEAL: F_SEAL_EXEC, and no execute bit.
                #expect(seals & 0x20 == 0x20)
                #expect(status.st_mode & 0o111 == 0)
            }
        }

        @Test func reloadingSendsAMonotonicTimestampTakenWhenSent() throws {
            let peer = try NotifySocketPeer()
            let before = monotonicMicroseconds()
            try withEnvironment(["NOTIFY_SOCKET": peer.address]) {
                try SystemdNotifier.fromEnvironment().notify(.reloading)
            }
            let after = monotonicMicroseconds()
            let message = try #require(peer.receive())
            let lines = message.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.first == "RELOADING=1")
            let stampLine = try #require(lines.last)
            #expect(stampLine.hasPrefix("MONOTONIC_USEC="))
            let stamp = try #require(UInt64(stampLine.dropFirst("MONOTONIC_USEC=".count)))
            #expect(before <= stamp && stamp <= after)
        }

        @Test func anUnreachableSocketThrowsWithTheErrno() throws {
            let error = withEnvironment(["NOTIFY_SOCKET": "@lifecyclekit-test-nobody-listens-\(getpid())"]) {
                #expect(throws: SystemCallError.self) { try SystemdNotifier.fromEnvironment().notify(.ready) }
            }
            #expect(error?.errno == .connectionRefused)
            #expect(error?.operation.hasPrefix("sd_notify") == true)
            #expect(error?.description.hasSuffix(".") == true)
        }

        @Test func theDisabledNotifierIgnoresTheEnvironment() throws {
            let peer = try NotifySocketPeer()
            try withEnvironment(["NOTIFY_SOCKET": peer.address]) {
                try SystemdNotifier.disabled.notify(.ready)
            }
            #expect(peer.drain().isEmpty)
        }

        @Test func underSystemdMeansAnInvocationIDOrANotifySocket() {
            withEnvironment(["INVOCATION_ID": nil, "NOTIFY_SOCKET": nil]) {
                #expect(!SystemdNotifier.isUnderSystemd)
            }
            withEnvironment(["INVOCATION_ID": "0123456789abcdef0123456789abcdef", "NOTIFY_SOCKET": nil]) {
                #expect(SystemdNotifier.isUnderSystemd)
            }
            withEnvironment(["INVOCATION_ID": nil, "NOTIFY_SOCKET": "/run/systemd/notify"]) {
                #expect(SystemdNotifier.isUnderSystemd)
            }
        }

        @Test func theWatchdogIntervalIsWatchdogUsecWhenItIsMeantForThisProcess() {
            let notifier = SystemdNotifier.disabled
            withEnvironment(["WATCHDOG_USEC": "2500000", "WATCHDOG_PID": "\(getpid())"]) {
                #expect(notifier.watchdogInterval() == .milliseconds(2500))
            }
            withEnvironment(["WATCHDOG_USEC": "2500000", "WATCHDOG_PID": nil]) {
                #expect(notifier.watchdogInterval() == .milliseconds(2500))
            }
            withEnvironment(["WATCHDOG_USEC": "2500000", "WATCHDOG_PID": "1"]) {
                #expect(notifier.watchdogInterval() == nil)
            }
            withEnvironment(["WATCHDOG_USEC": nil, "WATCHDOG_PID": nil]) {
                #expect(notifier.watchdogInterval() == nil)
            }
        }
    }
}
