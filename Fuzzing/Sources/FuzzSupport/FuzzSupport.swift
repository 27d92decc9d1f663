//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import CLibFuzzer

#if canImport(Glibc)
    import Glibc
#endif

/// A fuzz target: `test` is called with each input libFuzzer makes. It returns for any input; a trap in it (a
/// precondition, an overflow, a force unwrap, a failed ``check(_:_:file:line:)``) or an AddressSanitizer report is a
/// finding, and libFuzzer keeps the input as a crash artifact.
///
/// ```swift
/// @main
/// enum StoryboardFuzzer: FuzzTarget {
///     static func test(_ bytes: [UInt8]) {
///         _ = try? StoryboardFormat.parse(text(bytes), source: "fuzz.storyboard")
///     }
/// }
/// ```
package protocol FuzzTarget {
    /// Runs one input.
    static func test(_ bytes: [UInt8])
}

extension FuzzTarget {
    /// libFuzzer's main(): its flags and corpus directories are the command line (`-help=1` lists them).
    package static func main() {
        currentTest = test
        var argc = CommandLine.argc
        var argv = Optional(CommandLine.unsafeArgv)
        exit(
            LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
                currentTest?(bytes)
                return 0
            }
        )
    }
}

/// The running target's `test`: libFuzzer calls back through a C function pointer, which carries no context. Set once,
/// before the driver starts, and read only by the driver's thread.
nonisolated(unsafe) private var currentTest: (([UInt8]) -> Void)?

/// The input as text, the way a file is read: invalid UTF-8 becomes U+FFFD (as `SystemFiles.readText` and
/// `String(decoding:as:)` do).
package func text(_ bytes: [UInt8]) -> String {
    String(decoding: bytes, as: UTF8.self)
}

/// An invariant of a decoder that must hold for every input. A violation is a finding like a crash: the process traps
/// with the message, so libFuzzer keeps the input as a crash artifact.
package func check(
    _ condition: Bool,
    _ message: @autoclosure () -> String,
    file: StaticString = #fileID,
    line: UInt = #line
) {
    guard !condition else { return }
    fatalError("fuzz check failed: \(message())", file: file, line: line)
}
