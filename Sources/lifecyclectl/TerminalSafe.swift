//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecyclePrimitives

/// Everything lifecyclectl prints from the daemon passes through here first: a string from the daemon (a controller
/// name, a status line, an error's reason) can hold an escape sequence that would rewrite the terminal, a newline
/// that would forge a line of output, or a bidirectional override that would reorder it.
enum TerminalSafe {
    /// Whether a scalar must not reach the terminal as it is (``VisibleText/isUnsafe(_:)``).
    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        VisibleText.isUnsafe(scalar)
    }

    /// `text` with every unsafe scalar written out visibly: `\n`, `\t`, `\x1b`, `\u{202e}`.
    static func escaped(_ text: String) -> String {
        VisibleText.escaped(text)
    }

    /// A reply with every string in it (keys too) escaped, for the human formats.
    static func escaped(_ object: JSONObject) -> JSONObject {
        JSONObject(object.members.map { (escaped($0.key), escaped($0.value)) })
    }

    static func escaped(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let text): .string(escaped(text))
        case .array(let values): .array(values.map(escaped))
        case .object(let object): .object(escaped(object))
        default: value
        }
    }

    /// A value as one line of JSON that a terminal shows as it is: the JSON writer escapes C0 controls and DEL; this
    /// escapes the rest of the unsafe scalars too (`\u009b`, `\u202e`), which JSON allows anywhere in a string (the
    /// only place they can be). The data is unchanged for whoever parses it.
    static func json(_ value: JSONValue) -> String {
        let text = value.text
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar) {
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
