//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// ANSI styles for a terminal, off unless asked for.
public struct TerminalStyle: Hashable, Sendable {
    /// Whether escape sequences are written at all.
    public var colour: Bool

    /// Styles on or off.
    public init(colour: Bool) {
        self.colour = colour
    }

    /// Colour for an output: only on a terminal, never with `NO_COLOR` set to anything (no-color.org) or
    /// `TERM=dumb`.
    public init(isTerminal: Bool, environment: [String: String]) {
        let noColour = environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        self.init(colour: isTerminal && !noColour && environment["TERM"] != "dumb")
    }

    /// SGR codes.
    public enum Code: String, Sendable {
        /// Bold.
        case bold = "1"
        /// Dim.
        case dim = "2"
        /// Red.
        case red = "31"
        /// Green.
        case green = "32"
        /// Yellow.
        case yellow = "33"
        /// Blue.
        case blue = "34"
        /// Magenta.
        case magenta = "35"
        /// Cyan.
        case cyan = "36"
    }

    /// `text` in the style (unchanged without colour).
    public func apply(_ code: Code, _ text: String) -> String {
        colour && !text.isEmpty ? "\u{1B}[\(code.rawValue)m\(text)\u{1B}[0m" : text
    }

    /// An application state in its colour (active green, inactive yellow, background blue, terminated red), or
    /// `text` in that colour.
    public func state(_ state: String, showing text: String? = nil) -> String {
        let shown = text ?? state
        switch state {
        case "active": return apply(.green, shown)
        case "inactive": return apply(.yellow, shown)
        case "background": return apply(.blue, shown)
        case "terminated": return apply(.red, shown)
        default: return apply(.dim, shown)
        }
    }

    /// A path with its parent part dimmed: the last component stands out.
    public func path(_ path: String) -> String {
        guard colour else { return path }
        if path == "delegate" { return apply(.cyan, path) }
        guard let cut = path.lastIndex(where: { $0 == "/" || $0 == "." }) else { return path }
        return apply(.dim, String(path[...cut])) + String(path[path.index(after: cut)...])
    }
}

/// The one human format of the trace, for a person at a terminal: `--trace` on a terminal, `lifecyclectl trace`, and
/// the events a `lifecyclectl` request prints.
///
/// One short line per event: its sequence number, the state, the cause when it changes, the target indented by its
/// depth in the tree, the event (with its argument):
///
/// ```
///     58 active     signal:SIGUSR1       root/modes/serving applicationWillResignActive
///     59 active                        root/modes applicationWillResignActive
///     63 active                    delegate applicationWillResignActive
/// ```
///
/// An event of a scene whose line does not name it otherwise (its target is `delegate`, its argument not the scene's
/// identifier) ends with the scene: `[scene:client-7]`.
///
/// Repeats fold: an event identical to the one before (same target, event, state, cause and scene: a view that
/// redraws on a timer) is counted instead of printed, and one line says how many there were when something else
/// happens, or every ``foldInterval`` while they go on. The journal keeps every event with its fields.
public struct TraceFormatter: Sendable {
    /// Colour, or none.
    public var style: TerminalStyle
    /// How often a run of repeats that goes on prints its count.
    public var foldInterval: Duration

    private var lastCause: String?
    private var run: Run?

    private struct Run: Sendable {
        var record: TraceRecord
        var repeats = 0
        var firstRepeat = 0
        var lastRepeat = 0
        var lastPrinted: ContinuousClock.Instant
    }

    /// The width of the sequence column.
    static let sequenceWidth = 6
    /// The width of the state column (`background` and a space).
    static let stateWidth = 11
    /// The width of the cause column; a longer cause pushes its line's target along.
    static let causeWidth = 16

    /// A formatter that folds repeats of one event within `foldInterval`.
    public init(style: TerminalStyle, foldInterval: Duration = .seconds(60)) {
        self.style = style
        self.foldInterval = foldInterval
    }

    /// What to print for the next event: its line, after the count of a run of repeats it ends; nothing while it
    /// repeats the one before. Every line ends with a newline.
    public mutating func format(_ record: TraceRecord, now: ContinuousClock.Instant = .now) -> String {
        if var current = run, Self.repeats(record, current.record) {
            if current.repeats == 0 { current.firstRepeat = record.sequence }
            current.repeats += 1
            current.lastRepeat = record.sequence
            run = current
            guard now - current.lastPrinted >= foldInterval else { return "" }
            return flush(now: now)
        }
        var text = flush(now: now)
        let showCause = record.cause != lastCause
        lastCause = record.cause
        text += line(record, showCause: showCause)
        run = Run(record: record, lastPrinted: now)
        return text
    }

