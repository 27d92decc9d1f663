//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

@_spi(Internal) @testable import LifecycleDaemon
import LifecycleIPC
@_spi(Internal) import LifecycleKit
import LifecyclePrimitives
import LifecycleSystemd
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A call to the control service as a test makes it: its replies are recorded.
final class RecordedCall: ControlCall {
    let method: String
    let parameters: JSONObject
    let more: Bool
    let peer: PeerCredentials
    var isConnected = true
    var onDisconnect: (() -> Void)?
    private(set) var replies: [JSONObject] = []
    private(set) var final: Result<JSONObject, VarlinkError>?

    init(_ method: String, _ parameters: JSONObject = [:], more: Bool = false, uid: uid_t = 0) {
        self.method = method
        self.parameters = parameters
        self.more = more
        self.peer = PeerCredentials(pid: 1, uid: uid, gid: uid)
    }

    func reply(_ parameters: JSONObject) { final = .success(parameters) }

    func send(_ parameters: JSONObject) { replies.append(parameters) }

    /// Replies shared with other callers, as sent (the same object for each of them).
    private(set) var shared: [SharedReply] = []

    func send(_ reply: SharedReply) {
        shared.append(reply)
        replies.append(reply.parameters)
    }

    /// What the service charged to the dispatch this call ran in.
    private(set) var charged = 0

    func charge(_ cost: Int) { charged += cost }

    func fail(_ error: VarlinkError) { final = .failure(error) }

    /// The final reply's parameters (nil for an error or none yet).
    var result: JSONObject? { try? final?.get() }

    /// The final error, if the call failed.
    var error: VarlinkError? {
        guard case .failure(let error)? = final else { return nil }
        return error
    }

    /// `target event cause` of the events in a reply.
    static func events(_ parameters: JSONObject?) -> [String] {
        (parameters?["events"]?.arrayValue ?? []).compactMap { $0.objectValue.flatMap(TraceRecord.init(json:)) }
            .map { "\($0.target) \($0.event) \($0.cause)" }
    }
}

@MainActor
@Suite("The control interface over a daemon, with every effect a stand-in")
struct ControlServiceTests {
    private func service(_ harness: DaemonHarness, serviceUID: uid_t = 0) -> ControlService {
        ControlService(daemon: harness.daemon, socketDescription: "test", serviceUID: serviceUID)
    }

