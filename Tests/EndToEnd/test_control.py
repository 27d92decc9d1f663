#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""The control socket under a real systemd: lifecyclectl prints the demo's tree and status, requests go through with
LIFECYCLE_CAUSE=control and print the events they caused, a peer of another uid is refused (and one of the
configured group is not), a dropped request says why, the live trace streams, and 1,000 malformed requests plus
200 concurrent connections leave the daemon answering signals with the whole trace."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Callable

import pytest

from harness import (
    DEMO_TREE_PREORDER,
    SANDBOX_BIN,
    SANDBOX_CTL,
    CtlBinary,
    LifecycleEvent,
    Sandbox,
    lifecycle_events,
    pairs,
    signal_cause,
    wait_for,
)
from peers import BACKGROUND, FOREGROUND, kill_main, start, wait_events

SOCKET = "/run/lifecycled/control"
LOAD_SCRIPT = Path(__file__).resolve().parent / "control_load.py"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def ctl(sandbox: Sandbox, lifecyclectl_bin: CtlBinary) -> Callable[..., object]:
    """Runs lifecyclectl inside the sandbox (as root unless `prefix` says otherwise); returns the finished process."""
    lifecyclectl_bin.install(sandbox)

    def run(*arguments: str, prefix: list[str] | None = None, check: bool = True, timeout: float = 60):
        return sandbox.run(*(prefix or []), SANDBOX_CTL, *arguments, check=check, timeout=timeout)

    return run


def control_events_through(sandbox: Sandbox, unit: str, cursor: str, last_seq: int) -> list[LifecycleEvent]:
    """The trace events with the cause `control` after the cursor, read once the journal holds event `last_seq`.

    The daemon hands a request's trace lines to its journal writer before it replies, but a line journald does not
    take at once waits in the writer's queue: the reply may reach lifecyclectl before journald has the last lines.
    """
    return wait_for(
        lambda: (e := lifecycle_events(sandbox.journal(unit, cursor))) and max(x.seq for x in e) >= last_seq
        and [x for x in e if x.cause == "control"],
        message=f"trace event {last_seq} in the journal",
    )


def printed_events(output: str) -> list[tuple[str, str]]:
    """(event, target) of the trace lines lifecyclectl printed: the last two words of each numbered line."""
    found = []
    for line in output.splitlines():
        words = line.split()
        if len(words) >= 4 and words[0].isdigit():
            found.append((words[-1], words[-2]))
    return found