    /// The count of the run of repeats in progress, if it has any (before a line that is not a trace event, or at the
    /// end); the run goes on.
    public mutating func flush(now: ContinuousClock.Instant = .now) -> String {
        guard var current = run, current.repeats > 0 else { return "" }
        let record = current.record
        let range =
            current.firstRepeat == current.lastRepeat
            ? "#\(current.firstRepeat)" : "#\(current.firstRepeat)–#\(current.lastRepeat)"
        let count = current.repeats == 1 ? "once more" : "\(current.repeats) times more"
        let text =
            String(repeating: " ", count: Self.sequenceWidth + 1 + Self.stateWidth + Self.causeWidth + 1)
            + String(repeating: "  ", count: Self.depth(of: record.target))
            + style.apply(.dim, "⋯ \(record.target) \(record.event) \(count) (\(range))") + "\n"
        current.repeats = 0
        current.lastPrinted = now
        run = current
        return text
    }

    /// One event's line, newline included; `showCause` fills the cause column.
    public func line(_ record: TraceRecord, showCause: Bool) -> String {
        var text = style.apply(.dim, Self.padLeft(String(record.sequence), Self.sequenceWidth))
        text += " "
        text += style.state(record.state) + String(repeating: " ", count: max(1, Self.stateWidth - record.state.count))
        let cause = showCause ? record.cause : ""
        text += style.apply(.magenta, cause) + String(repeating: " ", count: max(1, Self.causeWidth - cause.count))
        text += String(repeating: "  ", count: Self.depth(of: record.target))
        text += style.path(record.target)
        text += " "
        text += style.apply(.bold, Self.call(record.event, detail: record.detail))
        if let scene = record.scene, !Self.names(scene, record) {
            text += " " + style.apply(.dim, "[" + Self.scenePrefix + scene + "]")
        }
        text += "\n"
        return text
    }

    /// What a scene's targets start with: `scene:<identifier>` (its delegate), `scene:<identifier>/root/…` (its tree).
    static let scenePrefix = "scene:"

    /// Whether the line of `record` names its scene already: its target is in the scene, or its argument is the
    /// scene's identifier (`application(_:configurationForConnecting:options: client-7)`).
    private static func names(_ scene: String, _ record: TraceRecord) -> Bool {
        if record.detail == scene { return true }
        let prefix = scenePrefix + scene
        guard record.target.hasPrefix(prefix) else { return false }
        let rest = record.target.utf8.dropFirst(prefix.utf8.count)
        return rest.isEmpty || rest.first == UInt8(ascii: "/")
    }

    /// What to print for a log record among the events (`lifecyclectl trace --follow`): the count of a run of repeats
    /// it ends, then one line: the level in the state column, the message, the metadata as `key=value`.
    public mutating func format(
        logLevel level: String,
        message: String,
        metadata: [(key: String, value: String)] = [],
        now: ContinuousClock.Instant = .now
    ) -> String {
        var text = flush(now: now)
        text += String(repeating: " ", count: Self.sequenceWidth + 1)
        let shown: String
        switch level {
        case "warning": shown = style.apply(.yellow, level)
        case "error", "critical": shown = style.apply(.red, level)
        default: shown = style.apply(.dim, level)
        }
        text += shown + String(repeating: " ", count: max(1, Self.stateWidth - level.count))
        text += message.replacingNewlines
        for (key, value) in metadata {
            text += " " + style.apply(.dim, key + "=" + value.replacingNewlines)
        }
        text += "\n"
        return text
    }

    /// The event with its argument, as the call reads: `willMove(toWindow: nil)`, `didAddSubview(progress)`,
    /// `didMoveToWindow(window)`.
    public static func call(_ event: String, detail: String?) -> String {
        guard let detail else { return event }
        if event.hasSuffix("(_:)") { return event.dropLast(3) + detail + ")" }
        if event.hasSuffix(":)") { return event.dropLast(1) + " " + detail + ")" }
        return event + "(" + detail + ")"
    }

    /// How deep a target hangs: the delegate 0, the root controller (or a scene's delegate, `scene:<identifier>`) 1,
    /// each `/` one more, and a controller's root view (`.view`) one below its controller. A scene's identifier counts
    /// for nothing, whatever it holds (`scene:eu.tenant/root` is 2 deep).
    public static func depth(of target: String) -> Int {
        guard target != "delegate" else { return 0 }
        var path = target.utf8[...]
        if target.hasPrefix(scenePrefix) {
            path = path.drop { $0 != UInt8(ascii: "/") }
        }
        var depth = 1
        for character in path where character == UInt8(ascii: "/") { depth += 1 }
        if path.contains(UInt8(ascii: ".")) { depth += 1 }
        return depth
    }

    private static func repeats(_ record: TraceRecord, _ previous: TraceRecord) -> Bool {
        record.event == previous.event && record.target == previous.target && record.state == previous.state
            && record.cause == previous.cause && record.scene == previous.scene
    }

    private static func padLeft(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}

extension String {
    /// One line: a newline or carriage return shown as `\n`, so a record cannot forge another line.
    fileprivate var replacingNewlines: String {
        guard utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) else { return self }
        return String(decoding: utf8.flatMap { $0 == 0x0A || $0 == 0x0D ? Array("\\n".utf8) : [$0] }, as: UTF8.self)
    }
}
