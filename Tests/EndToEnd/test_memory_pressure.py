#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Memory pressure under the real kernel: a PSI trigger fires while the service's cgroup thrashes at its memory
limit, a rate-limited memory warning with cause `psi` goes down the demo tree, and the sources (the cgroup's
own memory.pressure, /proc/pressure/memory, $MEMORY_PRESSURE_WATCH) are chosen as documented.

How the pressure is made (peers.memory_pressure_lines): MemoryMax= (systemd applies it as the v1
memory.limit_in_bytes on this hybrid hierarchy, where MemoryHigh= does nothing), [Demo] AllocateMiB ballast that
leaves little headroom, and a reader in the same cgroup streaming a file larger than the headroom through the page
cache. Measured here: about 50-150 ms of `some` stall per 2 s in the service's cgroup.
"""

from __future__ import annotations

import time
from typing import Callable

from harness import Sandbox, lifecycle_events, messages, wait_for
from peers import (
    MEMORY_WARNING,
    monotonic_seconds,
    memory_pressure_lines,
    some_stall_microseconds,
    start,
    unit_cgroup_pressure_path,
)

# A threshold well under the stall the thrasher causes, over the 2 s window unprivileged triggers must use.
PRESSURE_CONFIG = """\
[MemoryPressure]
ThresholdMSec=30
WindowSec=2
MinimumIntervalSec={interval}

