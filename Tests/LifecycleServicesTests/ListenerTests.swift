//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecyclePrimitives
import LifecycleKitTesting
import LifecycleServices
import ServiceLifecycle
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A service that records the listening socket of its run, then runs until its graceful shutdown.
struct SocketRecordingService: Service {
    let socket: ListeningSocket
    let timeline: Timeline

    func run() async throws {
        timeline.append("run on \(socket.address) (\(socket.origin.rawValue))")
        try await gracefulShutdown()
        timeline.append("stopped")
    }
}

/// What a TCP client connecting to 127.0.0.1:`port` meets: the kernel takes the connection (it waits in the
/// listening socket's backlog, whether a server accepts or not), or refuses it.
enum ConnectOutcome: Equatable {
    case accepted, refused
    case other(Int32)
}

func connect(toLoopbackPort port: Int, host: UInt32 = 0x7F00_0001) -> ConnectOutcome {
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(client) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = in_addr_t(host.bigEndian)
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    if result == 0 { return .accepted }
    return errno == ECONNREFUSED ? .refused : .other(errno)
}

/// The port of an address written `127.0.0.1:8080`.
func port(of address: String) -> Int {
    Int(address.split(separator: ":").last ?? "") ?? 0
}

/// A listening TCP socket on 127.0.0.1 at a port the kernel picks, as a socket unit would pass it.
func listeningLoopbackSocket() -> (descriptor: Int32, port: Int) {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, length) == 0 && listen(descriptor, 16) == 0
                && getsockname(descriptor, $0, &length) == 0
        }
    }
    precondition(bound, "cannot listen on 127.0.0.1")
    return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
}

/// A service that takes a while to drain: its graceful shutdown ends `drain` later (real time).
struct SlowDrainingService: Service {
    let socket: ListeningSocket
    let timeline: Timeline
    let drain: Duration

    func run() async throws {
        timeline.append("run on \(socket.address)")
        try? await gracefulShutdown()
        try? await Task.sleep(for: drain)
        timeline.append("drained")
    }
}

@MainActor
@Suite("Listening sockets of hosted servers")
struct ListenerTests {
    private func hosted(
        _ listener: Listener = .tcp("http", port: 0),
        policy: ListenerPolicy = .pause,
        timeline: Timeline
    ) -> (TestHost, ServiceController) {
        let controller = ServiceController(identifier: "http", listeners: [listener], listenerPolicy: policy) {
            sockets in
            [SocketRecordingService(socket: sockets[0], timeline: timeline)]
        }
        return (TestHost(delegate: Delegate(root: controller)), controller)
    }

    @Test func aListenerNothingWasPassedForIsBoundAndRecordedWithItsOrigin() async {
        let timeline = Timeline()
        let (host, controller) = hosted(timeline: timeline)
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        let listener = try! #require(host.application.listeners["http"])
        #expect(listener.origin == .bound)
        #expect(listener.address.hasPrefix("127.0.0.1:") && port(of: listener.address) > 0)
        #expect(listener.state == .serving)
        #expect(timeline.lines == ["run on \(listener.address) (bound)"])
        #expect(controller.services.isActive)
        #expect(connect(toLoopbackPort: port(of: listener.address)) == .accepted)
    }

    @Test func inTheBackgroundThePausedSocketKeepsListeningAndTheNextRunServesTheSameOne() async {
        let timeline = Timeline()
        let (host, controller) = hosted(timeline: timeline)
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        let address = host.application.listeners["http"]!.address
        host.application.requestEnterBackground()
        #expect(await host.waitUntil { !controller.services.isRunning })
        #expect(timeline.lines.last == "stopped")
        #expect(host.application.listeners["http"]?.state == .paused)
        // No server accepts, and the kernel still takes the connection: it waits in the backlog.
        #expect(connect(toLoopbackPort: port(of: address)) == .accepted)
        host.application.requestBecomeActive()
        #expect(await host.waitUntil { timeline.lines.count == 3 })
        #expect(timeline.lines[2] == "run on \(address) (bound)")
        #expect(host.application.listeners.listeners.count == 1)
        #expect(host.application.listeners["http"]?.state == .serving)
    }