    @Test func aRequestRepliesAfterItsTransitionWithExactlyTheEventsItCaused() {
        let harness = DaemonHarness()
        harness.launch()
        let control = service(harness)
        let call = RecordedCall("io.lifecyclekit.Lifecycle.Request", ["request": "background"])
        control.handle(call)
        let reply = call.result
        #expect(reply?["outcome"] == "performed")
        #expect(reply?["state"] == "background")
        #expect(reply?["eventsOmitted"] == 0)
        #expect(RecordedCall.events(reply) == [
            "root applicationWillResignActive control", "delegate applicationWillResignActive control",
            "root applicationDidEnterBackground control", "delegate applicationDidEnterBackground control",
        ])
        // The same request again changes nothing, and says so.
        let again = RecordedCall("io.lifecyclekit.Lifecycle.Request", ["request": "background"])
        control.handle(again)
        #expect(again.result?["outcome"] == "noChange")
        #expect(RecordedCall.events(again.result).isEmpty)
    }

    /// A control socket that could not be served (a descriptor the loop refused) releases its service; the trace it
    /// observed must not call into it afterwards. It did: the daemon aborted at the next traced event after a
    /// restart whose `LISTEN_FDS` held only the file descriptor store's memfd.
    @Test func aServiceReleasedWithoutServingLeavesTheTraceWorking() {
        let harness = DaemonHarness()
        harness.launch()
        do {
            let released = service(harness)
            released.hub.stop()
        }
        do { _ = service(harness) }
        harness.application.submit(.enterBackground, cause: RequestSource.memoryPressure.cause)
        #expect(harness.application.applicationState == .background)
    }

    @Test func aDroppedRequestFailsWithItsReasonAndAnUnknownOneIsAnInvalidParameter() {
        let harness = DaemonHarness()
        harness.launch()
        let control = service(harness)
        let terminate = RecordedCall("io.lifecyclekit.Lifecycle.Request", ["request": "terminate"])
        control.handle(terminate)
        #expect(terminate.result?["state"] == "terminated")
        #expect(harness.stage.exits == [0])
        let late = RecordedCall("io.lifecyclekit.Lifecycle.Request", ["request": "foreground"])
        control.handle(late)
        #expect(late.error == VarlinkError(
            "io.lifecyclekit.Lifecycle.RequestDropped",
            parameters: ["request": "foreground", "reason": "the application has terminated"]
        ))
        let unknown = RecordedCall("io.lifecyclekit.Lifecycle.Request", ["request": "default"])
        control.handle(unknown)
        #expect(unknown.error == .invalidParameter("request"))
    }

    @Test func systemdsReloadRunsTheReloadAndRepliesEmpty() {
        let harness = DaemonHarness()
        harness.launch()
        let call = RecordedCall("io.systemd.service.Reload")
        service(harness).handle(call)
        #expect(call.result == [:])
        #expect(
            harness.timeline.lines == [
                "application(_:validateReload:) control", "applicationWillReload control", "applicationDidReload control",
            ]
        )
    }

    @Test func onlyTheServicesOwnUserAndRootMaySetTheLogLevel() {
        let harness = DaemonHarness()
        harness.launch()
        let control = service(harness, serviceUID: 990)
        let stranger = RecordedCall("io.systemd.service.SetLogLevel", ["level": 7], uid: 991)
        control.handle(stranger)
        #expect(stranger.error == .permissionDenied)
        let outOfRange = RecordedCall("io.systemd.service.SetLogLevel", ["level": 9], uid: 990)
        control.handle(outOfRange)
        #expect(outOfRange.error == .invalidParameter("level"))
        #expect(LoggingBackend.levelOverride == nil)
    }

    @Test func theStatusNamesTheStateTheTreeAndEachTasksBudget() {
        var configuration = DaemonConfiguration()
        configuration.backgroundTime = .seconds(10)
        let harness = DaemonHarness(configuration: configuration)
        harness.delegate.beginsTaskInBackground = true
        harness.launch()
        let control = service(harness)
        control.handle(RecordedCall("io.lifecyclekit.Lifecycle.Request", ["request": "background"]))
        harness.stage.advance(by: .seconds(4))
        let call = RecordedCall("io.lifecyclekit.Lifecycle.GetStatus")
        control.handle(call)
        let status = call.result ?? [:]
        #expect(status["state"] == "background")
        #expect(status["controllers"] == 1)
        #expect(status["pid"]?.integerValue == Int64(getpid()))
        #expect(status["uptimeSec"]?.doubleValue == 4)
        let task = status["backgroundTasks"]?.arrayValue?.first?.objectValue ?? [:]
        #expect(task["id"] == 1 && task["name"] == "work" && task["budget"] == "background time")
        // The background time counts on the application's clock (real time), not the test's manual one.
        #expect((task["remainingSec"]?.doubleValue ?? 0) > 9 && (task["remainingSec"]?.doubleValue ?? 11) <= 10)
        #expect(status["logind"] == "off")
        #expect(status["control"]?["socket"] == "test")
        #expect(Set(status.keys) == [
            "program", "version", "pid", "uptimeSec", "state", "statusText", "controllers", "views", "traceSeq",
            "backgroundTasks", "supervision", "inhibitors", "logind", "memoryPressure", "watchdog", "control", "listeners",
        ])
        #expect(status["listeners"] == [])
        #expect(status["supervision"] == ["tasks": 0, "failures": 0, "restarts": 0, "exhausted": 0])
        let tasks = RecordedCall("io.lifecyclekit.Lifecycle.GetBackgroundTasks")
        control.handle(tasks)
        #expect(tasks.result?["tasks"]?.arrayValue?.first?["name"] == "work")
        #expect(tasks.result?["lifecycleTasks"] == [])
    }

    @Test func theTraceKeepsTheRecentEventsAndFollowersGetTheRestOncePerDispatch() {
        var configuration = DaemonConfiguration()
        configuration.control.traceBacklog = 4
        let harness = DaemonHarness(configuration: configuration)
        let control = service(harness)
        harness.launch()
        let recent = RecordedCall("io.lifecyclekit.Lifecycle.Trace", ["backlog": 10])
        control.handle(recent)
        // The backlog keeps the delegate's events: the application's transitions, whatever the size of the tree.
        let kept = RecordedCall.events(recent.result)
        #expect(kept == [
            "delegate willFinishLaunching launch", "delegate didFinishLaunching launch",
            "delegate applicationDidBecomeActive launch",
        ])
        #expect(kept.last == "delegate applicationDidBecomeActive launch")

        let follower = RecordedCall("io.lifecyclekit.Lifecycle.Trace", ["backlog": 1], more: true)
        control.handle(follower)
        #expect(follower.replies.map { RecordedCall.events($0) } == [["delegate applicationDidBecomeActive launch"]])
        harness.signal(.user1)
        // Nothing is sent from inside the transition: the batch goes when the dispatch ends.
        #expect(follower.replies.count == 1)
        control.hub.flush()
        #expect(follower.replies.count == 2)
        // A follower gets the whole trace, the tree's events too.
        #expect(RecordedCall.events(follower.replies.last) == [
            "root applicationWillResignActive signal:SIGUSR1", "delegate applicationWillResignActive signal:SIGUSR1",
            "root applicationDidEnterBackground signal:SIGUSR1", "delegate applicationDidEnterBackground signal:SIGUSR1",
        ])
        let keptAfter = RecordedCall("io.lifecyclekit.Lifecycle.Trace", ["backlog": 2])
        control.handle(keptAfter)
        #expect(RecordedCall.events(keptAfter.result) == [
            "delegate applicationWillResignActive signal:SIGUSR1", "delegate applicationDidEnterBackground signal:SIGUSR1",
        ])
        // Gone: no more events for it.
        follower.isConnected = false
        follower.onDisconnect?()
        harness.signal(.user2)
        control.hub.flush()
        #expect(follower.replies.count == 2)
        #expect(follower.final == nil)
    }

    @Test func followersShareOneEncodingOfEachBatchInRepliesOfAtMostTenThousandEvents() throws {
        let harness = DaemonHarness()
        harness.launch()
        let root = try #require(harness.application.window?.rootViewController)
        for index in 0..<6_000 { root.addChild(ViewController(identifier: "child\(index)")) }
        harness.application.runEndOfTurn()
        let control = service(harness)
        let first = RecordedCall("io.lifecyclekit.Lifecycle.Trace", [:], more: true)
        let second = RecordedCall("io.lifecyclekit.Lifecycle.Trace", [:], more: true)
        control.handle(first)
        control.handle(second)
        // One background transition: two events for each of 6,001 controllers and the delegate.
        harness.signal(.user1)
        control.hub.flush()
        let counts = first.replies.map { $0["events"]?.arrayValue?.count ?? 0 }
        #expect(counts == [10_000, 2_004])
        #expect(first.shared.count == 2 && second.shared.count == 2)
        #expect(zip(first.shared, second.shared).allSatisfy { $0 === $1 }, "one encoding for both followers")
    }

    @Test func aTreeOfMoreNodesThanAReplyListsIsRefusedBeforeItIsBuiltAndItsWalkIsCharged() throws {
        let harness = DaemonHarness()
        harness.launch()
        let root = try #require(harness.application.window?.rootViewController)
        for index in 0..<ControlInterface.maximumTreeNodes { root.addChild(ViewController(identifier: "child\(index)")) }
        let call = RecordedCall("io.lifecyclekit.Lifecycle.GetTree")
        service(harness).handle(call)
        #expect(call.error == ControlInterface.treeTooLarge(nodes: 20_001, limit: 20_000))
        #expect(call.charged == 20_001 * ControlInterface.costPerNode)
        // A status counts the tree too: charged the same.
        let status = RecordedCall("io.lifecyclekit.Lifecycle.GetStatus")
        service(harness).handle(status)
        #expect(status.result?["controllers"] == 20_001)
        #expect(status.charged == 20_001 * ControlInterface.costPerNode)
    }

    @Test func theTreeIsTheApplicationsSnapshot() {
        let harness = DaemonHarness()
        harness.launch()
        let call = RecordedCall("io.lifecyclekit.Lifecycle.GetTree", ["views": true])
        service(harness).handle(call)
        #expect(call.result?["nodes"] == [
            [
                "kind": "controller", "path": "root", "type": "ViewController", "depth": 0, "appearance": "appeared",
                "viewLoaded": true, "frame": ["x": 0, "y": 0, "width": 0, "height": 0], "status": "",
            ],
            [
                "kind": "view", "path": "root.view", "type": "View", "depth": 1,
                "frame": ["x": 0, "y": 0, "width": 0, "height": 0], "inWindow": true, "status": "",
            ],
        ])
    }

    @Test func docsControlShowsTheInterfaceDefinitionsExactlyAsServed() throws {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        let path = parts.joined(separator: "/") + "/docs/control.md"
        let file = try #require(fopen(path, "r"), "cannot open \(path)")
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        let document = String(decoding: bytes, as: UTF8.self)
        #expect(document.contains("```\n" + ControlInterface.description + "```\n"), "docs/control.md's io.lifecyclekit.Lifecycle differs")
        #expect(document.contains("```\n" + ControlInterface.serviceDescription + "```\n"), "docs/control.md's io.systemd.service differs")
    }

    @Test func theInterfaceDescriptionsDeclareExactlyTheMethodsServed() {
        for (description, methods) in [
            (ControlInterface.description, ControlInterface.methods),
            (ControlInterface.serviceDescription, ControlInterface.serviceMethods),
        ] {
            let declared = description.split(separator: "\n").filter { $0.hasPrefix("method ") }.map { line in
                String(line.dropFirst("method ".count).prefix { $0 != "(" })
            }
            #expect(declared == methods.map(\.name))
            for method in methods {
                let line = description.split(separator: "\n").first { $0.hasPrefix("method \(method.name)(") } ?? ""
                for parameter in method.parameters {
                    #expect(line.contains("\(parameter.name): \(parameter.isOptional ? "?" : "")"), "\(method.name) \(parameter.name)")
                }
            }
        }
    }
}

