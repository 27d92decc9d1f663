#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""The HelloService example (Examples/HelloService): a Hummingbird server hosted by a ServiceController, under the
sandbox's real systemd with its own unit (hello.service), and in a terminal.

The sandbox has no network namespace of its own (scripts/systemd-sandbox makes pid, mount, uts, ipc and cgroup
namespaces), so the service listens on the machine's loopback and the tests talk HTTP to it from here. Each test
takes a port that is free at that moment and passes it with `--port` in a drop-in.

The binary is `$HELLO_SERVICE_BIN`, else `swift build --package-path Examples/HelloService --show-bin-path`
/hello-service (scratch path `$LIFECYCLED_SCRATCH_PATH-example` when that is set, as the Makefile builds it); if it
is missing, every test here FAILS with a message saying how to build it.
"""

from __future__ import annotations

import errno
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from harness import CHECKOUT, CtlBinary, Sandbox, lifecycle_events, messages, pairs, wait_for
from peers import kill_main, start
from test_daemon_pty import Terminal
from test_daemon_systemd import UNIT_DEACTIVATED_MESSAGE_ID, UNIT_FAILED_MESSAGE_ID

EXAMPLE = CHECKOUT / "Examples" / "HelloService"
EXAMPLE_UNIT_FILE = EXAMPLE / "hello.service"
UNIT = "hello.service"
# The unit's ExecStart path, in the sandbox's own /usr/local/bin (a tmpfs).
SANDBOX_BIN = "/usr/local/bin/hello-service"
DROPIN_DIR = f"/etc/systemd/system/{UNIT}.d"
# The command name: the example's log label and journal SYSLOG_IDENTIFIER (not the unit's name, not lifecycled).
IDENTIFIER = "hello-service"
# The ServiceController's identifier: its path in the trace.
CONTROLLER = "http"


# The example binary.


def resolve_example_binary() -> Path:
    """$HELLO_SERVICE_BIN, else the example package's `swift build --show-bin-path`/hello-service."""
    explicit = os.environ.get("HELLO_SERVICE_BIN")
    if explicit:
        return Path(explicit)
    swift = "swift"
    if not any((Path(d) / "swift").exists() for d in os.environ.get("PATH", "").split(os.pathsep) if d):
        swift = "/opt/swift/usr/bin/swift"
    argv = [swift, "build", "--package-path", str(EXAMPLE), "--show-bin-path"]
    scratch = os.environ.get("LIFECYCLED_SCRATCH_PATH")
    if scratch:
        # The Makefile builds the example beside the daemon's scratch path.
        argv += ["--scratch-path", f"{scratch}-example"]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode == 0 and done.stdout.strip():
            return Path(done.stdout.strip().splitlines()[-1]) / "hello-service"
    except (OSError, subprocess.TimeoutExpired):
        pass
    return (Path(f"{scratch}-example") if scratch else EXAMPLE / ".build") / "debug" / "hello-service"


class ExampleBinary:
    """The built example, looked up when a test first needs it; missing, it fails that test (not skipped)."""

    def __init__(self) -> None:
        self._path: Path | None = None
        self._installed_in: int | None = None

    def path(self) -> Path:
        if self._path is None:
            self._path = resolve_example_binary()
        if not (self._path.is_file() and os.access(self._path, os.X_OK)):
            pytest.fail(
                f"the hello-service binary is missing: {self._path} does not exist or is not executable. "
                "Build it (`make example`, or `swift build --package-path Examples/HelloService`) or point "
                "HELLO_SERVICE_BIN at it.",
                pytrace=False,
            )
        return self._path

    def install(self, sandbox: Sandbox) -> str:
        if self._installed_in != sandbox.pid:
            sandbox.copy_in(self.path(), SANDBOX_BIN)
            self._installed_in = sandbox.pid
        return SANDBOX_BIN


@pytest.fixture(scope="session")
def hello_bin() -> ExampleBinary:
    return ExampleBinary()


SOCKET_UNIT = "hello.socket"
EXAMPLE_SOCKET_FILE = EXAMPLE / "hello.socket"
SOCKET_DROPIN_DIR = f"/etc/systemd/system/{SOCKET_UNIT}.d"


