#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Why the last run ended (issue 31), under the sandbox's systemd 252 with the shipped lifecycled.service (its
ExecStopPost=lifecyclectl record-stop and its start limit, no StartLimitBurst= drop-in): each cause is provoked for
real and the next launch must name it, in its one launch line (LIFECYCLE_LAST_RUN=) and in `lifecyclectl status`.

The causes come from the demo daemon's debug switches (docs/testing.md): LIFECYCLE_CRASH_IN ends the process in a named
callback (a memory warning → SIGSEGV, a reload → exit 3), LIFECYCLE_HANG_IN blocks the main thread in one (the return to
the foreground → the watchdog; applicationWillTerminate → a stop that times out); [Demo] AllocateMiB= under MemoryMax=
is an OOM kill. A clean restart between two abnormal ends keeps each launch out of the crash loop's backoff.

The launch lines are written to .build-e2e/run-end-figures.json (docs/restoration.md's cause matrix).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from harness import CHECKOUT, Sandbox, wait_for
from peers import CONFIG_PATH, active_again, kill_main, main_pid

STATE = "/var/lib/lifecycled"
FIGURES = CHECKOUT / ".build-e2e" / "run-end-figures.json"


def launch_line(sandbox: Sandbox, unit: str, cursor: str, not_pid: str | None = None, timeout: float = 40) -> dict:
    """The next launch line (the record with LIFECYCLE_LAST_RUN) after the cursor, of a process other than `not_pid`."""

    def find() -> dict | None:
        for record in sandbox.journal(unit, cursor):
            if "LIFECYCLE_LAST_RUN" in record and record.get("_PID") != not_pid:
                return record
        return None

    return wait_for(find, timeout=timeout, interval=0.2, message="the next launch line")


def status(sandbox: Sandbox, unit: str) -> dict:
    return json.loads(sandbox.run("lifecyclectl", "status", "-u", unit.removesuffix(".service"), "--json").stdout)


def test_each_cause_of_a_runs_end_is_named_by_the_next_launch(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    began = time.monotonic()
    lines: dict[str, str] = {}
    config_lines = config("[Demo]\nWorkIntervalSec=0\n")
    debug = [
        *config_lines,
        "WatchdogSec=2",
        "Environment=LIFECYCLE_HANG_IN=applicationWillEnterForeground",
        'Environment="LIFECYCLE_CRASH_IN=applicationDidReceiveMemoryWarning=SIGSEGV,applicationWillReload=exit:3"',
    ]
    unit = daemon_unit(*debug)
    shown = sandbox.show(unit, "StartLimitBurst", "StartLimitIntervalUSec", "ExecStopPost")
    assert shown["StartLimitBurst"] == "30" and shown["StartLimitIntervalUSec"] == "10s", shown
    assert "lifecyclectl" in shown["ExecStopPost"] and "record-stop" in shown["ExecStopPost"], shown

    def check(name: str, cursor: str, cause: str, old: str, *words: str) -> str:
        pid = active_again(sandbox, unit, old, timeout=40, interval=0.1)
        record = launch_line(sandbox, unit, cursor, not_pid=old)
        message = str(record.get("MESSAGE"))
        lines[name] = message
        assert record["LIFECYCLE_LAST_RUN"] == cause, (name, message)
        for word in words:
            assert word in message, (name, message)
        return pid

    cursor = sandbox.cursor()
    sandbox.systemctl("start", unit)
    pid = check("first start", cursor, "none", "0", "no record of an earlier run")

    # A clean stop (the state saved at termination), a start 2.5 s later: a stop; restored.
    kill_main(sandbox, unit, "SIGUSR1")
    time.sleep(0.5)
    sandbox.systemctl("stop", unit)
    assert sandbox.show(unit, "Result")["Result"] == "success"
    time.sleep(2.5)
    cursor = sandbox.cursor()
    sandbox.systemctl("start", unit)
    pid = check("systemctl stop", cursor, "stop", pid, "restored generation", "a stop (SIGTERM)")

    cursor = sandbox.cursor()
    sandbox.systemctl("restart", unit)
    pid = check("systemctl restart", cursor, "restart", pid, "a restart")

    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGRTMIN+2")
    pid = check("SIGSEGV", cursor, "crash", pid, "a crash (SIGSEGV)")
    assert status(sandbox, unit)["lastRun"]["cause"] == "crash"
    assert status(sandbox, unit)["lastRun"]["signal"] == "SIGSEGV"

    sandbox.systemctl("restart", unit)
    pid = main_pid(sandbox, unit)
    cursor = sandbox.cursor()
    sandbox.systemctl("kill", "-s", "SIGKILL", unit)
    pid = check("SIGKILL", cursor, "kill", pid, "a kill (SIGKILL)")

    sandbox.systemctl("restart", unit)
    pid = main_pid(sandbox, unit)
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGHUP")
    pid = check("exit 3", cursor, "exit", pid, "an exit with status 3")

    sandbox.systemctl("restart", unit)
    pid = main_pid(sandbox, unit)
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    time.sleep(0.5)
    kill_main(sandbox, unit, "SIGUSR2")
    pid = check("watchdog", cursor, "watchdog", pid, "a watchdog kill")

    cursor = sandbox.cursor()
    done = sandbox.run("lifecyclectl", "upgrade", "-u", "lifecycled", check=False, timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr
    pid = check("lifecyclectl upgrade", cursor, "upgrade", pid, "an upgrade")

    # lifecyclectl terminate: the operator quit the application itself; the policy discards (keeps it aside).
    sandbox.run("lifecyclectl", "terminate", "-u", "lifecycled")
    wait_for(lambda: sandbox.show(unit, "ActiveState")["ActiveState"] == "inactive", timeout=20, message="inactive")
    cursor = sandbox.cursor()
    sandbox.systemctl("start", unit)
    pid = check("lifecyclectl terminate", cursor, "terminate", pid, "discarded, launching without saved state")
    assert sandbox.run("sh", "-c", f"ls {STATE}/state.archive.discarded-*").returncode == 0

    # A reboot cannot be made in the sandbox: the boot id of the last run's record is changed instead (simulated).
    sandbox.systemctl("stop", unit)
    sandbox.run("sed", "-i", "s/^boot=.*/boot=00000000-0000-0000-0000-000000000000/", f"{STATE}/run.record")
    cursor = sandbox.cursor()
    sandbox.systemctl("start", unit)
    pid = check("reboot (simulated)", cursor, "reboot", pid, "a reboot")
    sandbox.systemctl("stop", unit)

    # A stop that times out: applicationWillTerminate blocks, TimeoutStopSec=2 ends it with SIGKILL.
    unit = daemon_unit(*config_lines, "Environment=LIFECYCLE_HANG_IN=applicationWillTerminate", "TimeoutStopSec=2", keep_state=True)
    sandbox.systemctl("start", unit)
    pid = main_pid(sandbox, unit)
    sandbox.systemctl("stop", unit, check=False)
    assert sandbox.show(unit, "Result")["Result"] == "timeout"
    cursor = sandbox.cursor()
    sandbox.systemctl("start", unit)
    pid = check("stop timeout", cursor, "stop-timeout", pid, "a stop that timed out")
    sandbox.systemctl("kill", "-s", "SIGKILL", unit)
    wait_for(lambda: sandbox.show(unit, "MainPID")["MainPID"] not in ("0", pid), timeout=30, message="restarted")
    sandbox.systemctl("stop", unit, check=False)

    # An OOM kill: 200 MiB of ballast in didFinishLaunching under MemoryMax=64M. systemd 252 on these hybrid cgroups
    # reports it as a SIGKILL; the stop record's OOM kill count names it.
    config("[Demo]\nWorkIntervalSec=0\nAllocateMiB=200\n")
    unit = daemon_unit(*config_lines, "MemoryMax=64M", keep_state=True)
    cursor = sandbox.cursor()
    sandbox.systemctl("start", unit, check=False)
    record = launch_line(sandbox, unit, cursor, not_pid=None)
    first_pid = str(record.get("_PID"))
    record = launch_line(sandbox, unit, cursor, not_pid=first_pid)
    lines["OOM kill (MemoryMax=)"] = str(record.get("MESSAGE"))
    sandbox.systemctl("stop", unit, check=False)
    assert record["LIFECYCLE_LAST_RUN"] == "oom-kill", record.get("MESSAGE")
    assert "an OOM kill during its launch" in str(record.get("MESSAGE"))

    seconds = time.monotonic() - began
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text(json.dumps({"seconds": round(seconds, 1), "launch lines": lines}, indent=2) + "\n")
    print(f"\ncause matrix in {seconds:.1f} s:")
    for name, line in lines.items():
        print(f"  {name}: {line}")
