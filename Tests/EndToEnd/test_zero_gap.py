#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Restarts, crashes, the background and upgrades without refusing a connection (issue 25): the example
(Examples/HelloService) under the sandbox's real systemd with its shipped hello.socket and hello.service, and real
clients on the loopback — a load that opens a new connection for every request and checks every response, and
Debian's `wrk` with keep-alive connections — while the operator restarts it, backgrounds and foregrounds it, upgrades
it, and kills it.

docs/operations.md, "Restarts, upgrades and the background without dropping a connection", has the design and the
figures these tests print (`-s` shows them).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from typing import Callable, Iterator

import pytest

from harness import Sandbox, wait_for
from http_load import ConnectionPerRequestLoad, WrkLoad
from peers import active_again, kill_main, main_pid
from test_example import (  # noqa: F401 (fixtures)
    CONFIG,
    SlowRequest,
    DROPIN_DIR,
    IDENTIFIER,
    SANDBOX_BIN,
    UNIT,
    answers,
    get,
    hello_bin,
    hello_unit,
)

# Where the tests keep the real binary while a broken one is at the unit's ExecStart path.
REAL_BIN = "/usr/local/bin/hello-service.real"
# How many times each operation runs under load (the issue: at least 20; SIGKILL at least 5).
ROUNDS = 20
KILLS = 5


@pytest.fixture
def hello_service(sandbox: Sandbox, hello_unit: Callable[..., int]) -> Iterator[Callable[..., int]]:
    """The example's units as shipped (test_example's `hello_unit`), with their own start limit (no StartLimitBurst=
    drop-in: 30 starts in 10 s, which no test here comes near), started; returns the port. Afterwards the real binary
    is back at the unit's ExecStart path, if a test put a script there."""

    def install(socket_unit: bool = True) -> int:
        port = hello_unit(socket_unit=socket_unit, shipped_start_limit=True)
        sandbox.systemctl("start", UNIT)
        assert wait_for(lambda: answers(port), timeout=15, message="the first answer") == (200, "hello")
        return port

    yield install
    sandbox.run("sh", "-c", f"test -e {REAL_BIN} && mv -f {REAL_BIN} {SANDBOX_BIN}; true")


def journal_lines(sandbox: Sandbox, cursor: str) -> str:
    """The service's and systemd's lines about it since `cursor` (not the trace), for a failure's message."""
    records = sandbox.journal(UNIT, cursor, identifiers=["hello-service"])
    return "\n".join(f"{r.get('_PID')} {r.get('MESSAGE')}" for r in records if "LIFECYCLE_EVENT" not in r)


def upgrade(sandbox: Sandbox, *arguments: str) -> tuple[int, str]:
    done = sandbox.run(
        "lifecyclectl", "upgrade", "-u", "hello", *arguments, check=False, timeout=120
    )
    return done.returncode, done.stdout + done.stderr


def status(sandbox: Sandbox) -> dict:
    done = sandbox.run("lifecyclectl", "status", "-u", "hello", "--json")
    return json.loads(done.stdout)


def replace_binary(sandbox: Sandbox, script: str) -> None:
    """Puts a script at the unit's ExecStart path, keeping the real binary aside (a rename: a running binary cannot be
    written over)."""
    sandbox.run("sh", "-c", f"test -e {REAL_BIN} || cp -p {SANDBOX_BIN} {REAL_BIN}")
    sandbox.write_file(f"{SANDBOX_BIN}.next", script, mode=0o755)
    sandbox.run("mv", "-f", f"{SANDBOX_BIN}.next", SANDBOX_BIN)


def restore_binary(sandbox: Sandbox) -> None:
    sandbox.run("cp", "-p", REAL_BIN, f"{SANDBOX_BIN}.next")
    sandbox.run("mv", "-f", f"{SANDBOX_BIN}.next", SANDBOX_BIN)


