// swift-tools-version: 6.2
//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

// The libFuzzer targets (docs/testing.md, "Fuzzing"): one executable per decoder, built with -sanitize=fuzzer,address
// and the LibFuzzer trait by `make fuzz` (scripts/fuzz) in .build-fuzz. Its own package, so the main package gains no
// target, flag or dependency.
//
// Without the trait (`swift test --package-path Fuzzing`, which builds every target) the package builds as plain Swift:
// the checks' unit tests run there, and the executables link without libFuzzer (and only say how they are built).
//
// Adding a target: Sources/fuzz-NAME/Fuzz.swift (a @main type conforming to FuzzTarget, whose `test` takes one input)
// and one line in `fuzzers` below; seeds go under Corpus/NAME/, a dictionary in
// Dictionaries/NAME.dict (both optional). scripts/fuzz runs every Sources/fuzz-*.
import PackageDescription

/// Each fuzz target and the LifecycleKit products it reaches.
let fuzzers: [(name: String, products: [String])] = [
    ("configuration", ["LifecycleDaemon"]),
    ("signal-name", ["LifecycleDaemon", "_LifecycleInternals"]),
    ("state-archive", ["LifecycleKit"]),
    ("state-payload", ["LifecycleKit"]),
    ("storyboard", ["LifecycleKit"]),
    ("json", ["_LifecycleInternals"]),
    ("varlink", ["_LifecycleInternals", "LifecycleDaemon"]),
    ("log-json", ["_LifecycleInternals"]),
]

let package = Package(
    name: "LifecycleFuzzing",
    traits: [
        .trait(
            name: "LibFuzzer",
            description: "The targets' entry point is libFuzzer's driver (linked by -sanitize=fuzzer): scripts/fuzz."
        )
    ],
    dependencies: [
        .package(name: "LifecycleKit", path: ".."),
        // The main package's own (same URL and bound, so one resolution): fuzz-varlink gives its server a Logger.
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        // libFuzzer's driver, declared (the toolchain's libclang_rt.fuzzer defines it).
        .systemLibrary(name: "CLibFuzzer"),
        // What every target shares: the entry point, checks that fail loudly, the application section, each target's
        // checks (the configuration's, the JSON's with a reference reading of RFC 8259, the round trips).
        .target(
            name: "FuzzSupport",
            dependencies: [
                .target(name: "CLibFuzzer", condition: .when(traits: ["LibFuzzer"])),
                .product(name: "LifecycleKit", package: "LifecycleKit"),
                .product(name: "_LifecycleInternals", package: "LifecycleKit"),
                .product(name: "LifecycleDaemon", package: "LifecycleKit"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The checks themselves, on the seeds whose reading is easy to get wrong (CR LF, a lone CR, a byte order mark).
        .testTarget(
            name: "FuzzSupportTests",
            dependencies: [
                "FuzzSupport",
                .product(name: "LifecycleDaemon", package: "LifecycleKit"),
            ]
        ),
    ]
        + fuzzers.map { fuzzer in
            .executableTarget(
                name: "fuzz-\(fuzzer.name)",
                dependencies: ["FuzzSupport"] + fuzzer.products.map { .product(name: $0, package: "LifecycleKit") },
                // The entry point is a @main type (FuzzTarget) in a file not called main.swift.
                swiftSettings: [.unsafeFlags(["-parse-as-library"])],
                // The toolchain's lld: Debian's gold fails on the sanitizer runtimes (an internal error in
                // format_file_lineno, after "Cannot export local symbol '__asan_extra_spill_area'").
                linkerSettings: [.unsafeFlags(["-use-ld=lld"])]
            )
        }
)
