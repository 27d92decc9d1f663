//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecyclePrimitives

#if canImport(Glibc)
import Glibc
#endif

/// What lifecyclectl prints for a person: the status page, the tree (UIKit's hierarchy dump), the background tasks,
/// and events in the trace's one human format (``TraceFormatter``). Pure functions of the replies, for tests.
enum Output {
    // MARK: Status

    /// `lifecyclectl status`, in the manner of `systemctl status`.
    static func status(_ reply: JSONObject, unit: String?, style: TerminalStyle) -> String {
        let reply = TerminalSafe.escaped(reply)
        let program = reply["program"]?.stringValue ?? unit ?? "?"
        let version = reply["version"]?.stringValue ?? ""
        let state = reply["state"]?.stringValue ?? "?"
        var lines: [String] = []
        let dot = style.state(state, showing: "●")
        var title = "\(dot) \(program)"
        if !version.isEmpty { title += " \(version)" }
        title += " (pid \(reply["pid"]?.integerValue ?? 0)), up \(duration(reply["uptimeSec"]?.doubleValue ?? 0))"
        if let unit { title += " — \(unit)" }
        lines.append(style.apply(.bold, title))
        func row(_ label: String, _ value: String) {
            lines.append(String(repeating: " ", count: max(0, 10 - label.count)) + label + ": " + value)
        }
        let statusText = reply["statusText"]?.stringValue ?? ""
        let detail = statusText.hasPrefix(state + ": ") ? String(statusText.dropFirst(state.count + 2)) : ""
        row("State", style.state(state) + (detail.isEmpty ? "" : " — \(detail)"))
        row(
            "Tree",
            "\(plural(reply["controllers"]?.integerValue ?? 0, "controller")), "
                + "\(plural(reply["views"]?.integerValue ?? 0, "view")) loaded; trace at #\(reply["traceSeq"]?.integerValue ?? 0)"
        )
        let tasks = reply["backgroundTasks"]?.arrayValue ?? []
        if tasks.isEmpty {
            row("Tasks", "no background tasks")
        } else {
            for (index, task) in tasks.enumerated() {
                row(index == 0 ? "Tasks" : "", taskLine(task.objectValue ?? [:]))
            }
        }
        if let scenes = reply["scenes"]?.objectValue {
            row("Scenes", sceneCounts(scenes))
        }
        if let supervision = reply["supervision"]?.objectValue, let count = supervision["tasks"]?.integerValue, count > 0 {
            var line = "\(plural(count, "lifecycle task")), \(plural(supervision["failures"]?.integerValue ?? 0, "failure")), "
                + "\(plural(supervision["restarts"]?.integerValue ?? 0, "restart"))"
            if let exhausted = supervision["exhausted"]?.integerValue, exhausted > 0 {
                line += "; \(exhausted) past its restart policy"
            }
            row("Supervised", line)
        }
        let inhibitors = (reply["inhibitors"]?.arrayValue ?? []).compactMap { $0["what"]?.stringValue }
        let logind = reply["logind"]?.stringValue ?? "off"
        let locks = inhibitors.isEmpty ? "no inhibitor held" : "holding \(inhibitors.joined(separator: " and ")) delay locks"
        row("Logind", logind == "off" ? "not watched" : "\(logind), \(locks)")
        let memory = reply["memoryPressure"]?.objectValue ?? [:]
        if memory["watched"]?.boolValue == true, let path = memory["path"]?.stringValue {
            let source = memory["source"]?.stringValue.map { " (\($0))" } ?? ""
            let trigger = memory["trigger"]?.stringValue.map { "PSI \($0) on " } ?? ""
            let interval = duration(memory["minimumIntervalSec"]?.doubleValue ?? 0)
            row("Memory", "\(trigger)\(path)\(source), at most one warning per \(interval)")
        } else {
            row("Memory", "pressure not watched")
        }
        let watchdog = reply["watchdog"]?.objectValue ?? [:]
        var watch =
            watchdog["enabled"]?.boolValue == true
            ? "pinged every \(duration((watchdog["intervalSec"]?.doubleValue ?? 0) / 2)) (WatchdogSec=\(duration(watchdog["intervalSec"]?.doubleValue ?? 0)))"
            : "off"
        if let stall = watchdog["stallWarningSec"]?.doubleValue { watch += "; stalls named after \(duration(stall))" }
        row("Watchdog", watch)
        let control = reply["control"]?.objectValue ?? [:]
        let connections = control["connections"]?.integerValue ?? 0
        let refused = control["refused"]?.integerValue ?? 0
        let closed = ["closedMalformed", "closedOversized", "closedIdle", "closedBacklog", "overLimit"]
            .reduce(Int64(0)) { $0 + (control[$1]?.integerValue ?? 0) }
        row(
            "Control",
            "\(control["socket"]?.stringValue ?? "?"), \(plural(connections, "connection")) open; "
                + "\(control["calls"]?.integerValue ?? 0) calls, \(refused) refused, \(closed) closed for limits"
        )
        let listeners = (reply["listeners"]?.arrayValue ?? []).compactMap(\.objectValue)
        for (index, listener) in listeners.enumerated() {
            row(index == 0 ? "Listeners" : "", listenerLine(listener))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// One listener: `http 127.0.0.1:8080 — serving, from the socket unit (handed over by pid 812)`.
    static func listenerLine(_ listener: JSONObject) -> String {
        let origin: String =
            switch listener["origin"]?.stringValue {
            case "socket-unit": "from the socket unit"
            case "fd-store": "from the file descriptor store"
            case "bound": "bound by the service"
            case let other?: other
            case nil: "?"
            }
        var line = "\(listener["name"]?.stringValue ?? "?") \(listener["address"]?.stringValue ?? "?") — "
            + "\(listener["state"]?.stringValue ?? "?"), \(origin)"
        if let pid = listener["handedOverBy"]?.integerValue { line += " (handed over by pid \(pid))" }
        return line
    }

    /// An upgrade's outcome: `lifecycled: upgraded from pid 812 to pid 977 (serving after 0.41 s)`.
    static func upgrade(_ reply: JSONObject, target: String) -> String {
        let previous = reply["previousPid"]?.integerValue ?? 0
        let pid = reply["pid"]?.integerValue ?? 0
        let ready = reply["readySec"]?.doubleValue ?? 0
        return "\(TerminalSafe.escaped(target)): upgraded from pid \(previous) to pid \(pid) (serving after \(duration(ready)))\n"
    }

    /// One background task: `1 flush — termination, 4.2 s left`.
    static func taskLine(_ task: JSONObject) -> String {
        var line = "\(task["id"]?.integerValue ?? 0) \(task["name"]?.stringValue ?? "?")"
        if let budget = task["budget"]?.stringValue, let left = task["remainingSec"]?.doubleValue {
            line += " — \(budget), \(duration(left)) left"
        } else {
            line += " — no budget running (the application is in the foreground)"
        }
        return line
    }

    /// `lifecyclectl tasks`: the background tasks, then the lifecycle-bound work with its supervision.
    static func tasks(_ reply: JSONObject) -> String {
        let reply = TerminalSafe.escaped(reply)
        let tasks = reply["tasks"]?.arrayValue ?? []
        var lines: [String] = []
        if tasks.isEmpty {
            lines.append("no background tasks")
        } else {
            lines.append("  ID  NAME                    BUDGET            LEFT")
            for task in tasks.compactMap(\.objectValue) {
                let id = String(task["id"]?.integerValue ?? 0)
                let name = task["name"]?.stringValue ?? "?"
                let budget = task["budget"]?.stringValue ?? "—"
                let left = task["remainingSec"]?.doubleValue.map(duration) ?? "—"
                lines.append(pad(id, 4, right: true) + "  " + pad(name, 24) + pad(budget, 18) + left)
            }
        }
        let supervised = (reply["lifecycleTasks"]?.arrayValue ?? []).compactMap(\.objectValue)
        if !supervised.isEmpty {
            lines.append("")
            lines.append("TASK                          STATE       RUNS  FAILED  RESTARTS  POLICY")
            for task in supervised {
                let name = "\(task["controller"]?.stringValue ?? "?"): \(task["name"]?.stringValue ?? "?")"
                lines.append(
                    pad(name, 30) + pad(task["state"]?.stringValue ?? "?", 12)
                        + pad(String(task["runs"]?.integerValue ?? 0), 6)
                        + pad(String(task["failures"]?.integerValue ?? 0), 8)
                        + pad(String(task["restarts"]?.integerValue ?? 0), 10) + (task["policy"]?.stringValue ?? "?")
                )
                if let error = task["lastError"]?.stringValue { lines.append("    last error: \(error)") }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Tree

    /// `lifecyclectl tree`: the hierarchy as UIKit's `_printHierarchy` and `recursiveDescription` print it, a node per
    /// line, `   | ` per level.
    /// `scene`: the scene whose tree was asked for (`tree --scene`), if one was.
    static func tree(_ reply: JSONObject, scene: String? = nil, style: TerminalStyle) -> String {
        let nodes = (reply["nodes"]?.arrayValue ?? []).compactMap(\.objectValue)
        guard !nodes.isEmpty else {
            guard let scene else { return "no window: the tree is empty\n" }
            return "scene \(TerminalSafe.escaped(scene)) is not connected: no tree (its session keeps what its next connection restores)\n"
        }
        var lines: [String] = []
        for raw in nodes {
            let node = TerminalSafe.escaped(raw)
            // A depth from the daemon is clamped: negative would trap, huge would print without end.
            let depth = Int(clamping: min(max(node["depth"]?.integerValue ?? 0, 0), maximumDepthShown))
            let indent = String(repeating: "   | ", count: depth)
            let type = style.apply(.bold, node["type"]?.stringValue ?? "?")
            let path = style.path(node["path"]?.stringValue ?? "?")
            var line: String
            if node["kind"]?.stringValue == "controller" {
                let appearance = node["appearance"]?.stringValue ?? "?"
                line = "\(indent)<\(type): \(path)>, state: \(appearanceStyle(appearance, style))"
                if node["viewLoaded"]?.boolValue == true {
                    line += ", view: \(frame(node["frame"]?.objectValue))"
                } else {
                    line += ", view: " + style.apply(.dim, "not loaded")
                }
                if let presentation = node["presentation"]?.stringValue { line += ", presented: \(presentation)" }
            } else {
                line = "\(indent)<\(type): \(path); frame = \(frame(node["frame"]?.objectValue))>"
                if node["inWindow"]?.boolValue == false { line += ", " + style.apply(.dim, "not in window") }
            }
            if let status = raw["status"]?.stringValue, !status.isEmpty {
                // Quoted as JSON (the daemon's own text, escapes and all), with nothing unsafe left in it.
                line += ", status: " + style.apply(.cyan, TerminalSafe.json(.string(status)))
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A frame as UIKit prints one: `(x y; width height)`.
    static func frame(_ frame: JSONObject?) -> String {
        let values = ["x", "y", "width", "height"].map { number(frame?[$0]?.doubleValue ?? 0) }
        return "(\(values[0]) \(values[1]); \(values[2]) \(values[3]))"
    }

    private static func appearanceStyle(_ appearance: String, _ style: TerminalStyle) -> String {
        switch appearance {
        case "appeared": style.apply(.green, appearance)
        case "appearing", "disappearing": style.apply(.yellow, appearance)
        default: style.apply(.dim, appearance)
        }
    }

    // MARK: Requests

    /// The events a request caused, then a line that says how it ended.
    static func request(_ reply: JSONObject, target: String, style: TerminalStyle) -> String {
        let reply = TerminalSafe.escaped(reply)
        var formatter = TraceFormatter(style: style)
        var text = ""
        let events = (reply["events"]?.arrayValue ?? []).compactMap { $0.objectValue.flatMap(TraceRecord.init(json:)) }
        for record in events { text += formatter.format(record) }
        text += formatter.flush()
        let request = reply["request"]?.stringValue ?? "request"
        let state = reply["state"]?.stringValue ?? "?"
        let omitted = reply["eventsOmitted"]?.integerValue ?? 0
        var count = plural(Int64(events.count) + omitted, "event")
        if let first = events.first, let last = events.last { count += ", #\(first.sequence)–#\(last.sequence)" }
        if omitted > 0 { count += "; \(omitted) not listed" }
        switch reply["outcome"]?.stringValue {
        case "noChange":
            text += "\(target) is \(style.state(state)) already: \(request) changed nothing\n"
        case "coalesced":
            text += "\(request) was folded into the same request already in progress (\(count)); now \(style.state(state))\n"
        default:
            text += "\(request): done (\(count)); now \(style.state(state))\n"
        }
        return text
    }

    // MARK: Helpers

    /// `1 controller`, `3 views`.
    static func plural(_ count: Int64, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }

    /// The deepest indentation `tree` prints; deeper nodes are shown at it.
    static let maximumDepthShown: Int64 = 256

    /// Seconds as a person reads them: `850 ms`, `4.2 s`, `3 min 5 s`, `2 h 1 min`. What the daemon sends is clamped
    /// to 0…10¹² s (a negative, huge or infinite figure would trap converting to an integer).
    static func duration(_ seconds: Double) -> String {
        let seconds = seconds.isFinite ? min(max(seconds, 0), 1e12) : 0
        if seconds < 1 { return "\(Int((seconds * 1000).rounded())) ms" }
        if seconds < 60 {
            let tenths = Int((seconds * 10).rounded())
            return tenths % 10 == 0 ? "\(tenths / 10) s" : "\(tenths / 10).\(tenths % 10) s"
        }
        let total = Int(seconds)
        if total < 3600 { return "\(total / 60) min \(total % 60) s" }
        if total < 86_400 { return "\(total / 3600) h \(total % 3600 / 60) min" }
        return "\(total / 86_400) d \(total % 86_400 / 3600) h"
    }

    /// A number without a needless `.0`.
    static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - text.count))
        return right ? fill + text : text + fill
    }
}