@pytest.mark.load
def test_restarts_round_trips_and_upgrades_under_load_refuse_no_connection(
    sandbox: Sandbox, hello_service: Callable[..., int]
) -> None:
    port = hello_service()
    listeners = status(sandbox)["listeners"]
    assert [(l["name"], l["origin"], l["state"]) for l in listeners] == [("http", "socket-unit", "serving")], listeners
    figures: dict[str, object] = {}
    with ConnectionPerRequestLoad(port, threads=8, limit=900) as load:
        load.wait_for_requests(200)

        began = time.monotonic()
        pid = main_pid(sandbox, UNIT)
        for _ in range(ROUNDS):
            sandbox.systemctl("restart", UNIT)
            pid = active_again(sandbox, UNIT, pid)
            load.wait_for_requests(50)
        restarts = (began, time.monotonic())

        began = time.monotonic()
        for _ in range(ROUNDS):
            kill_main(sandbox, UNIT, "SIGUSR1")
            time.sleep(0.3)
            kill_main(sandbox, UNIT, "SIGUSR2")
            load.wait_for_requests(50)
        round_trips = (began, time.monotonic())
        assert main_pid(sandbox, UNIT) == pid

        began = time.monotonic()
        ready_after = []
        for _ in range(ROUNDS):
            cursor = sandbox.cursor()
            code, output = upgrade(sandbox, "--json")
            assert code == 0, output
            reply = json.loads(output)
            assert str(reply["previousPid"]) == pid, reply
            pid = str(reply["pid"])
            ready_after.append(reply["readySec"])
            assert main_pid(sandbox, UNIT) == pid, journal_lines(sandbox, cursor)
            load.wait_for_requests(50)
        upgrades = (began, time.monotonic())

        # A new binary that exits at once: the upgrade fails, says why, and nothing changes.
        replace_binary(sandbox, "#!/bin/sh\nexit 3\n")
        code, output = upgrade(sandbox)
        restore_binary(sandbox)
        assert code == 1 and "exited with status 3 before it was ready" in output, output
        assert main_pid(sandbox, UNIT) == pid
        load.wait_for_requests(50)

        # A new binary that never becomes ready (it blocks in its first applicationDidBecomeActive): stopped after the
        # deadline; the running process serves on.
        replace_binary(
            sandbox,
            f"#!/bin/sh\nLIFECYCLE_HANG_IN=applicationDidBecomeActive exec {REAL_BIN} \"$@\"\n",
        )
        code, output = upgrade(sandbox, "--ready-timeout", "3")
        restore_binary(sandbox)
        assert code == 1 and "was not ready within 3 s" in output, output
        assert main_pid(sandbox, UNIT) == pid
        load.wait_for_requests(100)
        failed_upgrades_end = time.monotonic()
        result = load.stop()

    print(f"\nnew connection per request: {result.summary()}")
    phases = {"restarts": restarts, "round trips": round_trips, "upgrades": upgrades, "failed upgrades": (upgrades[1], failed_upgrades_end)}
    for failure in result.failures:
        during = [name for name, (start, end) in phases.items() if start <= failure.at <= end]
        print(f"  failed at {failure.at:.3f} ({during or 'between phases'}): {failure.kind} {failure.detail}")
    for name, (start, end) in (("restarts", restarts), ("round trips", round_trips), ("upgrades", upgrades)):
        figures[name] = len(result.failures_between(start, end))
        print(f"  {ROUNDS} {name} in {end - start:.1f} s: {figures[name]} failed")
    ready_after.sort()
    print(f"  upgrade: the new process served after {ready_after[len(ready_after) // 2] * 1000:.0f} ms (median)")
    assert result.failures == [], result.summary()
    assert result.succeeded > 20 * ROUNDS
    # The state the example keeps (the requests it answered) came through every restart and upgrade.
    count = int(get(port, "/count")[1])
    assert count > 0.5 * result.succeeded, (count, result.succeeded)


