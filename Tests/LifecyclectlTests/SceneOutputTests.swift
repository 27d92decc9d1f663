//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import ArgumentParser
import LifecycleIPC
import LifecyclePrimitives
import Testing

@testable import lifecyclectl

@Suite struct SceneOutputTests {
    let plain = TerminalStyle(colour: false)

    @Test func theSessionsAreATableAsWideAsTheirValuesThenHowManyThereAre() throws {
        let reply = try JSONValue.parse(
            """
            {"sessions":[
              {"id":"client-1","role":"client","state":"foregroundActive","userInfo":{"addr":"10.0.0.7","seat":"1"},
               "savedState":false,"configuration":"Client"},
              {"id":"tenant-acme","role":"tenant","state":"unattached","userInfo":{},"savedState":true}
            ],"matched":2,"total":2}
            """
        ).objectValue!
        #expect(Output.scenes(reply, filtered: false, style: plain) == """
            ID           ROLE    STATE             SAVED  CONFIGURATION  USER INFO
            client-1     client  foregroundActive  no     Client         addr=10.0.0.7 seat=1
            tenant-acme  tenant  unattached        yes    —
            2 sessions

            """)
    }

    @Test func theLastLineSaysWhatTheFiltersKeptAndWhatWasLeftOut() {
        #expect(Output.sceneSummary(listed: 0, matched: 0, total: 0, filtered: false) == "no scene sessions")
        #expect(Output.sceneSummary(listed: 0, matched: 0, total: 5, filtered: true) == "no session matches (of 5 sessions)")
        #expect(Output.sceneSummary(listed: 2, matched: 2, total: 5, filtered: true) == "2 of 5 sessions match")
        #expect(Output.sceneSummary(listed: 1, matched: 1, total: 1, filtered: false) == "1 session")
        #expect(Output.sceneSummary(listed: 10_000, matched: 12_000, total: 20_000, filtered: true)
            == "12000 of 20000 sessions match; the first 10000 listed: narrow with --role, --state, --user-info or --prefix")
    }

    @Test func aSessionsValuesFromTheDaemonCannotReachTheTerminalAsTheyAre() {
        let reply: JSONObject = [
            "sessions": [["id": "a", "role": "client\u{1B}[2J", "state": "background", "userInfo": ["k": "v\nforged"], "savedState": false]],
            "matched": 1, "total": 1,
        ]
        let text = Output.scenes(reply, filtered: false, style: plain)
        #expect(!text.contains("\u{1B}") && text.contains("client\\x1b[2J") && text.contains("k=v\\nforged"))
    }

    @Test func aSceneRequestPrintsItsEventsThenTheScenesStateAndTheApplications() throws {
        let reply = try JSONValue.parse(
            """
            {"request":"background","id":"client-7","outcome":"performed","sceneState":"background","state":"active",
             "eventsOmitted":0,"events":[
              {"seq":12,"event":"applicationWillResignActive","target":"scene:client-7/root","state":"active","cause":"control","scene":"client-7"},
              {"seq":13,"event":"sceneWillResignActive","target":"scene:client-7","state":"active","cause":"control","scene":"client-7"},
              {"seq":14,"event":"applicationDidEnterBackground","target":"scene:client-7/root","state":"active","cause":"control","scene":"client-7"},
              {"seq":15,"event":"sceneDidEnterBackground","target":"scene:client-7","state":"active","cause":"control","scene":"client-7"}
            ]}
            """
        ).objectValue!
        #expect(Output.sceneRequest(reply, style: plain) == """
                12 active     control             scene:client-7/root applicationWillResignActive
                13 active                       scene:client-7 sceneWillResignActive
                14 active                         scene:client-7/root applicationDidEnterBackground
                15 active                       scene:client-7 sceneDidEnterBackground
            background client-7: done (4 events, #12–#15); scene background, application active

            """)
        let unchanged: JSONObject = [
            "request": "disconnect", "id": "client-7", "outcome": "noChange", "sceneState": "unattached", "state": "active",
            "events": [], "eventsOmitted": 0,
        ]
        #expect(Output.sceneRequest(unchanged, style: plain)
            == "scene client-7 is unattached already: disconnect changed nothing; application active\n")
    }

    @Test func theStatusCountsTheScenesAndTheTreeSaysWhenAScenesIsNotConnected() {
        #expect(Output.sceneCounts(["sessions": 5, "foregroundActive": 1, "foregroundInactive": 0, "background": 2])
            == "5 sessions; 3 connected: 1 foregroundActive, 2 background")
        #expect(Output.sceneCounts(["sessions": 1, "foregroundActive": 0, "foregroundInactive": 0, "background": 0])
            == "1 session; none connected")
        #expect(Output.tree(["nodes": []], scene: "client-7", style: plain)
            == "scene client-7 is not connected: no tree (its session keeps what its next connection restores)\n")
    }

    @Test func aRefusedSceneRequestExitsWithItsKindsStatus() {
        func failure(_ kind: String) -> ControlFailure {
            ControlFailure(
                .error(VarlinkError(
                    "io.lifecyclekit.Lifecycle.SceneRefused",
                    parameters: ["kind": .string(kind), "id": "x", "reason": "No scene session is named \"x\"."]
                )),
                target: "svc"
            )
        }
        #expect(failure("unknown-session").exitCode == 65)
        #expect("\(failure("unknown-session"))" == "No scene session is named \"x\". (lifecyclectl scenes lists the sessions)")
        #expect(failure("scenes-not-adopted").exitCode == 69)
        #expect(failure("invalid-identifier").exitCode == 64)
        #expect(failure("duplicate-identifier").exitCode == 65)
        #expect(failure("something-newer").exitCode == 76)
    }

    @Test func anIdentifierNoSessionCanHaveIsAUsageErrorBeforeAnythingIsAsked() throws {
        #expect(throws: (any Error).self) { try SceneRequestCommand<SceneDiscard>.parse(["a b"]) }
        #expect(throws: (any Error).self) { try SceneRequestCommand<SceneDiscard>.parse(["a/b"]) }
        #expect(throws: (any Error).self) { try SceneRequestCommand<SceneDiscard>.parse([String(repeating: "x", count: 129)]) }
        #expect(try SceneRequestCommand<SceneDiscard>.parse(["client-7"]).id == "client-7")
        #expect(throws: (any Error).self) { try Tree.parse(["--scene", ""]) }
        #expect(throws: (any Error).self) { try Scenes.parse(["--state", "asleep"]) }
        #expect(throws: (any Error).self) { try Scenes.parse(["--user-info", "seat"]) }
        let filtered = try Scenes.parse(["--role", "client", "--state", "connected", "--user-info", "seat=2", "--prefix", "c"])
        #expect(filtered.filters == ["role": "client", "state": "connected", "userInfo": "seat=2", "prefix": "c"])
    }
}