[Demo]
AllocateMiB=64
"""
MEMORY_MAX = "100M"


def psi_warnings(sandbox: Sandbox, unit: str, cursor: str) -> list[list]:
    """Each memory warning the tree received from PSI: its events, in order."""
    return group_warnings(lifecycle_events(sandbox.journal(unit, cursor)))


def group_warnings(all_events: list) -> list[list]:
    """The PSI events grouped by memory warning, in order."""
    events = [e for e in all_events if e.cause == "psi"]
    groups: list[list] = []
    for event in events:
        if not groups or len(groups[-1]) == len(MEMORY_WARNING):
            groups.append([])
        groups[-1].append(event)
    return groups


def test_real_pressure_sends_rate_limited_memory_warnings_down_the_tree(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    interval = 4
    unit = daemon_unit(*config(PRESSURE_CONFIG.format(interval=interval)), *memory_pressure_lines(MEMORY_MAX))
    # Before the start: the daemon's first PSI event (and so its first admission) comes after this moment.
    launched = time.monotonic()
    cursor, shown = start(sandbox, unit)
    stall_before = some_stall_microseconds(sandbox, unit_cgroup_pressure_path(unit))

    def observed() -> tuple[list[dict], float] | None:
        """One read of the journal once it holds two whole warnings and an event the rate limit dropped, with the
        moment the read ended (every record in it was logged before then)."""
        records = sandbox.journal(unit, cursor)
        read = time.monotonic()
        whole = [w for w in group_warnings(lifecycle_events(records)) if len(w) == len(MEMORY_WARNING)]
        dropped = any(r.get("MESSAGE") == "memory pressure event rate-limited" for r in records)
        return (records, read) if len(whole) >= 2 and dropped else None

    # Two warnings get through at least the interval apart, and the PSI events in between are dropped. Everything
    # below is checked against this one read: pressure goes on, and a later read may hold more.
    records, read = wait_for(
        observed, timeout=60, interval=0.5, message="two whole memory warnings from PSI and a dropped event"
    )

    # The watch: /proc/pressure/memory, because the shipped unit's dynamic user cannot write the cgroup's file.
    [watching] = [r for r in records if str(r.get("MESSAGE", "")).startswith("watching memory pressure:")]
    assert "some 30 ms per 2 s on /proc/pressure/memory" in str(watching["MESSAGE"])
    assert watching.get("LIFECYCLE_PSI_SOURCE") == "system-wide"
    assert watching.get("LIFECYCLE_PSI_SKIPPED", "").startswith(unit_cgroup_pressure_path(unit) + ": open: ")

    # The stall was real: the service's own cgroup saw it (the thrasher keeps running, so it only grows).
    wait_for(
        lambda: some_stall_microseconds(sandbox, unit_cgroup_pressure_path(unit)) - stall_before > 100_000,
        timeout=30,
        message="over 100 ms of memory stall in the service's own cgroup",
    )

    warnings = [w for w in group_warnings(lifecycle_events(records)) if len(w) == len(MEMORY_WARNING)]
    for warning in warnings:
        assert [(e.event, e.target) for e in warning] == MEMORY_WARNING
        assert {e.state for e in warning} == {"active"}
    # The demo's cache controller emptied itself each time (the trace lines of a warning follow its callbacks, so
    # the one in progress when the journal was read may show its cache line without its events yet).
    emptied = [r for r in records if "cache emptied on memory warning" in str(r.get("MESSAGE", ""))]
    assert len(warnings) <= len(emptied) <= len(warnings) + 1, (len(emptied), len(warnings))

    # Every PSI event is counted, in order, as admitted (`memory pressure: … exceeded`) or dropped (`… rate-limited`):
    # a dropped event's count of events minus the events dropped so far is the number admitted before it.
    tally = [
        r
        for r in records
        if str(r.get("MESSAGE", "")).startswith("memory pressure: ")
        or r.get("MESSAGE") == "memory pressure event rate-limited"
    ]
    assert [int(r["LIFECYCLE_PSI_EVENTS"]) for r in tally] == list(range(1, len(tally) + 1))
    admissions = [r for r in tally if r["MESSAGE"] != "memory pressure event rate-limited"]
    admitted = 0
    for record in tally:
        if record["MESSAGE"] == "memory pressure event rate-limited":
            assert int(record["LIFECYCLE_PSI_EVENTS"]) - int(record["LIFECYCLE_PSI_SUPPRESSED"]) == admitted, record
        else:
            admitted += 1
    delivered = [
        r
        for r in records
        if r.get("LIFECYCLE_EVENT") == "applicationDidReceiveMemoryWarning" and r.get("LIFECYCLE_CAUSE") == "psi"
    ]
    # The admitted line comes before the delegate's event, so the journal may hold one not delivered yet.
    assert len(delivered) <= admitted <= len(delivered) + 1, (admitted, len(delivered))
    assert admitted < len(tally), "no PSI event was dropped by the rate limit"

    # The rate limit, on the daemon's own clock: admissions at least the interval apart, all of them after `launched`
    # and logged before `read`, so no more than one per interval over that span (no slack needed).
    assert admitted <= 1 + (read - launched) / interval, (admitted, read - launched)
    # And as the journal stamped the admissions: the interval apart, less what journald's stamping of one line
    # may lag behind the limiter's clock (a loaded machine, a refault in the thrashing cgroup). Without the limit,
    # a PSI trigger fires once per 2 s window, far under interval - 0.5.
    stamped = [monotonic_seconds(r) for r in admissions]
    gaps = [b - a for a, b in zip(stamped, stamped[1:])]
    assert gaps and min(gaps) >= interval - 0.5, gaps

    after = sandbox.show(unit)
    assert (after["ActiveState"], after["MainPID"]) == ("active", shown["MainPID"])


def test_the_cgroups_own_memory_pressure_is_watched_where_the_service_may_write_it(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    # Root (no dynamic user) and a writable cgroup tree: the trigger goes on the service's own memory.pressure.
    unit = daemon_unit(
        "DynamicUser=no",
        "User=",
        "Group=",
        "ProtectControlGroups=no",
        *config(PRESSURE_CONFIG.format(interval=10)),
        *memory_pressure_lines(MEMORY_MAX),
    )
    cursor, _ = start(sandbox, unit)
    records = sandbox.journal(unit, cursor)
    [watching] = [r for r in records if str(r.get("MESSAGE", "")).startswith("watching memory pressure:")]
    assert f"on {unit_cgroup_pressure_path(unit)}," in str(watching["MESSAGE"])
    assert watching.get("LIFECYCLE_PSI_SOURCE") == "cgroup"
    # A warning's trace lines reach journald one by one: wait for the first warning's last one (the delegate's).
    [first, *_] = wait_for(
        lambda: [w for w in psi_warnings(sandbox, unit, cursor) if len(w) == len(MEMORY_WARNING)],
        timeout=30,
        message="a whole memory warning from PSI",
    )
    assert [(e.event, e.target) for e in first] == MEMORY_WARNING


def test_memory_pressure_watch_from_the_environment_wins_and_dev_null_switches_it_off(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit("Environment=MEMORY_PRESSURE_WATCH=/dev/null")
    cursor, shown = start(sandbox, unit)
    assert shown["ActiveState"] == "active"
    lines = messages(sandbox.journal(unit, cursor))
    assert "memory pressure is not watched: MEMORY_PRESSURE_WATCH=/dev/null switches it off" in lines
    assert not [m for m in lines if m.startswith("watching memory pressure:")]


def test_memory_pressure_watch_and_write_name_the_file_and_the_trigger(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    # What systemd 254+ would pass for MemoryPressureWatch=: the path and the base64 trigger ("some 150000 2000000").
    unit = daemon_unit(
        "Environment=MEMORY_PRESSURE_WATCH=/proc/pressure/memory",
        "Environment=MEMORY_PRESSURE_WRITE=c29tZSAxNTAwMDAgMjAwMDAwMAA=",
    )
    cursor, _ = start(sandbox, unit)
    records = sandbox.journal(unit, cursor)
    [watching] = [r for r in records if str(r.get("MESSAGE", "")).startswith("watching memory pressure:")]
    assert '"some 150000 2000000" from MEMORY_PRESSURE_WRITE on /proc/pressure/memory,' in str(watching["MESSAGE"])
    assert watching.get("LIFECYCLE_PSI_SOURCE") == "environment"
    assert "LIFECYCLE_PSI_SKIPPED" not in watching
