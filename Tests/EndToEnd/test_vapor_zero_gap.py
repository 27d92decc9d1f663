#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""A Vapor application served without dropping a connection (issue 34): the example's second executable,
hello-vapor (Examples/HelloService, LifecycleVapor's `VaporServer`), under the sandbox's real systemd with its shipped
hello-vapor.socket and hello-vapor.service, and real clients on the loopback — a load that opens a new connection for
every request and checks every response, and Debian's `wrk` with keep-alive connections, both at once — while the
operator restarts it, backgrounds and foregrounds it, and upgrades it. Beside it, the same binary with Vapor binding its
own port (`--vapor-binds`: Vapor's `HTTPServer`, as a Vapor application runs on its own), put through the same
operations: its refusals are counted.

The units are installed as shipped: only the socket's address is moved to a free port. systemd's default start limit
(5 starts in 10 s) stays in force, so restarts come at least 3 s apart; each cycle of the operations takes that long.

docs/operations.md, "Vapor", has the figures these tests print (`-s` shows them); they are also written to
.build-e2e/vapor-figures.json.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from harness import CHECKOUT, CtlBinary, Sandbox, wait_for
from http_load import ConnectionPerRequestLoad, Failure, LoadResult, WrkLoad
from peers import active_again, kill_main, main_pid
from test_example import EXAMPLE, answers, free_port, get, resolve_example_binary

UNIT = "hello-vapor.service"
SOCKET_UNIT = "hello-vapor.socket"
UNIT_FILE = EXAMPLE / UNIT
SOCKET_FILE = EXAMPLE / SOCKET_UNIT
# The unit's ExecStart path, in the sandbox's own /usr/local/bin (a tmpfs).
SANDBOX_BIN = "/usr/local/bin/hello-vapor"
DROPIN_DIR = f"/etc/systemd/system/{UNIT}.d"
SOCKET_DROPIN_DIR = f"/etc/systemd/system/{SOCKET_UNIT}.d"
# The command name: the journal's SYSLOG_IDENTIFIER.
IDENTIFIER = "hello-vapor"
FIGURES_PATH = CHECKOUT / ".build-e2e" / "vapor-figures.json"
# Each cycle: a restart, a background round trip, an upgrade. The issue asks for restarts, round trips and upgrades
# under both loads; 10 of each keep the test near a minute (it runs twice in CI).
CYCLES = 10
# Vapor binding its own port refuses from the first cycle on: fewer show it.
OWN_PORT_CYCLES = 5
# systemd's default start limit is 5 starts in 10 s, and a restart is a start: one restart per 3 s stays under it.
CYCLE_SECONDS = 3.0


# The binary.


def resolve_vapor_binary() -> Path:
    """$HELLO_VAPOR_BIN, else hello-vapor beside hello-service (test_example's look-up: $HELLO_SERVICE_BIN, else the
    example package's build): both are executables of the same package, built together."""
    explicit = os.environ.get("HELLO_VAPOR_BIN")
    return Path(explicit) if explicit else resolve_example_binary().parent / "hello-vapor"


class VaporBinary:
    """The built hello-vapor, looked up when a test first needs it; missing, it fails that test (not skipped)."""

    def __init__(self) -> None:
        self._path: Path | None = None
        self._installed_in: int | None = None

    def install(self, sandbox: Sandbox) -> None:
        if self._path is None:
            self._path = resolve_vapor_binary()
        if not (self._path.is_file() and os.access(self._path, os.X_OK)):
            pytest.fail(
                f"the hello-vapor binary is missing: {self._path} does not exist or is not executable. Build it "
                "(`make example`, or `swift build --package-path Examples/HelloService`) or point HELLO_VAPOR_BIN "
                "at it.",
                pytrace=False,
            )
        if self._installed_in != sandbox.pid:
            sandbox.copy_in(self._path, SANDBOX_BIN)
            self._installed_in = sandbox.pid


@pytest.fixture(scope="session")
def vapor_bin() -> VaporBinary:
    return VaporBinary()


@pytest.fixture
def vapor_units(
    sandbox: Sandbox, vapor_bin: VaporBinary, lifecyclectl_bin: CtlBinary
) -> Iterator[Callable[..., int]]:
    """Installs hello-vapor.service and hello-vapor.socket as shipped, the socket moved to a free port by a drop-in;
    starts them and returns the port. `socket_unit=False` installs the service without its socket unit (the shipped
    file less its two lines naming it: a drop-in cannot take dependencies away) and a drop-in whose ExecStart= adds
    `--port P`, so the service binds the port itself; `vapor_binds=True` then adds `--vapor-binds`: Vapor's own
    HTTPServer binds it, not LifecycleKit. Afterwards the units are stopped and removed, with the saved state."""
    installed: list[str] = []

    def install(socket_unit: bool = True, vapor_binds: bool = False) -> int:
        vapor_bin.install(sandbox)
        # Upgrades and the unit's ExecReload= are lifecyclectl.
        lifecyclectl_bin.install(sandbox)
        port = free_port()
        service = UNIT_FILE.read_text()
        if socket_unit:
            sandbox.write_file(f"/etc/systemd/system/{SOCKET_UNIT}", SOCKET_FILE.read_text())
            sandbox.write_file(
                f"{SOCKET_DROPIN_DIR}/e2e.conf", f"[Socket]\nListenStream=\nListenStream=127.0.0.1:{port}\n"
            )
            installed.append(SOCKET_UNIT)
        else:
            service = "\n".join(
                line for line in service.splitlines() if line not in (f"Requires={SOCKET_UNIT}", f"After={SOCKET_UNIT}")
            ) + "\n"
            binds = " --vapor-binds" if vapor_binds else ""
            sandbox.write_file(
                f"{DROPIN_DIR}/e2e.conf", f"[Service]\nExecStart=\nExecStart={SANDBOX_BIN}{binds} --port {port}\n"
            )
        sandbox.write_file(f"/etc/systemd/system/{UNIT}", service)
        installed.append(UNIT)
        sandbox.daemon_reload()
        for unit in installed:
            sandbox.systemctl("reset-failed", unit, check=False)
        sandbox.systemctl("start", UNIT)
        assert wait_for(lambda: answers(port), timeout=15, message="the first answer") == (200, "hello")
        return port

    yield install
    for unit in installed:
        sandbox.systemctl("kill", "--signal=SIGKILL", unit, check=False)
        sandbox.systemctl("stop", unit, check=False)
        sandbox.systemctl("reset-failed", unit, check=False)
    if installed:
        sandbox.remove(
            DROPIN_DIR, SOCKET_DROPIN_DIR, f"/etc/systemd/system/{UNIT}", f"/etc/systemd/system/{SOCKET_UNIT}",
            "/var/lib/private/hello-vapor", "/var/lib/hello-vapor",
        )
        sandbox.daemon_reload()


# The operations.


def upgrade(sandbox: Sandbox) -> tuple[int, str]:
    done = sandbox.run("lifecyclectl", "upgrade", "-u", "hello-vapor", check=False, timeout=120)
    return done.returncode, done.stdout + done.stderr


def run_cycles(sandbox: Sandbox, cycles: int) -> dict[str, object]:
    """`cycles` times: `systemctl restart`, a background round trip (SIGUSR1, 0.3 s, SIGUSR2), `lifecyclectl upgrade`;
    each cycle at least CYCLE_SECONDS long. Returns the upgrades' exit statuses and the restart count systemd kept."""
    pid = main_pid(sandbox, UNIT)
    upgrades: list[int] = []
    for _ in range(cycles):
        began = time.monotonic()
        sandbox.systemctl("restart", UNIT)
        pid = active_again(sandbox, UNIT, pid)
        time.sleep(0.4)
        kill_main(sandbox, UNIT, "SIGUSR1")
        time.sleep(0.3)
        kill_main(sandbox, UNIT, "SIGUSR2")
        time.sleep(0.4)
        code, output = upgrade(sandbox)
        upgrades.append(code)
        if code == 0:
            pid = active_again(sandbox, UNIT, pid)
        time.sleep(max(0.3, CYCLE_SECONDS - (time.monotonic() - began)))
    return {"upgrade exit statuses": upgrades, "NRestarts": sandbox.show(UNIT, "NRestarts")["NRestarts"]}


def refusal_windows(failures: list[Failure]) -> tuple[int, float]:
    """How many stretches of refused connections there were (failures less than 0.2 s apart are one) and how long
    they lasted in all, in seconds."""
    times = sorted(f.at for f in failures if f.kind == "refused")
    if not times:
        return 0, 0.0
    windows, total, start, last = 1, 0.0, times[0], times[0]
    for at in times[1:]:
        if at - last > 0.2:
            total += last - start
            windows, start = windows + 1, at
        last = at
    return windows, round(total + (last - start), 3)


def figures_of(load: LoadResult, wrk_output: dict[str, int]) -> dict[str, object]:
    windows, refused_for = refusal_windows(load.failures)
    return {
        "new connection per request": {
            "requests": load.requests,
            "answered 200": load.succeeded,
            "failed": len(load.failures),
            "failures by kind": dict(load.kinds),
            "refusal stretches": windows,
            "refused for (s)": refused_for,
        },
        "wrk keep-alive": wrk_output,
    }


def record(name: str, figures: dict[str, object]) -> None:
    """Adds one test's figures to .build-e2e/vapor-figures.json and prints them."""
    FIGURES_PATH.parent.mkdir(exist_ok=True)
    everything = json.loads(FIGURES_PATH.read_text()) if FIGURES_PATH.exists() else {}
    everything[name] = figures
    FIGURES_PATH.write_text(json.dumps(everything, indent=2, sort_keys=True) + "\n")
    print(f"\n{name}: {json.dumps(figures, sort_keys=True)}")


class WrkUntilStopped(WrkLoad):
    """`WrkLoad` that the test ends when its operations are done: wrk stops at SIGINT and prints its figures as at the
    end of its duration, which is only a bound here (a loaded machine makes the operations slower)."""

    def __init__(self, port: int, seconds: float, connections: int):
        super().__init__(port, seconds=seconds, connections=connections)
        self._started = threading.Event()
        self._process: subprocess.Popen | None = None

    def _run(self) -> None:
        self._process = subprocess.Popen(self._argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._started.set()
        stdout, stderr = self._process.communicate(timeout=self.seconds + 60)
        self._done = subprocess.CompletedProcess(self._argv, self._process.returncode, stdout, stderr)

    def stop(self) -> None:
        """Ends wrk now; fails if it had ended already, so that every operation came while it was sending."""
        assert self._started.wait(10) and self._process is not None, "wrk did not start"
        assert self._process.poll() is None, f"wrk ended before the operations did (after {self.seconds:.0f} s)"
        self._process.send_signal(signal.SIGINT)


def under_both_loads(sandbox: Sandbox, port: int, cycles: int) -> tuple[LoadResult, dict[str, int], dict[str, object]]:
    """The operations while a new-connection-per-request load and wrk's keep-alive load run at the same time."""
    wrk = WrkUntilStopped(port, seconds=cycles * CYCLE_SECONDS * 3 + 30, connections=16).start()
    with ConnectionPerRequestLoad(port, threads=8, limit=600) as load:
        load.wait_for_requests(100)
        operations = run_cycles(sandbox, cycles)
        load.wait_for_requests(100)
        result = load.stop()
    wrk.stop()
    done = wrk.result()
    wrk_figures = {
        "requests": done.requests,
        "errors": done.errors,
        "connect": done.connect_errors,
        "read": done.read_errors,
        "write": done.write_errors,
        "timeout": done.timeouts,
        "non-2xx": done.non_2xx,
    }
    return result, wrk_figures, operations


def runs_in_the_journal(sandbox: Sandbox, cursor: str) -> dict[str, list[str]]:
    """Per process, the order of each run's steps as the journal has them: the lifecycle handlers' lines (RunLog in
    the example's configure.swift) and the server's first and last."""
    steps = {
        "Vapor application booted": "booted",
        "serving HTTP/1.1": "serving",
        "stopped serving": "stopped",
        "Vapor application shutting down": "shut down",
    }
    runs: dict[str, list[str]] = {}
    for entry in sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER]):
        message = str(entry.get("MESSAGE", ""))
        for prefix, step in steps.items():
            if message.startswith(prefix):
                runs.setdefault(str(entry.get("_PID")), []).append(step)
    return runs


@pytest.mark.load
def test_vapor_on_its_socket_unit_fails_no_request_through_restarts_round_trips_and_upgrades(
    sandbox: Sandbox, vapor_units: Callable[..., int]
) -> None:
    cursor = sandbox.cursor()
    port = vapor_units()
    shown = sandbox.run("lifecyclectl", "status", "-u", "hello-vapor").stdout
    assert f"http 127.0.0.1:{port} — serving, from the socket unit" in shown, shown

    load, wrk, operations = under_both_loads(sandbox, port, CYCLES)
    figures = figures_of(load, wrk)
    figures["operations"] = {"restarts": CYCLES, "round trips": CYCLES, "upgrades": CYCLES, **operations}
    record("socket unit", figures)

    for failure in load.failures:
        print(f"  failed at {failure.at:.3f}: {failure.kind} {failure.detail}")
    assert load.failures == [], load.summary()
    assert load.succeeded > 20 * CYCLES, load.summary()
    # Every connection the server closes is closed after a response that says `Connection: close`.
    assert wrk["errors"] == 0, wrk
    assert wrk["requests"] > 1000, wrk
    assert operations["upgrade exit statuses"] == [0] * CYCLES, operations
    # The operator's restarts, not the start limit's or a crash's.
    assert operations["NRestarts"] == "0", operations
    # The count the controller keeps (the requests its Vapor applications answered) came through every restart and
    # upgrade, though every run had an application of its own.
    assert int(get(port, "/count")[1]) > 0.5 * load.succeeded

    # In every run of every process: the lifecycle handlers' boot before the first accept, their shutdown after the
    # last connection closed. (Each restart and upgrade ended one process; each round trip one run.)
    main = main_pid(sandbox, UNIT)

    def ended_runs() -> dict[str, list[str]] | None:
        # The last process an upgrade replaced may still be writing its last lines.
        ended = {pid: steps for pid, steps in runs_in_the_journal(sandbox, cursor).items() if pid != main}
        return ended if sum(len(steps) for steps in ended.values()) >= 4 * 3 * CYCLES else None

    ended = wait_for(ended_runs, timeout=15, interval=0.5, message="every ended run's four lines in the journal")
    assert len(ended) == 2 * CYCLES, ended
    for pid, steps in ended.items():
        assert steps in (["booted", "serving", "stopped", "shut down"] * n for n in (1, 2)), (pid, steps)
    assert sum(len(steps) for steps in ended.values()) == 4 * 3 * CYCLES, ended


@pytest.mark.load
def test_vapor_binding_its_own_port_refuses_connections_through_the_same_operations(
    sandbox: Sandbox, vapor_units: Callable[..., int]
) -> None:
    port = vapor_units(socket_unit=False, vapor_binds=True)
    load, wrk, operations = under_both_loads(sandbox, port, OWN_PORT_CYCLES)
    figures = figures_of(load, wrk)
    figures["operations"] = {
        "restarts": OWN_PORT_CYCLES, "round trips": OWN_PORT_CYCLES, "upgrades": OWN_PORT_CYCLES, **operations
    }
    record("Vapor binding its own port", figures)
    # What the socket unit saves its clients: with nothing holding the port, a restart, the background and an
    # upgrade each leave a moment when nothing listens.
    assert load.kinds["refused"] > 0, load.summary()
    windows, _ = refusal_windows(load.failures)
    assert windows >= 2 * OWN_PORT_CYCLES, load.summary()
    assert wrk["errors"] > 0, wrk
    # And it serves at the end, all the same.
    assert wait_for(lambda: answers(port), timeout=15, message="an answer at the end") == (200, "hello")


def test_without_its_socket_unit_the_bound_listener_outlives_a_crash_in_the_file_descriptor_store(
    sandbox: Sandbox, vapor_units: Callable[..., int]
) -> None:
    port = vapor_units(socket_unit=False)
    with ConnectionPerRequestLoad(port, threads=8, limit=300) as load:
        load.wait_for_requests(100)
        pid = main_pid(sandbox, UNIT)
        for _ in range(2):
            began = time.monotonic()
            kill_main(sandbox, UNIT, "SIGKILL")
            pid = active_again(sandbox, UNIT, pid)
            load.wait_for_requests(100)
            time.sleep(max(0.0, CYCLE_SECONDS - (time.monotonic() - began)))
        result = load.stop()
    record("file descriptor store, 2 SIGKILLs", {"new connection per request": result.summary()})
    assert result.kinds["refused"] == 0, result.summary()
    # What a killed process had accepted is lost with it (reset): at most the clients' concurrency per kill.
    assert len(result.failures) <= 8 * 2, result.summary()
    shown = sandbox.run("lifecyclectl", "status", "-u", "hello-vapor").stdout
    assert f"http 127.0.0.1:{port} — serving, from the file descriptor store" in shown, shown
