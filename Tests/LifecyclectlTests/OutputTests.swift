//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import LifecycleIPC
import LifecycleKit
import LifecyclePrimitives
import SystemPackage
import Testing

@testable import lifecyclectl

@Suite struct OutputTests {
    let plain = TerminalStyle(colour: false)

    @Test func theTreeReadsLikeUIKitsHierarchyDump() throws {
        let reply = try JSONValue.parse(
            """
            {"nodes":[
              {"kind":"controller","path":"root","type":"DemoRootController","depth":0,"appearance":"appeared",
               "viewLoaded":true,"frame":{"x":0,"y":0,"width":320,"height":480},"status":"pid 7"},
              {"kind":"view","path":"root.view","type":"View","depth":1,"frame":{"x":0,"y":0,"width":320,"height":480},
               "inWindow":true,"status":""},
              {"kind":"controller","path":"root/worker","type":"WorkerController","depth":1,"appearance":"disappeared",
               "viewLoaded":false,"status":""},
              {"kind":"controller","path":"root/sheet","type":"SheetController","depth":1,"appearance":"appearing",
               "viewLoaded":true,"frame":{"x":0,"y":0,"width":0,"height":0.5},"status":"a \\"quote\\"",
               "presentation":"fullScreen"}
            ]}
            """
        ).objectValue!
        #expect(Output.tree(reply, style: plain) == """
            <DemoRootController: root>, state: appeared, view: (0 0; 320 480), status: "pid 7"
               | <View: root.view; frame = (0 0; 320 480)>
               | <WorkerController: root/worker>, state: disappeared, view: not loaded
               | <SheetController: root/sheet>, state: appearing, view: (0 0; 0 0.5), presented: fullScreen, status: "a \\"quote\\""

            """)
        #expect(Output.tree(["nodes": []], style: plain) == "no window: the tree is empty\n")
    }

    @Test func aRequestPrintsItsEventsInTheTraceFormatThenHowItEnded() throws {
        let reply = try JSONValue.parse(
            """
            {"request":"background","outcome":"performed","state":"background","eventsOmitted":0,"events":[
              {"seq":7,"event":"applicationWillResignActive","target":"root","state":"active","cause":"control"},
              {"seq":8,"event":"applicationWillResignActive","target":"delegate","state":"active","cause":"control"},
              {"seq":9,"event":"applicationDidEnterBackground","target":"root","state":"background","cause":"control"},
              {"seq":10,"event":"applicationDidEnterBackground","target":"delegate","state":"background","cause":"control"}
            ]}
            """
        ).objectValue!
        #expect(Output.request(reply, target: "lifecycled.service", style: plain) == """
                 7 active     control           root applicationWillResignActive
                 8 active                     delegate applicationWillResignActive
                 9 background                   root applicationDidEnterBackground
                10 background                 delegate applicationDidEnterBackground
            background: done (4 events, #7–#10); now background

            """)
        let unchanged: JSONObject = ["request": "background", "outcome": "noChange", "state": "background", "events": []]
        #expect(Output.request(unchanged, target: "lifecycled.service", style: plain)
            == "lifecycled.service is background already: background changed nothing\n")
    }

    @Test func theStatusPageNamesEveryPart() throws {
        let reply: JSONObject = [
            "program": "lifecycled", "version": "0.2.0", "pid": 42, "uptimeSec": 75.5, "state": "background",
            "statusText": "background: worker 3 jobs (paused)", "controllers": 5, "views": 9, "traceSeq": 140,
            "backgroundTasks": [["id": 2, "name": "flush", "budget": "termination", "remainingSec": 4.25]],
            "supervision": ["tasks": 2, "failures": 3, "restarts": 2, "exhausted": 1],
            "inhibitors": [["what": "shutdown", "mode": "delay"], ["what": "sleep", "mode": "delay"]],
            "logind": "awake",
            "memoryPressure": [
                "watched": true, "source": "cgroup", "path": "/sys/fs/cgroup/x/memory.pressure",
                "trigger": "some 200000 2000000", "minimumIntervalSec": 10,
            ],
            "watchdog": ["enabled": true, "intervalSec": 10, "stallWarningSec": 2.5],
            "control": ["socket": "/run/lifecycled/control", "connections": 1, "calls": 3, "refused": 1, "overLimit": 0],
        ]
        #expect(Output.status(reply, unit: "lifecycled.service", style: plain) == """
            ● lifecycled 0.2.0 (pid 42), up 1 min 15 s — lifecycled.service
                 State: background — worker 3 jobs (paused)
                  Tree: 5 controllers, 9 views loaded; trace at #140
                 Tasks: 2 flush — termination, 4.3 s left
            Supervised: 2 lifecycle tasks, 3 failures, 2 restarts; 1 past its restart policy
                Logind: awake, holding shutdown and sleep delay locks
                Memory: PSI some 200000 2000000 on /sys/fs/cgroup/x/memory.pressure (cgroup), at most one warning per 10 s
              Watchdog: pinged every 5 s (WatchdogSec=10 s); stalls named after 2.5 s
               Control: /run/lifecycled/control, 1 connection open; 3 calls, 1 refused, 0 closed for limits

            """)
    }

    @Test func lifecycleTasksFollowWithTheirSupervision() {
        let reply: JSONObject = [
            "tasks": [],
            "lifecycleTasks": [
                [
                    "controller": "root/http", "name": "services", "state": "restarting", "runs": 3, "failures": 2,
                    "restarts": 2, "policy": "onFailure 5 in 60 s, 100 ms–10 s", "lastError": "database unreachable",
                ],
            ],
        ]
        #expect(Output.tasks(reply) == """
            no background tasks

            TASK                          STATE       RUNS  FAILED  RESTARTS  POLICY
            root/http: services           restarting  3     2       2         onFailure 5 in 60 s, 100 ms–10 s
                last error: database unreachable

            """)
    }

    @Test func tasksAreATable() {
        #expect(Output.tasks(["tasks": []]) == "no background tasks\n")
        #expect(Output.tasks(["tasks": [["id": 3, "name": "flush", "budget": "sleep", "remainingSec": 0.25]]]) == """
              ID  NAME                    BUDGET            LEFT
               3  flush                   sleep             250 ms

            """)
    }

    @Test(arguments: [(0.25, "250 ms"), (4.0, "4 s"), (4.25, "4.3 s"), (185, "3 min 5 s"), (7260, "2 h 1 min"), (90_000, "1 d 1 h")])
    func durationsReadAsAPersonSaysThem(seconds: Double, text: String) {
        #expect(Output.duration(seconds) == text)
    }

    @Test func failuresSayWhatHappenedAndExitWithTheirSysexitsCode() {
        let denied = ControlFailure(.error(.permissionDenied), target: "lifecycled.service")
        #expect(denied.exitCode == 77)
        #expect("\(denied)".hasPrefix("lifecycled.service refused the connection: only its own user, root and its [Control] Group="))
        let dropped = ControlFailure(
            .error(VarlinkError("io.lifecyclekit.Lifecycle.RequestDropped", parameters: ["request": "foreground", "reason": "termination has started"])),
            target: "x"
        )
        #expect(dropped.exitCode == 1)
        #expect("\(dropped)" == "foreground was dropped: termination has started")
        #expect(ControlFailure(.closed, target: "x").exitCode == 75)
        #expect(ControlFailure(.error(.methodNotFound("a.b.C")), target: "x").exitCode == 76)
        let unreachable = ControlFailure.unreachable(
            target: "lifecycled.service", path: "/run/lifecycled/control",
            error: .connect(.system(SystemCallError(operation: "connect", errno: .noSuchFileOrDirectory)))
        )
        #expect(unreachable.exitCode == 69)
        #expect("\(unreachable)".hasPrefix("cannot reach lifecycled.service at /run/lifecycled/control: No such file or directory"))
    }

    @Test func theDaemonIsFoundBySocketOrByUnit() throws {
        let bySocket = try ConnectionOptions.parse(["--socket", "/tmp/x/control", "-u", "other"])
        #expect(try bySocket.socketPath(before: .now) == "/tmp/x/control")
        #expect(bySocket.target == "/tmp/x/control")
        let byUnit = try ConnectionOptions.parse(["-u", "hello"])
        #expect(byUnit.unitName == "hello.service")
        #expect(try ConnectionOptions.parse([]).unitName == "lifecycled.service")
        #expect(throws: (any Error).self) { try ConnectionOptions.parse(["--timeout", "0"]) }
    }

    @Test func theCommandIsNamedForItsCompletionsAndManPage() {
        #expect(Lifecyclectl.configuration.commandName == "lifecyclectl")
        let names = Lifecyclectl.configuration.subcommands.compactMap { $0.configuration.commandName }
        #expect(names == [
            "status", "tree", "tasks", "trace", "scenes", "scene", "background", "foreground", "inactive", "reload",
            "memory-warning", "terminate", "check", "upgrade",
        ])
        #expect(SceneCommand.configuration.subcommands.compactMap { $0.configuration.commandName } == [
            "foreground", "background", "disconnect", "discard",
        ])
        let bash = Lifecyclectl.completionScript(for: .bash)
        #expect(bash.contains("_lifecyclectl"))
        #expect(bash.contains("memory-warning"))
    }
}
