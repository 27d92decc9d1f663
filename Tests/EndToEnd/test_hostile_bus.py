#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Another uid on the system bus, under the real systemd and dbus-daemon (docs/security.md): it forges the bus
driver's NameOwnerChanged and logind's PrepareForSleep/PrepareForShutdown, addressed to the daemon's connection and
broadcast, once and in a flood. The daemon keeps its state and its delay inhibitors; only logind moves it. And at
launch, READY=1 comes once logind's subscriptions and both delay inhibitors are in place."""

from __future__ import annotations

import json
import time
from typing import Callable

from harness import SANDBOX_CTL, CtlBinary, Sandbox, lifecycle_events, pairs, wait_for
from hostile import (
    BUS_PEER,
    NOBODY,
    WatchdogWatch,
    assert_unharmed,
    install_peers,
    median,
    record_figures,
    status_latencies,
)
from peers import BACKGROUND, BOTH_DELAY_LOCKS, LOGIND, LOGIND_PATH, MANAGER, logind_mock, records_with, start, wait_events


def forge(sandbox: Sandbox, *steps: str, repeat: int = 1) -> str:
    """bus_forge.py as uid 65534 on the system bus; returns once the bus has routed every signal."""
    return sandbox.run(*NOBODY, "/usr/bin/python3", BUS_PEER, "--repeat", str(repeat), *steps).stdout.strip()


def test_another_uid_impersonating_the_bus_driver_or_logind_cannot_move_the_daemon_or_take_its_locks(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    install_peers(sandbox)
    with logind_mock(sandbox) as mock:
        unit = daemon_unit("WatchdogSec=2")
        cursor, shown = start(sandbox, unit)
        pid = shown["MainPID"]
        wait_for(lambda: mock.lifecycled_locks() == BOTH_DELAY_LOCKS, message="both delay locks")
        baseline = status_latencies(sandbox, unit, pid, 6)
        target = mock.unique_name_of(pid)
        watch = WatchdogWatch(sandbox, unit)
        # Addressed to the daemon's connection (the bus delivers it whatever the match rules say) and broadcast (the
        # bus routes only the owner's): the forger names itself logind's owner, announces a sleep and a shutdown,
        # then says logind left; 50 times over.
        forged = forge(
            sandbox,
            f"owner,{target},self", f"sleep,{target},true", f"shutdown,{target},true",
            "owner,all,self", "sleep,all,true", "shutdown,all,true",
            f"owner,{target},none",
            repeat=50,
        )
        assert forged.startswith(":1."), forged
        # The daemon heard them: it says so in a notice (or, taken in, they moved it).
        def moved() -> list:
            return [e for e in lifecycle_events(sandbox.journal(unit, cursor), pid=pid) if e.cause.startswith("logind:")]

        wait_for(lambda: records_with(sandbox, unit, cursor, f"from {forged}") or moved(), message="the forged signals")
        during = status_latencies(sandbox, unit, pid, 6)
        max_age = watch.stop()
        # No transition from logind: the forger moved nothing, and took no lock away.
        assert not moved(), f"uid 65534 drove {len(moved())} callbacks with a logind cause"
        assert mock.lifecycled_locks() == BOTH_DELAY_LOCKS
        notice = records_with(sandbox, unit, cursor, f"from {forged}")
        # One notice at most per 10 s, however many signals: it counts them.
        assert len(notice) == 1, [r.get("MESSAGE") for r in notice]
        assert_unharmed(sandbox, unit, pid, cursor, "active", max_age)

        # logind itself still moves it, and finds both locks to wait for.
        after = sandbox.cursor()
        mock.emit("PrepareForSleep", True)
        assert pairs(wait_events(sandbox, unit, after, len(BACKGROUND), "logind:PrepareForSleep")) == BACKGROUND
        mock.emit("PrepareForSleep", False)
        wait_for(lambda: sandbox.show(unit, "StatusText")["StatusText"].startswith("active"), message="foreground")
    record_figures(
        "bus_impersonation",
        {
            "signals_forged": 7 * 50,
            "signal_to_status_ms_idle_median": round(median(baseline) * 1000, 1),
            "signal_to_status_ms_during_median": round(median(during) * 1000, 1),
            "watchdog_ping_age_max_s": round(max_age, 2),
        },
    )


def test_ready_comes_once_both_delay_locks_are_held_so_a_sleep_announced_at_once_waits_for_the_daemon(
    sandbox: Sandbox, daemon_unit: Callable[..., str], lifecyclectl_bin: CtlBinary
) -> None:
    lifecyclectl_bin.install(sandbox)
    listing = "/run/lifecycle-e2e-inhibitors-at-ready"
    sandbox.remove(listing)
    with logind_mock(sandbox) as mock:
        # logind takes half a second to grant each delay lock (polkit can take longer): READY=1 waits for both.
        mock.busctl(
            "call", LOGIND, LOGIND_PATH, "org.freedesktop.DBus.Mock", "AddMethod", "sssss", MANAGER, "Inhibit", "ssss",
            "h",
            "import time\ntime.sleep(0.5)\nimport dbusmock.templates.logind as template\n"
            "ret = template.Inhibit(self, *args)",
        )
        # systemd runs ExecStartPost= once the service said READY=1 (as root, outside the sandboxing: "+"): the locks
        # the daemon holds then (asked of the daemon: the mock answers calls one at a time, after the slow grants),
        # and a sleep announced at once.
        unit = daemon_unit(
            f"ExecStartPost=+/bin/sh -c '{SANDBOX_CTL} status --json > {listing}'",
            f"ExecStartPost=+/usr/bin/busctl --system call {LOGIND} {LOGIND_PATH} org.freedesktop.DBus.Mock EmitSignal "
            f"sssav {MANAGER} PrepareForSleep b 1 b true",
        )
        cursor, shown = start(sandbox, unit)
        status = json.loads(sandbox.run("cat", listing).stdout)
        locks = sorted((lock["what"], lock["mode"]) for lock in status["inhibitors"])
        assert locks == BOTH_DELAY_LOCKS, status["inhibitors"]
        # The sleep announced right after READY=1 reached the application.
        assert pairs(wait_events(sandbox, unit, cursor, len(BACKGROUND), "logind:PrepareForSleep")) == BACKGROUND
        mock.emit("PrepareForSleep", False)
        wait_for(lambda: sandbox.show(unit, "StatusText")["StatusText"].startswith("active"), message="foreground")
    sandbox.remove(listing)
