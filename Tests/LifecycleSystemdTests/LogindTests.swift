//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives
import Logging
import SystemPackage
import Testing

@testable import LifecycleSystemd

#if canImport(Glibc)
import Glibc
#endif

// Logind against a real peer: a private dbus-daemon and python3-dbusmock's logind template, which owns
// org.freedesktop.login1 there, answers Inhibit with a real descriptor (closing it removes the inhibitor), lists
// inhibitors, and emits any signal it is told to. Signals from other senders come from busctl. Each test runs the
// client's loop on a thread of its own and drives it with `runLoop`.

/// A private D-Bus daemon with a permissive policy, and (optionally) the logind mock on it.
final class PrivateBus {
    let directory: TemporaryDirectory
    let address: String
    private let configPath: String
    private var daemon: ChildProcess?
    private var mock: ChildProcess?

    init() throws {
        directory = try TemporaryDirectory()
        address = "unix:path=\(directory.path)/bus"
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_requested_reply="true" send_type="method_return"/>
                <allow send_requested_reply="true" send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
                <allow receive_type="signal"/>
              </policy>
            </busconfig>
            """
        configPath = directory.path + "/bus.conf"
        try writeFile(configPath, config)
        try startDaemon()
    }

    /// Starts dbus-daemon and returns once it listens.
    func startDaemon() throws {
        // A socket file a killed daemon left behind would make the new one fail to listen.
        unlink(directory.path + "/bus")
        let output = try OutputPipe()
        daemon = try ChildProcess(
            ["/usr/bin/dbus-daemon", "--config-file=\(configPath)", "--nofork", "--nopidfile", "--print-address=1"],
            stdout: output.writeEnd
        )
        output.closeWriteEnd()
        // dbus-daemon prints its address once it listens.
        guard output.readLine(timeoutMilliseconds: 10_000) != nil else {
            throw TestFailure("dbus-daemon did not start")
        }
    }

    /// Stops dbus-daemon (SIGSTOP): it keeps every connection but reads nothing more.
    func pauseDaemon() {
        if let daemon { kill(daemon.pid, SIGSTOP) }
    }

    /// Lets a paused dbus-daemon run again.
    func resumeDaemon() {
        if let daemon { kill(daemon.pid, SIGCONT) }
    }

    /// The process ID of dbus-daemon, while it runs.
    var daemonPID: pid_t? { daemon?.pid }

    /// Ends dbus-daemon (the mock goes with it): every connection is closed, and the address has no listener.
    func stopDaemon() {
        mock?.terminate()
        mock = nil
        daemon?.terminate()
        daemon = nil
    }

    deinit {
        mock?.terminate()
        daemon?.terminate()
        directory.remove()
    }

    /// Starts the logind mock and waits until it owns org.freedesktop.login1.
    func startLogindMock() throws {
        mock = try ChildProcess(
            ["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "logind"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": address]
        )
        for _ in 0..<200 {
            let answer = busctl(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                 "NameHasOwner", "s", Logind.busName])
            if answer.output.hasPrefix("b true") { return }
            usleep(50_000)
        }
        throw TestFailure("the logind mock never owned \(Logind.busName)")
    }

    /// Ends the logind mock (its name leaves the bus).
    func stopLogindMock() {
        mock?.terminate()
        mock = nil
    }

    /// Runs busctl against this bus; returns its exit status and standard output.
    @discardableResult
    func busctl(_ arguments: [String]) -> (status: Int32, output: String) {
        runCommand(["/usr/bin/busctl", "--address=\(address)"] + arguments)
    }

    /// Has the mock emit a signal of logind's manager, as logind itself would.
    func emitFromLogind(_ member: String, _ value: Bool) {
        busctl(["call", Logind.busName, "/org/freedesktop/login1", "org.freedesktop.DBus.Mock", "EmitSignal", "sssav",
                "org.freedesktop.login1.Manager", member, "b", "1", "b", value ? "true" : "false"])
    }

    /// Emits the same signal from busctl's own connection: broadcast, or addressed to one connection.
    func emitFromStranger(_ member: String, _ value: Bool, to destination: String? = nil) {
        var arguments = ["emit"]
        if let destination { arguments.append("--destination=\(destination)") }
        arguments += ["/org/freedesktop/login1", "org.freedesktop.login1.Manager", member]
        arguments += ["b", value ? "true" : "false"]
        busctl(arguments)
    }

    /// Runs Tests/EndToEnd/bus_forge.py against this bus (another connection forging the bus driver's and logind's
    /// signals, see its steps); returns once the bus has routed them all, with the forger's unique name.
    @discardableResult
    func forge(_ steps: [String], repeat count: Int = 1) throws -> String {
        // Tests/LifecycleSystemdTests/LogindTests.swift → Tests/EndToEnd/bus_forge.py
        let tests = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false).dropLast(2)
        let script = (tests + ["EndToEnd", "bus_forge.py"]).joined(separator: "/")
        let answer = runCommand(["/usr/bin/python3", script, "--address", address, "--repeat", "\(count)"] + steps)
        guard answer.status == 0 else { throw TestFailure("bus_forge.py \(steps) exited \(answer.status)") }
        return String(answer.output.split(separator: "\n").first ?? "")
    }

    /// logind's ListInhibitors as (what, who, why, mode) tuples, from the mock, sorted.
    func inhibitors() -> [[String]] {
        let answer = busctl(["call", Logind.busName, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                             "ListInhibitors"])
        // `a(ssssuu) 2 "sleep" "who" "why" "delay" 1000 123456 "shutdown" "who" "why" "delay" 1000 123456`
        let quoted = answer.output.split(separator: "\"", omittingEmptySubsequences: false)
        var strings: [String] = []
        for (index, part) in quoted.enumerated() where index % 2 == 1 { strings.append(String(part)) }
        return stride(from: 0, to: strings.count - strings.count % 4, by: 4).map { Array(strings[$0..<$0 + 4]) }
            .sorted { $0.joined(separator: "\u{0}") < $1.joined(separator: "\u{0}") }
    }

    /// Replaces the mock's Inhibit with one that answers `AccessDenied`, as logind does when polkit says no, for
    /// every `what` but those in `granted`, which get the template's inhibitor.
    func refuseInhibit(except granted: [String] = []) {
        let allowed = granted.map { "\"\($0)\"" }.joined(separator: ", ")
        let code = """
            if args[0] not in (\(allowed)\(granted.count == 1 ? "," : "")):
                raise dbus.exceptions.DBusException(
                    "Permission denied", name="org.freedesktop.DBus.Error.AccessDenied")
            import dbusmock.templates.logind as template
            ret = template.Inhibit(self, *args)
            """
        busctl([
            "call", Logind.busName, "/org/freedesktop/login1", "org.freedesktop.DBus.Mock", "AddMethod", "sssss",
            "org.freedesktop.login1.Manager", "Inhibit", "ssss", "h", code,
        ])
    }

    /// Adds InhibitDelayMaxUSec, which the template lacks, to the mock's manager object.
    func setInhibitDelayMax(microseconds: UInt64) {
        busctl(["call", Logind.busName, "/org/freedesktop/login1", "org.freedesktop.DBus.Mock", "AddProperty", "ssv",
                "org.freedesktop.login1.Manager", "InhibitDelayMaxUSec", "t", "\(microseconds)"])
    }
}

// Serialized with the other tests that run loops or change the environment (see ProcessStateTests).
extension ProcessStateTests {
    @Suite struct LogindTests {
        @Test func theInhibitorsAreOneDelayLockOnSleepAndOneOnShutdownUntilTheirDescriptorsClose() async throws {
            let (listed, held, changes, afterRelease, delay) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                bus.setInhibitDelayMax(microseconds: 3_000_000)
                let loop = try MainLoop(onCurrentThread: ())
                let logind = Logind(loop: loop, who: "lifecycled-test", why: "testing", logger: CapturedLog().logger())
                var changes: [String] = []
                logind.onInhibitorChange = { type, held in changes.append("\(type) \(held)") }
                try logind.connect(address: bus.address)
                logind.takeInhibitors()
                guard try runLoop(loop, until: { logind.holdsInhibitors && logind.inhibitDelayMax != nil }) else {
                    throw TestFailure("no inhibitors granted")
                }
                let listed = bus.inhibitors()
                let held = logind.heldLocks
                logind.releaseInhibitors()
                var afterRelease = bus.inhibitors()
                for _ in 0..<100 where !afterRelease.isEmpty {
                    usleep(20_000)
                    afterRelease = bus.inhibitors()
                }
                let delay = logind.inhibitDelayMax
                logind.close()
                return (listed, held, changes, afterRelease, delay)
            }
            // Two locks, each with a single `what`: logind's polkit check compares `what` with each lock type.
            #expect(
                listed == [
                    ["shutdown", "lifecycled-test", "testing", "delay"],
                    ["sleep", "lifecycled-test", "testing", "delay"],
                ]
            )
            #expect(held == [.sleep, .shutdown])
            // Granted in the order asked (one connection, answered in order), released in declaration order.
            #expect(changes == ["sleep true", "shutdown true", "sleep false", "shutdown false"])
            #expect(afterRelease.isEmpty)
            #expect(delay == .seconds(3))
        }

        @Test func aLockTypeLogindRefusesIsOneWarningNamingItAndTheOtherIsStillHeld() async throws {
            let (held, warnings, debug, listed) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                bus.refuseInhibit(except: ["shutdown"])
                let loop = try MainLoop(onCurrentThread: ())
                let log = CapturedLog()
                let logind = Logind(loop: loop, who: "lifecycled-test", why: "testing", logger: log.logger())
                try logind.connect(address: bus.address)
                logind.takeInhibitors()
                guard try runLoop(loop, until: { logind.heldLocks == [.shutdown] && !log.messages(.warning).isEmpty })
                else { throw TestFailure("no shutdown lock and refusal warning") }
                // Asking again (as after a resume) is refused again: a debug line, not a second warning.
                logind.releaseInhibitors()
                logind.takeInhibitors()
                guard try runLoop(loop, until: { log.messages(.debug).contains { $0.contains("refused") } }) else {
                    throw TestFailure("the second refusal never came")
                }
                _ = try runLoop(loop, until: { false }, timeout: .milliseconds(200))
                let listed = bus.inhibitors()
                let held = logind.heldLocks
                logind.close()
                return (held, log.messages(.warning), log.messages(.debug).filter { $0.contains("refused") }, listed)
            }
            #expect(held == [.shutdown])
            #expect(listed == [["shutdown", "lifecycled-test", "testing", "delay"]])
            #expect(
                warnings == [
                    """
                    logind refused the delay inhibitor for "sleep" (org.freedesktop.DBus.Error.AccessDenied: \
                    Permission denied): PrepareForSleep still reaches the application, but the system does not wait \
                    for it to enter the background (polkit: org.freedesktop.login1.inhibit-delay-sleep)
                    """
                ]
            )
            #expect(
                debug == [
                    """
                    logind refused the sleep delay inhibitor again: org.freedesktop.DBus.Error.AccessDenied: \
                    Permission denied
                    """
                ]
            )
        }

        @Test func bothLockTypesRefusedAreOneWarningNamingBothAndNotLogindsAbsence() async throws {
            let (held, warnings, changes) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                bus.refuseInhibit()
                let loop = try MainLoop(onCurrentThread: ())
                let log = CapturedLog()
                let logind = Logind(loop: loop, who: "t", why: "t", logger: log.logger())
                var changes: [String] = []
                logind.onInhibitorChange = { type, held in changes.append("\(type) \(held)") }
                try logind.connect(address: bus.address)
                logind.takeInhibitors()
                guard try runLoop(loop, until: { !log.messages(.warning).isEmpty }) else {
                    throw TestFailure("no refusal warning")
                }
                // Anything else in flight would arrive now.
                _ = try runLoop(loop, until: { false }, timeout: .milliseconds(200))
                let held = logind.heldLocks
                logind.close()
                return (held, log.messages(.warning), changes)
            }
            #expect(held.isEmpty)
            #expect(changes.isEmpty)
            #expect(
                warnings == [
                    """
                    logind refused the delay inhibitors for "sleep" (org.freedesktop.DBus.Error.AccessDenied: \
                    Permission denied) and "shutdown" (org.freedesktop.DBus.Error.AccessDenied: Permission denied): \
                    PrepareForSleep and PrepareForShutdown still reach the application, but the system does not wait \
                    for it to enter the background (polkit: org.freedesktop.login1.inhibit-delay-sleep, \
                    org.freedesktop.login1.inhibit-delay-shutdown)
                    """
                ]
            )
        }

        @Test func onlyAnnouncementsFromTheOwnerOfLogindsNameCount() async throws {
            let (events, notices) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                let loop = try MainLoop(onCurrentThread: ())
                let log = CapturedLog()
                var events: [Logind.Event] = []
                let logind = Logind(loop: loop, who: "t", why: "t", logger: log.logger()) { events.append($0) }
                try logind.connect(address: bus.address)
                guard try runLoop(loop, until: { logind.owner != nil }) else { throw TestFailure("owner never known") }
                let unique = try #require(logind.uniqueName)

                bus.emitFromLogind("PrepareForSleep", true)
                guard try runLoop(loop, until: { events.count == 1 }) else { throw TestFailure("no PrepareForSleep") }
                // A broadcast from a stranger: the bus does not deliver it (the match names the sender).
                bus.emitFromStranger("PrepareForSleep", false)
                // Addressed to this connection: the bus delivers it whatever the matches say, and sd-bus's local match
                // lets any unique-name sender through for a well-known sender; the owner check drops it.
                bus.emitFromStranger("PrepareForShutdown", true, to: unique)
                guard try runLoop(loop, until: { !log.messages(.notice).isEmpty || events.count > 1 }) else {
                    throw TestFailure("the addressed stranger's signal never arrived")
                }
                bus.emitFromLogind("PrepareForShutdown", true)
                bus.emitFromLogind("PrepareForSleep", false)
                _ = try runLoop(loop, until: { events.count >= 3 })
                // Anything else in flight would arrive now.
                _ = try runLoop(loop, until: { false }, timeout: .milliseconds(200))
                logind.close()
                return (events, log.messages(.notice))
            }
            #expect(events == [.prepareForSleep(true), .prepareForShutdown(true), .prepareForSleep(false)])
            #expect(notices.count == 1)
            #expect(notices.first?.hasPrefix("ignored PrepareForShutdown(true) from :1.") == true)
        }

        @Test func theClientSaysWhatItAwaitsUntilSubscribedToldTheOwnerAndBothInhibitorsAreAnswered() async throws {
            let (initial, heldWhenSettled, progress) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                let loop = try MainLoop(onCurrentThread: ())
                let logind = Logind(loop: loop, who: "t", why: "t", logger: CapturedLog().logger())
                var progress = 0
                logind.onSetupProgress = { progress += 1 }
                try logind.connect(address: bus.address)
                logind.takeInhibitors()
                let initial = logind.awaiting
                guard try runLoop(loop, until: { logind.awaiting.isEmpty }) else { throw TestFailure("never settled") }
                let held = logind.heldLocks
                logind.close()
                return (initial, held, progress)
            }
            #expect(initial == [
                "the subscription to PrepareForSleep", "the subscription to PrepareForShutdown",
                "the subscription to NameOwnerChanged", "the owner of org.freedesktop.login1",
                "the sleep delay inhibitor", "the shutdown delay inhibitor",
            ])
            #expect(heldWhenSettled == Set(Logind.LockType.allCases))
            // Three subscriptions, the owner, two inhibitors: told at each.
            #expect(progress >= 6)
        }

        @Test func aPeerThatNamesItselfLogindInANameOwnerChangedOfItsOwnCannotMoveTheApplication() async throws {
            let (events, owner, mockOwner, held, ignored) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                let loop = try MainLoop(onCurrentThread: ())
                var events: [Logind.Event] = []
                let logind = Logind(loop: loop, who: "t", why: "t", logger: CapturedLog().logger()) { events.append($0) }
                try logind.connect(address: bus.address)
                logind.takeInhibitors()
                guard try runLoop(loop, until: { logind.owner != nil && logind.holdsInhibitors }) else {
                    throw TestFailure("owner never known")
                }
                let mockOwner = logind.owner
                let unique = try #require(logind.uniqueName)
                // Addressed to the client: the bus delivers it whatever the match rules say. Then the same from the
                // forger as the "new owner", addressed and broadcast (the bus only routes broadcasts of the owner).
                try bus.forge([
                    "owner,\(unique),self", "sleep,\(unique),true", "sleep,all,true",
                    "owner,all,self", "shutdown,\(unique),true",
                ])
                // logind itself, after the forger's signals (the script returned once the bus had routed them).
                bus.emitFromLogind("PrepareForShutdown", true)
                guard try runLoop(loop, until: { !events.isEmpty }) else { throw TestFailure("logind never heard") }
                _ = try runLoop(loop, until: { false }, timeout: .milliseconds(200))
                let result = (events, logind.owner, mockOwner, logind.heldLocks, logind.ignoredSignals)
                logind.close()
                return result
            }
            #expect(events == [.prepareForShutdown(true)])
            #expect(owner == mockOwner)
            #expect(held == Set(Logind.LockType.allCases))
            // The addressed NameOwnerChanged and the two addressed announcements (the broadcasts never reach it).
            #expect(ignored == 3)
        }

        @Test func aPeerThatSaysLogindLeftCannotMakeTheClientDropItsInhibitorsOrIgnoreLogind() async throws {
            let (events, owner, mockOwner, changes) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                let loop = try MainLoop(onCurrentThread: ())
                var events: [Logind.Event] = []
                let logind = Logind(loop: loop, who: "t", why: "t", logger: CapturedLog().logger()) { events.append($0) }
                var changes: [String] = []
                logind.onInhibitorChange = { type, held in changes.append("\(type) \(held)") }
                try logind.connect(address: bus.address)
                logind.takeInhibitors()
                guard try runLoop(loop, until: { logind.owner != nil && logind.holdsInhibitors }) else {
                    throw TestFailure("no inhibitors granted")
                }
                let mockOwner = logind.owner
                let unique = try #require(logind.uniqueName)
                try bus.forge(["owner,\(unique),none"])
                bus.emitFromLogind("PrepareForSleep", true)
                guard try runLoop(loop, until: { !events.isEmpty }) else { throw TestFailure("logind never heard") }
                _ = try runLoop(loop, until: { false }, timeout: .milliseconds(200))
                let result = (events, logind.owner, mockOwner, changes)
                logind.close()
                return result
            }
            #expect(events == [.prepareForSleep(true)])
            #expect(owner == mockOwner)
            #expect(changes == ["sleep true", "shutdown true"])
        }

        @Test func signalsFromStrangersAreCountedAndReportedOnceInTheirInterval() async throws {
            let (ignored, notices, events) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                let loop = try MainLoop(onCurrentThread: ())
                let log = CapturedLog()
                var events: [Logind.Event] = []
                let logind = Logind(loop: loop, who: "t", why: "t", logger: log.logger()) { events.append($0) }
                try logind.connect(address: bus.address)
                guard try runLoop(loop, until: { logind.owner != nil }) else { throw TestFailure("owner never known") }
                let unique = try #require(logind.uniqueName)
                try bus.forge(["sleep,\(unique),true", "owner,\(unique),self"], repeat: 100)
                bus.emitFromLogind("PrepareForSleep", false)
                guard try runLoop(loop, until: { !events.isEmpty }) else { throw TestFailure("logind never heard") }
                let result = (logind.ignoredSignals, log.messages(.notice), events)
                logind.close()
                return result
            }
            #expect(events == [.prepareForSleep(false)])
            #expect(ignored == 200)
            // One notice for the first (the interval is 10 s); the next one would count the 199 held back.
            #expect(notices.count == 1)
            #expect(notices.first?.hasPrefix("ignored PrepareForSleep(true) from :1.") == true)
        }

        @Test func withoutLogindOneWarningThenTheInhibitorOnceLogindAppearsAndNoneAfterItLeaves() async throws {
            let (warnings, heldAfterAppearing, changes) = try await onDedicatedThread {
                let bus = try PrivateBus()
                let loop = try MainLoop(onCurrentThread: ())
                let log = CapturedLog()
                let logind = Logind(loop: loop, who: "t", why: "t", logger: log.logger())
                var changes: [String] = []
                logind.onInhibitorChange = { type, held in changes.append("\(type) \(held)") }
                try logind.connect(address: bus.address)
                logind.takeInhibitors()
                guard try runLoop(loop, until: { !log.messages(.warning).isEmpty }) else {
                    throw TestFailure("no warning without logind")
                }
                // Asking again while logind is still absent adds no warning.
                logind.releaseInhibitors()
                logind.takeInhibitors()
                _ = try runLoop(loop, until: { false }, timeout: .milliseconds(200))
                let warnings = log.messages(.warning)

                try bus.startLogindMock()
                let held = try runLoop(loop, until: { logind.holdsInhibitors })
                bus.stopLogindMock()
                _ = try runLoop(loop, until: { logind.heldLocks.isEmpty })
                logind.close()
                return (warnings, held, changes)
            }
            #expect(warnings.count == 1)
            #expect(warnings.first?.hasPrefix("logind is not available (") == true)
            #expect(heldAfterAppearing)
            #expect(changes == ["sleep true", "shutdown true", "sleep false", "shutdown false"])
        }

        @Test func aRestartOfTheBusIsOneWarningThenTheClientReconnectsSubscribesAndHoldsBothInhibitorsAgain() async throws {
            let (warnings, notices, changes, listed, events, reconnections) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                let loop = try MainLoop(onCurrentThread: ())
                let log = CapturedLog()
                var events: [Logind.Event] = []
                let logind = Logind(loop: loop, who: "t", why: "t", logger: log.logger()) { events.append($0) }
                var changes: [String] = []
                logind.onInhibitorChange = { type, held in changes.append("\(type) \(held)") }
                try logind.connect(address: bus.address)
                logind.takeInhibitors()
                guard try runLoop(loop, until: { logind.holdsInhibitors }) else { throw TestFailure("no inhibitors") }

                // dbus-daemon goes (the mock with it) and comes back at the same address.
                bus.stopDaemon()
                guard try runLoop(loop, until: { logind.heldLocks.isEmpty && logind.isRecovering }) else {
                    throw TestFailure("the loss of the bus went unnoticed")
                }
                try bus.startDaemon()
                try bus.startLogindMock()
                guard try runLoop(loop, until: { logind.holdsInhibitors && !logind.isRecovering }) else {
                    throw TestFailure("no inhibitors after the bus came back")
                }
                // The subscriptions are back too: logind's announcements arrive on the new connection.
                bus.emitFromLogind("PrepareForSleep", true)
                _ = try runLoop(loop, until: { !events.isEmpty })
                _ = try runLoop(loop, until: { false }, timeout: .milliseconds(200))
                let listed = bus.inhibitors()
                let reconnections = logind.reconnections
                logind.close()
                return (log.messages(.warning), log.messages(.notice), changes, listed, events, reconnections)
            }
            #expect(warnings.count == 1)
            #expect(
                warnings.first?.hasPrefix("logind left the system bus") == true
                    || warnings.first?.hasPrefix("the system bus closed the connection") == true
            )
            #expect(notices.count == 1)
            #expect(notices.first?.contains("(reconnected to the system bus, attempt ") == true)
            #expect(notices.first?.hasSuffix(": holding the delay inhibitors for sleep and shutdown again") == true)
            // Held, lost with logind, held again, released by close().
            #expect(changes == [
                "sleep true", "shutdown true", "sleep false", "shutdown false", "sleep true", "shutdown true",
                "sleep false", "shutdown false",
            ])
            // Each lock once at the new logind: none taken twice.
            #expect(listed == [["shutdown", "t", "t", "delay"], ["sleep", "t", "t", "delay"]])
            #expect(events == [.prepareForSleep(true)])
            #expect(reconnections == 1)
        }

        @Test func aBusThatStaysAwayIsTriedAgainLaterAndLaterWithoutAnotherWarning() async throws {
            let (warnings, attempts, held) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                let loop = try MainLoop(onCurrentThread: ())
                let log = CapturedLog()
                let logind = Logind(loop: loop, who: "t", why: "t", logger: log.logger())
                try logind.connect(address: bus.address)
                logind.takeInhibitors()
                guard try runLoop(loop, until: { logind.holdsInhibitors }) else { throw TestFailure("no inhibitors") }
                bus.stopDaemon()
                // Attempts at once, then after 100, 200, 400 and 800 ms: five within 1.6 s.
                _ = try runLoop(loop, until: { false }, timeout: .milliseconds(1700))
                let attempts = log.messages(.debug).filter { $0.hasPrefix("cannot connect to the system bus (attempt ") }
                try bus.startDaemon()
                try bus.startLogindMock()
                let held = try runLoop(loop, until: { logind.holdsInhibitors && !logind.isRecovering }, timeout: .seconds(5))
                logind.close()
                return (log.messages(.warning), attempts, held)
            }
            #expect(warnings.count == 1)
            #expect(attempts.count >= 4 && attempts.count <= 5, "\(attempts)")
            #expect(attempts.first?.contains("trying again in 0.1 seconds") == true, "\(attempts)")
            #expect(attempts.dropFirst().first?.contains("trying again in 0.2 seconds") == true, "\(attempts)")
            #expect(held)
        }

        @Test func aRestartOfLogindIsOneWarningThenBothInhibitorsFromTheNewOneAndANotice() async throws {
            let (warnings, notices, changes, listed, reconnections) = try await onDedicatedThread {
                let bus = try PrivateBus()
                try bus.startLogindMock()
                let loop = try MainLoop(onCurrentThread: ())
                let log = CapturedLog()
                let logind = Logind(loop: loop, who: "t", why: "t", logger: log.logger())
                var changes: [String] = []
                logind.onInhibitorChange = { type, held in changes.append("\(type) \(held)") }
                try logind.connect(address: bus.address)
                logind.takeInhibitors()
                guard try runLoop(loop, until: { logind.holdsInhibitors }) else { throw TestFailure("no inhibitors") }
                bus.stopLogindMock()
                guard try runLoop(loop, until: { logind.isRecovering }) else { throw TestFailure("logind never left") }
                try bus.startLogindMock()
                guard try runLoop(loop, until: { logind.holdsInhibitors && !logind.isRecovering }) else {
                    throw TestFailure("no inhibitors from the new logind")
                }
                _ = try runLoop(loop, until: { false }, timeout: .milliseconds(200))
                let listed = bus.inhibitors()
                let reconnections = logind.reconnections
                logind.close()
                return (log.messages(.warning), log.messages(.notice), changes, listed, reconnections)
            }
            #expect(warnings == [
                """
                logind left the system bus (it stopped or is restarting): its delay inhibitors went with it, so sleep \
                and shutdown do not wait for the application until logind is back; they are taken again then
                """
            ])
            #expect(notices.count == 1)
            #expect(notices.first?.hasPrefix("logind is back as :1.") == true)
            #expect(notices.first?.hasSuffix(
                "ms after logind left the system bus: holding the delay inhibitors for sleep and shutdown again") == true)
            // Held, lost with logind, held again, released by close().
            #expect(changes == [
                "sleep true", "shutdown true", "sleep false", "shutdown false", "sleep true", "shutdown true",
                "sleep false", "shutdown false",
            ])
            #expect(listed == [["shutdown", "t", "t", "delay"], ["sleep", "t", "t", "delay"]])
            // The connection stayed: only logind went away.
            #expect(reconnections == 0)
        }

        @Test func theDelaysBetweenAttemptsDoubleUpToFiveSeconds() {
            #expect((1...9).map { Logind.reconnectDelay(afterAttempt: $0) } == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
                .milliseconds(3200), .seconds(5), .seconds(5), .seconds(5),
            ])
        }

        @Test func closingAConnectionNeverWaitsForABusThatDoesNotRead() async throws {
            let elapsed = try await onDedicatedThread { () -> Duration in
                let bus = try PrivateBus()
                let loop = try MainLoop(onCurrentThread: ())
                let connection = try SdBus(address: bus.address, description: "test", loop: loop)
                guard try runLoop(loop, until: { connection.uniqueName != nil }) else { throw TestFailure("no Hello") }
                bus.pauseDaemon()
                // Whatever happens, the bus runs again after 5 s (a close that waits for it then ends); the test
                // ends that thread when it is done (and joins it: a thread never joined is a leak to TSan).
                let daemon = try #require(bus.daemonPID)
                let done = ConditionLock(false)
                let deadline = MonotonicClock.now() + 5_000_000_000
                guard
                    case .success(let rescuer) = SystemThread.start(blockingSignals: true, {
                        let timedOut = done.withLock(waiting: { (isDone: inout Bool) -> ConditionLock<Bool>.Step<Bool> in
                            if isDone { return .done(false) }
                            return MonotonicClock.now() >= deadline ? .done(true) : .wait(until: deadline)
                        })
                        if timedOut { kill(daemon, SIGCONT) }
                    })
                else { throw TestFailure("no thread") }
                defer {
                    done.withLock { $0 = true }
                    done.notifyAll()
                    pthread_join(rescuer, nil)
                }
                // Far more than the socket's buffer takes (sd-bus asks for 8 MiB, the kernel doubles it): the rest
                // waits in sd-bus's queue.
                let big = String(repeating: "x", count: 60_000)
                var slots: [SdBus.Slot] = []
                for _ in 0..<600 {
                    slots.append(
                        try connection.callAsync(
                            destination: SdBus.driverName, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                            member: "GetNameOwner", arguments: [big]
                        ) { _ in }
                    )
                }
                _ = try runLoop(loop, until: { false }, timeout: .milliseconds(200))
                let started = ContinuousClock.now
                slots.removeAll()
                connection.close()
                let elapsed = ContinuousClock.now - started
                bus.resumeDaemon()
                return elapsed
            }
            #expect(elapsed < .seconds(1))
        }

        @Test func connectingWhereThereIsNoBusThrows() async throws {
            let failure = try await onDedicatedThread { () -> SystemCallError? in
                let loop = try MainLoop(onCurrentThread: ())
                let logind = Logind(loop: loop, who: "t", why: "t", logger: CapturedLog().logger())
                do throws(SystemCallError) {
                    try logind.connect(address: "unix:path=/nonexistent/lifecyclekit/bus")
                    return nil
                } catch {
                    return error
                }
            }
            let error = try #require(failure)
            #expect(error.errno.rawValue == ENOENT)
        }
    }
}

// MARK: Processes

/// A child process started with posix_spawn, with an empty signal mask (test threads block signals) and a fixed
/// environment.
final class ChildProcess {
    let pid: pid_t
    private var reaped = false

    init(_ argv: [String], environment: [String: String] = [:], stdout: Int32? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let stdout {
            posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        // A fixed environment, not the test process's: other tests point $NOTIFY_SOCKET at their own peers (and
        // dbus-daemon would send READY=1 there), and reading environ while another thread calls setenv is unsafe.
        var merged = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"]
        merged.merge(environment) { _, new in new }
        let arguments = argv.map { strdup($0) } + [nil]
        let variables = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            arguments.forEach { free($0) }
            variables.forEach { free($0) }
        }
        var child = pid_t()
        let result = posix_spawn(&child, argv[0], &actions, &attributes, arguments, variables)
        guard result == 0 else { throw TestFailure("posix_spawn \(argv[0]): \(result)") }
        pid = child
    }

    deinit { terminate() }

    /// SIGTERM, then waits for it to exit.
    func terminate() {
        guard !reaped else { return }
        kill(pid, SIGTERM)
        _ = wait()
    }

    /// Waits for the exit and returns the exit status (or 128 + signal).
    @discardableResult
    func wait() -> Int32 {
        guard !reaped else { return 0 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        reaped = true
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

/// A pipe whose read end the test keeps; the write end goes to a child.
final class OutputPipe {
    let readEnd: Int32
    private(set) var writeEnd: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw TestFailure("pipe: errno \(errno)") }
        readEnd = ends[0]
        writeEnd = ends[1]
        // Other tests spawn children too: only the child given the write end may hold it, or end of file never comes.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
    }

    deinit {
        close(readEnd)
        closeWriteEnd()
    }

    func closeWriteEnd() {
        if writeEnd >= 0 { close(writeEnd) }
        writeEnd = -1
    }

    /// Everything until end of file.
    func readAll() -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(readEnd, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// One line, or nil at end of file or after the timeout.
    func readLine(timeoutMilliseconds: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, timeoutMilliseconds) == 1, read(readEnd, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }
}

/// Runs a command to its end; its exit status and standard output.
func runCommand(_ argv: [String], environment: [String: String] = [:]) -> (status: Int32, output: String) {
    do {
        let output = try OutputPipe()
        let child = try ChildProcess(argv, environment: environment, stdout: output.writeEnd)
        output.closeWriteEnd()
        let text = output.readAll()
        return (child.wait(), text)
    } catch {
        return (-1, "\(error)")
    }
}

func writeFile(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw TestFailure("open \(path): errno \(errno)") }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
        throw TestFailure("write \(path): errno \(errno)")
    }
}
