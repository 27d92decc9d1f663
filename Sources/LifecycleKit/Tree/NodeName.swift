//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecyclePrimitives

/// Controller identifiers and view names are parts of trace paths: `LIFECYCLE_TARGET=` in the journal, a line of the
/// trace on a terminal, `lifecyclectl tree`. A name is one line of printable text: each control character (C0, DEL,
/// C1), line or paragraph separator and bidirectional override in it is replaced by U+FFFD when the name is given, so
/// that no name can break a journal field or a log line, or reach the terminal that shows it.
package enum NodeName {
    /// Whether a scalar may not appear in a name: the scalars that must not reach a terminal as they are
    /// (``VisibleText/isUnsafe(_:)``), which a name replaces where a quoted text escapes them.
    package static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        VisibleText.isUnsafe(scalar)
    }

    /// `name` with every forbidden scalar replaced by U+FFFD.
    package static func sanitized(_ name: String) -> String {
        guard name.unicodeScalars.contains(where: isForbidden) else { return name }
        var safe = String.UnicodeScalarView()
        for scalar in name.unicodeScalars { safe.append(isForbidden(scalar) ? "\u{FFFD}" : scalar) }
        return String(safe)
    }

    /// Replaces `name` by ``sanitized(_:)`` when it has a forbidden scalar (a setter's `didSet`).
    package static func sanitize(_ name: inout String) {
        if name.unicodeScalars.contains(where: isForbidden) { name = sanitized(name) }
    }
}

extension String {
    /// `WorkerViewController` → `worker`, `ProgressView` → `progressView`: the default name of a node in a path.
    static func defaultNodeName(for type: Any.Type, strippingSuffixes suffixes: [String], fallback: String) -> String {
        var name = String(describing: type)
        if let generic = name.firstIndex(of: "<") { name = String(name[..<generic]) }
        for suffix in suffixes where name.hasSuffix(suffix) && name.count > suffix.count {
            name = String(name.dropLast(suffix.count))
            break
        }
        if suffixes.contains(name) || name.isEmpty { return fallback }
        return name.prefix(1).lowercased() + name.dropFirst()
    }
}