@pytest.fixture
def hello_unit(
    sandbox: Sandbox, hello_bin: ExampleBinary, lifecyclectl_bin: CtlBinary
) -> Iterator[Callable[..., int]]:
    """Installs Examples/HelloService/hello.service and hello.socket as shipped, plus drop-ins that only pick a free
    port; returns the port. `socket_unit=False` installs the service without its socket unit (the shipped file less
    its two lines naming hello.socket: a drop-in cannot take dependencies away), so it binds the port itself. Extra
    arguments are [Service] lines for the service's drop-in. The drop-in raises the start limit (StartLimitBurst=1000:
    these tests restart the service dozens of times a minute, which is not what the shipped limit is for); with
    `shipped_start_limit=True` it does not, and the unit's own limit applies (the burst and crash-loop tests of
    test_safe_launch.py). Afterwards the units are stopped and removed."""
    installed: list[str] = []

    def install(*extra_service_lines: str, socket_unit: bool = True, shipped_start_limit: bool = False) -> int:
        assert sandbox.run("readlink", "/proc/1/ns/net").stdout.strip() == os.readlink("/proc/self/ns/net"), (
            "the sandbox has its own network namespace: these tests talk to the service over the machine's loopback"
        )
        hello_bin.install(sandbox)
        # The unit's ExecReload= is lifecyclectl, which waits for the reload's outcome.
        lifecyclectl_bin.install(sandbox)
        port = free_port()
        service = EXAMPLE_UNIT_FILE.read_text()
        if not socket_unit:
            service = "\n".join(
                line for line in service.splitlines() if line not in ("Requires=hello.socket", "After=hello.socket")
            ) + "\n"
        sandbox.write_file(f"/etc/systemd/system/{UNIT}", service)
        dropin = [
            "[Unit]",
            # Tests restart the service dozens of times a minute; an operator does not.
            *([] if shipped_start_limit else ["StartLimitBurst=1000"]),
            "[Service]",
            "ExecStart=",
            f"ExecStart={SANDBOX_BIN} --port {port}",
            "LimitCORE=0",
        ]
        sandbox.write_file(f"{DROPIN_DIR}/e2e.conf", "\n".join([*dropin, *extra_service_lines]) + "\n")
        installed[:] = [UNIT]
        if socket_unit:
            sandbox.write_file(f"/etc/systemd/system/{SOCKET_UNIT}", EXAMPLE_SOCKET_FILE.read_text())
            sandbox.write_file(f"{SOCKET_DROPIN_DIR}/e2e.conf", f"[Socket]\nListenStream=\nListenStream=127.0.0.1:{port}\n")
            installed.append(SOCKET_UNIT)
        sandbox.daemon_reload()
        for unit in installed:
            sandbox.systemctl("reset-failed", unit, check=False)
        return port

    yield install
    for unit in installed:
        sandbox.systemctl("kill", "--signal=SIGKILL", unit, check=False)
        sandbox.systemctl("stop", unit, check=False)
        sandbox.systemctl("reset-failed", unit, check=False)
    if installed:
        sandbox.remove(
            DROPIN_DIR, f"/etc/systemd/system/{UNIT}", SOCKET_DROPIN_DIR, f"/etc/systemd/system/{SOCKET_UNIT}",
            "/var/lib/private/hello-service", "/var/lib/hello-service",
        )
        sandbox.daemon_reload()


# HTTP on the loopback.