@Suite("[Control] and where the socket goes")
struct ControlSettingsTests {
    private func read(_ text: String) throws -> DaemonConfiguration {
        var configuration = DaemonConfiguration()
        try configuration.apply(text: "[Control]\n" + text, source: "test.conf")
        return configuration
    }

    @Test func aGroupDatabaseThatDoesNotAnswerCostsTheLoopNoMoreThanItsBudget() {
        let started = ContinuousClock.now
        let answer = ControlSettings.groupID("slow-directory-group", within: .milliseconds(200)) { _ in
            sleep(3)
            return 4242
        }
        #expect(answer == .timedOut(.milliseconds(200)))
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(ControlSettings.groupID("fast", within: .seconds(5)) { _ in 77 } == .found(77))
        #expect(ControlSettings.groupID("none", within: .seconds(5)) { _ in nil } == .unknown)
        #expect(ControlSettings.groupID("4242", within: .zero) { _ in nil } == .found(4242))
    }

    @Test func theSectionReadsItsKeysAndNamesWhatIsWrong() throws {
        let configuration = try read("Enable=no\nSocket=/run/x/control\nGroup=0\nTraceBacklog=0\n")
        #expect(!configuration.control.isEnabled)
        #expect(configuration.control.socketPath == "/run/x/control")
        #expect(configuration.control.group?.id == 0)
        #expect(configuration.control.traceBacklog == 0)
        #expect(try read("Group=root\n").control.group?.id == 0)
        for (text, message) in [
            ("Socket=relative/control", "Socket=relative/control is not an absolute path"),
            ("Socket=/" + String(repeating: "x", count: 120), "longer than a socket path may be"),
            ("Group=no-such-group-here", "Group=no-such-group-here is not a group of this system"),
            ("TraceBacklog=20000", "TraceBacklog=20000 is not a whole number from 0 to 10000"),
            ("Listen=yes", "unknown key Listen= in [Control]"),
        ] {
            #expect(throws: ConfigurationError.self) { try read(text) }
            do {
                _ = try read(text)
            } catch {
                #expect("\(error)".contains(message), "\(error)")
            }
        }
    }

