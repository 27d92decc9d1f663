#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""lifecycled under a real systemd: readiness, the signal map, reload, stop and the watchdog.

Every ordering assertion compares the whole trace (LIFECYCLE_* journald fields) with the contract in
docs/lifecycle.md, derived from harness.DEMO_TREE_PREORDER.
"""

from __future__ import annotations

import signal
import time
from typing import Callable

import pytest

from harness import (
    DEMO_TREE_PREORDER,
    MEMORY_WARNING_SIGNAL,
    LifecycleEvent,
    Sandbox,
    entering,
    leaving,
    lifecycle_events,
    messages,
    pairs,
    preservation,
    signal_cause,
    wait_for,
)
from peers import BACKGROUND, FOREGROUND, MEMORY_WARNING, kill_main, start, wait_events

# systemd's message id for "Started lifecycled.service ..." once READY=1 arrived.
UNIT_STARTED_MESSAGE_ID = "39f53479d3a045ac8e11786248231fbf"
# "<unit>: Deactivated successfully." / "<unit>: Failed with result '...'."
UNIT_DEACTIVATED_MESSAGE_ID = "7ad2d189f7e94e70a38c781354912448"
UNIT_FAILED_MESSAGE_ID = "d9b373ed55a64feb8242e02dbe79a49c"

# Termination saves the state once, after applicationWillTerminate and before the teardown.
TERMINATE_FROM_ACTIVE = (
    leaving("applicationWillResignActive")
    + leaving("applicationDidEnterBackground")
    + leaving("applicationWillTerminate")
    + preservation()
)


def assert_consecutive(events: list[LifecycleEvent]) -> None:
    seqs = [e.seq for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"LIFECYCLE_SEQ not consecutive: {seqs}"


def test_the_shipped_unit_passes_systemd_analyze_verify(sandbox: Sandbox, daemon_unit: Callable[..., str]) -> None:
    unit = daemon_unit()
    done = sandbox.run("systemd-analyze", "verify", f"/etc/systemd/system/{unit}", check=False)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_start_is_active_only_after_launch_and_status_names_the_state(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit()
    cursor, shown = start(sandbox, unit)
    assert (shown["ActiveState"], shown["SubState"]) == ("active", "running")
    assert "active" in shown["StatusText"].lower(), shown["StatusText"]

    became_active = entering("applicationDidBecomeActive")
    records = wait_for(
        lambda: (r := sandbox.journal(unit, cursor))
        and any(x.get("MESSAGE_ID") == UNIT_STARTED_MESSAGE_ID for x in r)
        and r,
        message="systemd's Started message",
    )
    events = lifecycle_events(records)
    assert events and events[0].seq == 1
    assert_consecutive(events)
    # The launch ends with applicationDidBecomeActive, delegate first and then down the tree, in one block.
    # (End-of-turn work such as a status redraw may follow it; it is not part of the launch.)
    order = pairs(events)
    first = order.index(became_active[0])
    launch = events[: first + len(became_active)]
    assert order[first: first + len(became_active)] == became_active, order
    assert {e.cause for e in launch} == {"launch"}
    assert [e.state for e in launch[first:]] == ["active"] * len(became_active)
    delegate = [e.event for e in launch if e.target == "delegate"]
    assert delegate[:2] == ["willFinishLaunching", "didFinishLaunching"]
    assert delegate[-1] == "applicationDidBecomeActive"
    assert "applicationDidBecomeActive" not in delegate[:-1]
    # The window's root controller (and the visible tree) appeared before the application became active.
    appeared = {e.target for e in launch[:first] if e.event == "viewDidAppear"}
    assert set(DEMO_TREE_PREORDER) <= appeared, appeared

    # READY=1 (systemd's "Started" message) came after the launch's last callback.
    position = {int(str(r["LIFECYCLE_SEQ"])): i for i, r in enumerate(records) if "LIFECYCLE_SEQ" in r}
    started = [i for i, r in enumerate(records) if r.get("MESSAGE_ID") == UNIT_STARTED_MESSAGE_ID]
    assert started[0] > position[launch[-1].seq]


def test_sigusr1_backgrounds_the_tree_in_reverse_preorder_then_the_delegate(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit()
    _, shown = start(sandbox, unit)
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    events = wait_events(sandbox, unit, cursor, len(BACKGROUND), signal_cause("SIGUSR1"))
    assert pairs(events) == BACKGROUND
    assert_consecutive(events)
    assert events[-1].state == "background"
    after = sandbox.show(unit)
    assert after["ActiveState"] == "active"
    assert after["MainPID"] == shown["MainPID"]
    assert "background" in after["StatusText"].lower(), after["StatusText"]


def test_sigtstp_backgrounds_without_stopping_the_process_under_systemd(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit("WatchdogSec=2")
    _, shown = start(sandbox, unit)
    main_pid = shown["MainPID"]
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGTSTP")
    events = wait_events(sandbox, unit, cursor, len(BACKGROUND), signal_cause("SIGTSTP"))
    assert pairs(events) == BACKGROUND
    # Under systemd SIGTSTP never stops the process: across more than two watchdog periods it keeps
    # running, keeps feeding the watchdog and is never restarted.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        assert sandbox.process_state(main_pid) not in ("T", "t", None)
        time.sleep(0.5)
    after = sandbox.show(unit)
    assert (after["ActiveState"], after["SubState"]) == ("active", "running")
    assert after["MainPID"] == main_pid
    assert after["NRestarts"] == "0"
    assert "background" in after["StatusText"].lower(), after["StatusText"]
    assert not [m for m in messages(sandbox.journal(unit, cursor)) if "Watchdog timeout" in m]


@pytest.mark.parametrize("signal_name", ["SIGCONT", "SIGUSR2"])
def test_foreground_signals_deliver_to_the_delegate_first_then_the_tree_in_preorder(
    sandbox: Sandbox, daemon_unit: Callable[..., str], signal_name: str
) -> None:
    unit = daemon_unit()
    start(sandbox, unit)
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    wait_events(sandbox, unit, cursor, len(BACKGROUND), signal_cause("SIGUSR1"))
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, signal_name)
    events = wait_events(sandbox, unit, cursor, len(FOREGROUND), signal_cause(signal_name))
    assert pairs(events) == FOREGROUND
    assert_consecutive(events)
    assert events[-1].state == "active"
    after = sandbox.show(unit)
    assert after["ActiveState"] == "active"
    assert "active" in after["StatusText"].lower() and "background" not in after["StatusText"].lower()


def test_memory_warning_signal_reaches_the_tree_in_reverse_preorder_then_the_delegate(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit()
    _, shown = start(sandbox, unit)
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, str(int(signal.SIGRTMIN) + 2))
    events = wait_events(sandbox, unit, cursor, len(MEMORY_WARNING), signal_cause(MEMORY_WARNING_SIGNAL))
    assert pairs(events) == MEMORY_WARNING
    assert_consecutive(events)
    # A memory warning changes no state.
    assert {e.state for e in events} == {"active"}
    after = sandbox.show(unit)
    assert (after["ActiveState"], after["MainPID"]) == ("active", shown["MainPID"])


def test_reload_keeps_the_service_active(sandbox: Sandbox, daemon_unit: Callable[..., str]) -> None:
    unit = daemon_unit()
    _, shown = start(sandbox, unit)
    cursor = sandbox.cursor()
    # Returns once the daemon sent READY=1 after RELOADING=1.
    sandbox.systemctl("reload", unit, timeout=30)
    after = sandbox.show(unit)
    assert (after["ActiveState"], after["SubState"]) == ("active", "running")
    assert after["MainPID"] == shown["MainPID"]
    assert after["NRestarts"] == "0"
    assert "active" in after["StatusText"].lower(), after["StatusText"]
    records = wait_for(
        lambda: (r := sandbox.journal(unit, cursor)) and any(m.startswith("Reloaded") for m in messages(r)) and r,
        message="systemd's Reloaded line",
    )
    # The shipped unit's ExecReload= is `lifecyclectl reload`: the request arrives on the control socket.
    assert any(e.cause == "control" for e in lifecycle_events(records))


def test_stop_terminates_cleanly_and_tears_the_tree_down(sandbox: Sandbox, daemon_unit: Callable[..., str]) -> None:
    unit = daemon_unit()
    launch_cursor, _ = start(sandbox, unit)
    launch = lifecycle_events(sandbox.journal(unit, launch_cursor))
    cursor = sandbox.cursor()
    sandbox.systemctl("stop", unit, timeout=60)
    after = sandbox.show(unit)
    assert after["ActiveState"] == "inactive", after
    # systemd unloads the stopped unit at once (so show's Result/ExecMainStatus are fresh defaults); its log
    # says how the process ended: "Deactivated successfully" only for exit status 0 (Result=success).
    records = wait_for(
        lambda: (r := sandbox.journal(unit, cursor))
        and any(x.get("MESSAGE_ID") == UNIT_DEACTIVATED_MESSAGE_ID or x.get("MESSAGE_ID") == UNIT_FAILED_MESSAGE_ID
                for x in r)
        and r,
        message="systemd's verdict on the stopped unit",
    )
    verdicts = [r for r in records if r.get("_PID") == "1" and r.get("UNIT") == unit]
    assert any(r.get("MESSAGE_ID") == UNIT_DEACTIVATED_MESSAGE_ID for r in verdicts), messages(verdicts)
    assert not [m for m in messages(verdicts) if "Failed with result" in m or "Main process exited" in m]

    events = wait_for(
        lambda: (e := lifecycle_events(sandbox.journal(unit, cursor)))
        and any(x.event == "deinit" and x.target == "root" for x in e)
        and e,
        message="the teardown's deinit of root",
    )
    assert_consecutive(events)
    assert {e.cause for e in events[: len(TERMINATE_FROM_ACTIVE)]} == {signal_cause("SIGTERM")}
    assert pairs(events[: len(TERMINATE_FROM_ACTIVE)]) == TERMINATE_FROM_ACTIVE

    teardown = events[len(TERMINATE_FROM_ACTIVE):]
    order = pairs(teardown)
    for path in DEMO_TREE_PREORDER:
        mine = [event for event, target in order if target == path]
        assert mine.count("viewWillDisappear") == 1, (path, mine)
        assert mine.count("viewDidDisappear") == 1, (path, mine)
        assert mine.count("deinit") == 1, (path, mine)
        assert mine.index("viewWillDisappear") < mine.index("viewDidDisappear") < mine.index("deinit"), (path, mine)
    # A parent's disappearance brackets its children's.
    for path in DEMO_TREE_PREORDER:
        parent = path.rsplit("/", 1)[0] if "/" in path else None
        if parent:
            assert order.index(("viewWillDisappear", parent)) < order.index(("viewWillDisappear", path))
            assert order.index(("viewDidDisappear", path)) < order.index(("viewDidDisappear", parent))
    # Every view that was built at launch is released.
    views = {e.target for e in launch if ".view" in e.target}
    assert views, "the launch trace names no views"
    released = {target for event, target in order if event == "deinit"}
    assert views <= released, views - released
    # Nothing follows the teardown: the last event is a deinit.
    assert teardown[-1].event == "deinit"


def test_a_hung_callback_trips_the_watchdog_and_systemd_restarts_the_daemon(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit("Environment=LIFECYCLE_HANG_IN=applicationDidEnterBackground", "WatchdogSec=2")
    _, shown = start(sandbox, unit)
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    # The hang blocks the main loop, so WATCHDOG=1 stops; systemd kills it after 2 s and restarts it.
    wait_for(lambda: int(sandbox.show(unit)["NRestarts"]) >= 1, timeout=30, message="a watchdog restart")
    wait_for(lambda: sandbox.show(unit)["ActiveState"] == "active", timeout=30, message="active again")
    after = sandbox.show(unit)
    assert after["MainPID"] != shown["MainPID"]
    records = sandbox.journal(unit, cursor)
    timeouts = [
        r for r in records if r.get("_PID") == "1" and "Watchdog timeout" in str(r.get("MESSAGE", ""))
    ]
    assert timeouts, messages(records)
    # The hang happened inside the background transition the signal asked for: the stall detector wrote the lines
    # the stuck dispatch had deferred, the hung callback's among them, then named it.
    hung = lifecycle_events(records, pid=shown["MainPID"])
    assert ("applicationDidEnterBackground", "root/modes/serving") in pairs(hung), pairs(hung)
    # Before systemd's "Watchdog timeout", the journal names the stuck callback and its target (a quarter of
    # WatchdogSec=2 in, then half of it).
    stalls = [
        r for r in records
        if r.get("_PID") == shown["MainPID"] and r.get("LIFECYCLE_STALL_EVENT") == "applicationDidEnterBackground"
    ]
    assert [r.get("PRIORITY") for r in stalls] == ["4", "3"], messages(records)
    assert all(r.get("LIFECYCLE_STALL_TARGET") == "root/modes/serving" for r in stalls)
    # The first warning comes at a quarter of WatchdogSec=2 (500 ms), never before, and before the second one is
    # due at half of it (1000 ms); how much after 500 ms depends on when the detector's thread gets a CPU. The message
    # names the duration it measured.
    first_ms, second_ms = int(stalls[0]["LIFECYCLE_STALL_MS"]), int(stalls[1]["LIFECYCLE_STALL_MS"])
    assert 500 <= first_ms < 1000, stalls[0]["MESSAGE"]
    assert f"has run for {first_ms} ms and has not returned" in str(stalls[0]["MESSAGE"]), stalls[0]["MESSAGE"]
    assert 1000 <= second_ms, stalls[1]["MESSAGE"]
    position = {id(r): index for index, r in enumerate(records)}
    assert position[id(stalls[0])] < position[id(stalls[1])] < position[id(timeouts[0])]
    assert int(stalls[1]["__MONOTONIC_TIMESTAMP"]) < int(timeouts[0]["__MONOTONIC_TIMESTAMP"])


def test_a_slow_callback_is_named_while_it_runs_then_its_duration_when_it_returns(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    """No watchdog: the stall detector warns after a second, and the notice gives the whole duration."""
    unit = daemon_unit("Environment=LIFECYCLE_HANG_IN=applicationWillResignActive=2", "WatchdogSec=0")
    _, shown = start(sandbox, unit)
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    records = wait_for(
        lambda: (r := sandbox.journal(unit, cursor))
        and any("returned after" in str(x.get("MESSAGE", "")) for x in r)
        and r,
        timeout=20,
        message="the stall warning and the notice with its duration",
    )
    stalls = [r for r in records if r.get("LIFECYCLE_STALL_EVENT") == "applicationWillResignActive"]
    assert [r.get("PRIORITY") for r in stalls] == ["4", "5"], messages(records)
    assert stalls[0]["LIFECYCLE_STALL_TARGET"] == "root/modes/serving"
    # The warning comes after a second (never before), while the callback still runs (it returns after 2 s); how much
    # after the second depends on when the detector's thread gets a CPU. The message names the duration it measured.
    warned_ms = int(stalls[0]["LIFECYCLE_STALL_MS"])
    assert 1000 <= warned_ms < 2000, stalls[0]["MESSAGE"]
    tenths = (warned_ms + 50) // 100
    assert f"has run for {tenths // 10}.{tenths % 10} s and has not returned" in str(stalls[0]["MESSAGE"]), stalls[0]
    assert 2000 <= int(stalls[1]["LIFECYCLE_STALL_MS"]) < 4000
    # It then finished the transition, and the service never restarted.
    events = wait_events(sandbox, unit, cursor, len(BACKGROUND), cause="signal:SIGUSR1")
    assert pairs(events) == BACKGROUND
    assert sandbox.show(unit)["NRestarts"] == "0"


def test_every_completed_callback_is_in_the_journal_when_sigkill_follows_a_burst(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    """Trace lines are written after the callbacks (off the signal's path), but before the loop sleeps and before
    systemd hears of a new state: a SIGKILL right after a burst loses none."""
    unit = daemon_unit("Restart=no")
    _, shown = start(sandbox, unit)
    cursor = sandbox.cursor()
    for _ in range(20):
        kill_main(sandbox, unit, "SIGUSR1")
        kill_main(sandbox, unit, "SIGUSR2")
        kill_main(sandbox, unit, MEMORY_WARNING_SIGNAL)
    kill_main(sandbox, unit, "SIGUSR1")
    wait_for(lambda: sandbox.show(unit)["StatusText"].startswith("background"), timeout=20, message="background")
    sandbox.systemctl("kill", "--kill-whom=main", "--signal=SIGKILL", unit)
    wait_for(lambda: sandbox.show(unit)["ActiveState"] in ("failed", "inactive"), timeout=20, message="killed")
    events = lifecycle_events(sandbox.journal(unit, cursor), pid=shown["MainPID"])
    # Every sequence number from launch to the last callback is there, and the last transition is whole.
    seqs = [e.seq for e in lifecycle_events(sandbox.journal(unit), pid=shown["MainPID"])]
    assert seqs == list(range(1, len(seqs) + 1)), f"gaps in LIFECYCLE_SEQ: {sorted(set(range(1, max(seqs) + 1)) - set(seqs))}"
    last = [e for e in events if e.cause == "signal:SIGUSR1"]
    assert pairs(last[-len(BACKGROUND):]) == BACKGROUND
