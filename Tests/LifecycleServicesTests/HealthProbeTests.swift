//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleKit
import LifecycleKitTesting
import LifecycleServices
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

@MainActor
@Suite("Health probes for a hosted server")
struct HealthProbeTests {
    @Test func aHostedServerIsReadyOnlyWhileItsListenerIsServedInTheForeground() async {
        let timeline = Timeline()
        let controller = ServiceController(identifier: "http", listeners: [.tcp("http", port: 0)]) { sockets in
            [SocketRecordingService(socket: sockets[0], timeline: timeline)]
        }
        let host = TestHost(delegate: Delegate(root: controller))
        // Every @MainActor test of the process shares the main actor: a generous timeout, for this test is about the
        // answers, not the wait (the next one is).
        let probes = HealthProbes(application: host.application, timeout: .seconds(120))
        #expect(await probes.check(.started) == HealthCheck(probe: .started, passed: false, reason: "not launched"))
        host.launch()
        #expect(await host.waitUntil { timeline.lines.count == 1 })
        #expect(
            await probes.check(.ready) == HealthCheck(probe: .ready, passed: true, reason: "active, 1 listener serving")
        )
        #expect(await probes.check(.started).passed)
        host.application.requestEnterBackground()
        #expect(await host.waitUntil { !controller.services.isRunning })
        #expect(await probes.check(.ready) == HealthCheck(probe: .ready, passed: false, reason: "in the background"))
        #expect(await probes.check(.live).passed)
    }

    @Test func aMainLoopThatDoesNotAnswerFailsEveryProbeWithinItsTimeout() async {
        let host = TestHost(delegate: Delegate(root: ViewController()))
        host.launch()
        let probes = HealthProbes(application: host.application, timeout: .milliseconds(100))
        let started = ContinuousClock.now
        // Queued on the main actor first, so it runs before the probe's question, and holds the main actor as a
        // callback that blocks the loop would, until the probe has answered: the probe runs on the shared pool, which
        // a full parallel run under a sanitizer can keep busy for longer than any fixed time (5 s was not enough).
        let answered = Flag()
        let blocker = Task { @MainActor in
            let bound = ContinuousClock.now + .seconds(60)
            while !answered.isRaised, ContinuousClock.now < bound { _ = usleep(1_000) }
        }
        let asked = Task.detached {
            let check = await probes.check(.live)
            answered.raise()
            return check
        }
        let check = await asked.value
        await blocker.value
        #expect(check == HealthCheck(probe: .live, passed: false, reason: "the main loop did not answer within 100 ms"))
        #expect(ContinuousClock.now - started < .seconds(60))
    }

}

/// Raised once, from any thread.
private final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)

    var isRaised: Bool { raised.load(ordering: .acquiring) }

    func raise() { raised.store(true, ordering: .releasing) }
}