    @Test func theClosePolicyRefusesConnectionsInTheBackgroundAndListensAgainOnReturn() async {
        let timeline = Timeline()
        let (host, controller) = hosted(policy: .close, timeline: timeline)
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        let port = port(of: host.application.listeners["http"]!.address)
        host.application.requestEnterBackground()
        #expect(host.application.listeners["http"]?.state == .closed)
        #expect(connect(toLoopbackPort: port) == .refused)
        #expect(await host.waitUntil { !controller.services.isRunning })
        host.application.requestBecomeActive()
        #expect(await host.waitUntil { timeline.lines.count == 3 })
        #expect(host.application.listeners["http"]?.state == .serving)
        #expect(connect(toLoopbackPort: port) == .accepted)
    }

    @Test func aSocketShutDownInTheBackgroundListensAgainBeforeTheApplicationTerminates() async {
        let timeline = Timeline()
        let passed = listeningLoopbackSocket()
        let (host, controller) = hosted(policy: .close, timeline: timeline)
        host.application.listeners.recordPassed(
            ListenerTable.Entry(
                name: "http", descriptor: passed.descriptor, address: "fd \(passed.descriptor)", origin: .socketUnit, condition: .passed
            )
        )
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        host.application.requestEnterBackground()
        #expect(connect(toLoopbackPort: passed.port) == .refused)
        #expect(await host.waitUntil { !controller.services.isRunning })
        // A socket systemd holds must not be left shut down: its socket unit would stop ("Got POLLHUP on a listening
        // socket"), and the next process of the service would find nothing to serve.
        host.application.requestTermination()
        #expect(host.application.applicationState == .terminated)
        #expect(connect(toLoopbackPort: passed.port) == .accepted)
        close(passed.descriptor)
    }

    /// Issue 30, defect 3: an upgrade made in the background with the close policy hands the socket over shut down; the
    /// process that handed it over listened again as it exited, so the new one, still in the background, let
    /// connections into the backlog instead of refusing them. Once handed over, the sockets are the next process's.
    @Test func aSocketHandedOverShutDownStaysShutDownWhenTheOldProcessExits() async {
        let timeline = Timeline()
        let passed = listeningLoopbackSocket()
        let (host, controller) = hosted(policy: .close, timeline: timeline)
        host.application.listeners.recordPassed(
            ListenerTable.Entry(
                name: "http", descriptor: passed.descriptor, address: "fd \(passed.descriptor)", origin: .socketUnit,
                condition: .passed
            )
        )
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        host.application.requestEnterBackground()
        #expect(await host.waitUntil { !controller.services.isRunning })
        #expect(host.application.listeners["http"]?.state == .closed)
        // The upgrade hands the sockets over; this process terminates.
        host.application.listeners.handOver()
        host.application.requestTermination()
        #expect(host.application.applicationState == .terminated)
        #expect(connect(toLoopbackPort: passed.port) == .refused)
        close(passed.descriptor)
    }

    /// The other side of it: a socket passed shut down (the predecessor left it so) is reported closed, claimed again on
    /// the return to the foreground at the same port (a port the kernel picked is bound again), and listens again
    /// before the process exits if nobody claimed it.
    @Test func aSocketPassedShutDownIsClosedUntilClaimedAndListensAgainAtExit() async {
        for claimed in [true, false] {
            let timeline = Timeline()
            let passed = listeningLoopbackSocket()
            let address = "127.0.0.1:\(passed.port)"
            shutdown(passed.descriptor, Int32(SHUT_RDWR))
            #expect(connect(toLoopbackPort: passed.port) == .refused)
            let (host, _) = hosted(policy: .close, timeline: timeline)
            host.application.listeners.recordPassed(
                ListenerTable.Entry(
                    name: "http", descriptor: passed.descriptor, address: "fd \(passed.descriptor)", origin: .socketUnit,
                    handedOverBy: 77, condition: .shutDown(rebindTo: address)
                )
            )
            host.application.listeners.listenAgainAtExit(using: SocketCalls.listenAgain)
            #expect(host.application.listeners.passed["http"]?.state == .closed)
            host.launch(into: claimed ? .active : .background)
            if claimed {
                #expect(await host.waitUntil { timeline.lines.count == 1 })
                #expect(host.application.listeners["http"]?.state == .serving)
                #expect(connect(toLoopbackPort: passed.port) == .accepted)
            } else {
                #expect(connect(toLoopbackPort: passed.port) == .refused)
            }
            host.application.requestTermination()
            #expect(connect(toLoopbackPort: passed.port) == .accepted, "claimed: \(claimed)")
            close(passed.descriptor)
        }
    }