def free_port() -> int:
    """A loopback port nothing listens on or connects from, for a socket systemd or the example binds a moment later.

    Not one the kernel hands out for port 0: that range is where every client's source port and every test's bind(0)
    comes from, and one of them could take the port before the service binds it (a CI run lost a socket unit so, to
    "Address already in use", while other tests ran beside it). Below that range only a program naming the port binds
    it. The range is read where it is, to stay out of it, not assumed."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    candidates = list(range(10000, low)) if low > 11000 else []
    random.shuffle(candidates)
    for port in candidates[:200]:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def connects(port: int) -> bool:
    """Whether a TCP connect to 127.0.0.1:port succeeds; False only when it is refused."""
    with socket.socket() as client:
        client.settimeout(2)
        result = client.connect_ex(("127.0.0.1", port))
    if result not in (0, errno.ECONNREFUSED):
        raise AssertionError(f"connect to 127.0.0.1:{port}: {os.strerror(result)}")
    return result == 0


def get(port: int, path: str = "/", timeout: float = 10) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def answers(port: int) -> tuple[int, str] | None:
    """GET / once the listener is up; None while connections are refused."""
    try:
        return get(port)
    except ConnectionRefusedError:
        return None


def server_has_read(port: int, client_port: int) -> bool:
    """Whether the server listening on 127.0.0.1:`port` has accepted the connection from `client_port` and read all
    that was sent on it: the server's end of it is established with nothing left in its receive queue
    (/proc/net/tcp; the sandbox shares this network namespace)."""
    loopback = int.from_bytes(socket.inet_aton("127.0.0.1"), sys.byteorder)
    local, remote = f"{loopback:08X}:{port:04X}", f"{loopback:08X}:{client_port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[2] == remote and fields[3] == "01":
            return int(fields[4].split(":")[1], 16) == 0
    return False


class SlowRequest:
    """GET /slow?seconds=N on a thread of its own: in flight from the server's read of it until it answers."""

    def __init__(self, port: int, seconds: float):
        self.sent = threading.Event()
        # Before the request was sent: the server cannot have received it earlier, nor answer before `seconds` more.
        self.sending: float | None = None
        self.client_port: int | None = None
        self.response: tuple[int, str] | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(port, seconds), daemon=True)
        self._thread.start()
        assert self.sent.wait(10), "the slow request was not sent"
        if self.error:
            raise AssertionError(f"the slow request failed to start: {self.error!r}")
        # The request is on the wire; wait until the server has read it, so it is in flight, not in a backlog.
        client_port = self.client_port
        assert client_port is not None
        wait_for(
            lambda: server_has_read(port, client_port) or self.done,
            timeout=10,
            interval=0.01,
            message="the server to read the slow request",
        )
        assert not self.done, f"the slow request ended before it was in flight: {self.error or self.response!r}"

    def _run(self, port: int, seconds: float) -> None:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=seconds + 30)
            connection.connect()
            self.client_port = connection.sock.getsockname()[1]
            self.sending = time.monotonic()
            connection.request("GET", f"/slow?seconds={seconds}")
            self.sent.set()
            response = connection.getresponse()
            self.response = (response.status, response.read().decode())
            connection.close()
        except BaseException as error:  # reported by result()
            self.error = error
        finally:
            self.sent.set()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self, timeout: float = 30) -> tuple[int, str]:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"the slow request did not end within {timeout}s"
        assert self.error is None, f"the slow request failed: {self.error!r}"
        assert self.response is not None
        return self.response


class QueuedRequest:
    """GET / on a thread of its own, sent at once: while no server accepts, its connection waits in the listening
    socket's backlog and the request goes unanswered until a server accepts it."""

    def __init__(self, port: int):
        self.response: tuple[int, str] | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(port,), daemon=True)
        self._thread.start()

    def _run(self, port: int) -> None:
        try:
            self.response = get(port, "/", timeout=60)
        except BaseException as error:  # reported by result()
            self.error = error

    def result(self, timeout: float = 30) -> tuple[int, str]:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"the queued request was not answered within {timeout}s"
        assert self.error is None, f"the queued request failed: {self.error!r}"
        assert self.response is not None
        return self.response


def events(sandbox: Sandbox, cursor: str) -> list[tuple[str, str]]:
    return pairs(lifecycle_events(sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER])))


def start_and_answer(sandbox: Sandbox, port: int) -> tuple[str, dict[str, str]]:
    """`systemctl start` (returns after READY=1), then the first 200: the listener binds as the services start,
    moments after the application became active."""
    cursor, shown = start(sandbox, UNIT)
    assert (shown["ActiveState"], shown["SubState"]) == ("active", "running"), shown
    assert wait_for(lambda: answers(port), timeout=10, message="the first answer") == (200, "hello")
    return cursor, shown


# Under systemd.


