//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// A rectangle in the abstract coordinate space of a view tree; changing a view's frame marks it for layout.
public struct Rect: Hashable, Sendable, CustomStringConvertible {
    /// The left edge.
    public var x: Double
    /// The top edge.
    public var y: Double
    /// The width.
    public var width: Double
    /// The height.
    public var height: Double

    /// Creates a rectangle.
    public init(x: Double = 0, y: Double = 0, width: Double = 0, height: Double = 0) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The empty rectangle at the origin.
    public static let zero = Rect()

    public var description: String { "(\(x), \(y), \(width), \(height))" }
}

/// Where a view draws: its part of the application's status text (`systemctl status`'s Status line).
public struct StatusContext: Sendable {
    /// The text this view contributes; empty contributes nothing.
    public var text = ""

    /// Creates an empty context.
    public init() {}

    /// Appends text to this view's part of the status.
    public mutating func write(_ string: String) {
        text += string
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
