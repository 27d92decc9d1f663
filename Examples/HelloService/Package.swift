// swift-tools-version: 6.2
//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// hello-service: a Hummingbird server with the iOS application lifecycle (see README.md).
import PackageDescription

let package = Package(
    name: "HelloService",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LifecycleKit", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        .executableTarget(
            name: "hello-service",
            dependencies: [
                .product(name: "LifecycleDaemon", package: "LifecycleKit"),
                .product(name: "LifecycleKit", package: "LifecycleKit"),
                .product(name: "LifecycleServices", package: "LifecycleKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The example's lifecycle, driven by LifecycleKit's test kit: no systemd, no signals, a clock the test moves.
        .testTarget(
            name: "HelloServiceTests",
            dependencies: [
                "hello-service",
                .product(name: "LifecycleKit", package: "LifecycleKit"),
                .product(name: "LifecycleKitTesting", package: "LifecycleKit"),
                .product(name: "LifecycleServices", package: "LifecycleKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ]
)
