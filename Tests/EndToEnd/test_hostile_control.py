#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Hostile peers on the control socket, under the real systemd (docs/security.md): another uid flooding it with
connections, an allowed peer pipelining oneway calls without pause or calls it never reads the replies of, a sender
that trickles bytes, a peer that holds descriptors until the daemon has none, and a `[Control] Group=` member. In
each the daemon keeps its state unless an authorised source moved it, handles signals (and ends its loop turns)
within its normal latency, misses no watchdog ping, and what it saved is on disk whole. Figures in
.build-e2e/hostile-figures.json."""

from __future__ import annotations

import json
import time
from typing import Callable

import pytest

from harness import SANDBOX_CTL, CtlBinary, Sandbox, lifecycle_events, pairs
from hostile import (
    NOBODY,
    SOCKET,
    Background,
    WatchdogWatch,
    assert_unharmed,
    control_peer,
    cpu_seconds,
    install_peers,
    median,
    record_figures,
    status_latencies,
    status_value,
)
from peers import BACKGROUND, daemon_messages, start, wait_events


@pytest.fixture
def ctl(sandbox: Sandbox, lifecyclectl_bin: CtlBinary) -> Callable[..., object]:
    lifecyclectl_bin.install(sandbox)
    install_peers(sandbox)

    def run(*arguments: str, prefix: list[str] | None = None, check: bool = True, timeout: float = 60):
        return sandbox.run(*(prefix or []), SANDBOX_CTL, *arguments, check=check, timeout=timeout)

    return run


def control_counters(ctl: Callable[..., object]) -> dict:
    return json.loads(ctl("status", "--json").stdout)["control"]


def test_a_connect_flood_from_another_uid_leaves_signals_the_loop_the_watchdog_and_allowed_clients_served(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    unit = daemon_unit("WatchdogSec=2")
    cursor, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    baseline = status_latencies(sandbox, unit, pid, 10)

    watch = WatchdogWatch(sandbox, unit)
    cpu_before = cpu_seconds(sandbox, pid)
    flood = Background(
        lambda: control_peer(
            sandbox, "connect-flood", "--socket", SOCKET, "--seconds", "12", "--workers", "2", user=NOBODY
        )
    )
    time.sleep(1)
    # Signals, and the STATUS= the end of their loop turn sends, while nobody's connections pour in.
    during = status_latencies(sandbox, unit, pid, 10)
    # An allowed client still gets its answer.
    began = time.monotonic()
    status = json.loads(ctl("status", "--json").stdout)
    allowed_seconds = time.monotonic() - began
    flooded = flood.result()
    cpu = cpu_seconds(sandbox, pid) - cpu_before
    max_age = watch.stop()

    assert status["state"] == "active"
    assert flooded["connects"] > 1000, flooded
    counters = control_counters(ctl)
    assert counters["refused"] >= flooded["connects"] * 0.9, (counters, flooded)
    # No transition but the ones the signals asked for.
    events = lifecycle_events(sandbox.journal(unit, cursor), pid=pid)
    # (The demo's worker redraws with the cause api: the application's own work.)
    assert {e.cause for e in events} <= {"launch", "api", "signal:SIGUSR1", "signal:SIGUSR2"}
    assert_unharmed(sandbox, unit, pid, cursor, "active", max_age)
    # Within its normal latency: the machine is shared with the flood's processes, so a few times the idle figure.
    assert median(during) < 5 * median(baseline) + 0.05, (baseline, during)
    assert max(during) < 1.0, during
    assert allowed_seconds < 5, allowed_seconds
    record_figures(
        "connect_flood",
        {
            "connects_refused": flooded["connects"],
            "connects_per_s": round(flooded["connects"] / 12),
            "signal_to_status_ms_idle_median": round(median(baseline) * 1000, 1),
            "signal_to_status_ms_idle_max": round(max(baseline) * 1000, 1),
            "signal_to_status_ms_flood_median": round(median(during) * 1000, 1),
            "signal_to_status_ms_flood_max": round(max(during) * 1000, 1),
            "allowed_client_status_s": round(allowed_seconds, 3),
            "daemon_cpu_s": round(cpu, 2),
            "watchdog_ping_age_max_s": round(max_age, 2),
        },
    )


def test_a_oneway_flood_from_an_allowed_peer_leaves_the_daemons_memory_bounded(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    unit = daemon_unit("WatchdogSec=2")
    cursor, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    rss_before = status_value(sandbox, pid, "VmRSS")
    watch = WatchdogWatch(sandbox, unit)
    # 16 MiB of pipelined oneway calls, never pausing (the 64 MiB grew the daemon from 7 to 78 MiB).
    flood = Background(lambda: control_peer(sandbox, "oneway-flood", "--socket", SOCKET, "--bytes", str(16 << 20)))
    peak = rss_before
    while True:
        try:
            peak = max(peak, status_value(sandbox, pid, "VmRSS"))
        except AssertionError:
            break
        if flood._thread.is_alive() is False:
            break
        time.sleep(0.1)
    result = flood.result()
    max_age = watch.stop()
    high_water = status_value(sandbox, pid, "VmHWM")
    assert result["answered"], result
    # The input a connection holds is bounded by a message's worth: the flood waits in the kernel, not in the daemon.
    assert high_water - rss_before < 16 * 1024, (rss_before, peak, high_water)
    assert_unharmed(sandbox, unit, pid, cursor, "active", max_age)
    record_figures(
        "oneway_flood",
        {
            "bytes": 16 << 20,
            "calls": result["calls"],
            "seconds": result["seconds"],
            "rss_kib_before": rss_before,
            "rss_kib_peak_sampled": peak,
            "rss_kib_high_water": high_water,
            "watchdog_ping_age_max_s": round(max_age, 2),
        },
    )


def test_pipelined_calls_never_read_and_a_trickling_sender_are_closed_and_cost_the_loop_nothing(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    unit = daemon_unit("WatchdogSec=2")
    cursor, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    baseline = status_latencies(sandbox, unit, pid, 6)
    watch = WatchdogWatch(sandbox, unit)
    # 200,000 GetStatus calls sent ahead, their replies never read: the daemon stops reading once a message's worth
    # waits, and closes the connection once a MiB of replies is unread.
    piped = Background(
        lambda: control_peer(sandbox, "pipeline", "--socket", SOCKET, "--calls", "200000", "--hold", "8")
    )
    # A call sent a byte every 0.5 s: the connection is closed 10 s after it was accepted, whatever trickles in.
    trickled = Background(
        lambda: control_peer(sandbox, "trickle", "--socket", SOCKET, "--interval", "0.5", "--limit", "30")
    )
    during = status_latencies(sandbox, unit, pid, 6)
    pipeline = piped.result()
    trickle = trickled.result()
    max_age = watch.stop()
    assert pipeline["closed"], pipeline
    assert trickle["closedAfter"] is not None and 9 <= trickle["closedAfter"] < 15, trickle
    counters = control_counters(ctl)
    assert counters["closedBacklog"] >= 1 and counters["closedIdle"] >= 1, counters
    assert_unharmed(sandbox, unit, pid, cursor, "active", max_age)
    assert median(during) < 5 * median(baseline) + 0.05, (baseline, during)
    record_figures(
        "pipeline_and_trickle",
        {
            "pipelined_bytes_taken": pipeline["bytesSent"],
            "trickle_closed_after_s": trickle["closedAfter"],
            "signal_to_status_ms_idle_median": round(median(baseline) * 1000, 1),
            "signal_to_status_ms_during_median": round(median(during) * 1000, 1),
            "watchdog_ping_age_max_s": round(max_age, 2),
        },
    )


def test_a_peer_holding_all_the_connections_it_can_never_takes_the_descriptors_the_watchdog_needs(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    # Few descriptors: 60 connections held would take them all (and WATCHDOG=1 needs a socket of its own each time).
    unit = daemon_unit("WatchdogSec=2", "LimitNOFILE=48")
    cursor, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    watch = WatchdogWatch(sandbox, unit)
    held = Background(
        lambda: control_peer(
            sandbox, "hold", "--socket", SOCKET, "--connections", "60", "--seconds", "6", "--ready", "/run/held"
        )
    )
    deadline = time.monotonic() + 30
    while sandbox.run("test", "-e", "/run/held", check=False).returncode != 0:
        assert time.monotonic() < deadline, "the peer never held its connections"
        time.sleep(0.1)
    # Held: the daemon serves what its descriptors allow, closes the rest, and neither spins nor starves.
    before = cpu_seconds(sandbox, pid)
    time.sleep(3)
    spent = cpu_seconds(sandbox, pid) - before
    held.result()
    sandbox.remove("/run/held")
    max_age = watch.stop()
    assert spent < 0.5, f"the daemon used {spent:.2f} s of CPU in 3 s with its connections all taken"
    counters = control_counters(ctl)
    assert counters["overLimit"] >= 1, counters
    capacity = [m for m in daemon_messages(sandbox, unit, cursor) if m.startswith("the control socket takes at most ")]
    assert len(capacity) == 1, capacity
    assert_unharmed(sandbox, unit, pid, cursor, "active", max_age)
    record_figures(
        "descriptors",
        {"cpu_s_in_3_s": round(spent, 3), "closed_over_limit": counters["overLimit"], "capacity": capacity[0]},
    )


def test_a_group_member_may_look_and_ask_but_not_set_the_log_level_and_nobody_else_gets_in(
    sandbox: Sandbox, daemon_unit: Callable[..., str], ctl: Callable[..., object], config: Callable[[str], list[str]]
) -> None:
    sandbox.run("groupadd", "--force", "--gid", "4321", "lifecycle-ops")
    member = ["setpriv", "--reuid=65534", "--regid=65534", "--groups=4321"]
    unit = daemon_unit("WatchdogSec=2", *config("[Control]\nGroup=lifecycle-ops\n"))
    cursor, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    watch = WatchdogWatch(sandbox, unit)
    # May: look at everything, and make requests (an authorised source: they move the application, cause control).
    assert json.loads(ctl("status", "--json", prefix=member).stdout)["state"] == "active"
    ctl("tree", prefix=member)
    ctl("background", prefix=member)
    assert pairs(wait_events(sandbox, unit, cursor, len(BACKGROUND), "control")) == BACKGROUND
    ctl("foreground", prefix=member)
    # May not: set the log level (the service's own user and root only, as systemd's daemons).
    denied = sandbox.run(
        *member, "/usr/bin/python3", "-c",
        "import socket,sys;s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1]);"
        "s.sendall(b'{\"method\":\"io.systemd.service.SetLogLevel\",\"parameters\":{\"level\":7}}\\0');"
        "print(s.recv(4096).split(b'\\0')[0].decode())",
        SOCKET,
    ).stdout.strip()
    assert json.loads(denied)["error"] == "org.varlink.service.PermissionDenied", denied
    # Nobody else gets in, and cannot move it.
    refused = ctl("background", prefix=NOBODY, check=False)
    assert refused.returncode == 77, refused.stderr
    max_age = watch.stop()
    assert_unharmed(sandbox, unit, pid, cursor, "active", max_age)