@pytest.mark.load
def test_sigkills_refuse_no_connection_and_only_requests_in_flight_fail(
    sandbox: Sandbox, hello_service: Callable[..., int]
) -> None:
    port = hello_service()
    with ConnectionPerRequestLoad(port, threads=8, limit=600) as load:
        load.wait_for_requests(200)
        pid = main_pid(sandbox, UNIT)
        for _ in range(KILLS):
            kill_main(sandbox, UNIT, "SIGKILL")
            pid = active_again(sandbox, UNIT, pid)
            load.wait_for_requests(100)
        result = load.stop()
    print(f"\n{KILLS} SIGKILLs under load: {result.summary()}")
    assert result.kinds["refused"] == 0, result.summary()
    # What the killed process had accepted is lost with it (its connections reset): at most the clients' concurrency
    # per kill.
    assert len(result.failures) <= 8 * KILLS, result.summary()
    assert set(result.kinds) <= {"reset", "closed without a response", "broken pipe"}, result.summary()
    assert sandbox.show(UNIT)["NRestarts"] == str(KILLS)


@pytest.mark.load
def test_a_keep_alive_load_sees_no_error_through_restarts_round_trips_and_upgrades(
    sandbox: Sandbox, hello_service: Callable[..., int]
) -> None:
    port = hello_service()
    operations = ROUNDS
    started = time.monotonic()
    wrk = WrkLoad(port, seconds=operations * 3.5 + 6, connections=16).start()
    time.sleep(2)
    pid = main_pid(sandbox, UNIT)
    for _ in range(operations):
        sandbox.systemctl("restart", UNIT)
        pid = active_again(sandbox, UNIT, pid)
        time.sleep(0.5)
        kill_main(sandbox, UNIT, "SIGUSR1")
        time.sleep(0.3)
        kill_main(sandbox, UNIT, "SIGUSR2")
        time.sleep(0.5)
        code, output = upgrade(sandbox)
        assert code == 0, output
        pid = main_pid(sandbox, UNIT)
        time.sleep(0.5)
    # Every operation came while wrk was sending.
    assert time.monotonic() - started < wrk.seconds, f"the operations took {time.monotonic() - started:.1f} s"
    result = wrk.result()
    print(f"\nwrk, 16 keep-alive connections, {operations} restarts, round trips and upgrades: {result.requests} requests, "
          f"{result.errors} errors (connect {result.connect_errors}, read {result.read_errors}, write "
          f"{result.write_errors}, timeout {result.timeouts}, non-2xx {result.non_2xx})")
    # Every connection the server closes is closed after a response that says `Connection: close`, so wrk opens a new
    # one instead of sending on a closed one; the race left (a request sent on an idle connection just as its grace
    # runs out) needs an idle connection, which a load does not leave.
    assert result.errors == 0, result.output
    assert result.requests > 1000, result.output


def test_without_a_socket_unit_the_bound_listener_outlives_a_crash_in_the_file_descriptor_store(
    sandbox: Sandbox, hello_service: Callable[..., int]
) -> None:
    port = hello_service(socket_unit=False)
    listeners = status(sandbox)["listeners"]
    assert [(l["name"], l["origin"], l["address"]) for l in listeners] == [("http", "bound", f"127.0.0.1:{port}")]
    with ConnectionPerRequestLoad(port, threads=8, limit=300) as load:
        load.wait_for_requests(200)
        pid = main_pid(sandbox, UNIT)
        for _ in range(3):
            kill_main(sandbox, UNIT, "SIGKILL")
            pid = active_again(sandbox, UNIT, pid)
            load.wait_for_requests(100)
        result = load.stop()
    print(f"\n3 SIGKILLs, the listener in the fd store: {result.summary()}")
    assert result.kinds["refused"] == 0, result.summary()
    listeners = status(sandbox)["listeners"]
    assert [(l["name"], l["origin"], l["address"]) for l in listeners] == [
        ("http", "fd-store", f"127.0.0.1:{port}")
    ], listeners
    shown = sandbox.run("lifecyclectl", "status", "-u", "hello").stdout
    assert f"http 127.0.0.1:{port} — serving, from the file descriptor store" in shown, shown