    @Test func aPassedSocketIsServedAsItIsWhateverAddressTheListenerNames() async {
        let timeline = Timeline()
        let passed = listeningLoopbackSocket()
        let (host, _) = hosted(.tcp("http", port: 1), timeline: timeline)
        host.application.listeners.recordPassed(
            ListenerTable.Entry(
                name: "http", descriptor: passed.descriptor, address: "fd \(passed.descriptor)", origin: .socketUnit, condition: .passed
            )
        )
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        #expect(timeline.lines == ["run on 127.0.0.1:\(passed.port) (socket-unit)"])
        let listener = try! #require(host.application.listeners["http"])
        #expect(listener.descriptor == passed.descriptor && listener.origin == .socketUnit)
        #expect(host.application.listeners.passed.isEmpty)
    }

    @Test func aStoredSocketForAnAddressNoLongerConfiguredIsReplacedAndDroppedFromTheStore() async {
        let timeline = Timeline()
        let stale = listeningLoopbackSocket()
        let (host, _) = hosted(.tcp("http", port: 0), timeline: timeline)
        var retired: [String] = []
        var bound: [String] = []
        host.application.listeners.observe { change in
            switch change {
            case .retired(let entry): retired.append("\(entry.name) \(entry.address)")
            case .bound(let entry): bound.append("\(entry.name) \(entry.address)")
            case .updated, .willExit: break
            }
        }
        host.application.listeners.recordPassed(
            ListenerTable.Entry(
                name: "http", descriptor: stale.descriptor, address: "fd \(stale.descriptor)", origin: .fileDescriptorStore, condition: .passed
            )
        )
        // Port 0 names any port: the stored socket on 127.0.0.1 serves it.
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        #expect(timeline.lines == ["run on 127.0.0.1:\(stale.port) (fd-store)"])
        #expect(retired.isEmpty && bound.isEmpty)
        close(stale.descriptor)

        let other = listeningLoopbackSocket()
        let timeline2 = Timeline()
        let (host2, _) = hosted(.tcp("http", host: "127.0.0.2", port: 0), timeline: timeline2)
        host2.application.listeners.observe { change in
            switch change {
            case .retired(let entry): retired.append("\(entry.name) \(entry.address)")
            case .bound(let entry): bound.append("\(entry.name) \(entry.address)")
            case .updated, .willExit: break
            }
        }
        host2.application.listeners.recordPassed(
            ListenerTable.Entry(
                name: "http", descriptor: other.descriptor, address: "fd \(other.descriptor)", origin: .fileDescriptorStore, condition: .passed
            )
        )
        host2.launch()
        #expect(await host2.waitUntil { timeline2.lines.count == 1 })
        let fresh = try! #require(host2.application.listeners["http"])
        #expect(fresh.origin == .bound && fresh.address.hasPrefix("127.0.0.2:"))
        #expect(retired == ["http 127.0.0.1:\(other.port)"])
        #expect(bound == ["http \(fresh.address)"])
        // The stored socket nobody serves any more is closed: its port refuses connections (its descriptor number may
        // be another test's by now, for the tests run in parallel).
        #expect(host2.application.listeners.retired.isEmpty)
        #expect(connect(toLoopbackPort: other.port) == .refused)
    }

    /// Found by a CI run of the example's reload test: a controller replaced by one listening elsewhere (the example's
    /// reload to another port) left its old socket listening, served by nobody, when its run ended before the new
    /// controller's began: the socket was retired with no server left, and only the end of a run closed one.
    @Test func aListenerMovedAfterItsLastRunEndedIsClosedAtOnce() async {
        let timeline = Timeline()
        // On 127.0.0.5, where no other test listens: the tests run in parallel, and a port of 127.0.0.1 this socket
        // gave back can be another test's by the time it is checked.
        let (host, _) = hosted(.tcp("http", host: "127.0.0.5", port: 0), timeline: timeline)
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        let old = try! #require(host.application.listeners["http"])
        // The first controller leaves the tree; its run ends and gives the socket back before another asks for it.
        let moved = ServiceController(identifier: "moved", listeners: [.tcp("http", host: "127.0.0.2", port: 0)]) {
            sockets in
            [SocketRecordingService(socket: sockets[0], timeline: timeline)]
        }
        host.application.window?.rootViewController = ViewController()
        #expect(await host.waitUntil { timeline.lines.count == 2 && host.application.listeners["http"]?.servers == 0 })
        host.application.window?.rootViewController = moved
        #expect(await host.waitUntil { timeline.lines.count == 3 })
        let fresh = try! #require(host.application.listeners["http"])
        #expect(fresh.address.hasPrefix("127.0.0.2:") && fresh.origin == .bound)
        #expect(host.application.listeners.retired.isEmpty)
        #expect(connect(toLoopbackPort: port(of: old.address), host: 0x7F00_0005) == .refused)
    }

