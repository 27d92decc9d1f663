#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Real peers for the notification-source tests: logind (python3-dbusmock's template on the sandbox's system bus, or
the sandbox's own systemd-logind), memory pressure (a memory limit plus a page-cache thrasher in the service's own
cgroup), and the shared helpers those tests use to start the daemon with a configuration file and read its trace
back.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from typing import Iterator

from harness import (
    SANDBOX_BIN,
    LifecycleEvent,
    Sandbox,
    entering,
    leaving,
    lifecycle_events,
    messages,
    preservation,
    wait_for,
)

# The configuration file the tests write: under the sandbox's own /run (a tmpfs; its /etc is the machine's).
CONFIG_PATH = "/run/lifecycled-e2e.conf"

# The background and foreground sequences of the demo tree (docs/lifecycle.md §1-§2), whatever asked for them.
# The demo saves its state once applicationDidEnterBackground has reached the whole tree.
BACKGROUND = leaving("applicationWillResignActive") + leaving("applicationDidEnterBackground") + preservation()
FOREGROUND = entering("applicationWillEnterForeground") + entering("applicationDidBecomeActive")
MEMORY_WARNING = leaving("didReceiveMemoryWarning", delegate_event="applicationDidReceiveMemoryWarning")

# dbus-daemon under systemd 252 runs with SYSTEMD_NSS_DYNAMIC_BYPASS=1, cannot resolve a DynamicUser= uid and
# drops such a client right after authentication, so a DynamicUser= daemon never reaches logind. The shipped unit
# runs as the static user `lifecycled` (systemd/lifecycled.sysusers, made in the sandbox by conftest), so the logind
# tests run it as shipped.
STATIC_USER: list[str] = []


def with_config(sandbox: Sandbox, text: str) -> list[str]:
    """Writes the configuration file and returns the drop-in lines that make the daemon read it."""
    sandbox.write_file(CONFIG_PATH, text)
    return ["ExecStart=", f"ExecStart={SANDBOX_BIN} --trace --config {CONFIG_PATH}"]


def remove_config(sandbox: Sandbox) -> None:
    sandbox.remove(CONFIG_PATH)


def events_after(sandbox: Sandbox, unit: str, cursor: str, cause: str | None = None) -> list[LifecycleEvent]:
    return [e for e in lifecycle_events(sandbox.journal(unit, cursor)) if cause is None or e.cause == cause]


def wait_events(
    sandbox: Sandbox, unit: str, cursor: str, count: int, cause: str | None = None, timeout: float = 10
) -> list[LifecycleEvent]:
    """Waits for `count` trace events (with `cause`) after `cursor`, then reads again after a pause so that any
    extra events show up in the comparison."""
    wait_for(
        lambda: len(events_after(sandbox, unit, cursor, cause)) >= count,
        timeout=timeout,
        message=f"{count} trace events with cause {cause}",
    )
    time.sleep(0.5)
    return events_after(sandbox, unit, cursor, cause)


def kill_main(sandbox: Sandbox, unit: str, signal_name_or_number: str) -> None:
    """`systemctl kill --kill-whom=main -s SIGNAL`: the signal to the daemon only."""
    sandbox.systemctl("kill", "--kill-whom=main", "-s", signal_name_or_number, unit)


def main_pid(sandbox: Sandbox, unit: str) -> str:
    """The unit's main process, as systemd has it ("0" when it has none)."""
    return sandbox.show(unit, "MainPID")["MainPID"]


def active_again(sandbox: Sandbox, unit: str, old_pid: str, timeout: float = 30, interval: float = 0.02) -> str:
    """Waits until a process other than `old_pid` is the unit's main process and the unit is active; returns it."""

    def new_pid() -> str | None:
        shown = sandbox.show(unit, "MainPID", "ActiveState")
        pid = shown["MainPID"]
        return pid if pid not in ("0", old_pid) and shown["ActiveState"] == "active" else None

    return wait_for(new_pid, timeout=timeout, interval=interval, message="the unit active with a new main process")


def start(sandbox: Sandbox, unit: str) -> tuple[str, dict[str, str]]:
    """Starts the unit (returns after READY=1): the cursor from before the start, and the unit's properties."""
    cursor = sandbox.cursor()
    sandbox.systemctl("start", unit)
    return cursor, sandbox.show(unit)


def daemon_messages(sandbox: Sandbox, unit: str, cursor: str) -> list[str]:
    """The daemon's own log lines (not the trace, not systemd's) after the cursor, in order."""
    return [
        str(r.get("MESSAGE", ""))
        for r in sandbox.journal(unit, cursor)
        if "LIFECYCLE_EVENT" not in r and r.get("_PID") != "1"
    ]


def records_with(sandbox: Sandbox, unit: str, cursor: str, text: str) -> list[dict]:
    return [r for r in sandbox.journal(unit, cursor) if text in str(r.get("MESSAGE", ""))]


def monotonic_seconds(record: dict) -> float:
    """When the record was logged, on CLOCK_MONOTONIC (seconds)."""
    return int(record.get("_SOURCE_MONOTONIC_TIMESTAMP") or record["__MONOTONIC_TIMESTAMP"]) / 1e6


