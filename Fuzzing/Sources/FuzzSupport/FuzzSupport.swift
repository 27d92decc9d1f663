//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

#if LibFuzzer
import CLibFuzzer
#endif

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

#if LibFuzzer
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
#else
extension FuzzTarget {
    /// Built without the LibFuzzer trait there is no libFuzzer to drive the target (`swift test` builds every
    /// target of the package, so the executables must link without it): it says how it is built and fails.
    package static func main() {
        let name = CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? "") } ?? "fuzz"
        let message = "\(name): built without libFuzzer (the LibFuzzer trait); scripts/fuzz builds the fuzz targets\n"
        _ = Array(message.utf8).withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        exit(64)  // EX_USAGE
    }
}
#endif

/// The input as text, the way a file is read: invalid UTF-8 becomes U+FFFD (as `SystemFiles.readText` and
/// `String(decoding:as:)` do).
package func text(_ bytes: [UInt8]) -> String {
    String(decoding: bytes, as: UTF8.self)
}

/// The lines of `text`, first line first: a line ends at LF or CR LF (neither is part of it); a lone CR ends none.
///
/// Read by Unicode scalars, not `Character`s: Swift takes "\r\n" for one `Character`, so splitting a `String` on the
/// Character "\n" finds no line end in a CR LF text. An LF scalar is always a grapheme break of its own or the end of
/// "\r\n", so this ends a line exactly where `ConfigurationFile` does (at each "\n" or "\r\n" Character).
package func splitLines(_ text: String) -> [Substring] {
    splitLines(Substring(text).unicodeScalars)
}

/// ``splitLines(_:)`` of some Unicode scalars of a text: those after a byte order mark, say.
package func splitLines(_ scalars: Substring.UnicodeScalarView) -> [Substring] {
    var lines: [Substring] = []
    var start = scalars.startIndex
    var previous: Unicode.Scalar?
    for index in scalars.indices {
        let scalar = scalars[index]
        if scalar == "\n" {
            let end = previous == "\r" ? scalars.index(before: index) : index
            lines.append(Substring(scalars[start..<end]))
            start = scalars.index(after: index)
        }
        previous = scalar
    }
    lines.append(Substring(scalars[start...]))
    return lines
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
