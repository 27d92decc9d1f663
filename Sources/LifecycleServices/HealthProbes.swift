//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

public import LifecycleKit
import LifecyclePrimitives
import Synchronization

/// The application's health probes for a hosted server to answer (Kubernetes' `httpGet` probes on `/readyz`,
/// `/livez`, `/startupz`), from any thread: each asks the application on the main actor, so an answer proves the
/// main loop turns, and waits at most ``timeout`` — a main loop held by a stalled callback fails every probe, `live`
/// included, instead of leaving the prober waiting.
///
/// ```swift
/// let probes = HealthProbes(application: application)
/// router.get("/readyz") { _, _ in
///     let check = await probes.check(.ready)
///     return Response(status: check.passed ? .ok : .serviceUnavailable, body: .init(byteBuffer: ByteBuffer(string: check.reason)))
/// }
/// ```
public struct HealthProbes: Sendable {
    /// How long a probe waits for the main loop to answer before it fails.
    public var timeout: Duration
    private weak let application: Application?

    /// Probes of `application`, each waiting at most `timeout` for its main loop.
    public init(application: Application, timeout: Duration = .seconds(2)) {
        self.application = application
        self.timeout = timeout
    }

    /// The answer to `probe`, within ``timeout``.
    public func check(_ probe: HealthProbe) async -> HealthCheck {
        let answered = FirstAnswer()
        let timeout = self.timeout
        return await withCheckedContinuation { (continuation: CheckedContinuation<HealthCheck, Never>) in
            // Unstructured: a main actor that never answers must not hold this call (a task group would wait for it).
            Task { @MainActor [application] in
                let check =
                    application?.check(probe)
                    ?? HealthCheck(probe: probe, passed: false, reason: "the application is gone")
                if answered.claim() { continuation.resume(returning: check) }
            }
            Task {
                try? await Task.sleep(for: timeout)
                if answered.claim() {
                    continuation.resume(
                        returning: HealthCheck(
                            probe: probe,
                            passed: false,
                            reason: "the main loop did not answer within \(timeout.formattedForLog)"
                        )
                    )
                }
            }
        }
    }
}

/// Which of two racers answers: the first to claim it. An atomic, which ThreadSanitizer follows (it reports a
/// contended `Mutex` on Linux as a race inside `withLock`).
private final class FirstAnswer: Sendable {
    private let answered = Atomic(false)

    /// True for the first caller only.
    func claim() -> Bool {
        answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}
