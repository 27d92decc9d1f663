#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Issue 21 under the real systemd: supervision of failing work, and reloads as transactions.

- The demo's feed (`[Demo] FailEverySec=`, its restart policy `MaxRestarts=`, 100 ms doubling) fails every 100 ms:
  it is started 1 + MaxRestarts times, each restart after a longer delay, then the daemon exits with status 75
  (EX_TEMPFAIL) and systemd's `Restart=on-failure` starts it again.
- A reload is read, validated and offered before anything applies it: a broken file, or a controller that refuses
  (the demo's modes refuse a change of mode in the background), makes `systemctl reload` fail — through the unit's
  `ExecReload=lifecyclectl reload` — while the same process keeps running on the old configuration; the mended file,
  or the same change back in the foreground, then reloads."""

from __future__ import annotations

from typing import Callable

from harness import Sandbox, lifecycle_events, messages, wait_for
from peers import CONFIG_PATH, daemon_messages, kill_main, monotonic_seconds, start


def test_a_feed_failing_every_100_ms_is_restarted_with_growing_delays_then_the_daemon_exits_75_and_is_restarted(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    unit = daemon_unit(*config("[Demo]\nWorkIntervalSec=0\nFailEverySec=0.1\nMaxRestarts=3\n"))
    cursor, shown = start(sandbox, unit)
    first_pid = shown["MainPID"]

    def restarted() -> dict[str, str] | None:
        now = sandbox.show(unit)
        return now if now["MainPID"] not in ("0", first_pid) and now["ActiveState"] == "active" else None

    after = wait_for(restarted, timeout=30, message="systemd restarting the service after its exit with status 75")
    assert int(after["NRestarts"]) >= 1

    records = sandbox.journal(unit, cursor)
    events = [e for e in lifecycle_events(records, pid=first_pid) if e.target == "root/worker"]
    supervision = [e for e in events if e.event in (
        "taskDidStart", "lifecycleTask(_:didFailWithError:)", "taskWillRestart", "lifecycleTask(_:didExhaustRestartsWithError:)"
    )]
    assert [e.event for e in supervision] == [
        "taskDidStart", "lifecycleTask(_:didFailWithError:)", "taskWillRestart",
        "taskDidStart", "lifecycleTask(_:didFailWithError:)", "taskWillRestart",
        "taskDidStart", "lifecycleTask(_:didFailWithError:)", "taskWillRestart",
        "taskDidStart", "lifecycleTask(_:didFailWithError:)", "lifecycleTask(_:didExhaustRestartsWithError:)",
    ], [(e.event, e.detail) for e in supervision]
    restarts = [e for e in supervision if e.event == "taskWillRestart"]
    assert [e.detail for e in restarts] == [
        "feed in 100 ms (restart 1 of 3): the upstream closed the connection",
        "feed in 200 ms (restart 2 of 3): the upstream closed the connection",
        "feed in 400 ms (restart 3 of 3): the upstream closed the connection",
    ]
    # Each restart comes no sooner than its delay after the failure that asked for it (the journal's monotonic
    # timestamps of the daemon's own records).
    by_seq = {
        int(r["LIFECYCLE_SEQ"]): r for r in records if r.get("LIFECYCLE_TARGET") == "root/worker" and r.get("_PID") == first_pid
    }
    starts = [e for e in supervision if e.event == "taskDidStart"]
    for restart, delay, next_start in zip(restarts, (0.1, 0.2, 0.4), starts[1:]):
        gap = monotonic_seconds(by_seq[next_start.seq]) - monotonic_seconds(by_seq[restart.seq])
        assert gap >= delay - 0.005, (restart.detail, gap)
    assert supervision[-1].detail == "feed: 4 failures within 60 s: the upstream closed the connection"
    lines = daemon_messages(sandbox, unit, cursor)
    assert any(
        line.startswith("terminated as a failure (exit status 75): feed failed more often than its restart policy allows")
        for line in lines
    ), lines
    systemd = messages(r for r in records if r.get("_PID") == "1")
    assert any("status=75" in m for m in systemd), systemd
    sandbox.systemctl("stop", unit)


def reload_exit(sandbox: Sandbox, unit: str) -> "tuple[int, str]":
    """`systemctl reload`: its exit status and what it printed."""
    result = sandbox.systemctl("reload", unit, check=False, timeout=60)
    return result.returncode, result.stdout + result.stderr


def test_a_broken_file_makes_systemctl_reload_fail_and_the_same_process_keeps_its_configuration(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    unit = daemon_unit(*config("[Demo]\nMode=serving\nWorkIntervalSec=0\n"))
    _, shown = start(sandbox, unit)
    sandbox.write_file(CONFIG_PATH, "[Demo]\nMode=maintenance\nWorkIntervalSec=soon\n")
    cursor = sandbox.cursor()
    status, output = reload_exit(sandbox, unit)
    assert status != 0, output
    after = sandbox.show(unit)
    assert (after["ActiveState"], after["MainPID"]) == ("active", shown["MainPID"])
    assert "reload refused by the configuration" in after["StatusText"], after["StatusText"]
    reason = f"the configuration: {CONFIG_PATH}:3: WorkIntervalSec=soon is not a non-negative number"
    lines = daemon_messages(sandbox, unit, cursor)
    assert any(line.startswith(f"reload refused by {reason}") for line in lines), lines
    events = lifecycle_events(sandbox.journal(unit, cursor))
    # Offered to nobody, applied by nobody: the refusal is the only lifecycle event.
    assert [(e.event, e.target) for e in events if e.event != "draw"] == [("reloadRefused", "configuration")]
    # lifecyclectl, run by ExecReload=, said why, and systemd heard it failed.
    systemd = messages(r for r in sandbox.journal(unit, cursor) if r.get("_PID") == "1")
    assert any("Reload failed" in m or "Control process exited" in m for m in systemd), systemd

    # Mended, the same process reloads it.
    sandbox.write_file(CONFIG_PATH, "[Demo]\nMode=maintenance\nWorkIntervalSec=0\n")
    cursor = sandbox.cursor()
    status, output = reload_exit(sandbox, unit)
    assert status == 0, output
    wait_for(
        lambda: any(e.target == "root/modes/maintenance" and e.event == "viewDidAppear"
                    for e in lifecycle_events(sandbox.journal(unit, cursor))),
        message="the new mode on screen",
    )
    assert sandbox.show(unit)["MainPID"] == shown["MainPID"]
    assert "configuration reloaded" in daemon_messages(sandbox, unit, cursor)


def test_a_controller_that_refuses_makes_systemctl_reload_fail_naming_it_and_nothing_is_applied(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    unit = daemon_unit(*config("[Demo]\nMode=serving\nWorkIntervalSec=0\n"))
    _, shown = start(sandbox, unit)
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    wait_for(lambda: sandbox.show(unit)["StatusText"].startswith("background"), message="the background")
    sandbox.write_file(CONFIG_PATH, "[Demo]\nMode=maintenance\nWorkIntervalSec=0\n")
    status, output = reload_exit(sandbox, unit)
    assert status != 0, output
    events = [e for e in lifecycle_events(sandbox.journal(unit, cursor)) if e.event != "draw"]
    offered = [(e.event, e.target) for e in events if e.event in ("application(_:validateReload:)", "validateReload(_:)", "reloadRefused")]
    # The delegate, then the tree in pre-order, until root/modes refuses.
    assert offered[0] == ("application(_:validateReload:)", "delegate")
    assert offered[-1] == ("reloadRefused", "root/modes")
    refusal = next(e for e in events if e.event == "reloadRefused")
    assert refusal.detail.startswith("a change of mode to maintenance needs the foreground"), refusal.detail
    assert not [e for e in events if e.event in ("applicationWillReload", "applicationDidReload")]
    after = sandbox.show(unit)
    assert (after["ActiveState"], after["MainPID"]) == ("active", shown["MainPID"])
    assert "reload refused by root/modes" in after["StatusText"]

    # Back in the foreground, the same change is accepted and applied.
    kill_main(sandbox, unit, "SIGUSR2")
    wait_for(lambda: sandbox.show(unit)["StatusText"].startswith("active"), message="the foreground")
    cursor = sandbox.cursor()
    status, output = reload_exit(sandbox, unit)
    assert status == 0, output
    wait_for(
        lambda: any(e.target == "root/modes/maintenance" and e.event == "viewDidAppear"
                    for e in lifecycle_events(sandbox.journal(unit, cursor))),
        message="the new mode on screen",
    )
