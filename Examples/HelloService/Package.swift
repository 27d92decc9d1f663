// swift-tools-version: 6.2
//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// hello-service and hello-vapor: a Hummingbird server and a Vapor application with the iOS application lifecycle (see
// README.md), and the adapters that serve them on LifecycleKit's listeners.
import PackageDescription

// The adapters, hello-vapor and the tests compile with the stricter settings of the main package (and hummingbird's):
// existentials spelled `any`, members visible only through a module imported in the same file, imports internal unless
// marked `public`.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "HelloService",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LifecycleKit", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // The WebSocket endpoint whose clients are scenes (README.md, "Sessions"), and where sessions live on several
        // replicas.
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // A resume token's hash (already in the graph through postgres-nio and Vapor).
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // Already in the graph through Hummingbird, Vapor and LifecycleKit; named here because the adapters use them.
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // What the frameworks' adapters share, and knows nothing of either: a listening descriptor the server owns,
        // accepting on it beside other accepters, SwiftNIO channels for the accepted connections, tracking them from
        // accept to close, and the quiesce gate that holds a graceful shutdown until a connection's late request is
        // answered with `Connection: close`.
        .target(
            name: "LifecycleHTTPCore",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // A Hummingbird HTTP/1.1 server on a listening socket it is given (systemd's LISTEN_FDS, a dup of a socket the
        // daemon keeps): it closes only its own descriptor, so the socket outlives it and the next server serves the
        // connections the kernel queued meanwhile.
        .target(
            name: "LifecycleHummingbird",
            dependencies: [
                "LifecycleHTTPCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "WSCore", package: "swift-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The same for a Vapor 4 application: its responder (routes, middleware, errors) served on a given socket,
        // one Vapor Application per run of the server.
        .target(
            name: "LifecycleVapor",
            dependencies: [
                "LifecycleHTTPCore",
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Sessions that outlive the process (README.md, "Sessions"): the wire, the resumption and close-window state
        // machines, the stores (a directory in StateDirectory=, PostgreSQL) and the hub that serves WebSocket clients.
        // Knows nothing of LifecycleKit: hello-service maps its sessions to scenes.
        .target(
            name: "HelloSessions",
            dependencies: [
                "LifecycleHummingbird",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "WSCore", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "hello-service",
            dependencies: [
                "HelloSessions",
                "LifecycleHummingbird",
                .product(name: "LifecycleDaemon", package: "LifecycleKit"),
                .product(name: "LifecycleKit", package: "LifecycleKit"),
                .product(name: "LifecycleServices", package: "LifecycleKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The baseline the sessions bench sets beside /ws: the same protocol on plain hummingbird-websocket (its own
        // Application and port), sessions in memory.
        .executableTarget(
            name: "hello-plain-websocket",
            dependencies: [
                "HelloSessions",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "WSCore", package: "swift-websocket"),
            ],
            swiftSettings: swiftSettings
        ),
        // The same example as a Vapor application (README.md, "hello-vapor"): the second executable of this package,
        // so SwiftNIO and the rest build once.
        .executableTarget(
            name: "hello-vapor",
            dependencies: [
                "LifecycleVapor",
                .product(name: "LifecycleDaemon", package: "LifecycleKit"),
                .product(name: "LifecycleKit", package: "LifecycleKit"),
                .product(name: "LifecycleServices", package: "LifecycleKit"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The example's lifecycle, driven by LifecycleKit's test kit: no systemd, no signals, a clock the test moves.
        .testTarget(
            name: "HelloServiceTests",
            dependencies: [
                "hello-service",
                .product(name: "LifecycleDaemon", package: "LifecycleKit"),
                .product(name: "LifecycleKit", package: "LifecycleKit"),
                .product(name: "LifecycleKitTesting", package: "LifecycleKit"),
                .product(name: "LifecycleServices", package: "LifecycleKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // What the servers' tests share: a loopback listening socket whose dups servers get, a client that reads the
        // raw bytes on the wire, services run in a ServiceGroup the test shuts down.
        .target(
            name: "HTTPServerTestSupport",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/HTTPServerTestSupport",
            swiftSettings: swiftSettings
        ),
        // The sessions' state machines as values, tokens and the wire, the directory store on a temporary directory.
        .testTarget(
            name: "HelloSessionsTests",
            dependencies: [
                "HelloSessions",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The gate's decisions as a plain value.
        .testTarget(
            name: "LifecycleHTTPCoreTests",
            dependencies: ["LifecycleHTTPCore"],
            swiftSettings: swiftSettings
        ),
        // The servers on real loopback sockets: a descriptor the test bound, served, shut down and served again.
        .testTarget(
            name: "LifecycleHummingbirdTests",
            dependencies: [
                "HTTPServerTestSupport",
                "LifecycleHummingbird",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LifecycleVaporTests",
            dependencies: [
                "HTTPServerTestSupport",
                "LifecycleVapor",
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