def test_an_upgrade_carries_the_state_the_running_process_was_in_at_the_hand_over_and_a_failed_one_changes_nothing(
    sandbox: Sandbox, hello_service: Callable[..., int]
) -> None:
    """Found by probing the daemon: the new process took the state the running one was in when the upgrade began
    (anything but the background became `[Launch] Into=`), a SIGUSR1 that came while the new process launched was
    undone, and a new process that was called off removed the control socket's file as it terminated."""
    port = hello_service()

    # Inactive stays inactive.
    sandbox.run("lifecyclectl", "inactive", "-u", "hello")
    assert wait_for(lambda: status(sandbox)["state"] == "inactive", timeout=10, message="inactive")
    pid = main_pid(sandbox, UNIT)
    code, output = upgrade(sandbox, "--json")
    assert code == 0, output
    assert main_pid(sandbox, UNIT) != pid
    assert wait_for(lambda: status(sandbox)["state"] == "inactive", timeout=10, message="inactive after the upgrade")
    sandbox.run("lifecyclectl", "foreground", "-u", "hello")
    assert wait_for(lambda: status(sandbox)["state"] == "active", timeout=10, message="active again")

    # A new binary that never becomes ready is stopped; the control socket still answers, and the next upgrade works.
    replace_binary(
        sandbox,
        f"#!/bin/sh\nLIFECYCLE_HANG_IN=applicationDidBecomeActive exec {REAL_BIN} \"$@\"\n",
    )
    pid = main_pid(sandbox, UNIT)
    code, output = upgrade(sandbox, "--ready-timeout", "2")
    restore_binary(sandbox)
    assert code == 1 and output.rstrip().endswith("; the daemon serves on as it was"), output
    assert main_pid(sandbox, UNIT) == pid
    assert status(sandbox)["state"] == "active"
    # It hangs in a callback, so SIGTERM cannot end it: SIGKILL does, 2 s later. Until then the next upgrade is refused.
    code, output = upgrade(sandbox)
    # Asked at the wrong moment: 75 (EX_TEMPFAIL), the same request later works (docs/control.md).
    assert code == 75 and "is still being stopped; ask again once it has exited" in output, output
    time.sleep(3)
    code, output = upgrade(sandbox)
    assert code == 0, output
    assert main_pid(sandbox, UNIT) != pid
    assert answers(port) == (200, "hello")

    # A SIGUSR1 while the new binary takes 2 s to start: the new process ends in the background too.
    replace_binary(sandbox, f"#!/bin/sh\nsleep 2\nexec {REAL_BIN} \"$@\"\n")
    pid = main_pid(sandbox, UNIT)
    outcome: list[tuple[int, str]] = []
    upgrading = threading.Thread(target=lambda: outcome.append(upgrade(sandbox)))
    upgrading.start()
    time.sleep(0.8)
    kill_main(sandbox, UNIT, "SIGUSR1")
    upgrading.join(timeout=60)
    restore_binary(sandbox)
    assert outcome and outcome[0][0] == 0, outcome
    assert main_pid(sandbox, UNIT) != pid
    assert wait_for(lambda: status(sandbox)["state"] == "background", timeout=10, message="the background, kept")
    kill_main(sandbox, UNIT, "SIGUSR2")
    assert wait_for(lambda: status(sandbox)["state"] == "active", timeout=10, message="active again")
    assert answers(port) == (200, "hello")

    # A reload while the new binary starts is refused, with the reason: the new process read the file when it started,
    # and what the running one applied would be lost at the hand-over (found by reading the upgrade). The process runs
    # from the path the script exec'd, which the next upgrade would start: a restart goes back to ExecStart='s.
    sandbox.systemctl("restart", UNIT)
    assert wait_for(lambda: answers(port), timeout=15, message="an answer after the restart") == (200, "hello")
    replace_binary(sandbox, f"#!/bin/sh\nsleep 2\nexec {REAL_BIN} \"$@\"\n")
    cursor = sandbox.cursor()
    outcome.clear()
    upgrading = threading.Thread(target=lambda: outcome.append(upgrade(sandbox)))
    upgrading.start()
    time.sleep(0.8)
    reloaded = sandbox.systemctl("reload", UNIT, check=False, timeout=60)
    upgrading.join(timeout=60)
    restore_binary(sandbox)
    assert outcome and outcome[0][0] == 0, outcome
    assert reloaded.returncode != 0, reloaded.stdout + reloaded.stderr + journal_lines(sandbox, cursor)
    lines = [str(r.get("MESSAGE", "")) for r in sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER])]
    assert any(line.startswith("reload refused by the configuration: an upgrade is under way") for line in lines), lines
    assert answers(port) == (200, "hello")


