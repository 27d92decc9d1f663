//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
@_spi(Internal) import LifecycleDaemon
import LifecycleKit
import LifecycleKitTesting
import LifecycleServices
import Testing

@testable import hello_service

#if canImport(Glibc)
import Glibc
#endif

/// A listening socket on 127.0.0.1 at a port the kernel picks: somebody else holding a port the server wants.
private final class Squatter {
    let port: Int
    private var fd: Int32

    init() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        precondition(bound, "cannot listen on 127.0.0.1")
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func leave() {
        close(fd)
        fd = -1
    }

    deinit { if fd >= 0 { close(fd) } }
}

@MainActor
@Suite("HelloService under the test kit")
struct HelloServiceTests {
    private func host(port: Int, arguments: [String] = []) throws -> (TestHost, HelloService) {
        let delegate = HelloService()
        let options = try HelloService.Options.parse(["--port", String(port)] + arguments)
        delegate.configure(options: options, settings: .init())
        return (TestHost(delegate: delegate), delegate)
    }

    @Test func aServerWhosePortIsTakenIsRestartedAfterGrowingDelaysUntilItBinds() async throws {
        let squatter = Squatter()
        let (host, _) = try host(port: squatter.port)
        host.launch()
        let server = try #require(host.application.window?.rootViewController as? ServiceController)
        #expect(server.identifier == "http")
        for (failure, delay) in [(1, 100), (2, 200)] {
            #expect(await host.waitUntil { server.services.failureCount == failure && !server.services.isRunning })
            host.advance(by: .milliseconds(delay - 1))
            #expect(server.services.runCount == failure)
            host.advance(by: .milliseconds(1))
            #expect(server.services.runCount == failure + 1)
        }
        // Free now: the third run binds and serves, in the same application.
        #expect(await host.waitUntil { server.services.failureCount == 3 })
        squatter.leave()
        host.advance(by: .milliseconds(400))
        #expect(server.services.runCount == 4)
        #expect(
            await host.waitUntil(timeout: .seconds(10)) {
                server.services.isActive && server.services.failureCount == 3
            }
        )
        #expect(host.application.applicationState == .active)
        #expect(
            host.recorder.lines(targets: ["http"], events: ["taskWillRestart"]) == [
                "http taskWillRestart", "http taskWillRestart", "http taskWillRestart",
            ]
        )
        host.signal("SIGTERM")
        #expect(await host.waitUntil { host.application.backgroundTasks.isEmpty })
    }

    @Test func aReloadToAPortItCannotListenOnIsRefusedByTheDelegateWithTheReason() throws {
        // Both ports are held here, so the test needs no free port: the server at launch fails to bind and waits for
        // its restart (the clock does not move), and the reload asks for the other one.
        let serving = Squatter()
        let squatter = Squatter()
        // The port from the file, not the command line: a --port would win over the reloaded file.
        let delegate = HelloService()
        delegate.configure(options: try HelloService.Options.parse([]), settings: .init(port: serving.port))
        let host = TestHost(delegate: delegate)
        host.launch()
        host.recorder.clear()
        host.reloadSettings = HelloService.Settings(port: squatter.port)
        var applied = false
        host.onReloadConfiguration = { applied = true }
        let outcome = host.send(.reload)
        guard case .refused(let reason, _)? = outcome else {
            Issue.record("the reload was not refused: \(String(describing: outcome))")
            return
        }
        #expect(reason.hasPrefix("the delegate: port \(squatter.port) cannot be listened on ("))
        #expect(reason.hasSuffix("); the server stays on its port"))
        #expect(!applied && delegate.port == serving.port)
        #expect(host.recorder.lines(events: ["reloadRefused"]) == ["delegate reloadRefused"])
    }

    /// Found by reading the example: the reload compared the file's [Hello] with where the command line had put the
    /// server, so under kubernetes.yaml (--address 0.0.0.0 --port 8080, no [Hello] in the ConfigMap) every reload
    /// asked to move to 127.0.0.1:8080, found it taken by the server itself, and was refused.
    @Test func aReloadKeepsWhatTheCommandLineSetsWhateverTheFileSays() throws {
        // The command line's port is held (the server waits for its restart: the clock does not move); the file names
        // another port, held too, so a reload that went by the file would be refused.
        let serving = Squatter()
        let elsewhere = Squatter()
        let (host, delegate) = try host(port: serving.port, arguments: ["--address", "127.0.0.1"])
        host.launch()
        host.reloadSettings = HelloService.Settings(address: "127.0.0.2", port: elsewhere.port)
        var applied = false
        host.onReloadConfiguration = { applied = true }
        let outcome = host.send(.reload)
        guard case .performed? = outcome else {
            Issue.record("the reload was not performed: \(String(describing: outcome))")
            return
        }
        #expect(applied && delegate.port == serving.port && delegate.address == "127.0.0.1")
        #expect(host.recorder.lines(events: ["reloadRefused"]).isEmpty)
    }

    @Test func theServerListensOnTheAddressGivenWithAddress() async throws {
        // 127.0.0.2 is the loopback too (all of 127/8 is), and a port the kernel picks is free by construction.
        let (host, delegate) = try host(port: 0, arguments: ["--address", "127.0.0.2"])
        #expect(delegate.address == "127.0.0.2")
        host.launch()
        let server = try #require(host.application.window?.rootViewController as? ServiceController)
        #expect(await host.waitUntil(timeout: .seconds(10)) { server.services.isActive })
        let listener = try #require(host.application.listener(named: HelloController.listenerName))
        #expect(listener.address.hasPrefix("127.0.0.2:") && !listener.address.hasSuffix(":0"), "\(listener.address)")
        host.signal("SIGTERM")
        #expect(await host.waitUntil { host.application.backgroundTasks.isEmpty })
    }

    @Test func anAddressThatIsNotNumericIsRefusedOnTheCommandLineAndInTheFile() throws {
        for address in ["localhost", "127.0.0.256", "::g", ""] {
            #expect(throws: (any Error).self, "\(address)") { try HelloService.Options.parse(["--address", address]) }
        }
        for address in ["127.0.0.1", "0.0.0.0", "::", "::1", "fe80::1"] {
            #expect(try HelloService.Options.parse(["--address", address]).address == address)
        }
        var configuration = DaemonConfiguration()
        let hello = HelloService.Settings.self
        #expect(
            throws: ConfigurationError(
                source: "hello.conf",
                line: 2,
                message: "Address=example.com is not a numeric IPv4 or IPv6 address (127.0.0.1, 0.0.0.0, ::1, ::)"
            )
        ) {
            try configuration.apply(
                text: "[Hello]\nAddress=example.com\n",
                source: "hello.conf",
                applicationSection: hello
            )
        }
        try configuration.apply(text: "[Hello]\nAddress=::\n", source: "hello.conf", applicationSection: hello)
        #expect((configuration.applicationSettings as? HelloService.Settings)?.address == "::")
    }

    @Test func aReloadToAnAddressThisMachineDoesNotHaveIsRefusedWithTheReason() throws {
        // 192.0.2.1 is TEST-NET-1 (RFC 5737): documentation only, never a machine's address, so binding it fails.
        let serving = Squatter()
        let (host, delegate) = try host(port: serving.port)
        host.launch()
        host.reloadSettings = HelloService.Settings(address: "192.0.2.1", port: serving.port)
        let outcome = host.send(.reload)
        guard case .refused(let reason, _)? = outcome else {
            Issue.record("the reload was not refused: \(String(describing: outcome))")
            return
        }
        let expected = "192.0.2.1 port \(serving.port) cannot be listened on (Cannot assign requested address)"
        #expect(reason == "the delegate: \(expected); the server stays on its port")
        #expect(delegate.address == "127.0.0.1")
    }
}