# MARK: logind

LOGIND = "org.freedesktop.login1"
LOGIND_PATH = "/org/freedesktop/login1"
MANAGER = "org.freedesktop.login1.Manager"
MOCK_UNIT = "lifecycle-e2e-logind-mock.service"


class LogindMock:
    """python3-dbusmock's logind template, owning org.freedesktop.login1 on the sandbox's system bus."""

    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox

    def busctl(self, *args: str, check: bool = True) -> str:
        return self.sandbox.run("busctl", "--system", *args, check=check).stdout

    def emit(self, member: str, value: bool) -> None:
        """logind's own signal: the mock emits it from the connection that owns the name."""
        self.busctl(
            "call", LOGIND, LOGIND_PATH, "org.freedesktop.DBus.Mock", "EmitSignal", "sssav",
            MANAGER, member, "b", "1", "b", "true" if value else "false",
        )

    def emit_from_stranger(self, member: str, value: bool, destination: str | None = None) -> None:
        """The same signal from busctl's own connection: broadcast, or addressed to one connection."""
        args = ["emit"]
        if destination:
            args.append(f"--destination={destination}")
        self.busctl(*args, LOGIND_PATH, MANAGER, member, "b", "true" if value else "false")

    def inhibitors(self) -> list[list[object]]:
        """ListInhibitors: [what, who, why, mode, uid, pid] rows."""
        return list_inhibitors(self.sandbox)

    def lifecycled_inhibitors(self) -> list[list[object]]:
        """The daemon's rows: one delay lock with what "sleep" and one with what "shutdown" while it holds them."""
        return [row for row in self.inhibitors() if row[1] == "lifecycled"]

    def lifecycled_locks(self) -> list[tuple[str, str]]:
        """(what, mode) of the daemon's rows, sorted: [("shutdown", "delay"), ("sleep", "delay")] when both are held."""
        return sorted((str(row[0]), str(row[3])) for row in self.lifecycled_inhibitors())

    def set_inhibit_delay_max(self, microseconds: int) -> None:
        """Adds InhibitDelayMaxUSec, which the template lacks, to the manager object."""
        self.busctl(
            "call", LOGIND, LOGIND_PATH, "org.freedesktop.DBus.Mock", "AddProperty", "ssv",
            MANAGER, "InhibitDelayMaxUSec", "t", str(microseconds),
        )

    def unique_name_of(self, pid: str) -> str:
        """The bus name of the daemon's logind connection (sd-bus description "logind")."""
        rows = json.loads(self.busctl("list", "--json=short"))
        names = [r["name"] for r in rows if str(r.get("pid")) == str(pid) and r["name"].startswith(":")]
        assert names, f"PID {pid} has no connection on the system bus"
        described = [r["name"] for r in rows if r["name"] in names and r.get("description") == "logind"]
        return (described or names)[0]


def list_inhibitors(sandbox: Sandbox) -> list[list[object]]:
    """logind's ListInhibitors (the mock's or the real one's): [what, who, why, mode, uid, pid] rows."""
    output = sandbox.run("busctl", "--system", "call", "--json=short", LOGIND, LOGIND_PATH, MANAGER, "ListInhibitors")
    return json.loads(output.stdout)["data"][0]


# Both delay locks of the daemon, as ListInhibitors shows them: logind grants each `what` under its own polkit action
# (a combined "sleep:shutdown" is checked as inhibit-handle-lid-switch, which an unprivileged user is refused).
BOTH_DELAY_LOCKS = [("shutdown", "delay"), ("sleep", "delay")]


def ensure_real_logind(sandbox: Sandbox) -> None:
    """Puts the sandbox's own systemd-logind back, whatever a mock fixture left behind (a failed teardown, a test
    interrupted inside `logind_mock` or `logind_absent`), and waits until it owns its name."""
    sandbox.systemctl("stop", MOCK_UNIT, check=False)
    sandbox.systemctl("reset-failed", MOCK_UNIT, "systemd-logind.service", check=False)
    sandbox.systemctl("unmask", "--runtime", "systemd-logind.service", check=False)
    sandbox.systemctl("start", "systemd-logind.service")

    def owned_by_logind() -> bool:
        owner = sandbox.run("busctl", "--system", "status", "--no-pager", LOGIND, check=False).stdout
        return "Comm=systemd-logind" in owner

    wait_for(owned_by_logind, timeout=10, message=f"systemd-logind owning {LOGIND}")