def test_tree_prints_the_demo_tree_and_status_its_state(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    unit = daemon_unit()
    _, shown = start(sandbox, unit)
    tree = ctl("tree").stdout
    lines = tree.splitlines()
    # One line per controller, in pre-order, indented by depth as UIKit's hierarchy dump does.
    assert len(lines) == len(DEMO_TREE_PREORDER), tree
    for line, path in zip(lines, DEMO_TREE_PREORDER):
        depth = path.count("/")
        assert line.startswith("   | " * depth + "<"), line
        assert f": {path}>, state: appeared, view: (0 0; 0 0)" in line, line
    # The mode's status counts its generations since the first launch (the saved state carries the count).
    assert 'status: "mode serving #1"' in lines[-1], lines[-1]

    views = ctl("tree", "--views").stdout
    assert "<LabelView: root/worker.view/progress; frame = (0 0; 0 0)>" in views, views

    nodes = json.loads(ctl("tree", "--views", "--json").stdout)["nodes"]
    assert [n["path"] for n in nodes if n["kind"] == "controller"] == DEMO_TREE_PREORDER
    assert all(n["inWindow"] for n in nodes if n["kind"] == "view")

    status = json.loads(ctl("status", "--json").stdout)
    assert status["state"] == "active"
    assert str(status["pid"]) == shown["MainPID"]
    assert status["controllers"] == len(DEMO_TREE_PREORDER)
    assert status["control"]["socket"] == SOCKET
    assert status["watchdog"]["enabled"] is True
    human = ctl("status").stdout
    assert f"(pid {shown['MainPID']})" in human and "State: active" in human, human

    # The socket lives in the unit's RuntimeDirectory=, which belongs to the service's user; anyone may connect, the
    # daemon decides who may talk.
    assert sandbox.run("stat", "-c", "%a %U", SOCKET).stdout.split() == ["666", "lifecycled"]
    assert sandbox.run("stat", "-c", "%U", "/run/lifecycled").stdout.strip() == "lifecycled"


def test_background_prints_the_transition_and_the_journal_has_it_with_cause_control(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    unit = daemon_unit()
    start(sandbox, unit)
    cursor = sandbox.cursor()
    done = ctl("background")
    assert printed_events(done.stdout) == BACKGROUND, done.stdout
    # The 12 lifecycle events, then the state preserved within the same transition (docs/restoration.md): the
    # delegate's shouldSaveApplicationState and willEncodeRestorableStateWith, each controller's
    # encodeRestorableState(with:) in pre-order: 18 events, numbered without a gap.
    printed = done.stdout.splitlines()
    assert [line.split()[-1] for line in printed[-7:-1]] == [
        "application(_:shouldSaveApplicationState:)", "application(_:willEncodeRestorableStateWith:)",
    ] + ["encodeRestorableState(with:)"] * 4, done.stdout
    summary = re.fullmatch(r"background: done \((\d+) events, #(\d+)–#(\d+)\); now background", printed[-1])
    assert summary, done.stdout
    count, first, last = map(int, summary.groups())
    assert count == 18 == last - first + 1, done.stdout
    assert "control" in done.stdout.splitlines()[0]
    # The journal has the same transition, with the cause control, numbered as printed.
    journal = control_events_through(sandbox, unit, cursor, last)
    assert pairs(journal) == BACKGROUND
    assert [e.seq for e in journal] == list(range(first, last + 1))

    # JSON: the same events, numbered as the journal numbers them.
    cursor = sandbox.cursor()
    reply = json.loads(ctl("foreground", "--json").stdout)
    assert reply["outcome"] == "performed" and reply["state"] == "active" and reply["events"], reply
    journal = control_events_through(sandbox, unit, cursor, reply["events"][-1]["seq"])
    assert [(e["event"], e["target"], e["seq"]) for e in reply["events"]] == [(e.event, e.target, e.seq) for e in journal]
    assert pairs(journal) == FOREGROUND

    # Asking for the state it is in changes nothing and succeeds.
    same = ctl("foreground")
    assert "active already" in same.stdout, same.stdout
    assert sandbox.show(unit)["StatusText"].startswith("active")


def test_a_peer_of_another_uid_is_refused_and_one_of_the_configured_group_is_not(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object], config: Callable[[str], list[str]]
) -> None:
    unit = daemon_unit()
    start(sandbox, unit)
    cursor = sandbox.cursor()
    refused = ctl("status", prefix=NOBODY, check=False)
    assert refused.returncode == 77, (refused.stdout, refused.stderr)
    assert "refused the connection" in refused.stderr and "uid 65534" in refused.stderr, refused.stderr
    records = wait_for(
        lambda: [r for r in sandbox.journal(unit, cursor) if "refused a control connection" in str(r.get("MESSAGE"))],
        message="the daemon's notice about the refusal",
    )
    assert "uid 65534" in str(records[0]["MESSAGE"])
    # A request from it never reaches the application.
    assert ctl("background", prefix=NOBODY, check=False).returncode == 77
    assert not [e for e in lifecycle_events(sandbox.journal(unit, cursor)) if e.cause == "control"]

    # [Control] Group= lets that group in (here: gid 65534's group, nogroup).
    sandbox.systemctl("stop", unit)
    daemon_unit(*config("[Control]\nGroup=65534\n"))
    start(sandbox, unit)
    allowed = ctl("status", "--json", prefix=NOBODY, check=False)
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["state"] == "active"
    other = ctl("status", prefix=["setpriv", "--reuid=65534", "--regid=100", "--clear-groups"], check=False)
    assert other.returncode == 77, other.stderr


def test_a_dropped_request_exits_1_and_says_why(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    # Termination waits for a 4 s background task: the daemon still answers, and refuses to come back.
    unit = daemon_unit("ExecStart=", f"ExecStart={SANDBOX_BIN} --trace --termination-task-seconds 4")
    start(sandbox, unit)
    cursor = sandbox.cursor()
    terminated = ctl("terminate")
    assert terminated.stdout.splitlines()[-1].startswith("terminate: done"), terminated.stdout
    assert ("applicationWillTerminate", "delegate") in printed_events(terminated.stdout)
    dropped = ctl("foreground", check=False)
    assert dropped.returncode == 1, (dropped.stdout, dropped.stderr)
    assert dropped.stderr.strip() == "lifecyclectl: foreground was dropped: the application has terminated"
    tasks = json.loads(ctl("tasks", "--json").stdout)["tasks"]
    assert [t["name"] for t in tasks] == ["flush"] and tasks[0]["budget"] == "termination", tasks
    # In the journal too (once journald has taken the transition's lines: see control_events_through).
    wait_for(
        lambda: ("applicationWillTerminate", "delegate", "control")
        in [(e.event, e.target, e.cause) for e in lifecycle_events(sandbox.journal(unit, cursor))],
        message="applicationWillTerminate on the delegate, cause control, in the journal",
    )
    # The task ends, the daemon exits 0 and the unit is inactive, not failed.
    wait_for(lambda: sandbox.show(unit)["ActiveState"] == "inactive", timeout=20, message="the unit to stop")
    assert sandbox.show(unit)["Result"] == "success"
    gone = ctl("status", check=False)
    assert gone.returncode == 69 and "cannot reach lifecycled.service" in gone.stderr, gone.stderr


def test_trace_follow_streams_the_live_trace(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    unit = daemon_unit()
    start(sandbox, unit)
    # Without --follow: the events the daemon kept, the launch among them, in the human format.
    recent = ctl("trace", "-n", "200").stdout
    assert ("applicationDidBecomeActive", "delegate") in printed_events(recent), recent
    sandbox.remove("/run/trace.out")
    # The daemon counts each call it serves, then serves it at once: once the calls counted include the follower's
    # Trace besides every GetStatus asked here, the follower is registered, and the signal's events reach it live.
    calls = json.loads(ctl("status", "--json").stdout)["control"]["calls"]
    sandbox.run(
        "systemd-run", "--unit=lifecycle-e2e-trace", "--collect", "--property=Type=exec",
        "/bin/sh", "-c", f"exec {SANDBOX_CTL} trace --follow --json -n 0 --timeout 1 >/run/trace.out",
    )
    asked = 0

    def follower_registered() -> bool:
        nonlocal asked
        asked += 1
        return json.loads(ctl("status", "--json").stdout)["control"]["calls"] >= calls + asked + 1

    wait_for(follower_registered, timeout=15, message="the follower's Trace call served")
    kill_main(sandbox, unit, "SIGUSR1")

    def followed() -> list[dict]:
        text = sandbox.run("cat", "/run/trace.out", check=False).stdout
        # Event objects; the records logged among them (LogRecord, with `after` and no `seq`) are left out here.
        events = [e for e in (json.loads(line) for line in text.splitlines() if line.strip()) if "seq" in e]
        return events if len([e for e in events if e["cause"] == "signal:SIGUSR1"]) >= len(BACKGROUND) else []

    events = wait_for(followed, timeout=15, message="the followed trace of SIGUSR1")
    assert [(e["event"], e["target"]) for e in events if e["cause"] == "signal:SIGUSR1"] == BACKGROUND
    # In the background the demo is idle: nothing to send for longer than --timeout, which bounds finding the socket
    # and connecting, not the stream (a follower used to end with "no reply within 1 s", exit 75).
    time.sleep(2.5)
    assert sandbox.show("lifecycle-e2e-trace", "ActiveState")["ActiveState"] == "active", sandbox.run(
        "cat", "/run/trace.out", check=False
    ).stdout
    sandbox.systemctl("stop", "lifecycle-e2e-trace", check=False)


def test_malformed_requests_and_200_connections_leave_the_daemon_answering_signals(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    unit = daemon_unit()
    start(sandbox, unit)
    sandbox.write_file("/run/control_load.py", LOAD_SCRIPT.read_text(), mode=0o755)
    sandbox.remove("/run/control-load.json", "/run/control-load.ready")
    sandbox.run(
        "systemd-run", "--unit=lifecycle-e2e-control-load", "--collect", "--property=Type=exec",
        "/usr/bin/python3", "/run/control_load.py", "--socket", SOCKET, "--malformed", "1000", "--connections", "200",
        "--hold", "6", "--ready", "/run/control-load.ready", "--out", "/run/control-load.json",
    )
    wait_for(
        lambda: sandbox.run("test", "-e", "/run/control-load.ready", check=False).returncode == 0,
        timeout=60,
        message="1,000 malformed requests answered and 200 connections open",
    )
    # While the connections are held open: a signal still gets the whole transition, at once.
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    events = wait_events(sandbox, unit, cursor, len(BACKGROUND), signal_cause("SIGUSR1"), timeout=10)
    assert pairs(events) == BACKGROUND

    summary = json.loads(
        wait_for(
            lambda: sandbox.run("cat", "/run/control-load.json", check=False).stdout, timeout=60, message="the summary"
        )
    )
    malformed = summary["malformed"]
    # Every malformed request got an error reply or a closed connection; none went unanswered.
    assert malformed.get("error", 0) + malformed.get("closed", 0) == 1000, summary
    assert "timeout" not in malformed and "reply" not in malformed, summary
    assert malformed["error"] >= 600 and malformed["closed"] >= 200, summary
    connections = summary["connections"]
    # The first 128 are served; the rest are closed at once, none left hanging.
    assert connections.get("reply", 0) + connections.get("closed", 0) == 200, summary
    assert connections.get("reply", 0) >= 100 and "timeout" not in connections, summary

    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR2")
    events = wait_events(sandbox, unit, cursor, len(FOREGROUND), signal_cause("SIGUSR2"), timeout=10)
    assert pairs(events) == FOREGROUND
    status = json.loads(ctl("status", "--json").stdout)
    control = status["control"]
    assert status["state"] == "active"
    assert control["closedMalformed"] + control["closedOversized"] >= 200, control
    assert control["overLimit"] >= 1 and control["errorReplies"] >= 500, control
    assert sandbox.show(unit)["NRestarts"] == "0"


def test_set_log_level_and_ping_through_systemds_service_interface(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    unit = daemon_unit()
    start(sandbox, unit)
    client = (
        "import json, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
        "s.sendall(json.dumps({'method': sys.argv[2], 'parameters': json.loads(sys.argv[3])}).encode() + b'\\0')\n"
        "data = b''\n"
        "while b'\\0' not in data: data += s.recv(65536)\n"
        "print(data.split(b'\\0')[0].decode())\n"
    )

    def call(method: str, parameters: dict, prefix: list[str] | None = None) -> dict:
        done = sandbox.run(*(prefix or []), "/usr/bin/python3", "-c", client, SOCKET, method, json.dumps(parameters))
        return json.loads(done.stdout)

    assert call("io.systemd.service.Ping", {}) == {"parameters": {}}
    info = call("org.varlink.service.GetInfo", {})["parameters"]
    assert info["interfaces"] == ["org.varlink.service", "io.lifecyclekit.Lifecycle", "io.systemd.service"]
    assert call("io.systemd.service.SetLogLevel", {"level": 4}) == {"parameters": {}}
    # At warning, the trace's info records stay out of the journal; the transition still happens.
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    wait_for(lambda: "background" in sandbox.show(unit)["StatusText"], message="the background state")
    time.sleep(0.5)
    assert not lifecycle_events(sandbox.journal(unit, cursor))
    assert call("io.systemd.service.SetLogLevel", {"level": 7}) == {"parameters": {}}
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR2")
    assert pairs(wait_events(sandbox, unit, cursor, len(FOREGROUND), signal_cause("SIGUSR2"))) == FOREGROUND
    assert call("io.systemd.service.Reload", {}) == {"parameters": {}}
