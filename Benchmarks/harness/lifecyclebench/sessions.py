#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""12. Sessions: HelloService's WebSocket endpoint (`[Hello] Sessions=local`) as its clients see it, beside the same
protocol served by plain hummingbird-websocket (hello-plain-websocket: its own Application and port, sessions in
memory). A fleet of real clients (Tests/EndToEnd/ws_sessions.py, Debian's python3-websockets), each sent a message
every 250 ms, through restarts (SIGTERM, then the same binary again) and SIGKILLs of each server: sessions recovered,
messages lost or repeated, reconnect time; and the endpoint's memory per connected and per disconnected session.
Both run in a terminal here (each binds its port; clients retry while it is closed): the socket kept by systemd is
the end-to-end tests' business (Tests/EndToEnd/test_sessions.py)."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from .processes import quoted, start, stop
from .stats import fmt, verdict


def _fleet_module(root):
    sys.path.insert(0, str(Path(root) / "Tests" / "EndToEnd"))
    import ws_sessions  # noqa: E402

    return ws_sessions


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_http(port, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def _rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _run_server(name, command, env, port, fleet_module, args, log, kills):
    """One server through args.session_restarts SIGTERMs and `kills` SIGKILLs under a fleet: its figures."""
    log.append(quoted(command))
    process = start(command, env)
    _wait_http(port)
    idle = _rss_kib(process.pid)
    fleet = fleet_module.Fleet(f"ws://127.0.0.1:{port}/ws", args.sessions, every_ms=250, limit=600).start()
    try:
        fleet.wait_connected(timeout=120)
        time.sleep(2)
        connected = _rss_kib(process.pid)
        for signal_number in [15] * args.session_restarts + [9] * kills:
            marks = fleet.mark()
            process.send_signal(signal_number)
            process.wait(60)
            process = start(command, env)
            _wait_http(port)
            # Every client back: resumed, or (its session lost) with a new one.
            fleet.wait_reconnected(marks, timeout=120)
    finally:
        figures = fleet.stop()
    disconnected_before = _rss_kib(process.pid)
    # Memory per disconnected session: a second fleet connects, then leaves without a bye.
    second = fleet_module.Fleet(f"ws://127.0.0.1:{port}/ws", args.sessions, every_ms=250, limit=120).start()
    try:
        second.wait_connected(timeout=120)
    finally:
        second.stop()
    time.sleep(1)
    disconnected_after = _rss_kib(process.pid)
    stop(process)
    rounds = args.session_restarts + kills
    expected = rounds * args.sessions
    return {
        "name": name,
        "summary": figures.summary(),
        "recovered %": round(100 * figures.resumed / max(1, figures.resumed + figures.lost), 2),
        "expected resumes": expected,
        "rounds": rounds,
        "idle rss KiB": idle,
        "per connected KiB": round((connected - idle) / args.sessions, 1),
        "per disconnected KiB": round((disconnected_after - disconnected_before) / args.sessions, 2),
    }


def measure_sessions(args, tmp, log, raw):
    """The endpoint and the plain baseline, each restarted the same way under the same fleet."""
    fleet_module = _fleet_module(args.root)
    results = {}
    port = _free_port()
    state = Path(tmp) / "sessions-state"
    state.mkdir(exist_ok=True)
    config = Path(tmp) / "hello-sessions.conf"
    config.write_text("[Hello]\nSessions=local\nSessionCloseWindowSec=1\n")
    env = {"STATE_DIRECTORY": str(state)}
    command = [str(args.hello_service), "--config", str(config), "--port", str(port), "--log-format", "json"]
    results["endpoint"] = _run_server("LifecycleKit /ws", command, env, port, fleet_module, args, log, args.session_kills)
    plain = Path(args.hello_service).with_name("hello-plain-websocket")
    if plain.exists():
        port = _free_port()
        results["plain"] = _run_server(
            "plain hummingbird-websocket", [str(plain), str(port)], {}, port, fleet_module, args, log, 0
        )
    if raw is not None:
        Path(raw).mkdir(parents=True, exist_ok=True)
        (Path(raw) / "sessions.txt").write_text(repr(results) + "\n")
    return results


def print_sessions(results):
    for key in ("endpoint", "plain"):
        if key not in results:
            continue
        row = results[key]
        s = row["summary"]
        print(f"{row['name']}: {s['sessions']} sessions, {row['rounds']} restarts/kills: recovered "
              f"{row['recovered %']} %, lost {s['lost']}, gaps {s['gaps']}, duplicates {s['duplicates']}, "
              f"{s['messages']} messages, reconnect p50 {s['reconnect p50 ms']} ms p99 {s['reconnect p99 ms']} ms, "
              f"close codes {s['close codes']}, {row['per connected KiB']} KiB per connected session, "
              f"{row['per disconnected KiB']} KiB per disconnected session")


def report_sessions(add, results, args, beside):
    sessions = results.get("sessions")
    if not sessions:
        return
    add("## 12. Sessions that outlive the process")
    add("")
    add(f"{args.sessions} WebSocket sessions (ws_sessions.py), a message every 250 ms each, through "
        f"{args.session_restarts} SIGTERM restarts and {args.session_kills} SIGKILLs of the endpoint "
        "(`[Hello] Sessions=local`, checkpoint 1 s, close window 1 s), and the same restarts of plain "
        "hummingbird-websocket serving the same protocol.")
    add("")
    add("| server | sessions recovered | lost | gaps | duplicates | reconnect p50 | p99 | per connected | per disconnected |")
    add("|---|---|---|---|---|---|---|---|---|")
    for key in ("endpoint", "plain"):
        if key not in sessions:
            continue
        row = sessions[key]
        s = row["summary"]
        add(f"| {row['name']} | {row['recovered %']} % | {s['lost']} | {s['gaps']} | {s['duplicates']} | "
            f"{fmt(s['reconnect p50 ms'])} ms | {fmt(s['reconnect p99 ms'])} ms | {row['per connected KiB']} KiB | "
            f"{row['per disconnected KiB']} KiB |")
    endpoint = sessions["endpoint"]
    add("")
    add(f"- goal: every session recovered, none lost or repeated: "
        f"{verdict(endpoint['recovered %'] == 100.0 and endpoint['summary']['gaps'] == 0 and endpoint['summary']['duplicates'] == 0)}")
    add("")
