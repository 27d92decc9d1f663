// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "LifecycleKit",
    products: [
        .library(name: "LifecycleKit", targets: ["LifecycleKit"]),
        .library(name: "LifecycleSystemd", targets: ["LifecycleSystemd"]),
        .library(name: "LifecycleDaemon", targets: ["LifecycleDaemon"]),
        .executable(name: "lifecycled", targets: ["lifecycled"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        // The pure-Swift core: application state machine, controller/view tree, trace. Never imports C.
        .target(
            name: "LifecycleKit",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        // libsystemd from the distribution (Debian: libsystemd-dev).
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // The only Swift module that touches libsystemd: sd_notify, journald, sd-event, sd-bus.
        .target(
            name: "LifecycleSystemd",
            dependencies: [
                "CSystemd",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // Glue: drives a LifecycleKit application from the systemd main loop; configuration; the demo app.
        .target(
            name: "LifecycleDaemon",
            dependencies: [
                "LifecycleKit",
                "LifecycleSystemd",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .executableTarget(
            name: "lifecycled",
            dependencies: [
                "LifecycleDaemon",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "LifecycleKitTests",
            dependencies: [
                "LifecycleKit",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "LifecycleSystemdTests",
            dependencies: ["LifecycleSystemd"]
        ),
        .testTarget(
            name: "LifecycleDaemonTests",
            dependencies: ["LifecycleDaemon", "LifecycleKit", "LifecycleSystemd"]
        ),
    ]
)
