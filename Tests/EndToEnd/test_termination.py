#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Termination with background time: `systemctl stop` waits for a background task begun in
applicationWillTerminate, past TimeoutStopSec= (the daemon sends EXTEND_TIMEOUT_USEC= while it runs), and a task
that outlives [BackgroundTasks] BudgetSec= gets its expiration handler before the process exits."""

from __future__ import annotations

import time
from typing import Callable

from harness import SANDBOX_BIN, Sandbox, messages, wait_for
from peers import daemon_messages, monotonic_seconds, records_with, start

# "<unit>: Deactivated successfully." (exit status 0, Result=success) and "<unit>: Failed with result '...'."
UNIT_DEACTIVATED_MESSAGE_ID = "7ad2d189f7e94e70a38c781354912448"
UNIT_FAILED_MESSAGE_ID = "d9b373ed55a64feb8242e02dbe79a49c"


def systemd_verdict(sandbox: Sandbox, unit: str, cursor: str) -> list[dict]:
    """PID 1's records about the unit after the cursor, once its final verdict is in."""
    def verdict() -> list[dict]:
        records = [r for r in sandbox.journal(unit, cursor) if r.get("_PID") == "1" and r.get("UNIT") == unit]
        final = {UNIT_DEACTIVATED_MESSAGE_ID, UNIT_FAILED_MESSAGE_ID}
        return records if any(r.get("MESSAGE_ID") in final for r in records) else []

    return wait_for(verdict, timeout=30, message="systemd's verdict on the stopped unit")


def test_stop_waits_for_a_background_task_longer_than_timeout_stop_sec(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit(
        "TimeoutStopSec=2",
        "ExecStart=",
        f"ExecStart={SANDBOX_BIN} --trace --termination-task-seconds 5",
    )
    start(sandbox, unit)
    cursor = sandbox.cursor()
    began = time.monotonic()
    sandbox.systemctl("stop", unit, timeout=60)
    stop_seconds = time.monotonic() - began
    verdict = systemd_verdict(sandbox, unit, cursor)
    assert any(r.get("MESSAGE_ID") == UNIT_DEACTIVATED_MESSAGE_ID for r in verdict), messages(verdict)
    assert not [m for m in messages(verdict) if "timed out" in m or "Killing" in m or "Failed" in m], messages(verdict)
    # The stop lasted the task's 5 s, well past the 2 s TimeoutStopSec=.
    assert 4.5 <= stop_seconds <= 10, stop_seconds

    lines = daemon_messages(sandbox, unit, cursor)
    order = [
        "flush started: 5.0 seconds",
        "flush finished",
        "terminated cleanly",
    ]
    positions = [lines.index(line) for line in order]
    assert positions == sorted(positions), lines
    assert any(line.startswith("waiting for 1 background task(s) before exit") for line in lines), lines
    assert not [line for line in lines if "expired" in line], lines
    [started] = records_with(sandbox, unit, cursor, "flush started")
    [finished] = records_with(sandbox, unit, cursor, "flush finished")
    # The task began after the stop did (`began`, on the same CLOCK_MONOTONIC as journald's stamps: the sandbox has
    # no time namespace) and ran its 5 s; journald stamps a line when it takes it, never before it was logged.
    assert monotonic_seconds(finished) - began >= 5, (monotonic_seconds(finished) - began)
    assert monotonic_seconds(finished) - monotonic_seconds(started) <= 6


def test_a_task_outliving_the_budget_gets_its_expiration_handler_then_the_process_exits(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    lines = config("[BackgroundTasks]\nBudgetSec=1\n[Demo]\nTerminationTaskSec=30\n")
    unit = daemon_unit("TimeoutStopSec=5", *lines)
    start(sandbox, unit)
    cursor = sandbox.cursor()
    began = time.monotonic()
    sandbox.systemctl("stop", unit, timeout=60)
    stop_seconds = time.monotonic() - began
    verdict = systemd_verdict(sandbox, unit, cursor)
    assert any(r.get("MESSAGE_ID") == UNIT_DEACTIVATED_MESSAGE_ID for r in verdict), messages(verdict)
    assert stop_seconds < 4, stop_seconds

    lines = daemon_messages(sandbox, unit, cursor)
    order = [
        "flush started: 30.0 seconds",
        "background task budget of 1.0 seconds used up; expiring tasks",
        "background task expired",
        "flush expired before it finished",
        "background task ended",
        "terminated cleanly",
    ]
    positions = [lines.index(line) for line in order]
    assert positions == sorted(positions), lines
    assert "flush finished" not in lines
    [started] = records_with(sandbox, unit, cursor, "flush started")
    [expired] = records_with(sandbox, unit, cursor, "flush expired before it finished")
    # The budget of 1 s runs from the termination, which began after `began` (see above).
    assert monotonic_seconds(expired) - began >= 1, (monotonic_seconds(expired) - began)
    assert monotonic_seconds(expired) - monotonic_seconds(started) <= 2


def test_a_background_task_never_ended_expires_after_the_background_time_and_the_daemon_keeps_running(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    """The lifecycle's §1 background time: a task begun in applicationDidEnterBackground that would run 60 s gets
    [BackgroundTasks] BackgroundTimeSec=2; then its expiration handler runs (traced), and the service stays active."""
    lines = config("[BackgroundTasks]\nBackgroundTimeSec=2\n[Demo]\nBackgroundTaskSec=60\nWorkIntervalSec=0\n")
    unit = daemon_unit(*lines)
    start(sandbox, unit)
    cursor = sandbox.cursor()
    signalled = time.monotonic()
    sandbox.systemctl("kill", "--kill-whom=main", "--signal=SIGUSR1", unit)
    records = wait_for(
        lambda: (r := sandbox.journal(unit, cursor))
        and any(x.get("LIFECYCLE_EVENT") == "expirationHandler" for x in r)
        and any("background work expired before it finished" in str(x.get("MESSAGE", "")) for x in r)
        and r,
        timeout=15,
        message="the expiration handler's trace entry and the demo's line",
    )
    [began] = records_with(sandbox, unit, cursor, "background work started")
    [expired] = [r for r in records if r.get("LIFECYCLE_EVENT") == "expirationHandler"]
    assert expired["LIFECYCLE_TARGET"] == "delegate"
    assert expired.get("LIFECYCLE_DETAIL") == "background-work"
    # The background time of 2 s runs from the background transition, which came after the signal (`signalled`, on
    # the same CLOCK_MONOTONIC as journald's stamps); journald stamps a line when it takes it, never before.
    assert monotonic_seconds(expired) - signalled >= 2, (monotonic_seconds(expired) - signalled)
    assert monotonic_seconds(expired) - monotonic_seconds(began) <= 4
    time.sleep(0.5)
    shown = sandbox.show(unit)
    assert (shown["ActiveState"], shown["SubState"]) == ("active", "running")
    assert shown["NRestarts"] == "0"
    assert "background" in shown["StatusText"]
