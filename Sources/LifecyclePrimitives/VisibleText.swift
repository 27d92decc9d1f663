//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// Untrusted text made safe to print on a terminal or in a log line: a configuration file's line quoted in an
/// error, a string the daemon sent to lifecyclectl. An escape sequence in it would rewrite the terminal, a newline
/// forge a line of output, a bidirectional override reorder it, and a NUL cut it short.
package enum VisibleText {
    /// Whether a scalar must not reach the terminal as it is: C0 and C1 controls, DEL, line and paragraph separators,
    /// bidirectional embeddings, overrides and isolates.
    package static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00..<0x20, 0x7F..<0xA0, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// `text` with every unsafe scalar written out visibly: `\n`, `\t`, `\r`, `\x1b`, `\x00`, `\u{202e}`.
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            guard isUnsafe(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar.value {
            case 0x0A: result += "\\n"
            case 0x09: result += "\\t"
            case 0x0D: result += "\\r"
            case 0x00..<0x80: result += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: result += "\\u{" + String(scalar.value, radix: 16) + "}"
            }
        }
        return result
    }
}