@contextmanager
def logind_mock(sandbox: Sandbox, inhibit_delay_max_usec: int | None = None) -> Iterator[LogindMock]:
    """Masks and stops the sandbox's systemd-logind, runs the mock as a Type=dbus unit in its place (started once it
    owns the name), and puts the real logind back afterwards."""
    sandbox.systemctl("mask", "--runtime", "--now", "systemd-logind.service")
    sandbox.systemctl("reset-failed", MOCK_UNIT, check=False)
    sandbox.run(
        "systemd-run", f"--unit={MOCK_UNIT}", "--service-type=dbus", "-p", f"BusName={LOGIND}",
        "/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "logind",
    )
    mock = LogindMock(sandbox)
    if inhibit_delay_max_usec is not None:
        mock.set_inhibit_delay_max(inhibit_delay_max_usec)
    try:
        yield mock
    finally:
        sandbox.systemctl("stop", MOCK_UNIT, check=False)
        sandbox.systemctl("reset-failed", MOCK_UNIT, check=False)
        sandbox.systemctl("unmask", "--runtime", "systemd-logind.service", check=False)
        sandbox.systemctl("start", "systemd-logind.service", check=False)


@contextmanager
def logind_absent(sandbox: Sandbox) -> Iterator[None]:
    """No logind at all: the real one masked and stopped (bus activation then fails), restored afterwards."""
    sandbox.systemctl("mask", "--runtime", "--now", "systemd-logind.service")
    try:
        yield
    finally:
        sandbox.systemctl("unmask", "--runtime", "systemd-logind.service", check=False)
        sandbox.systemctl("start", "systemd-logind.service", check=False)


# MARK: memory pressure

# A file to thrash through the page cache: large, on disk, and mapped by nobody (so `dd iflag=nocache` can drop
# what others cached, and every later read is charged to the service's cgroup).
THRASH_FILE = "/opt/swift/usr/bin/swift-format"


def memory_pressure_lines(memory_max: str) -> list[str]:
    """Drop-in lines that put the service under real memory pressure.

    cgroups are hybrid here: the memory controller is on v1, so MemoryHigh= (cgroup2 only) does nothing, and
    systemd applies MemoryMax= as memory.limit_in_bytes. Without swap the demo's anonymous ballast cannot be
    reclaimed, so the headroom under the limit is small; a reader started next to the daemon, in the same cgroup,
    streams a file larger than that headroom through the page cache, and every refault stalls on memory reclaim.
    The stall counts in the service's cgroup memory.pressure and in /proc/pressure/memory.
    """
    thrasher = (
        f"dd if={THRASH_FILE} iflag=nocache count=0 status=none; "
        f"while :; do cat {THRASH_FILE} >/dev/null; done >/dev/null 2>&1 &"
    )
    return [f"MemoryMax={memory_max}", f"ExecStartPost=/bin/sh -c '{thrasher}'"]


def some_stall_microseconds(sandbox: Sandbox, path: str) -> int:
    """The `some` total of a pressure file, in microseconds."""
    first = sandbox.run("cat", path).stdout.splitlines()[0]
    return int(first.rsplit("total=", 1)[1])


def unit_cgroup_pressure_path(unit: str) -> str:
    return f"/sys/fs/cgroup/unified/system.slice/{unit}/memory.pressure"


__all__ = [
    "BACKGROUND",
    "CONFIG_PATH",
    "FOREGROUND",
    "MEMORY_WARNING",
    "STATIC_USER",
    "BOTH_DELAY_LOCKS",
    "LogindMock",
    "daemon_messages",
    "ensure_real_logind",
    "events_after",
    "kill_main",
    "list_inhibitors",
    "logind_absent",
    "logind_mock",
    "memory_pressure_lines",
    "messages",
    "monotonic_seconds",
    "records_with",
    "remove_config",
    "some_stall_microseconds",
    "start",
    "unit_cgroup_pressure_path",
    "wait_events",
    "with_config",
]


# Runs inside the sandbox: SIGUSR1 straight to the daemon (kill(2), no systemctl, no PID 1 on the way), then waits
# for the state file to be replaced (the save that ends the background transition), spinning on stat(2), at most
# `patience` seconds; SIGUSR2 afterwards, and `pause` seconds so that the foreground is done before the next round.
# Prints each round's seconds.
SAVE_LATENCY_SCRIPT = r"""
import os, signal, sys, time
pid, rounds, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
patience, pause = float(sys.argv[4]), float(sys.argv[5])
def inode():
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None
seconds = []
for _ in range(rounds):
    before = inode()
    began = time.monotonic()
    os.kill(pid, signal.SIGUSR1)
    while inode() == before:
        if time.monotonic() - began > patience:
            sys.exit("no save within %g s" % patience)
        time.sleep(0.0002)
    seconds.append(time.monotonic() - began)
    os.kill(pid, signal.SIGUSR2)
    time.sleep(pause)
print(" ".join("%.6f" % s for s in seconds))
"""


def save_latencies(
    sandbox: Sandbox,
    pid: str,
    rounds: int,
    path: str = "/var/lib/lifecycled/state.archive",
    patience: float = 5,
    pause: float = 0.1,
    timeout: float = 120,
) -> list[float]:
    """Seconds from SIGUSR1 to the daemon's saved state on disk, `rounds` times (the daemon's own work: neither
    systemd nor journald is on that path)."""
    output = sandbox.run(
        "/usr/bin/python3", "-c", SAVE_LATENCY_SCRIPT, pid, str(rounds), path, str(patience), str(pause),
        timeout=timeout,
    ).stdout
    return [float(x) for x in output.split()]