def test_the_example_units_pass_systemd_analyze_verify(sandbox: Sandbox, hello_unit: Callable[..., int]) -> None:
    hello_unit()
    done = sandbox.run(
        "systemd-analyze", "verify", f"/etc/systemd/system/{UNIT}", f"/etc/systemd/system/{SOCKET_UNIT}", check=False
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_after_start_it_answers_200_hello(sandbox: Sandbox, hello_unit: Callable[..., int]) -> None:
    port = hello_unit()
    start_and_answer(sandbox, port)
    assert get(port, "/") == (200, "hello")
    assert get(port, "/slow?seconds=0.1") == (200, "done")


def test_sigusr1_drains_and_connections_wait_until_sigusr2_serves_them(
    sandbox: Sandbox, hello_unit: Callable[..., int]
) -> None:
    port = hello_unit()
    _, shown = start_and_answer(sandbox, port)
    cursor = sandbox.cursor()

    slow = SlowRequest(port, seconds=3)
    kill_main(sandbox, UNIT, "SIGUSR1")
    # Background: the server stops accepting while the request in flight goes on; the socket stays open.
    wait_for(
        lambda: ("taskWillStop", CONTROLLER) in events(sandbox, cursor),
        timeout=10,
        message="the services asked to stop (taskWillStop)",
    )
    assert not slow.done, "the slow request ended before the server stopped accepting"
    assert slow.result() == (200, "done")
    wait_for(
        lambda: ("taskDidEnd", CONTROLLER) in events(sandbox, cursor),
        timeout=10,
        message="the services' run to end (taskDidEnd)",
    )
    # A client connecting now is not refused: its connection waits in the listening socket's backlog, unanswered.
    waiting = QueuedRequest(port)
    time.sleep(1)
    assert waiting.response is None and waiting.error is None, (waiting.response, waiting.error)
    status = json.loads(sandbox.run("lifecyclectl", "status", "-u", "hello", "--json").stdout)
    assert [(l["name"], l["state"]) for l in status["listeners"]] == [("http", "paused")], status["listeners"]
    trace = lifecycle_events(sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER]))
    stop = [e for e in trace if (e.event, e.target) == ("taskWillStop", CONTROLLER)]
    assert [e.cause for e in stop] == ["signal:SIGUSR1"], trace
    assert ("applicationDidEnterBackground", "delegate") in pairs(trace)

    cursor = sandbox.cursor()
    kill_main(sandbox, UNIT, "SIGUSR2")
    # The connection that waited is served first thing.
    assert waiting.result() == (200, "hello")
    assert wait_for(lambda: answers(port), timeout=10, message="an answer after SIGUSR2") == (200, "hello")
    wait_for(
        lambda: ("taskDidStart", CONTROLLER) in events(sandbox, cursor), message="taskDidStart after SIGUSR2"
    )
    after = sandbox.show(UNIT)
    assert after["ActiveState"] == "active" and after["MainPID"] == shown["MainPID"], after


def test_stop_finishes_the_request_in_flight_and_exits_0(sandbox: Sandbox, hello_unit: Callable[..., int]) -> None:
    port = hello_unit()
    start_and_answer(sandbox, port)
    cursor = sandbox.cursor()

    slow = SlowRequest(port, seconds=2)
    sandbox.systemctl("stop", UNIT)
    stopped = time.monotonic()
    assert slow.result() == (200, "done")
    # The stop waited for the request: the process exited only once it was answered, at least 2 s after it was sent.
    assert slow.sending is not None and stopped - slow.sending >= 2, (stopped, slow.sending)
    # (hello.socket still listens: a connection now would start the service again, as socket activation does.)
    assert sandbox.show(UNIT)["ActiveState"] == "inactive"
    # systemd unloads the stopped unit at once (show's Result and ExecMainStatus are fresh defaults then); its log
    # says how the process ended: "Deactivated successfully" only for exit status 0 (Result=success).
    records = wait_for(
        lambda: (r := sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER]))
        and any(x.get("MESSAGE_ID") in (UNIT_DEACTIVATED_MESSAGE_ID, UNIT_FAILED_MESSAGE_ID) for x in r)
        and r,
        message="systemd's verdict on the stopped unit",
    )
    verdicts = [r for r in records if r.get("_PID") == "1" and r.get("UNIT") == UNIT]
    assert any(r.get("MESSAGE_ID") == UNIT_DEACTIVATED_MESSAGE_ID for r in verdicts), messages(verdicts)
    assert not [m for m in messages(verdicts) if "Failed with result" in m or "Main process exited" in m]
    assert "terminated cleanly" in messages(records)
    order = events(sandbox, cursor)
    assert order.index(("taskWillStop", CONTROLLER)) < order.index(("taskDidEnd", CONTROLLER)), order
    assert ("applicationWillTerminate", "delegate") in order