def test_a_termination_during_an_upgrade_calls_it_off_and_the_service_stops(
    sandbox: Sandbox, hello_unit: Callable[..., int]
) -> None:
    """Found by probing the daemon: during a lame-duck delay an upgrade handed over, the old process exited, and the
    new one never heard of the termination (systemd sends SIGTERM once): the service ran on. Now the delay calls off an
    upgrade under way, whose new process is stopped, and the service stops as asked."""
    port = hello_unit()
    sandbox.write_file(
        f"{DROPIN_DIR}/e2e.conf",
        "\n".join(["[Unit]", "StartLimitBurst=1000", "[Service]", "ExecStart=",
                   f"ExecStart={SANDBOX_BIN} --config {CONFIG}", "LimitCORE=0"]) + "\n",
    )
    sandbox.write_file(CONFIG, f"[Hello]\nPort={port}\n[Termination]\nLameDuckSec=3\n")
    try:
        sandbox.daemon_reload()
        sandbox.systemctl("start", UNIT)
        assert wait_for(lambda: answers(port), timeout=15, message="the first answer") == (200, "hello")
        cursor = sandbox.cursor()
        # The new binary takes 2 s to start; SIGTERM comes after 0.8 s, and the delay would end after 3.8 s: without
        # the call-off, the hand-over would come first.
        replace_binary(sandbox, f"#!/bin/sh\nsleep 2\nexec {REAL_BIN} \"$@\"\n")
        outcome: list[tuple[int, str]] = []
        upgrading = threading.Thread(target=lambda: outcome.append(upgrade(sandbox)))
        upgrading.start()
        time.sleep(0.8)
        kill_main(sandbox, UNIT, "SIGTERM")
        upgrading.join(timeout=60)
        restore_binary(sandbox)
        assert outcome, "lifecyclectl upgrade did not return"
        code, output = outcome[0]
        assert code == 1, output
        assert "a termination was requested before the new process was ready" in output, output
        assert output.rstrip().endswith("; the daemon is terminating"), output
        stopped = wait_for(
            lambda: sandbox.show(UNIT, "ActiveState")["ActiveState"] in ("inactive", "failed") or None,
            timeout=20,
            message="the service to stop",
        )
        assert stopped
        shown = sandbox.show(UNIT, "ActiveState", "Result")
        assert shown == {"ActiveState": "inactive", "Result": "success"}, (shown, journal_lines(sandbox, cursor))
        lines = [str(r.get("MESSAGE", "")) for r in sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER])]
        assert any(line.startswith("upgrade failed: a termination was requested") for line in lines), lines
        assert "lame-duck delay over: terminating" in lines, lines
    finally:
        sandbox.remove(CONFIG)


