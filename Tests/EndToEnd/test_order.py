#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""One ordered stream (docs/lifecycle.md §7): the journal, the terminal, JSON lines on a pipe and `lifecyclectl trace
--follow` read in the order things happened. A callback's trace entry comes before everything the callback logs and after everything logged
before it was called; the daemon's own lines come after the events they report; LIFECYCLE_SEQ rises in journal order.

The demo logs from callbacks: the worker's `applicationDidEnterBackground` ("worker paused after N jobs"), the
delegate's ("in the background: work paused"), the cache's `didReceiveMemoryWarning` ("cache emptied on memory
warning: …") and the delegate's `applicationDidReceiveMemoryWarning` ("memory warning handled by the tree").
"""

from __future__ import annotations

import json
import os
import re
import signal
from typing import Callable

from harness import (
    MEMORY_WARNING_SIGNAL,
    SANDBOX_CTL,
    CtlBinary,
    DaemonBinary,
    Sandbox,
    lifecycle_events,
    messages,
    wait_for,
)
from peers import BACKGROUND, MEMORY_WARNING, kill_main, start, wait_events
from test_daemon_pty import TRACE_LINE, Terminal, terminal  # noqa: F401 (the fixture)
from test_daemon_terminal import Process

# Each message the demo logs from a callback, and the callback (event, target) that logs it.
LOGGED_BY = {
    "worker paused after": ("applicationDidEnterBackground", "root/worker"),
    "in the background: work paused": ("applicationDidEnterBackground", "delegate"),
    "cache emptied on memory warning": ("didReceiveMemoryWarning", "root/cache"),
    "memory warning handled by the tree": ("applicationDidReceiveMemoryWarning", "delegate"),
}


def logged_by(message: str) -> tuple[str, str] | None:
    return next((callback for prefix, callback in LOGGED_BY.items() if message.startswith(prefix)), None)


def daemon_stream(records: list[dict], pid: str) -> list[dict]:
    """The daemon's own journal entries (trace entries and log lines), in journal order."""
    return [r for r in records if r.get("_PID") == pid]


def check_order(stream: list[dict | tuple[int, str, str] | str]) -> list[tuple[str, tuple[str, str]]]:
    """Checks one ordered stream of trace entries and log lines; returns each demo message with the entry before it.

    Items are journal records (a trace entry has LIFECYCLE_SEQ), or (seq, event, target) for a trace line and str
    for a log line. The trace's numbers rise by one from entry to entry; every message the demo logs from a callback
    comes after that callback's entry and before the next entry.
    """
    last: tuple[int, str, str] | None = None
    found: list[tuple[str, tuple[str, str]]] = []
    for item in stream:
        if isinstance(item, dict):
            if "LIFECYCLE_SEQ" in item:
                item = (int(item["LIFECYCLE_SEQ"]), str(item["LIFECYCLE_EVENT"]), str(item["LIFECYCLE_TARGET"]))
            else:
                item = str(item.get("MESSAGE", ""))
        if isinstance(item, tuple):
            if last is not None:
                assert item[0] == last[0] + 1, f"#{item[0]} {item[1]} {item[2]} follows #{last[0]}"
            last = item
            continue
        callback = logged_by(item)
        if callback is not None:
            assert last is not None and (last[1], last[2]) == callback, (item, last)
            found.append((item, callback))
    return found


def test_in_the_journal_a_callbacks_entry_comes_before_what_it_logs_and_the_sequence_rises_in_journal_order(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit()
    launch_cursor, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    wait_events(sandbox, unit, cursor, len(BACKGROUND), cause="signal:SIGUSR1")
    kill_main(sandbox, unit, MEMORY_WARNING_SIGNAL)
    wait_events(sandbox, unit, cursor, len(MEMORY_WARNING), cause="signal:SIGRTMIN+2")
    kill_main(sandbox, unit, "SIGUSR2")
    wait_for(lambda: sandbox.show(unit)["StatusText"].startswith("active"), message="active again")
    stream = daemon_stream(sandbox.journal(unit, launch_cursor), pid)
    # From the launch's first event on, every trace entry is the next number, in journal order.
    assert int(next(r for r in stream if "LIFECYCLE_SEQ" in r)["LIFECYCLE_SEQ"]) == 1
    found = check_order(stream)
    assert sorted({callback for _, callback in found}) == sorted(set(LOGGED_BY.values())), messages(stream)


def test_terminated_cleanly_is_the_last_line_of_a_clean_exit_after_the_whole_teardown(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit()
    launch_cursor, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    sandbox.systemctl("stop", unit, timeout=60)
    stream = wait_for(
        lambda: (s := daemon_stream(sandbox.journal(unit, launch_cursor), pid))
        and any(r.get("MESSAGE") == "terminated cleanly" for r in s)
        and s,
        message="terminated cleanly",
    )
    check_order(stream)
    assert stream[-1].get("MESSAGE") == "terminated cleanly", messages(stream[-5:])
    # Before it, the whole teardown (its last entry a deinit), then the daemon letting go of the rest (logind's delay
    # inhibitors).
    events = lifecycle_events(stream)
    assert events[-1].event == "deinit", events[-1]


def test_a_hung_callbacks_entry_comes_before_the_stall_warning_and_its_notice_before_the_next_entry(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    """The debug hang blocks in a trace observer, just before the callback runs: its entry, the line that announces
    the block, the warning (from the detector's thread), then, once it returns, the notice and the next entries."""
    unit = daemon_unit("Environment=LIFECYCLE_HANG_IN=applicationDidEnterBackground=1.5", "WatchdogSec=0")
    _, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    wait_events(sandbox, unit, cursor, len(BACKGROUND), cause="signal:SIGUSR1", timeout=20)
    stream = daemon_stream(sandbox.journal(unit, cursor), pid)
    check_order(stream)
    texts = [
        f"{r['LIFECYCLE_EVENT']} {r['LIFECYCLE_TARGET']}" if "LIFECYCLE_SEQ" in r else str(r.get("MESSAGE", ""))
        for r in stream
    ]
    hung = texts.index("applicationDidEnterBackground root/modes/serving")
    assert texts[hung + 1].startswith("debug: blocking in applicationDidEnterBackground"), texts[hung:hung + 5]
    assert texts[hung + 2].startswith("applicationDidEnterBackground root/modes/serving has run for"), texts[hung:]
    assert texts[hung + 3].startswith("applicationDidEnterBackground root/modes/serving returned after"), texts[hung:]
    assert texts[hung + 4] == "applicationDidEnterBackground root/modes", texts[hung:]


def test_in_a_terminal_a_callbacks_line_comes_before_what_it_logs_and_terminated_cleanly_comes_last(
    terminal: Callable[..., Terminal],
) -> None:
    term = terminal()
    wait_for(lambda: term.lines_with("applicationDidBecomeActive", "delegate"), timeout=15, message="launched")
    os.kill(term.pid, signal.SIGUSR1)
    wait_for(lambda: term.lines_with("in the background: work paused"), timeout=10, message="background")
    os.kill(term.pid, signal.SIGRTMIN + 2)
    wait_for(lambda: term.lines_with("memory warning handled by the tree"), timeout=10, message="memory warning")
    os.kill(term.pid, signal.SIGTERM)
    wait_for(lambda: term.poll() is not None, timeout=15, message="exit after SIGTERM")
    stream: list[tuple[int, str, str] | str] = []
    for line in term.output.splitlines():
        if "⋯" in line:
            continue  # the count of folded redraws
        if match := TRACE_LINE.match(line):
            stream.append((int(match.group(1)), match.group(4), match.group(3)))
        elif ": " in line:
            stream.append(line.split(": ", 1)[1])
    # Repeated redraws are folded into a count on a terminal, so the numbers printed may skip: they rise, and the
    # messages sit right after their callbacks' lines.
    numbers = [item[0] for item in stream if isinstance(item, tuple)]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), numbers
    found = check_order(renumbered(stream))
    assert sorted({callback for _, callback in found}) == sorted(set(LOGGED_BY.values())), term.output
    assert stream[-1] == "terminated cleanly", stream[-5:]


def test_in_json_lines_a_callbacks_record_comes_before_what_it_logs_and_terminated_cleanly_comes_last(
    lifecycled_bin: DaemonBinary,
) -> None:
    """Piped, the daemon writes one JSON object a line (docs/operations.md, "Log formats"), through the same ordered
    path as the journal's entries and a terminal's lines; with `--trace` every event is there, numbered from 1."""
    process = Process([str(lifecycled_bin.path()), "--trace"])
    try:
        wait_for(lambda: process.records("applicationDidBecomeActive", "delegate"), timeout=15, message="launched")
        process.popen.send_signal(signal.SIGUSR1)
        wait_for(lambda: process.records("in the background: work paused"), timeout=10, message="background")
        process.popen.send_signal(signal.SIGRTMIN + 2)
        wait_for(lambda: process.records("memory warning handled by the tree"), timeout=10, message="memory warning")
        process.popen.send_signal(signal.SIGTERM)
        assert process.popen.wait(timeout=15) == 0
    finally:
        process.close()
    stream: list[tuple[int, str, str] | str] = []
    for record in process.records():
        assert record.get("level") != "unparsed", record
        if "LIFECYCLE_SEQ" in record:
            assert isinstance(record["LIFECYCLE_SEQ"], int), record
            stream.append((record["LIFECYCLE_SEQ"], record["LIFECYCLE_EVENT"], record["LIFECYCLE_TARGET"]))
        else:
            stream.append(record["message"])
    assert next(item for item in stream if isinstance(item, tuple))[0] == 1
    found = check_order(stream)
    assert sorted({callback for _, callback in found}) == sorted(set(LOGGED_BY.values())), stream
    assert stream[-1] == "terminated cleanly", stream[-5:]


def renumbered(stream: list[tuple[int, str, str] | str]) -> list[tuple[int, str, str] | str]:
    """The stream with its trace lines numbered 1, 2, … in the order printed."""
    result: list[tuple[int, str, str] | str] = []
    count = 0
    for item in stream:
        if isinstance(item, tuple):
            count += 1
            item = (count, item[1], item[2])
        result.append(item)
    return result


def essential(stream: list[tuple[int, str, str] | str]) -> list[tuple[int, str, str] | str]:
    """The callbacks other than redraws (a terminal folds those), and the messages the demo logs from callbacks."""
    return [x for x in stream if (isinstance(x, tuple) and x[1] != "draw") or (isinstance(x, str) and logged_by(x))]


def test_lifecyclectl_trace_follow_shows_the_records_logged_among_the_events_in_their_places(
    sandbox: Sandbox, daemon_unit: Callable[..., str], lifecyclectl_bin: CtlBinary
) -> None:
    unit = daemon_unit()
    lifecyclectl_bin.install(sandbox)
    start(sandbox, unit)
    for name in ("/run/follow.json", "/run/follow.txt"):
        sandbox.remove(name)
    calls = json.loads(sandbox.run(SANDBOX_CTL, "status", "--json").stdout)["control"]["calls"]
    for name, arguments in (("json", "--json"), ("txt", "")):
        sandbox.run(
            "systemd-run", f"--unit=lifecycle-e2e-follow-{name}", "--collect", "--property=Type=exec",
            "/bin/sh", "-c", f"exec {SANDBOX_CTL} trace --follow {arguments} -n 0 >/run/follow.{name}",
        )
    asked = 0

    def followers_registered() -> bool:
        nonlocal asked
        asked += 1
        return json.loads(sandbox.run(SANDBOX_CTL, "status", "--json").stdout)["control"]["calls"] >= calls + asked + 2

    wait_for(followers_registered, timeout=15, message="both followers' Trace calls served")
    kill_main(sandbox, unit, "SIGUSR1")
    kill_main(sandbox, unit, MEMORY_WARNING_SIGNAL)

    def followed(name: str) -> str:
        text = sandbox.run("cat", f"/run/follow.{name}", check=False).stdout
        return text if "memory warning handled by the tree" in text else ""

    lines = [json.loads(line) for line in wait_for(lambda: followed("json"), timeout=15, message="followed").splitlines()]
    stream = [(int(o["seq"]), o["event"], o["target"]) if "seq" in o else o["message"] for o in lines]
    found = check_order(stream)
    assert sorted({callback for _, callback in found}) == sorted(set(LOGGED_BY.values())), lines
    # Each record says which event it follows.
    for line in lines:
        if "seq" not in line:
            assert set(line) >= {"after", "level", "message"}, line
    # The human format: the same order, a record as its level and message.
    text = wait_for(lambda: followed("txt"), timeout=15, message="followed, human format")
    human: list[tuple[int, str, str] | str] = []
    for line in text.splitlines():
        if match := TRACE_LINE.match(line):
            human.append((int(match.group(1)), match.group(4), match.group(3)))
        elif match := re.match(r"^\s+(trace|debug|info|notice|warning|error|critical)\s+(.*)$", line):
            human.append(match.group(2))
    assert essential(human) == essential(stream), text
    for name in ("json", "txt"):
        sandbox.systemctl("stop", f"lifecycle-e2e-follow-{name}", check=False)