def test_its_journal_carries_the_trace_under_its_own_identifier(
    sandbox: Sandbox, hello_unit: Callable[..., int]
) -> None:
    port = hello_unit()
    cursor, shown = start_and_answer(sandbox, port)
    listening = "serving HTTP/1.1"
    # The server logs from a thread of its own, the trace comes from the main loop: wait for both.
    records = wait_for(
        lambda: (r := sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER]))
        and any(x.get("LIFECYCLE_EVENT") == "taskDidStart" for x in r)
        and any(str(x.get("MESSAGE", "")) == listening for x in r)
        and r,
        message="the trace of the launch and Hummingbird's line",
    )
    own = [r for r in records if r.get("_PID") == shown["MainPID"]]
    traced = [r for r in own if "LIFECYCLE_EVENT" in r]
    assert traced, own
    assert {r.get("SYSLOG_IDENTIFIER") for r in own} == {IDENTIFIER}, {r.get("SYSLOG_IDENTIFIER") for r in own}
    assert all(r.get("_SYSTEMD_UNIT") == UNIT for r in traced)
    order = pairs(lifecycle_events(traced))
    for expected in [
        ("didFinishLaunching", "delegate"),
        ("viewDidAppear", CONTROLLER),
        ("applicationDidBecomeActive", "delegate"),
        ("taskDidStart", CONTROLLER),
    ]:
        assert expected in order, (expected, order)
    # The server's own log line goes the same way.
    assert any(str(r.get("MESSAGE", "")) == listening for r in own), [r.get("MESSAGE") for r in own]


# Supervision and reload as a transaction (issue 21).

CONFIG = "/run/hello-e2e.conf"


def test_a_server_whose_port_is_taken_is_restarted_with_backoff_and_serves_once_the_port_is_free(
    sandbox: Sandbox, hello_unit: Callable[..., int]
) -> None:
    # Without its socket unit the service binds the port itself.
    port = hello_unit(socket_unit=False)
    # Someone else holds the port: the server's bind fails, and the ServiceController restarts it after 100 ms,
    # 200 ms, 400 ms ... while the application stays active.
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", port))
    squatter.listen()
    try:
        cursor, shown = start(sandbox, UNIT)
        wait_for(
            lambda: sum(1 for e, t in events(sandbox, cursor) if (e, t) == ("taskWillRestart", CONTROLLER)) >= 2,
            timeout=15,
            message="two restarts of the server that cannot bind",
        )
    finally:
        squatter.close()
    # Free now: the next restart binds, in the same process.
    assert wait_for(lambda: answers(port), timeout=15, message="the restarted server's first answer") == (200, "hello")
    assert sandbox.show(UNIT)["MainPID"] == shown["MainPID"]
    order = events(sandbox, cursor)
    assert ("lifecycleTask(_:didFailWithError:)", CONTROLLER) in order
    assert ("application(_:lifecycleTask:didFailWithError:)", "delegate") in order
    assert ("lifecycleTask(_:didExhaustRestartsWithError:)", CONTROLLER) not in order


