// swift-tools-version: 6.2
//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The benchmarks of LifecycleKit: a separate package, so the library's users never resolve the benchmark tool.
// scripts/bench (at the repository root) builds it in release mode and runs everything; see docs/benchmarks.md.
import PackageDescription

let package = Package(
    name: "LifecycleBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LifecycleKit", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        // Shared by every receiver: the shared-memory stamp and a raw sd_notify, so all three pay the same. The C
        // floor and the probe (C/) compile the same file with cc (scripts/bench): a SwiftPM executable would link the
        // Swift runtime, and the floor must not pay for it.
        .target(name: "CBenchSupport", path: "Sources/CBenchSupport"),
        // Controller trees and their plain-Swift baselines, shared by the benchmarks and the benchmark daemon.
        .target(
            name: "LifecycleBenchSupport",
            dependencies: [
                .product(name: "LifecycleKit", package: "LifecycleKit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/LifecycleBenchSupport"
        ),
        // The daemon's real main loop with a benchmark delegate.
        .executableTarget(
            name: "lifecycle-bench-daemon",
            dependencies: [
                "CBenchSupport",
                "LifecycleBenchSupport",
                .product(name: "LifecycleKit", package: "LifecycleKit"),
                .product(name: "LifecycleDaemon", package: "LifecycleKit"),
                .product(name: "_LifecycleInternals", package: "LifecycleKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/BenchDaemon"
        ),
        // The peer: swift-service-lifecycle's UnixSignalsSequence consumed on @MainActor.
        .executableTarget(
            name: "lifecycle-bench-peer",
            dependencies: [
                "CBenchSupport",
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Sources/BenchPeer"
        ),
        // The in-process benchmarks' loops as a plain executable, to run under callgrind or perf.
        .executableTarget(
            name: "lifecycle-bench-profile",
            dependencies: [
                "LifecycleBenchSupport",
                .product(name: "LifecycleKit", package: "LifecycleKit"),
                .product(name: "LifecycleDaemon", package: "LifecycleKit"),
            ],
            path: "Sources/BenchProfile"
        ),
        // The scenes benchmark: a connection and a disconnection per scene, the memory of a connected and of a
        // disconnected session, a process-level event through 1 to 10,000 scenes; each beside its plain-Swift twin.
        .executableTarget(
            name: "lifecycle-bench-scenes",
            dependencies: [
                "CBenchSupport",
                "LifecycleBenchSupport",
                .product(name: "LifecycleKit", package: "LifecycleKit"),
            ],
            path: "Sources/BenchScenes"
        ),
        // In-process benchmarks (ordo-one/benchmark): fan-out, push/pop, layout, bytes per controller.
        .executableTarget(
            name: "LifecycleBenchmarks",
            dependencies: [
                "LifecycleBenchSupport",
                .product(name: "LifecycleKit", package: "LifecycleKit"),
                .product(name: "LifecycleDaemon", package: "LifecycleKit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/LifecycleBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
