#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Faults of the services lifecycled depends on, each under the sandbox's real systemd 252 (or, for the notification
socket, outside systemd):

1. dbus-daemon restarted: the daemon reconnects, subscribes again and holds its two delay locks again, with one warning
   and one notice giving the outage's length; with the logind mock, announcements reach it again.
2. systemd-logind restarted: the same, through logind's NameOwnerChanged; no lock is held twice or left behind.
3. journald stopped (its socket still systemd's, its start held back) or frozen, then back: the main loop never blocks
   (the watchdog stays fed, signals are handled as fast as with journald up), nothing restarts, and the journal gets
   the later lines and one line saying how many waited and how many were dropped.
4. `systemctl daemon-reexec`: still supervised (same MainPID, active), the watchdog fed for several WatchdogSec
   periods, then a reload and a stop work.
5. `$NOTIFY_SOCKET` naming nothing (a path, an abstract name): one warning, transitions, exit 0 on SIGTERM.
6. A full state directory (a 64 KiB tmpfs): a failed save is one warning naming the file and the error, the previous
   archive is byte-identical, the daemon keeps running, and a save after space is freed succeeds.

The figures (reconnection times, signal latencies with and without journald, watchdog ping ages) are printed and
written to .build-e2e/fault-figures.json.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from typing import Callable, Iterator

import pytest

from harness import (
    CHECKOUT,
    DaemonBinary,
    Sandbox,
    lifecycle_events,
    log_record,
    messages,
    pairs,
    wait_for,
)
from peers import (
    BACKGROUND,
    BOTH_DELAY_LOCKS,
    FOREGROUND,
    LOGIND,
    MOCK_UNIT,
    STATIC_USER,
    LogindMock,
    daemon_messages,
    ensure_real_logind,
    kill_main,
    list_inhibitors,
    logind_mock,
    records_with,
    save_latencies,
    start,
    wait_events,
)
from test_daemon_pty import SYSTEMD_ENVIRONMENT

FIGURES_PATH = CHECKOUT / ".build-e2e" / "fault-figures.json"

# What the daemon promises after the bus or logind comes back (docs/notification-sources.md): the first reconnection
# attempt is immediate and logind's locks are asked for as soon as it owns its name, so the locks are back within a
# second of the restart here; the bound leaves room for a loaded 2-core machine.
RECOVERY_BOUND_SECONDS = 5.0


def record_figures(name: str, figures: dict) -> None:
    """Adds one test's figures to .build-e2e/fault-figures.json and prints them."""
    print(f"{name}:", json.dumps(figures))
    FIGURES_PATH.parent.mkdir(exist_ok=True)
    everything = json.loads(FIGURES_PATH.read_text()) if FIGURES_PATH.exists() else {}
    everything[name] = figures
    FIGURES_PATH.write_text(json.dumps(everything, indent=2, sort_keys=True) + "\n")


def daemon_warnings(sandbox: Sandbox, unit: str, cursor: str) -> list[dict]:
    """The daemon's own warnings (and worse) after the cursor: not systemd's about the unit."""
    return [
        r for r in sandbox.journal(unit, cursor) if r.get("_PID") != "1" and int(str(r.get("PRIORITY", "6"))) <= 4
    ]


def daemon_locks(sandbox: Sandbox, pid: str) -> list[tuple[str, str]]:
    """(what, mode) of every inhibitor held by the daemon's process, sorted; a lock held twice shows twice."""
    try:
        rows = list_inhibitors(sandbox)
    except AssertionError:
        # logind (or the bus) is not there right now.
        return []
    return sorted((str(row[0]), str(row[3])) for row in rows if row[1] == "lifecycled" and str(row[5]) == pid)


def bus_connection(sandbox: Sandbox, pid: str) -> str | None:
    """The unique name of the daemon's connection to the system bus (sd-bus description "logind"), if any."""
    done = sandbox.run("busctl", "--system", "list", "--json=short", check=False)
    if done.returncode != 0:
        return None
    rows = json.loads(done.stdout)
    names = [r["name"] for r in rows if str(r.get("pid")) == pid and r["name"].startswith(":")]
    return names[0] if names else None


def match_rules(sandbox: Sandbox, connection: str) -> int:
    """How many match rules the connection has on the bus (dbus-daemon's Debug.Stats)."""
    output = sandbox.run(
        "busctl", "--system", "call", "--json=short", "org.freedesktop.DBus", "/org/freedesktop/DBus",
        "org.freedesktop.DBus.Debug.Stats", "GetConnectionStats", "s", connection,
    ).stdout
    return int(json.loads(output)["data"][0]["MatchRules"]["data"])


def restored_notice(sandbox: Sandbox, unit: str, cursor: str) -> dict:
    [notice] = wait_for(
        lambda: records_with(sandbox, unit, cursor, "logind is back as"), timeout=10, message="the daemon's notice"
    )
    return notice


# MARK: 1. dbus-daemon restarted


def test_a_restart_of_dbus_daemon_is_one_warning_then_the_connection_the_subscriptions_and_both_locks_are_back(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    # The sandbox's real logind: it leaves with the bus (its connection drops, it exits, Restart=always brings it back).
    ensure_real_logind(sandbox)
    unit = daemon_unit(*STATIC_USER)
    _, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    wait_for(lambda: daemon_locks(sandbox, pid) == BOTH_DELAY_LOCKS, timeout=5, message="both locks at launch")
    before = bus_connection(sandbox, pid)
    assert before and match_rules(sandbox, before) == 3
    dbus_before = sandbox.show("dbus.service", "MainPID")["MainPID"]

    cursor = sandbox.cursor()
    began = time.monotonic()
    sandbox.systemctl("restart", "dbus.service")
    wait_for(
        lambda: daemon_locks(sandbox, pid) == BOTH_DELAY_LOCKS,
        timeout=RECOVERY_BOUND_SECONDS,
        interval=0.02,
        message="both locks held again",
    )
    seen_back = time.monotonic() - began
    assert sandbox.show("dbus.service", "MainPID")["MainPID"] != dbus_before, "dbus-daemon did not restart"

    notice = restored_notice(sandbox, unit, cursor)
    # A new connection on the new bus, subscribed again: PrepareForSleep, PrepareForShutdown, NameOwnerChanged.
    after = bus_connection(sandbox, pid)
    assert after
    wait_for(lambda: match_rules(sandbox, after) == 3, timeout=10, message=f"the 3 match rules of {after}")
    # Exactly the two locks: the ones the old logind held were closed, none taken twice. (logind reads the old ones
    # back from /run/systemd/inhibit at start and drops each once it sees its descriptor closed, at idle priority:
    # wait for that, not for a fixed time; a lock taken twice stays listed twice.)
    wait_for(lambda: daemon_locks(sandbox, pid) == BOTH_DELAY_LOCKS, timeout=10, message="exactly the two locks")
    warnings = daemon_warnings(sandbox, unit, cursor)
    assert len(warnings) == 1, messages(warnings)
    # Which comes first depends on dbus-daemon's order: logind's connection closing, or the daemon's own.
    assert str(warnings[0]["MESSAGE"]).startswith(
        ("logind left the system bus", "the system bus closed the connection")
    ), warnings[0]["MESSAGE"]
    assert "(reconnected to the system bus, attempt " in str(notice["MESSAGE"]), notice["MESSAGE"]
    assert "holding the delay inhibitors for sleep and shutdown again" in str(notice["MESSAGE"])
    outage_ms = int(notice["LIFECYCLE_OUTAGE_MS"])
    assert outage_ms <= RECOVERY_BOUND_SECONDS * 1000
    assert len(records_with(sandbox, unit, cursor, "logind is back as")) == 1
    # Nothing else was disturbed.
    shown_after = sandbox.show(unit)
    assert (shown_after["ActiveState"], shown_after["MainPID"], shown_after["NRestarts"]) == ("active", pid, "0")
    kill_main(sandbox, unit, "SIGUSR1")
    assert pairs(wait_events(sandbox, unit, cursor, len(BACKGROUND), "signal:SIGUSR1")) == BACKGROUND
    record_figures(
        "dbus_restart",
        {"locks_seen_again_after_restart_began_ms": round(seen_back * 1000), "outage_ms_by_the_daemon": outage_ms},
    )


def test_after_a_restart_of_dbus_daemon_logind_announcements_reach_the_application_again(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    with logind_mock(sandbox) as mock:
        unit = daemon_unit(*STATIC_USER)
        _, shown = start(sandbox, unit)
        pid = shown["MainPID"]
        wait_for(lambda: mock.lifecycled_locks() == BOTH_DELAY_LOCKS, timeout=5, message="both locks at launch")

        cursor = sandbox.cursor()
        sandbox.systemctl("restart", "dbus.service")
        # The mock's connection went with the old bus: start it again on the new bus.
        sandbox.systemctl("stop", MOCK_UNIT, check=False)
        sandbox.systemctl("reset-failed", MOCK_UNIT, check=False)
        sandbox.run(
            "systemd-run", f"--unit={MOCK_UNIT}", "--service-type=dbus", "-p", f"BusName={LOGIND}",
            "/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "logind",
        )
        mock = LogindMock(sandbox)
        wait_for(lambda: mock.lifecycled_locks() == BOTH_DELAY_LOCKS, timeout=5, message="both locks from the new mock")
        restored_notice(sandbox, unit, cursor)

        # The subscriptions are the new connection's: logind's announcements drive the application again.
        cursor = sandbox.cursor()
        mock.emit("PrepareForSleep", True)
        assert pairs(wait_events(sandbox, unit, cursor, len(BACKGROUND), "logind:PrepareForSleep")) == BACKGROUND
        wait_for(lambda: not mock.lifecycled_inhibitors(), timeout=5, message="the locks released for the sleep")
        cursor = sandbox.cursor()
        mock.emit("PrepareForSleep", False)
        assert pairs(wait_events(sandbox, unit, cursor, len(FOREGROUND), "logind:PrepareForSleep")) == FOREGROUND
        wait_for(lambda: mock.lifecycled_locks() == BOTH_DELAY_LOCKS, timeout=5, message="both locks after the resume")
        assert sandbox.show(unit)["MainPID"] == pid


# MARK: 2. systemd-logind restarted


def test_a_restart_of_logind_is_one_warning_then_both_locks_are_held_again_once_each(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    ensure_real_logind(sandbox)
    unit = daemon_unit(*STATIC_USER)
    _, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    wait_for(lambda: daemon_locks(sandbox, pid) == BOTH_DELAY_LOCKS, timeout=5, message="both locks at launch")
    logind_before = sandbox.show("systemd-logind.service", "MainPID")["MainPID"]
    connection = bus_connection(sandbox, pid)

    cursor = sandbox.cursor()
    began = time.monotonic()
    sandbox.systemctl("restart", "systemd-logind.service")
    logind_after = sandbox.show("systemd-logind.service", "MainPID")["MainPID"]
    assert logind_after != logind_before
    # logind reads its inhibitors back from /run/systemd/inhibit at start, so the old ones may be listed again for a
    # moment: the daemon closes them and takes new ones. What must hold in the end: each lock once.
    notice = restored_notice(sandbox, unit, cursor)
    seen_back = time.monotonic() - began
    wait_for(lambda: daemon_locks(sandbox, pid) == BOTH_DELAY_LOCKS, timeout=10, message="exactly the two locks")
    warnings = daemon_warnings(sandbox, unit, cursor)
    assert len(warnings) == 1, messages(warnings)
    assert str(warnings[0]["MESSAGE"]).startswith("logind left the system bus"), warnings[0]["MESSAGE"]
    text = str(notice["MESSAGE"])
    assert "after logind left the system bus: holding the delay inhibitors for sleep and shutdown again" in text, text
    assert "reconnected" not in text
    outage_ms = int(notice["LIFECYCLE_OUTAGE_MS"])
    assert outage_ms <= RECOVERY_BOUND_SECONDS * 1000
    # The same connection: only logind went away.
    assert bus_connection(sandbox, pid) == connection
    # logind's own view: the inhibitor files of its runtime directory are the two live ones.
    listed = [line.split() for line in sandbox.run("systemd-inhibit", "--list", "--no-pager", "--no-legend").stdout.splitlines()]
    assert sorted(f[5] for f in listed if len(f) >= 6 and f[0] == "lifecycled") == ["shutdown", "sleep"], listed
    assert sandbox.show(unit)["NRestarts"] == "0"
    record_figures(
        "logind_restart",
        {"notice_seen_after_restart_began_ms": round(seen_back * 1000), "outage_ms_by_the_daemon": outage_ms},
    )


# MARK: 3. journald stopped or frozen

JOURNALD = "systemd-journald.service"
JOURNALD_HOLD = "/etc/systemd/system/systemd-journald.service.d/lifecycle-e2e-hold.conf"
JOURNALD_GO = "/run/lifecycle-e2e-journald-go"


@pytest.fixture
def journald_control(sandbox: Sandbox) -> Iterator[None]:
    """journald's start held back until JOURNALD_GO exists: a stopped journald stays stopped while systemd keeps its
    socket (the first datagram starts it, and the start waits). Undone afterwards, journald running again."""
    sandbox.write_file(
        JOURNALD_HOLD,
        f"[Service]\nExecStartPre=/bin/sh -c 'while [ ! -e {JOURNALD_GO} ]; do sleep 0.05; done'\n",
    )
    sandbox.remove(JOURNALD_GO)
    sandbox.daemon_reload()
    try:
        yield
    finally:
        sandbox.write_file(JOURNALD_GO, "")
        sandbox.systemctl("kill", "-s", "SIGCONT", JOURNALD, check=False)
        sandbox.remove(JOURNALD_HOLD)
        sandbox.daemon_reload()
        sandbox.systemctl("start", JOURNALD)
        wait_for(
            lambda: sandbox.show(JOURNALD, "ActiveState")["ActiveState"] == "active", timeout=30, message="journald"
        )
        sandbox.remove(JOURNALD_GO)


def signal_latency(sandbox: Sandbox, unit: str, signal_name: str, status: str) -> float:
    """Seconds from `systemctl kill` to the StatusText naming `status` (systemd's view: STATUS= from the daemon),
    polled as fast as the sandbox answers; an upper bound of the daemon's own latency."""
    began = time.monotonic()
    kill_main(sandbox, unit, signal_name)
    wait_for(
        lambda: sandbox.show(unit, "StatusText")["StatusText"].startswith(status),
        timeout=5,
        interval=0.005,
        message=f"StatusText {status} after {signal_name}",
    )
    return time.monotonic() - began


def watchdog_ping(sandbox: Sandbox, unit: str) -> tuple[float, int]:
    """How long before the question systemd had last heard WATCHDOG=1, in seconds, and when that was (systemd's
    WatchdogTimestampMonotonic, µs; both clocks are CLOCK_MONOTONIC: the sandbox has no time namespace). Measured
    from the moment the question was asked, not answered: the time `systemctl show` takes (more on a slow machine)
    is not counted against the daemon, and an age over a bound proves a gap between pings at least that long."""
    asked = time.monotonic()
    last = int(sandbox.show(unit, "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"])
    return asked - last / 1e6, last


def watchdog_age(sandbox: Sandbox, unit: str) -> float:
    return watchdog_ping(sandbox, unit)[0]


@pytest.mark.parametrize(
    "fault,signals",
    [
        # Stopped: more lines than the writer's queue holds (1024; the demo writes ~18 per signal with --trace).
        ("stopped", 60),
        # Frozen (SIGSTOP): fewer, so that every line waits and none is dropped.
        ("frozen", 6),
    ],
)
def test_while_journald_is_down_the_loop_never_blocks_and_the_journal_learns_what_waited_and_what_was_dropped(
    sandbox: Sandbox, daemon_unit: Callable[..., str], journald_control: None, fault: str, signals: int
) -> None:
    unit = daemon_unit("WatchdogSec=2")
    _, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    # With journald up: the same measurements, for comparison.
    baseline_saves = save_latencies(sandbox, pid, 10)
    baseline = [
        signal_latency(sandbox, unit, "SIGUSR1" if i % 2 == 0 else "SIGUSR2", "background" if i % 2 == 0 else "active")
        for i in range(10)
    ]
    cursor = sandbox.cursor()
    first_seq = max(e.seq for e in lifecycle_events(sandbox.journal(unit), pid=pid))

    began = time.monotonic()
    if fault == "stopped":
        sandbox.systemctl("stop", JOURNALD)
    else:
        sandbox.systemctl("kill", "-s", "SIGSTOP", JOURNALD)
    # The daemon's own latency first (kill(2) to the saved state), then systemd's view (systemctl kill to StatusText).
    saves = save_latencies(sandbox, pid, 20)
    latencies: list[float] = []
    ages: list[float] = [watchdog_age(sandbox, unit)]
    for i in range(signals):
        latencies.append(
            signal_latency(
                sandbox, unit, "SIGUSR1" if i % 2 == 0 else "SIGUSR2", "background" if i % 2 == 0 else "active"
            )
        )
        ages.append(watchdog_age(sandbox, unit))
    # Several watchdog periods with journald still down, the daemon idle.
    while time.monotonic() - began < 8:
        ages.append(watchdog_age(sandbox, unit))
        time.sleep(0.25)
    down = sandbox.show(JOURNALD, "ActiveState", "SubState")
    assert (down["ActiveState"], down["SubState"]) == (
        ("activating", "start-pre") if fault == "stopped" else ("active", "running")
    ), down
    during = sandbox.show(unit)
    assert (during["ActiveState"], during["MainPID"], during["NRestarts"]) == ("active", pid, "0"), during
    # systemd heard WATCHDOG=1 throughout (WatchdogSec=2: sd-event pings between half and three quarters of it).
    assert max(ages) < 1.8, ages
    # The loop did not wait for journald: no save took longer than the first one's wait for a stalled journald
    # (JournalWriter's 250 ms), and the median is the same as with journald up.
    assert max(saves) < 1.0, saves

    # journald back.
    if fault == "stopped":
        sandbox.write_file(JOURNALD_GO, "")
    else:
        sandbox.systemctl("kill", "-s", "SIGCONT", JOURNALD)
    wait_for(lambda: sandbox.show(JOURNALD, "ActiveState")["ActiveState"] == "active", timeout=30, message="journald")
    outage = time.monotonic() - began
    report = wait_for(
        lambda: [r for r in sandbox.journal(unit, cursor) if "LIFECYCLE_JOURNAL_DROPPED" in r],
        timeout=15,
        message="the daemon's report of what waited",
    )
    assert len(report) == 1, messages(report)
    dropped = int(report[0]["LIFECYCLE_JOURNAL_DROPPED"])
    delayed = int(report[0]["LIFECYCLE_JOURNAL_DELAYED"])
    assert str(report[0]["MESSAGE"]).startswith("journald did not take log lines at once for "), report[0]["MESSAGE"]
    # Logging resumes: a transition after the outage reaches the journal whole.
    after = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1" if signals % 2 == 0 else "SIGUSR2")
    expected = BACKGROUND if signals % 2 == 0 else FOREGROUND
    cause = "signal:SIGUSR1" if signals % 2 == 0 else "signal:SIGUSR2"
    assert pairs(wait_events(sandbox, unit, after, len(expected), cause)) == expected

    records = sandbox.journal(unit, cursor)
    seqs = {e.seq for e in lifecycle_events(records, pid=pid) if e.seq > first_seq}
    missing = set(range(first_seq + 1, max(seqs) + 1)) - seqs
    if fault == "stopped":
        assert dropped > 0 and report[0]["PRIORITY"] == "4"
        # The queue was full (1024 lines); lines logged while it drained waited too.
        assert delayed >= 1024, delayed
        # Every trace line missing from the journal is one the report counted (it counts other lines too).
        assert 0 < len(missing) <= dropped, (len(missing), dropped)
    else:
        assert (dropped, report[0]["PRIORITY"]) == (0, "5")
        assert not missing, sorted(missing)
    # Nothing crashed or was killed; the report is the only word about it, and no callback stalled the loop.
    final = sandbox.show(unit)
    assert (final["ActiveState"], final["MainPID"], final["NRestarts"], final["Result"]) == ("active", pid, "0", "success")
    assert not [m for m in messages(records) if "Watchdog timeout" in m or "has run for" in m]
    assert [r for r in daemon_warnings(sandbox, unit, cursor) if "LIFECYCLE_JOURNAL_DROPPED" not in r] == []
    record_figures(
        f"journald_{fault}",
        {
            "signals_while_down": signals + 20,
            "save_ms_journald_up_median": round(sorted(baseline_saves)[len(baseline_saves) // 2] * 1000, 2),
            "save_ms_journald_up_max": round(max(baseline_saves) * 1000, 2),
            "save_ms_journald_down_median": round(sorted(saves)[len(saves) // 2] * 1000, 2),
            "save_ms_journald_down_max": round(max(saves) * 1000, 2),
            "latency_ms_journald_up_median": round(sorted(baseline)[len(baseline) // 2] * 1000, 1),
            "latency_ms_journald_up_max": round(max(baseline) * 1000, 1),
            "latency_ms_journald_down_median": round(sorted(latencies)[len(latencies) // 2] * 1000, 1),
            "latency_ms_journald_down_max": round(max(latencies) * 1000, 1),
            "watchdog_ping_age_max_s": round(max(ages), 2),
            "outage_s": round(outage, 1),
            "lines_waited": delayed,
            "lines_dropped": dropped,
            "trace_lines_missing": len(missing),
        },
    )


# Runs inside the sandbox: slows journald down without stopping it, as a local user able to stop and continue it (or
# to starve it of CPU) could: journald is stopped for `stop` seconds, then runs for `run` seconds, over and over for
# `seconds`, and is left running. It takes a few entries in each short window, so it never goes `stall` seconds
# without taking one: a wait for it that only gives up on a stall would last as long as journald needs to catch up.
THROTTLE_SCRIPT = r"""
import os, signal, sys, time
pid, seconds, stop, run = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
end = time.monotonic() + seconds
try:
    while time.monotonic() < end:
        os.kill(pid, signal.SIGSTOP)
        time.sleep(stop)
        os.kill(pid, signal.SIGCONT)
        time.sleep(run)
finally:
    os.kill(pid, signal.SIGCONT)
"""

# Runs inside the sandbox: `count` signals to the daemon, SIGUSR1 and SIGUSR2 in turn, 5 ms apart (kill(2)): a burst
# of transitions whose lines fill journald's socket and then the writer's queue.
BURST_SCRIPT = r"""
import os, signal, sys, time
pid, count = int(sys.argv[1]), int(sys.argv[2])
for index in range(count):
    os.kill(pid, signal.SIGUSR1 if index % 2 == 0 else signal.SIGUSR2)
    time.sleep(0.005)
"""

# Runs inside the sandbox: like peers.SAVE_LATENCY_SCRIPT (kill(2) SIGUSR1 to the saved state on disk), but each round
# starts only once the daemon says it is active again (GetStatus on the control socket after SIGUSR2), so a slow
# round cannot make the next SIGUSR1 arrive while the daemon is still in the background. Prints each round's seconds
# (5.0 for a save that did not come).
ROUNDS_SCRIPT = r"""
import json, os, signal, socket, sys, time
pid, rounds, path, control = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
def inode():
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None
def state():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as peer:
        peer.connect(control)
        peer.sendall(b'{"method":"io.lifecyclekit.Lifecycle.GetStatus"}\0')
        reply = b""
        while not reply.endswith(b"\0"):
            reply += peer.recv(65536)
    return json.loads(reply[:-1])["parameters"]["state"]
seconds = []
for _ in range(rounds):
    deadline = time.monotonic() + 10
    while state() != "active" and time.monotonic() < deadline:
        time.sleep(0.01)
    before = inode()
    began = time.monotonic()
    os.kill(pid, signal.SIGUSR1)
    while inode() == before and time.monotonic() - began < 5:
        time.sleep(0.0002)
    seconds.append(time.monotonic() - began)
    os.kill(pid, signal.SIGUSR2)
print(" ".join("%.6f" % s for s in seconds))
"""


def test_a_journald_slowed_down_never_holds_the_loop_longer_than_one_budget_and_no_watchdog_ping_is_missed(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    """Issue 19: the wait before sd_notify and control replies has a total budget (250 ms, an eighth of a short
    watchdog interval), not only a stall timeout: a journald that keeps taking an entry now and then holds the main
    loop one budget per outage, never as long as it takes to catch up."""
    unit = daemon_unit("WatchdogSec=2")
    _, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    baseline = save_latencies(sandbox, pid, 10)
    cursor = sandbox.cursor()
    journald = sandbox.show(JOURNALD, "MainPID")["MainPID"]
    sandbox.write_file("/run/throttle.py", THROTTLE_SCRIPT)
    sandbox.write_file("/run/burst.py", BURST_SCRIPT)
    sandbox.write_file("/run/rounds.py", ROUNDS_SCRIPT)
    throttled_seconds = 20
    began = time.monotonic()
    sandbox.run(
        "systemd-run", "--unit=lifecycle-e2e-throttle", "--collect", "--property=Type=exec",
        "/usr/bin/python3", "/run/throttle.py", journald, str(throttled_seconds), "0.2", "0.0002",
    )
    try:
        # Far more lines than journald takes meanwhile: its socket's queue fills, then the writer's.
        sandbox.run("/usr/bin/python3", "/run/burst.py", pid, "60", timeout=60)
        ages: list[float] = [watchdog_age(sandbox, unit)]
        output = sandbox.run(
            "/usr/bin/python3", "/run/rounds.py", pid, "20", "/var/lib/lifecycled/state.archive",
            "/run/lifecycled/control", timeout=300,
        ).stdout
        saves = [float(x) for x in output.split()]
        ages.append(watchdog_age(sandbox, unit))
        while time.monotonic() - began < throttled_seconds - 1:
            ages.append(watchdog_age(sandbox, unit))
            time.sleep(0.25)
        during = sandbox.show(unit)
        journald_state = sandbox.show(JOURNALD, "ActiveState", "MainPID")
    finally:
        sandbox.systemctl("stop", "lifecycle-e2e-throttle", check=False)
        sandbox.systemctl("kill", "-s", "SIGCONT", JOURNALD, check=False)
    # journald was slow, not gone.
    assert journald_state == {"ActiveState": "active", "MainPID": journald}, journald_state
    assert (during["ActiveState"], during["MainPID"], during["NRestarts"]) == ("active", pid, "0"), during
    # systemd heard WATCHDOG=1 throughout (WatchdogSec=2).
    assert max(ages) < 1.8, ages
    # Signals are answered as with journald up: half of them took no longer than with journald up, and none waited
    # for journald more than a few budgets (250 ms each: the dispatch a signal arrives in may be waiting one out, and
    # its own waits one more, two when journald catches up between them); before the budget, a save waited seconds or
    # systemd killed the daemon for the watchdog.
    median = sorted(saves)[len(saves) // 2]
    baseline_median = sorted(baseline)[len(baseline) // 2]
    assert median < 2 * baseline_median + 0.010, (saves, baseline)
    assert max(saves) < 1.0, (saves, baseline)
    records = sandbox.journal(unit, cursor)
    assert not [m for m in messages(records) if "Watchdog timeout" in m or "has run for" in m]
    record_figures(
        "journald_slowed",
        {
            "save_ms_journald_up_median": round(baseline_median * 1000, 2),
            "save_ms_journald_up_max": round(max(baseline) * 1000, 2),
            "save_ms_journald_slowed_median": round(median * 1000, 2),
            "save_ms_journald_slowed_max": round(max(saves) * 1000, 2),
            "watchdog_ping_age_max_s": round(max(ages), 2),
        },
    )


# MARK: 4. systemctl daemon-reexec


def test_after_daemon_reexec_the_daemon_is_still_supervised_its_watchdog_fed_and_reload_and_stop_work(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit("WatchdogSec=2")
    _, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    cursor = sandbox.cursor()
    sandbox.systemctl("daemon-reexec")
    assert [r for r in sandbox.journal(None, cursor) if r.get("_PID") == "1" and r.get("MESSAGE") == "Reexecuting."]
    ages = []
    pings = set()
    began = time.monotonic()
    # Four WatchdogSec periods: a daemon whose pings were lost would have been killed twice over.
    while time.monotonic() - began < 8:
        age, last = watchdog_ping(sandbox, unit)
        ages.append(age)
        pings.add(last)
        time.sleep(0.25)
    shown_after = sandbox.show(unit)
    assert (shown_after["ActiveState"], shown_after["SubState"]) == ("active", "running")
    assert (shown_after["MainPID"], shown_after["NRestarts"]) == (pid, "0")
    # Pings keep arriving after the reexec: whenever asked, systemd had heard one less than 1.8 s before (sd-event
    # pings between half and three quarters of WatchdogSec=2). How many distinct pings the samples catch depends on
    # how fast `systemctl show` answers, so that is a figure, not a bound; the age at every sample is the bound.
    assert max(ages) < 1.8, ages
    assert max(pings) / 1e6 > began, (sorted(pings), began)
    assert "active" in shown_after["StatusText"]
    # Notifications still reach the re-executed manager: a signal's STATUS=, a reload's RELOADING=1/READY=1.
    kill_main(sandbox, unit, "SIGUSR1")
    wait_for(lambda: sandbox.show(unit)["StatusText"].startswith("background"), timeout=5, message="background")
    reload_cursor = sandbox.cursor()
    sandbox.systemctl("reload", unit, timeout=30)
    events = [e.event for e in lifecycle_events(sandbox.journal(unit, reload_cursor), pid=pid) if e.target == "delegate"]
    assert events == ["application(_:validateReload:)", "applicationWillReload", "applicationDidReload"], events
    assert sandbox.show(unit)["ActiveState"] == "active"
    sandbox.systemctl("stop", unit)
    stopped = sandbox.show(unit)
    assert (stopped["ActiveState"], stopped["Result"], stopped["ExecMainStatus"]) == ("inactive", "success", "0")
    records = sandbox.journal(unit, cursor)
    assert not [m for m in messages(records) if "Watchdog timeout" in m]
    assert any("Deactivated successfully" in m for m in messages(records))
    record_figures("daemon_reexec", {"watchdog_ping_age_max_s": round(max(ages), 2), "pings_seen_in_8_s": len(pings)})


# MARK: 5. $NOTIFY_SOCKET naming nothing

ISOLATED_CONFIG = "[Logind]\nWatch=no\n[MemoryPressure]\nWatch=no\n"


@pytest.mark.parametrize("notify_socket", ["/run/lifecycle-e2e-nonexistent/notify", "@lifecycle-e2e-nobody-binds-this"])
def test_a_notification_socket_that_is_not_there_is_one_warning_and_the_daemon_works_and_exits_0(
    lifecycled_bin: DaemonBinary, notify_socket: str
) -> None:
    # Outside systemd, as a plain process, so that nothing else binds the name. logind and memory pressure are off:
    # their warnings (no system bus here, perhaps no PSI) are other tests' business; this counts the socket's alone.
    with tempfile.TemporaryDirectory(prefix="lifecycle-e2e-notify.") as directory:
        config = os.path.join(directory, "lifecycled.conf")
        with open(config, "w") as file:
            file.write(ISOLATED_CONFIG)
        environment = {k: v for k, v in os.environ.items() if k not in SYSTEMD_ENVIRONMENT}
        environment["NOTIFY_SOCKET"] = notify_socket
        process = subprocess.Popen(
            [str(lifecycled_bin.path()), "--trace", "--config", config, "--state-directory", os.path.join(directory, "state")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=environment,
            text=True,
        )
        try:
            # Its stderr is a pipe: one JSON object a line (docs/operations.md, "Log formats").
            records: list[dict] = []

            def read_until(predicate: Callable[[str], bool]) -> None:
                assert process.stderr is not None
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    line = process.stderr.readline()
                    if not line:
                        break
                    records.append(log_record(line))
                    if predicate(str(records[-1].get("message", ""))):
                        return
                raise AssertionError(f"never seen; the daemon said:\n" + "\n".join(map(str, records)))

            read_until(lambda message: message == "applicationDidBecomeActive delegate")
            process.send_signal(signal.SIGUSR1)
            read_until(lambda message: message.startswith("saved state generation 1"))
            process.send_signal(signal.SIGUSR2)
            read_until(lambda message: message == "applicationDidBecomeActive delegate")
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
            assert process.stderr is not None
            records += [log_record(line) for line in process.stderr.read().splitlines()]
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert not [r for r in records if r["level"] == "unparsed"], records
        warnings = [str(r["message"]) for r in records if r["level"] in ("warning", "error", "critical")]
        assert len(warnings) == 1, warnings
        assert f"cannot reach systemd's notification socket (NOTIFY_SOCKET={notify_socket})" in warnings[0], warnings[0]
        expected_errno = "No such file or directory" if notify_socket.startswith("/") else "Connection refused"
        assert expected_errno in warnings[0], warnings[0]
        # The transitions all ran, in order, and the state was saved to the directory at each background.
        delegate = [r["LIFECYCLE_EVENT"] for r in records if r.get("LIFECYCLE_TARGET") == "delegate"]
        # Background (SIGUSR1), foreground (SIGUSR2), then termination's own way through the background.
        assert delegate.count("applicationDidEnterBackground") == 2, delegate
        assert delegate.count("applicationDidBecomeActive") == 2, delegate
        assert "applicationWillTerminate" in delegate, delegate
        assert any(r["message"] == "terminated cleanly" for r in records), records[-5:]
        assert os.path.exists(os.path.join(directory, "state", "state.archive"))


# MARK: 6. A full state directory

STATE_DIRECTORY = "/var/lib/lifecycled"
STATE_FILE = f"{STATE_DIRECTORY}/state.archive"


def save(sandbox: Sandbox, unit: str) -> list[str]:
    """SIGUSR1 (background, which saves), waits for the save's line (the file descriptor store always takes it), then
    SIGUSR2; returns the daemon's lines about the save: its warning or debug line when the directory failed, then
    the "saved state generation N … to …" line."""
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    wait_for(
        lambda: any(m.startswith("saved state generation") for m in daemon_messages(sandbox, unit, cursor)),
        timeout=10,
        message="the save",
    )
    kill_main(sandbox, unit, "SIGUSR2")
    wait_for(lambda: sandbox.show(unit)["StatusText"].startswith("active"), timeout=5, message="active again")
    return [m for m in daemon_messages(sandbox, unit, cursor) if "save" in m]


def archive_digest(sandbox: Sandbox) -> str:
    return sandbox.run("sha256sum", STATE_FILE).stdout.split()[0]


def test_a_full_state_directory_is_one_warning_the_previous_archive_stays_and_a_save_after_space_is_freed_works(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit()
    sandbox.run("mkdir", "-p", STATE_DIRECTORY)
    # A tiny tmpfs as the state directory: room for the archive and little else.
    sandbox.run("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "lifecycle-e2e-state", STATE_DIRECTORY)
    try:
        _, shown = start(sandbox, unit)
        pid = shown["MainPID"]
        first = save(sandbox, unit)
        assert first[-1].startswith(f"saved state generation 1 (") and STATE_FILE in first[-1], first
        before = archive_digest(sandbox)

        # Fill it (as root, which tmpfs reserves nothing for).
        filled = sandbox.run("dd", "if=/dev/zero", f"of={STATE_DIRECTORY}/filler", "bs=4k", check=False)
        assert "No space left on device" in filled.stderr, filled.stderr
        cursor = sandbox.cursor()
        failed = save(sandbox, unit)
        assert len(failed) == 2, failed
        assert failed[0] == (
            f"cannot save the state to {STATE_FILE}: No space left on device; the previous save stays there, and the "
            "file descriptor store keeps this one"
        ), failed
        assert failed[1].startswith("saved state generation 2 (") and STATE_FILE not in failed[1], failed
        # A second save into the full directory: a debug line, no second warning.
        second = save(sandbox, unit)
        assert second[0] == f"cannot save the state to {STATE_FILE}: No space left on device", second
        assert second[1].startswith("saved state generation 3 (") and STATE_FILE not in second[1], second
        warnings = daemon_warnings(sandbox, unit, cursor)
        assert len(warnings) == 1, messages(warnings)
        assert warnings[0]["MESSAGE"] == failed[0]
        assert (warnings[0]["LIFECYCLE_STATE_FILE"], warnings[0]["LIFECYCLE_ERRNO"]) == (STATE_FILE, "28")
        # The previous archive, byte for byte; no temporary file left behind.
        assert archive_digest(sandbox) == before
        listed = sandbox.run("ls", "-A", STATE_DIRECTORY).stdout.split()
        # run.record: the daemon's record of this run, written at launch (docs/restoration.md).
        assert sorted(listed) == ["filler", "run.record", "state.archive"], listed
        running = sandbox.show(unit)
        assert (running["ActiveState"], running["MainPID"], running["NRestarts"]) == ("active", pid, "0")

        # Space freed: the next save reaches the directory again, and says so once.
        sandbox.remove(f"{STATE_DIRECTORY}/filler")
        cursor = sandbox.cursor()
        saved = save(sandbox, unit)
        assert saved == [
            f"the state is saved to {STATE_FILE} again, after 2 failed saves",
            saved[-1],
        ], saved
        assert saved[-1].startswith("saved state generation 4 (") and STATE_FILE in saved[-1], saved
        assert archive_digest(sandbox) != before
        header = sandbox.run("head", "-c", "64", STATE_FILE).stdout
        assert header.startswith("LifecycleKit-State 2 "), header
        body = sandbox.run("cat", STATE_FILE).stdout.split("\n", 1)[1]
        assert json.loads(body)["generation"] == 4
        assert daemon_warnings(sandbox, unit, cursor) == []
    finally:
        sandbox.systemctl("stop", unit, check=False)
        sandbox.run("umount", "-l", STATE_DIRECTORY, check=False)