def test_an_upgrade_whose_barrier_systemd_answers_late_still_hands_over_and_the_old_process_answers_until_then(
    sandbox: Sandbox, hello_service: Callable[..., int]
) -> None:
    """Two findings of a reading of the upgrade, checked with the sandbox's systemd stopped (SIGSTOP, which reaches a
    namespace's init from outside) for longer than the barrier waits (a quarter of WatchdogSec=10s):

    - When systemd did not answer BARRIER=1 in time, the old process sent MAINPID= with its own pid and stopped the
      new one. But systemd reads its notification socket in order: it took the new pid first, refused the old
      process's MAINPID= (NotifyAccess=main), and ended the service when the new process exited.
    - The new process accepted control calls as soon as it started, before it was the main process: a `lifecyclectl
      background` it answered was undone when the old process handed over its state (`main active`), and a
      `terminate` ended only the new process. Now the old process answers until it hands over, and a call made
      while it waits for systemd waits in the socket's backlog for the new main process."""
    port = hello_service()
    pid = main_pid(sandbox, UNIT)
    cursor = sandbox.cursor()
    control = "/run/hello-service/control"
    os.kill(sandbox.pid, signal.SIGSTOP)
    try:
        # systemctl would wait for the stopped systemd: the control socket is named.
        outcome: list[object] = []
        upgrading = threading.Thread(
            target=lambda: outcome.append(
                sandbox.run("lifecyclectl", "upgrade", "--socket", control, check=False, timeout=60)
            )
        )
        upgrading.start()
        # The new process serves within a second; the old one then waits 2.5 s for the barrier.
        time.sleep(1.2)
        background = sandbox.run("lifecyclectl", "background", "--socket", control, check=False, timeout=60)
        upgrading.join(timeout=60)
    finally:
        os.kill(sandbox.pid, signal.SIGCONT)
    assert outcome, "lifecyclectl upgrade did not return"
    done = outcome[0]
    assert done.returncode == 0, done.stdout + done.stderr + journal_lines(sandbox, cursor)
    assert background.returncode == 0, background.stdout + background.stderr
    new = active_again(sandbox, UNIT, pid)
    # The old process's exit comes after systemd took the new pid: the service runs on, in the background as asked.
    time.sleep(1)
    shown = sandbox.show(UNIT, "MainPID", "ActiveState", "NRestarts")
    assert shown == {"MainPID": new, "ActiveState": "active", "NRestarts": "0"}, (shown, journal_lines(sandbox, cursor))
    reply = status(sandbox)
    assert (reply["pid"], reply["state"]) == (int(new), "background"), reply
    lines = [str(r.get("MESSAGE", "")) for r in sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER])]
    assert any("did not confirm pid" in line and "handing over" in line for line in lines), lines
    kill_main(sandbox, UNIT, "SIGUSR2")
    assert wait_for(lambda: answers(port), timeout=10, message="an answer in the foreground") == (200, "hello")


def test_a_stop_or_restart_right_after_an_upgrade_drains_both_processes(
    sandbox: Sandbox, hello_service: Callable[..., int]
) -> None:
    """Issue 30, defect 1: `lifecyclectl upgrade`, then at once `systemctl stop` (or `restart`) while the old process
    still drains a request. systemd's KillMode=mixed sends SIGTERM to the new main process only, and SIGKILL to what is
    left of the unit once it exits: the old process's request got an empty reply and it never logged its last line,
    with Result=success. The new process now waits for its predecessor to drain before it exits."""
    port = hello_service()
    for operation in ("stop", "restart"):
        old_pid = main_pid(sandbox, UNIT)
        cursor = sandbox.cursor()
        slow = SlowRequest(port, seconds=4)
        code, output = upgrade(sandbox, "--json")
        assert code == 0, output
        new_pid = str(json.loads(output)["pid"])
        sandbox.systemctl(operation, UNIT)
        # The request the old process was draining is answered in full.
        assert slow.result() == (200, "done"), journal_lines(sandbox, cursor)
        records = sandbox.journal(UNIT, cursor, identifiers=["hello-service"])
        old = [r.get("MESSAGE", "") for r in records if r.get("_PID") == old_pid and "LIFECYCLE_EVENT" not in r]
        assert f"terminated cleanly: upgraded to pid {new_pid}" in old, "\n".join(old)
        new = [r.get("MESSAGE", "") for r in records if r.get("_PID") == new_pid and "LIFECYCLE_EVENT" not in r]
        assert f"upgrade: pid {old_pid} has drained and exited" in new, "\n".join(new)
        # The new process's last line comes after the old one's: it waited.
        drained = next(i for i, r in enumerate(records) if r.get("MESSAGE") == f"upgrade: pid {old_pid} has drained and exited")
        last_old = max(i for i, r in enumerate(records) if r.get("_PID") == old_pid)
        assert drained > last_old
        shown = sandbox.show(UNIT, "Result", "ActiveState")
        assert shown["Result"] == "success", shown
        if operation == "stop":
            assert shown["ActiveState"] in ("inactive", "failed"), shown
            sandbox.systemctl("start", UNIT)
        active_again(sandbox, UNIT, new_pid)
        assert answers(port) == (200, "hello")