    @Test func accessIsTheServicesUserRootAndTheGroup() {
        var settings = ControlSettings()
        #expect(settings.allows(PeerCredentials(pid: 1, uid: 0, gid: 0), serviceUID: 990))
        #expect(settings.allows(PeerCredentials(pid: 1, uid: 990, gid: 990), serviceUID: 990))
        #expect(!settings.allows(PeerCredentials(pid: 1, uid: 65534, gid: 65534), serviceUID: 990))
        settings.group = .init(name: "adm", id: 4)
        #expect(settings.allows(PeerCredentials(pid: 1, uid: 1000, gid: 4), serviceUID: 990))
        #expect(settings.allows(PeerCredentials(pid: 1, uid: 1000, gid: 1000, groups: [27, 4]), serviceUID: 990))
        #expect(!settings.allows(PeerCredentials(pid: 1, uid: 1000, gid: 1000, groups: [27]), serviceUID: 990))
    }

    @Test func theSocketGoesWhereSystemdOrTheUserSays() {
        func resolve(
            _ settings: ControlSettings = ControlSettings(),
            inherited: [SocketActivation.Socket] = [],
            env environment: [String: String] = [:],
            uid: uid_t = 1000
        ) -> ControlSocketLocation {
            ControlSocketLocation.resolve(
                settings: settings, inherited: inherited, environment: environment, uid: uid, programName: "lifecycled"
            )
        }
        var configured = ControlSettings()
        configured.socketPath = "/srv/control"
        let passed = [SocketActivation.Socket(name: "other", descriptor: 3), SocketActivation.Socket(name: "control", descriptor: 4)]
        #expect(resolve(inherited: passed) == .inherited(descriptor: 4, name: "control"))
        #expect(resolve(inherited: [.init(name: "lifecycled-control.socket", descriptor: 3)]) == .inherited(descriptor: 3, name: "lifecycled-control.socket"))
        #expect(resolve(inherited: [.init(name: "unknown", descriptor: 3)]) == .inherited(descriptor: 3, name: "unknown"))
        // A socket named for a server's listener (hello.socket's FileDescriptorName=http) is the server's.
        #expect(resolve(inherited: [.init(name: "http", descriptor: 3)]) == .none("no RUNTIME_DIRECTORY or XDG_RUNTIME_DIR to put it in; set [Control] Socket="))
        #expect(resolve(configured, env: ["RUNTIME_DIRECTORY": "/run/lifecycled"]) == .path("/srv/control", directoryMode: nil))
        #expect(resolve(env: ["RUNTIME_DIRECTORY": "/run/lifecycled:/run/other", "XDG_RUNTIME_DIR": "/run/user/1000"]) == .path("/run/lifecycled/control", directoryMode: nil))
        #expect(resolve(env: ["XDG_RUNTIME_DIR": "/run/user/1000"]) == .path("/run/user/1000/lifecycled/control", directoryMode: 0o700))
        #expect(resolve(uid: 0) == .path("/run/lifecycled/control", directoryMode: 0o755))
        guard case .none = resolve() else {
            Issue.record("a user without XDG_RUNTIME_DIR has nowhere to put it")
            return
        }
    }
}
