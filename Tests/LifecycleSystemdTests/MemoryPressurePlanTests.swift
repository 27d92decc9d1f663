//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import Testing

@testable import LifecycleSystemd

@Suite struct MemoryPressurePlanTests {
    @Test func theDefaultTriggerIsSystemdsInMicrosecondsWithATerminatingNul() {
        let trigger = MemoryPressureTrigger()
        #expect(trigger.text == "some 200000 2000000")
        #expect(trigger.bytes == Array("some 200000 2000000".utf8) + [0])
        #expect(trigger.description == "some 200 ms per 2 s")
        let full = MemoryPressureTrigger(kind: .full, threshold: .milliseconds(150), window: .seconds(4))
        #expect(full.text == "full 150000 4000000")
    }

    @Test func theCgroup2LineMapsUnderTheUnifiedMountOnAHybridHierarchy() {
        let procSelfCgroup = """
            12:memory:/system.slice/lifecycled.service
            1:name=systemd:/system.slice/lifecycled.service
            0::/system.slice/lifecycled.service
            """
        #expect(
            MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: procSelfCgroup, layout: .hybrid)
                == "/sys/fs/cgroup/unified/system.slice/lifecycled.service/memory.pressure"
        )
        #expect(
            MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: "0::/system.slice/x.service\n", layout: .unified)
                == "/sys/fs/cgroup/system.slice/x.service/memory.pressure"
        )
        #expect(
            MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: "0::/\n", layout: .unified)
                == "/sys/fs/cgroup/memory.pressure"
        )
    }

    @Test func withoutACgroup2LineOrMountThereIsNoCgroupFile() {
        #expect(MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: "0::/a.service\n", layout: .legacy) == nil)
        #expect(MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: "4:memory:/a\n", layout: .hybrid) == nil)
        #expect(
            MemoryPressurePlan.cgroupPressurePath(procSelfCgroup: "0::/gone.service (deleted)\n", layout: .hybrid)
                == nil
        )
    }

    @Test func theLayoutComesFromWhereCgroup2IsMounted() {
        let tmpfs: UInt = 0x0102_1994
        let cgroup1: UInt = 0x0027_e0eb
        let cgroup2 = CgroupLayout.cgroup2FileSystemType
        func layout(_ mounts: [String: UInt]) -> CgroupLayout { CgroupLayout.detect { mounts[$0] } }
        #expect(layout(["/sys/fs/cgroup": tmpfs, "/sys/fs/cgroup/unified": cgroup2]) == .hybrid)
        #expect(layout(["/sys/fs/cgroup": cgroup2]) == .unified)
        // A path under a cgroup2 root reports the root's type too: the first answer decides.
        #expect(layout(["/sys/fs/cgroup": cgroup2, "/sys/fs/cgroup/unified": cgroup2]) == .unified)
        #expect(layout(["/sys/fs/cgroup": tmpfs, "/sys/fs/cgroup/memory": cgroup1]) == .legacy)
        #expect(layout([:]) == .legacy)
    }

    @Test func thisMachinesLayoutIsTheOneItsMountTableNames() throws {
        // The same answer as the mount table gives, whatever the machine (the tests never assume a layout).
        let mountinfo = try SystemFiles.readText("/proc/self/mountinfo")
        var cgroup2MountPoints: Set<Substring> = []
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count, fields.count > 4 else { continue }
            if fields[dash + 1] == "cgroup2" { cgroup2MountPoints.insert(fields[4]) }
        }
        let expected: CgroupLayout =
            cgroup2MountPoints.contains("/sys/fs/cgroup")
            ? .unified : cgroup2MountPoints.contains("/sys/fs/cgroup/unified") ? .hybrid : .legacy
        #expect(CgroupLayout.detect() == expected)
    }

    @Test func withoutTheEnvironmentTheCgroupFileComesFirstThenTheSystemWideOne() throws {
        let plan = try MemoryPressurePlan.make(
            environment: [:],
            procSelfCgroup: "0::/system.slice/lifecycled.service\n",
            layout: .hybrid,
            trigger: MemoryPressureTrigger(threshold: .milliseconds(100), window: .seconds(2))
        )
        let bytes = Array("some 100000 2000000".utf8) + [0]
        #expect(
            plan == .sources([
                MemoryPressureSource(
                    path: "/sys/fs/cgroup/unified/system.slice/lifecycled.service/memory.pressure",
                    origin: .cgroup,
                    write: bytes
                ),
                MemoryPressureSource(path: "/proc/pressure/memory", origin: .systemWide, write: bytes),
            ])
        )
    }

    @Test func systemdsVariablesReplaceTheDefaultsWithNoFallback() throws {
        let plan = try MemoryPressurePlan.make(
            environment: [
                "MEMORY_PRESSURE_WATCH": "/sys/fs/cgroup/system.slice/x.service/memory.pressure",
                // systemd 254's default: "some 200000 2000000" and its NUL.
                "MEMORY_PRESSURE_WRITE": "c29tZSAyMDAwMDAgMjAwMDAwMAA=",
            ],
            procSelfCgroup: "0::/ignored\n",
            layout: .unified,
            trigger: MemoryPressureTrigger(threshold: .milliseconds(50))
        )
        #expect(
            plan == .sources([
                MemoryPressureSource(
                    path: "/sys/fs/cgroup/system.slice/x.service/memory.pressure",
                    origin: .environment,
                    write: Array("some 200000 2000000".utf8) + [0]
                )
            ])
        )
        let withoutWrite = try MemoryPressurePlan.make(
            environment: ["MEMORY_PRESSURE_WATCH": "/run/pressure.fifo"],
            procSelfCgroup: nil,
            layout: .hybrid,
            trigger: MemoryPressureTrigger()
        )
        let fifo = MemoryPressureSource(path: "/run/pressure.fifo", origin: .environment, write: [])
        #expect(withoutWrite == .sources([fifo]))
    }

    @Test func anEmptyOrDevNullWatchSwitchesWatchingOffAsSystemdDoes() throws {
        for value in ["", "/dev/null"] {
            let plan = try MemoryPressurePlan.make(
                environment: ["MEMORY_PRESSURE_WATCH": value],
                procSelfCgroup: "0::/x\n",
                layout: .hybrid,
                trigger: MemoryPressureTrigger()
            )
            guard case .disabled = plan else {
                Issue.record("MEMORY_PRESSURE_WATCH=\(value) gave \(plan)")
                continue
            }
        }
    }

    @Test func theWriteIsPaddedBase64WithWhitespaceIgnoredAndNothingElse() {
        #expect(MemoryPressurePlan.decodeWrite("") == [])
        #expect(MemoryPressurePlan.decodeWrite("Zg==") == Array("f".utf8))
        #expect(MemoryPressurePlan.decodeWrite("Zm8=") == Array("fo".utf8))
        #expect(MemoryPressurePlan.decodeWrite("Zm9v") == Array("foo".utf8))
        #expect(MemoryPressurePlan.decodeWrite("Zm9vYg==\n") == Array("foob".utf8))
        #expect(MemoryPressurePlan.decodeWrite(" Zm9v\r\n\tYg== ") == Array("foob".utf8))
        #expect(MemoryPressurePlan.decodeWrite("+/+/") == [0xfb, 0xff, 0xbf])
        // Unpadded, padding that is not at the end, a character outside the alphabet (URL-safe `-`, `*`).
        #expect(MemoryPressurePlan.decodeWrite("Zm9") == nil)
        #expect(MemoryPressurePlan.decodeWrite("Zg") == nil)
        #expect(MemoryPressurePlan.decodeWrite("Z===") == nil)
        #expect(MemoryPressurePlan.decodeWrite("Zg==Zg==") == nil)
        #expect(MemoryPressurePlan.decodeWrite("Zm-v") == nil)
        #expect(MemoryPressurePlan.decodeWrite("not*base64") == nil)
    }

    @Test func aRelativeWatchOrBadBase64IsAnErrorNamingTheVariable() {
        #expect {
            try MemoryPressurePlan.make(
                environment: ["MEMORY_PRESSURE_WATCH": "memory.pressure"],
                procSelfCgroup: nil,
                layout: .hybrid,
                trigger: MemoryPressureTrigger()
            )
        } throws: {
            ($0 as? MemoryPressureError)?.description.contains("MEMORY_PRESSURE_WATCH=memory.pressure") == true
        }
        #expect {
            try MemoryPressurePlan.make(
                environment: ["MEMORY_PRESSURE_WATCH": "/x/../y"],
                procSelfCgroup: nil,
                layout: .hybrid,
                trigger: MemoryPressureTrigger()
            )
        } throws: { $0 is MemoryPressureError }
        #expect {
            try MemoryPressurePlan.make(
                environment: ["MEMORY_PRESSURE_WATCH": "/proc/pressure/memory", "MEMORY_PRESSURE_WRITE": "not*base64"],
                procSelfCgroup: nil,
                layout: .hybrid,
                trigger: MemoryPressureTrigger()
            )
        } throws: { ($0 as? MemoryPressureError)?.description.contains("MEMORY_PRESSURE_WRITE=not*base64") == true }
    }
}