def test_an_upgrade_in_the_background_keeps_the_listener_paused_or_closed_as_it_was(
    sandbox: Sandbox, hello_service: Callable[..., int]
) -> None:
    """Issue 30, defects 2 and 3: after an upgrade made in the background, `lifecyclectl status` called the listener
    "unclaimed" (it is paused: connections wait and are served on the return); and with the close policy the old
    process listened again as it exited, so the new one in the background accepted into its backlog instead of
    refusing."""
    port = hello_service()
    kill_main(sandbox, UNIT, "SIGUSR1")
    assert wait_for(lambda: status(sandbox)["state"] == "background", timeout=10, message="the background")
    code, output = upgrade(sandbox)
    assert code == 0, output
    listeners = status(sandbox)["listeners"]
    assert [(l["name"], l["state"]) for l in listeners] == [("http", "paused")], listeners
    shown = sandbox.run("lifecyclectl", "status", "-u", "hello").stdout
    assert f"http 127.0.0.1:{port} — paused" in shown, shown
    kill_main(sandbox, UNIT, "SIGUSR2")
    assert wait_for(lambda: answers(port), timeout=15, message="served on the return") == (200, "hello")


def test_an_upgrade_in_the_background_with_the_close_policy_keeps_the_socket_refusing(
    sandbox: Sandbox, hello_unit: Callable[..., int]
) -> None:
    """Issue 30, defect 3: with the close policy ([Hello] InBackground=close) the socket refuses in the background,
    across an upgrade too: the old process no longer listens again as it exits, for the socket is the new one's."""
    sandbox.write_file(CONFIG, "[Hello]\nInBackground=close\n")
    try:
        port = hello_unit("ExecStart=", f"ExecStart={SANDBOX_BIN} --config {CONFIG}", "LimitCORE=0")
        sandbox.systemctl("start", UNIT)
        assert wait_for(lambda: answers(port), timeout=15, message="the first answer") == (200, "hello")
        kill_main(sandbox, UNIT, "SIGUSR1")
        assert wait_for(lambda: status(sandbox)["listeners"][0]["state"] == "closed", timeout=10, message="closed")
        with pytest.raises(ConnectionRefusedError):
            get(port, timeout=2)
        old_pid = main_pid(sandbox, UNIT)
        code, output = upgrade(sandbox)
        assert code == 0, output
        # Once the old process has drained and exited (its last line), the socket is still shut down.
        wait_for(
            lambda: "terminated cleanly: upgraded to pid" in journal_tail(sandbox, pid=old_pid),
            timeout=15,
            message="the old process's exit",
        )
        listeners = status(sandbox)["listeners"]
        assert [(l["name"], l["state"]) for l in listeners] == [("http", "closed")], listeners
        with pytest.raises(ConnectionRefusedError):
            get(port, timeout=2)
        kill_main(sandbox, UNIT, "SIGUSR2")
        assert wait_for(lambda: answers(port), timeout=15, message="served on the return") == (200, "hello")
    finally:
        sandbox.remove(CONFIG)


def journal_tail(sandbox: Sandbox, pid: str | None = None) -> str:
    """The service's last 40 lines (of one process, given its pid)."""
    records = sandbox.journal(UNIT, None, identifiers=["hello-service"])
    if pid is not None:
        records = [r for r in records if r.get("_PID") == pid]
    return "\n".join(r.get("MESSAGE", "") for r in records[-40:])