    /// Found by reading the controller: a run claims its sockets when it is made, and gives them back when its body
    /// ends; a run stopped while it still waited for the previous one to drain never began its body, so its claim was
    /// never given back. The socket said "serving" in the background, and once moved it was never closed.
    @Test func aRunStoppedBeforeItBeganGivesItsSocketsBack() async {
        let timeline = Timeline()
        let controller = ServiceController(identifier: "http", listeners: [.tcp("http", port: 0)]) { sockets in
            [SlowDrainingService(socket: sockets[0], timeline: timeline, drain: .seconds(1))]
        }
        let host = TestHost(delegate: Delegate(root: controller))
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        // The first run drains; the second is made (and claims) while it does, then is stopped before it began.
        host.application.requestEnterBackground()
        host.application.requestBecomeActive()
        host.application.requestEnterBackground()
        host.endTurn()
        // The stopped run's task gives the sockets back once the first run has ended, a moment after the task is no
        // longer counted as running.
        #expect(
            await host.waitUntil {
                !controller.services.isRunning && host.application.listeners["http"]?.servers == 0
            }
        )
        #expect(timeline.lines == ["run on \(host.application.listeners["http"]?.address ?? "?")", "drained"])
        #expect(host.application.listeners["http"]?.state == .paused)
    }

    @Test func aListenerThatCannotBeBoundFailsTheRunWithItsAddressAndReason() async {
        let timeline = Timeline()
        let squatter = listeningLoopbackSocket()
        let (host, controller) = hosted(.tcp("http", port: squatter.port), timeline: timeline)
        host.launch()
        #expect(await host.waitUntil { controller.services.failureCount == 1 })
        let error = try! #require(controller.services.lastError as? ListenerError)
        #expect(
            error.description
                == "listener http cannot listen on 127.0.0.1:\(squatter.port): bind: Address already in use"
        )
        #expect(timeline.lines.isEmpty)
        #expect(host.application.listeners.listeners.isEmpty)
        close(squatter.descriptor)
    }

    @Test func aUnixListenerReplacesAStaleSocketFileAndRefusesAPathTooLong() async throws {
        let directory = "/tmp/lifecyclekit-listener-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(directory, 0o700)
        defer { rmdir(directory) }
        let path = directory + "/hello.sock"
        // A socket file left by a process that is gone.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        close(stale)
        let timeline = Timeline()
        let (host, _) = hosted(.unix("http", path: path), timeline: timeline)
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        #expect(timeline.lines == ["run on \(path) (bound)"])
        unlink(path)

        let tooLong = Listener.unix("long", path: "/" + String(repeating: "x", count: 200))
        let error = #expect(throws: ListenerError.self) { try ListenerBinding.bind(tooLong) }
        #expect(error?.description.contains("the path must have 1 to 107 bytes") == true)
    }

    @Test func addressesMatchByPortAndByWhatTheirHostResolvesTo() {
        #expect(ListenerBinding.matches(.tcp(host: "127.0.0.1", port: 8080), "127.0.0.1:8080"))
        #expect(ListenerBinding.matches(.tcp(host: "localhost", port: 8080), "127.0.0.1:8080"))
        #expect(!ListenerBinding.matches(.tcp(host: "127.0.0.1", port: 8081), "127.0.0.1:8080"))
        #expect(ListenerBinding.matches(.tcp(host: "127.0.0.1", port: 0), "127.0.0.1:41234"))
        #expect(ListenerBinding.matches(.tcp(host: "::1", port: 8080), "[::1]:8080"))
        #expect(ListenerBinding.matches(.unix(path: "/run/a.sock"), "/run/a.sock"))
        #expect(!ListenerBinding.matches(.unix(path: "/run/a.sock"), "/run/b.sock"))
    }
}
