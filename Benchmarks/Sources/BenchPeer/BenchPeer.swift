//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CBenchSupport
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

/// The peer a Swift user would otherwise pick: swift-service-lifecycle's `UnixSignalsSequence`, consumed by a loop
/// on the main actor, stamping first thing for each SIGUSR1. SIGTERM ends it with status 0.
///
/// Nothing is blocked or ignored by hand: this is the sequence used as its documentation shows.
@main
enum BenchPeer {
    static func main() async {
        let attached = bench_attach_from_environment()
        if attached < 0 {
            let line = Array("lifecycle-bench-peer: cannot map $\(BENCH_SHM_ENVIRONMENT): errno \(-attached)\n".utf8)
            _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            exit(71)
        }
        let signals = await UnixSignalsSequence(trapping: .sigusr1, .sigterm)
        _ = bench_notify("READY=1")
        await consume(signals)
    }

    @MainActor
    static func consume(_ signals: UnixSignalsSequence) async {
        for await signal in signals {
            bench_stamp()
            if signal == .sigterm { exit(0) }
        }
    }
}
