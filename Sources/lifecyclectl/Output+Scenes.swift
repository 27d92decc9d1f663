//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

import LifecycleIPC
import LifecyclePrimitives

// What lifecyclectl prints about scenes: the sessions' table, a scene request's events and outcome, the status row.
extension Output {
    /// `lifecyclectl scenes`: one row per session, its columns as wide as their widest value, then a line that says how
    /// many there are and how many are listed. `filtered`: the call named filters.
    static func scenes(_ reply: JSONObject, filtered: Bool, style: TerminalStyle) -> String {
        let reply = TerminalSafe.escaped(reply)
        let sessions = (reply[ControlProtocol.Field.sessions]?.arrayValue ?? []).compactMap(\.objectValue)
        let matched = reply[ControlProtocol.Field.matched]?.integerValue ?? Int64(sessions.count)
        let total = reply[ControlProtocol.Field.total]?.integerValue ?? matched
        var lines: [String] = []
        if !sessions.isEmpty {
            let header = ["ID", "ROLE", "STATE", "SAVED", "CONFIGURATION", "USER INFO"]
            let rows: [[String]] = sessions.map { session in
                let values = (session["userInfo"]?.objectValue ?? [:]).members
                    .map { "\($0.key)=\($0.value.stringValue ?? "")" }.joined(separator: " ")
                return [
                    session["id"]?.stringValue ?? "?",
                    session["role"]?.stringValue ?? "?",
                    session["state"]?.stringValue ?? "?",
                    session["savedState"]?.boolValue == true ? "yes" : "no",
                    session["configuration"]?.stringValue ?? "—",
                    values,
                ]
            }
            let widths = header.indices.map { column in
                rows.reduce(header[column].count) { max($0, $1[column].count) }
            }
            func line(_ cells: [String], styled: (Int, String) -> String) -> String {
                var text = ""
                for (column, cell) in cells.enumerated() {
                    let last = column == cells.count - 1
                    let gap = last ? 0 : widths[column] - cell.count + 2
                    text += styled(column, cell) + String(repeating: " ", count: gap)
                }
                while text.hasSuffix(" ") { text.removeLast() }
                return text
            }
            lines.append(line(header) { _, cell in style.apply(.bold, cell) })
            for row in rows {
                lines.append(line(row) { column, cell in column == 2 ? sceneState(cell, style) : cell })
            }
        }
        lines.append(sceneSummary(listed: sessions.count, matched: matched, total: total, filtered: filtered))
        return lines.joined(separator: "\n") + "\n"
    }

    /// `2 sessions`, `2 of 5 sessions match`, `10000 of 12000 matching sessions listed (of 20000); narrow with …`.
    static func sceneSummary(listed: Int, matched: Int64, total: Int64, filtered: Bool) -> String {
        if total == 0 { return "no scene sessions" }
        if matched == 0 { return "no session matches (of \(plural(total, "session")))" }
        var text = filtered ? "\(matched) of \(plural(total, "session")) match" : plural(total, "session")
        if Int64(listed) < matched {
            text += "; the first \(listed) listed: narrow with --role, --state, --user-info or --prefix"
        }
        return text
    }

    /// A scene's state in the colour of the application state it resembles: foregroundActive green, foregroundInactive
    /// yellow, background blue, unattached dim.
    static func sceneState(_ state: String, _ style: TerminalStyle) -> String {
        let like: String =
            switch state {
            case "foregroundActive": "active"
            case "foregroundInactive": "inactive"
            case "background": "background"
            default: "unattached"
            }
        return style.state(like, showing: state)
    }

    /// `GetStatus`'s `scenes`: `5 sessions; 3 connected: 1 foregroundActive, 2 background`.
    static func sceneCounts(_ scenes: JSONObject) -> String {
        let sessions = scenes[ControlProtocol.Field.sessions]?.integerValue ?? 0
        let states = ["foregroundActive", "foregroundInactive", "background"]
            .map { ($0, scenes[$0]?.integerValue ?? 0) }
            .filter { $0.1 > 0 }
        let connected = states.reduce(Int64(0)) { $0 + $1.1 }
        guard connected > 0 else { return "\(plural(sessions, "session")); none connected" }
        return "\(plural(sessions, "session")); \(connected) connected: "
            + states.map { "\($0.1) \($0.0)" }.joined(separator: ", ")
    }

    /// The events a scene request caused, then a line that says how it ended: `background client-7: done (4 events,
    /// #12–#15); scene background, application active`.
    static func sceneRequest(_ reply: JSONObject, style: TerminalStyle) -> String {
        let reply = TerminalSafe.escaped(reply)
        var formatter = TraceFormatter(style: style)
        var text = ""
        let events = (reply[ControlProtocol.Field.events]?.arrayValue ?? [])
            .compactMap { $0.objectValue.flatMap(TraceRecord.init(json:)) }
        for record in events { text += formatter.format(record) }
        text += formatter.flush()
        let request = reply[ControlProtocol.Field.request]?.stringValue ?? "request"
        let id = reply[ControlProtocol.Field.id]?.stringValue ?? "?"
        let sceneState = self.sceneState(reply[ControlProtocol.Field.sceneState]?.stringValue ?? "?", style)
        let state = style.state(reply[ControlProtocol.Field.state]?.stringValue ?? "?")
        let omitted = reply["eventsOmitted"]?.integerValue ?? 0
        var count = plural(Int64(events.count) + omitted, "event")
        if let first = events.first, let last = events.last { count += ", #\(first.sequence)–#\(last.sequence)" }
        if omitted > 0 { count += "; \(omitted) not listed" }
        if reply["outcome"]?.stringValue == "noChange" {
            text += "scene \(id) is \(sceneState) already: \(request) changed nothing; application \(state)\n"
        } else {
            text += "\(request) \(id): done (\(count)); scene \(sceneState), application \(state)\n"
        }
        return text
    }
}
