#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""What the hostile-peer tests (test_hostile_*.py, docs/security.md) share: the peers' scripts copied into the sandbox,
the users they run as, the daemon's resources read from /proc, and the check every one of them ends with: the daemon
kept its state unless an authorised source moved it, its watchdog was fed, it was not restarted, and what it saved is
on disk whole."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Callable

from harness import CHECKOUT, Sandbox, messages
from peers import daemon_messages

HERE = Path(__file__).resolve().parent
# Where the peers' scripts go inside the sandbox (its /run is a tmpfs, readable by every user).
PEER_DIR = "/run/lifecycle-e2e-peers"
CONTROL_PEER = f"{PEER_DIR}/control_hostile.py"
BUS_PEER = f"{PEER_DIR}/bus_forge.py"
SOCKET = "/run/lifecycled/control"
STATE_FILE = "/var/lib/lifecycled/state.archive"
# Another local user: nobody, without supplementary groups.
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
FIGURES_PATH = CHECKOUT / ".build-e2e" / "hostile-figures.json"


def install_peers(sandbox: Sandbox) -> None:
    """Copies the peers' scripts into the sandbox, readable by every user."""
    for name in ("control_hostile.py", "bus_forge.py"):
        sandbox.write_file(f"{PEER_DIR}/{name}", (HERE / name).read_text(), mode=0o755)


def control_peer(sandbox: Sandbox, *arguments: str, user: list[str] | None = None, timeout: float = 300) -> dict:
    """Runs control_hostile.py inside the sandbox (as root, or as `user`); its JSON summary."""
    done = sandbox.run(*(user or []), "/usr/bin/python3", CONTROL_PEER, *arguments, timeout=timeout)
    return json.loads(done.stdout.strip().splitlines()[-1])


class Background:
    """A peer run in a thread of the test while the test does other things; `result()` waits for it."""

    def __init__(self, run: Callable[[], dict]):
        self._result: dict | None = None
        self._error: BaseException | None = None

        def body() -> None:
            try:
                self._result = run()
            except BaseException as error:  # noqa: BLE001 - handed to the test in result()
                self._error = error

        self._thread = threading.Thread(target=body, daemon=True)
        self._thread.start()

    def result(self, timeout: float = 300) -> dict:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the peer did not finish"
        if self._error:
            raise self._error
        assert self._result is not None
        return self._result


def status_value(sandbox: Sandbox, pid: str, field: str) -> int:
    """A `Field:` of /proc/PID/status, in its unit (kB for VmRSS, VmHWM)."""
    for line in sandbox.run("cat", f"/proc/{pid}/status").stdout.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def cpu_seconds(sandbox: Sandbox, pid: str) -> float:
    """User plus system CPU time of the process so far (/proc/PID/stat, at 100 ticks a second)."""
    fields = sandbox.run("cat", f"/proc/{pid}/stat").stdout.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def watchdog_age(sandbox: Sandbox, unit: str) -> float:
    """Seconds since systemd last heard WATCHDOG=1, from the moment the question was asked (see test_faults)."""
    asked = time.monotonic()
    last = int(sandbox.show(unit, "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"])
    return asked - last / 1e6


class WatchdogWatch:
    """Samples the watchdog's age every 100 ms in a thread until stopped; the largest age seen."""

    def __init__(self, sandbox: Sandbox, unit: str):
        self.ages: list[float] = []
        self._stop = threading.Event()

        def body() -> None:
            while not self._stop.is_set():
                self.ages.append(watchdog_age(sandbox, unit))
                self._stop.wait(0.1)

        self._thread = threading.Thread(target=body, daemon=True)
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join(30)
        return max(self.ages) if self.ages else 0.0


# Runs inside the sandbox: the signal straight to the daemon (kill(2)), then the StatusText systemd holds polled until it
# names the state the signal asks for. STATUS= is sent by the daemon's end-of-turn work, so this measures the signal's
# handling and that the loop's end of turn was not starved. Prints seconds per round.
STATUS_LATENCY_SCRIPT = r"""
import os, signal, subprocess, sys, time
pid, unit, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def status():
    return subprocess.run(["systemctl", "show", "-p", "StatusText", "--value", unit], capture_output=True,
                          text=True).stdout
seconds = []
for i in range(rounds):
    number, state = (signal.SIGUSR1, "background") if i % 2 == 0 else (signal.SIGUSR2, "active")
    began = time.monotonic()
    os.kill(pid, number)
    while not status().startswith(state):
        if time.monotonic() - began > 10:
            sys.exit("StatusText never said %s" % state)
        time.sleep(0.002)
    seconds.append(time.monotonic() - began)
    time.sleep(0.05)
print(" ".join("%.6f" % s for s in seconds))
"""


def status_latencies(sandbox: Sandbox, unit: str, pid: str, rounds: int) -> list[float]:
    """Seconds from kill(2) to the StatusText of the state asked for, `rounds` times (SIGUSR1, SIGUSR2, ...); an
    even number of rounds leaves the daemon where it was."""
    output = sandbox.run("/usr/bin/python3", "-c", STATUS_LATENCY_SCRIPT, pid, unit, str(rounds), timeout=300).stdout
    return [float(x) for x in output.split()]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def saved_generation_on_disk(sandbox: Sandbox) -> int | None:
    """The generation of the archive at the state path, checked whole (length and CRC-32 of its header), or None."""
    done = sandbox.run("/usr/bin/python3", "-c", ARCHIVE_SCRIPT, STATE_FILE, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        print(f"{STATE_FILE}: {done.stderr.strip()}")
        return None
    return int(done.stdout)


ARCHIVE_SCRIPT = r"""
import json, sys, zlib
data = open(sys.argv[1], "rb").read()
header, body = data.split(b"\n", 1)
magic, version, length, crc = header.decode().split(" ")
assert (magic, version) == ("LifecycleKit-State", "2") and int(length) == len(body), header
assert int(crc, 16) == zlib.crc32(body), "CRC-32"
print(json.loads(body)["generation"])
"""


def assert_unharmed(sandbox: Sandbox, unit: str, pid: str, cursor: str, state: str, max_watchdog_age: float) -> None:
    """The daemon after a hostile peer: the same process, never restarted, in `state` (StatusText), its watchdog fed
    (no gap between pings of `max_watchdog_age` s or more, no timeout), and the last state it said it saved is on disk,
    whole."""
    shown = sandbox.show(unit)
    assert (shown["ActiveState"], shown["MainPID"], shown["NRestarts"]) == ("active", pid, "0"), shown
    assert shown["StatusText"].startswith(state), shown["StatusText"]
    records = sandbox.journal(unit, cursor)
    assert not [m for m in messages(records) if "Watchdog timeout" in m], "the watchdog fired"
    assert max_watchdog_age < 1.8, f"systemd went {max_watchdog_age:.2f} s without WATCHDOG=1 (WatchdogSec=2)"
    saves = [m for m in daemon_messages(sandbox, unit, cursor) if m.startswith("saved state generation ")]
    if saves:
        generation = int(saves[-1].split()[3])
        assert saved_generation_on_disk(sandbox) == generation, (saves[-1], saved_generation_on_disk(sandbox))


def record_figures(name: str, figures: dict) -> None:
    """Adds one test's figures to .build-e2e/hostile-figures.json and prints them."""
    print(f"{name}:", json.dumps(figures))
    FIGURES_PATH.parent.mkdir(exist_ok=True)
    everything = json.loads(FIGURES_PATH.read_text()) if FIGURES_PATH.exists() else {}
    everything[name] = figures
    FIGURES_PATH.write_text(json.dumps(everything, indent=2, sort_keys=True) + "\n")