def test_a_reload_moves_the_server_to_a_new_port_and_refuses_one_it_cannot_listen_on(
    sandbox: Sandbox, hello_unit: Callable[..., int]
) -> None:
    first, second = free_port(), free_port()
    sandbox.write_file(CONFIG, f"[Hello]\nPort={first}\n")
    hello_unit("ExecStart=", f"ExecStart={SANDBOX_BIN} --config {CONFIG}", "LimitCORE=0", socket_unit=False)
    _, shown = start_and_answer(sandbox, first)
    try:
        # A port somebody else holds: the delegate refuses the reload with the reason, systemctl reload fails, and
        # the server stays where it was.
        squatter = socket.socket()
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", second))
        squatter.listen()
        try:
            sandbox.write_file(CONFIG, f"[Hello]\nPort={second}\n")
            cursor = sandbox.cursor()
            refused = sandbox.systemctl("reload", UNIT, check=False, timeout=60)
            assert refused.returncode != 0, refused.stdout + refused.stderr
        finally:
            squatter.close()
        lines = [str(r.get("MESSAGE", "")) for r in sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER])]
        assert any(
            line.startswith(f"reload refused by the delegate: port {second} cannot be listened on") for line in lines
        ), lines
        assert get(first, "/") == (200, "hello")
        assert ("applicationWillReload", "delegate") not in events(sandbox, cursor)
        # Free now: the same reload is accepted and applied; the server moves, in the same process.
        cursor = sandbox.cursor()
        sandbox.systemctl("reload", UNIT, timeout=60)
        assert wait_for(lambda: answers(second), timeout=15, message="the server on its new port") == (200, "hello")
        wait_for(lambda: not connects(first), timeout=15, message="the old port closed")
        assert sandbox.show(UNIT)["MainPID"] == shown["MainPID"]
    finally:
        sandbox.remove(CONFIG)


def test_under_its_socket_unit_a_reload_to_another_port_is_refused_naming_the_socket(
    sandbox: Sandbox, hello_unit: Callable[..., int]
) -> None:
    port = hello_unit()
    other = free_port()
    try:
        # The port of the running service comes from hello.socket; the reload's file names another one.
        sandbox.write_file(
            f"{DROPIN_DIR}/e2e.conf",
            "\n".join(["[Unit]", "StartLimitBurst=1000", "[Service]", "ExecStart=",
                       f"ExecStart={SANDBOX_BIN} --config {CONFIG}", "LimitCORE=0"]) + "\n",
        )
        sandbox.write_file(CONFIG, f"[Hello]\nPort={port}\n")
        sandbox.daemon_reload()
        _, shown = start_and_answer(sandbox, port)
        sandbox.write_file(CONFIG, f"[Hello]\nPort={other}\n")
        cursor = sandbox.cursor()
        refused = sandbox.systemctl("reload", UNIT, check=False, timeout=60)
        assert refused.returncode != 0, refused.stdout + refused.stderr
        lines = [str(r.get("MESSAGE", "")) for r in sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER])]
        assert any(
            f"port {other} cannot be listened on (the socket unit passes 127.0.0.1:{port}: change its ListenStream=)"
            in line
            for line in lines
        ), lines
        assert get(port, "/") == (200, "hello")
        assert sandbox.show(UNIT)["MainPID"] == shown["MainPID"]
    finally:
        sandbox.remove(CONFIG)


# In a terminal.


def test_ctrl_z_in_a_terminal_drains_then_stops_and_fg_serves_the_connections_that_waited(
    hello_bin: ExampleBinary,
) -> None:
    port = free_port()
    terminal = Terminal([str(hello_bin.path()), "--port", str(port)])
    try:
        wait_for(lambda: answers(port), timeout=15, message="the first answer")
        slow = SlowRequest(port, seconds=2)
        os.kill(terminal.pid, signal.SIGTSTP)  # what the shell's Ctrl-Z sends
        # The process stops only once the background task that drains the server has ended.
        assert terminal.process_state() not in ("T", "t"), terminal.output
        assert slow.result() == (200, "done")
        wait_for(lambda: terminal.process_state() == "T", timeout=10, message="the process to stop (state T)")
        # A stopped server refuses nobody: the connection waits in the listening socket's backlog until `fg`.
        waiting = QueuedRequest(port)
        time.sleep(1)
        assert waiting.response is None and waiting.error is None, (waiting.response, waiting.error)
        # Written before the stop; the terminal's reader thread may not have taken it in yet.
        wait_for(lambda: terminal.lines_with("stopped", "SIGTSTP"), timeout=3, message=f"the stop's line in {terminal.output!r}")

        os.kill(terminal.pid, signal.SIGCONT)  # what the shell's `fg` sends
        assert waiting.result() == (200, "hello")
        assert wait_for(lambda: answers(port), timeout=10, message="an answer after fg") == (200, "hello")

        os.kill(terminal.pid, signal.SIGTERM)
        wait_for(lambda: terminal.poll() is not None, timeout=15, message="exit after SIGTERM")
        status = terminal.status
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, terminal.output)
    finally:
        terminal.close()
