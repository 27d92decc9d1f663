// swift-tools-version: 6.2
//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import PackageDescription

// Every Swift target compiles with the stricter settings of the Swift server packages (hummingbird's): existentials
// spelled `any`, members visible only through a module imported in the same file, imports internal unless a file
// marks one `public` (what a module's public API names).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "LifecycleKit",
    products: [
        // The API an adopter uses: the core, the daemon's entry point, hosted services, the test kit.
        .library(name: "LifecycleKit", targets: ["LifecycleKit"]),
        .library(name: "LifecycleDaemon", targets: ["LifecycleDaemon"]),
        .library(name: "LifecycleServices", targets: ["LifecycleServices"]),
        .library(name: "LifecycleKitTesting", targets: ["LifecycleKitTesting"]),
        // Not an API: the lower modules, published only because SwiftPM lets another package (Fuzzing/, Benchmarks/)
        // import a module through a product alone. What those packages reach is plain `public` here, unstable (README);
        // in LifecycleKit and LifecycleDaemon it is `@_spi(Internal)`.
        .library(name: "_LifecycleInternals", targets: ["LifecyclePrimitives", "LifecycleIPC", "LifecycleSystemd"]),
        .executable(name: "lifecycled", targets: ["lifecycled"]),
        .executable(name: "lifecyclectl", targets: ["lifecyclectl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // The bottom: what the core, the wire and the systemd layer share and none of them owns: duration units, the
        // trace record, a rate limiter, system-call errors, the event-loop protocol, the lock and the clocks of the
        // daemon's threads. Depends on nothing of ours but its C headers; no adopter's product names it.
        .target(
            name: "LifecyclePrimitives",
            dependencies: [
                "CLifecyclePrimitives",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // The glibc headers LifecyclePrimitives reads clocks, locks and epoll flags from (see its header).
        .target(name: "CLifecyclePrimitives"),
        // The pure-Swift core: application state machine, controller/view tree, trace. Never imports C.
        .target(
            name: "LifecycleKit",
            dependencies: [
                "LifecyclePrimitives",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The control socket's wire, without libsystemd (lifecyclectl links it): JSON, varlink framing, a varlink server
        // on any event loop and a client, AF_UNIX sockets and peer credentials.
        .target(
            name: "LifecycleIPC",
            dependencies: [
                "CLifecycleIPC",
                "LifecyclePrimitives",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // The socket calls LifecycleIPC cannot make from Swift (glibc declares them only under _GNU_SOURCE).
        .target(name: "CLifecycleIPC"),
        // Starting the next process of a service beside the running one (an upgrade): fork and exec in C, where the
        // child makes only async-signal-safe calls.
        .target(name: "CLifecycleProcess"),
        // libsystemd from the distribution (Debian: libsystemd-dev).
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // The only Swift module that touches libsystemd: sd_notify and the fd store, the sd-event main loop, logging to
        // journald (or a terminal), sd-bus and logind, memory pressure.
        .target(
            name: "LifecycleSystemd",
            dependencies: [
                "CSystemd",
                "CLifecycleProcess",
                "LifecycleIPC",
                "LifecyclePrimitives",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // The runner: drives a LifecycleKit application from the systemd main loop; configuration; the `@main`
        // entry point (ApplicationMain) with the standard command line.
        .target(
            name: "LifecycleDaemon",
            dependencies: [
                "LifecycleIPC",
                "LifecycleKit",
                "LifecyclePrimitives",
                "LifecycleSystemd",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // Real async work under the lifecycle: controllers that host swift-service-lifecycle services, and the
        // whole application as a Service of an existing ServiceGroup.
        .target(
            name: "LifecycleServices",
            dependencies: [
                "LifecycleKit",
                "LifecyclePrimitives",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The test kit for adopters: a host that drives an application as the daemon does, a recorder of callbacks, a
        // clock the test advances.
        .target(
            name: "LifecycleKitTesting",
            dependencies: ["LifecycleKit", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        // The demo daemon, written with exactly the entry point a user writes (`@main` on its delegate).
        .executableTarget(
            name: "lifecycled",
            dependencies: [
                "LifecycleDaemon",
                "LifecycleKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The control socket's client: see and drive a running daemon (docs/control.md).
        .executableTarget(
            name: "lifecyclectl",
            dependencies: [
                "LifecycleIPC",
                "LifecycleKit",
                "LifecyclePrimitives",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // The README's example, compiled as printed (ReadmeExampleTests checks the README shows exactly this file).
        .executableTarget(
            name: "ReadmeExample",
            dependencies: [
                "LifecycleDaemon",
                "LifecycleKit",
                "LifecycleServices",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/ReadmeExample",
            swiftSettings: swiftSettings
        ),
        // The end-to-end tests' service that uses scenes (Tests/EndToEnd/test_scenes.py): a scene per client and tenant.
        .executableTarget(
            name: "scene-service",
            dependencies: [
                "LifecycleDaemon",
                "LifecycleKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/SceneService",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LifecyclePrimitivesTests",
            dependencies: ["LifecyclePrimitives", .product(name: "SystemPackage", package: "swift-system")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LifecycleKitTests",
            dependencies: [
                "LifecycleKit",
                "LifecycleKitTesting",
                // ConditionLock for the tests' recorders: ThreadSanitizer sees its hand-overs (docs/testing.md).
                "LifecyclePrimitives",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LifecycleServicesTests",
            dependencies: [
                "LifecycleServices",
                "LifecycleKitTesting",
                "LifecycleKit",
                "LifecyclePrimitives",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LifecycleKitTestingTests",
            dependencies: ["LifecycleKitTesting", "LifecycleKit"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LifecycleIPCTests",
            dependencies: ["LifecycleIPC", "LifecyclePrimitives"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LifecycleSystemdTests",
            dependencies: ["LifecycleSystemd", "LifecycleIPC", "LifecycleKit", "LifecyclePrimitives"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LifecycleDaemonTests",
            dependencies: [
                "LifecycleDaemon",
                "LifecycleIPC",
                "LifecycleKit",
                "LifecyclePrimitives",
                "LifecycleSystemd",
                // The README's example and its --help (the standard command line of an ApplicationMain).
                "ReadmeExample",
                "LifecycleServices",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LifecyclectlTests",
            dependencies: ["lifecyclectl", "LifecycleIPC", "LifecycleKit", "LifecyclePrimitives"],
            swiftSettings: swiftSettings
        ),
    ]
)
