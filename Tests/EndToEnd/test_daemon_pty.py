#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""lifecycled in a terminal, without systemd: SIGTSTP backgrounds and then stops it as job control does;
SIGCONT resumes it into the foreground; SIGTERM ends it with status 0. The trace there is the human format, in colour
unless NO_COLOR is set, with repeated redraws folded; lifecyclectl finds the daemon's socket in $XDG_RUNTIME_DIR."""

from __future__ import annotations

import os
import pty
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from harness import CtlBinary, DaemonBinary, wait_for

# The terminal's colours: SGR sequences. `output` is the text as a person reads it, without them.
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def private_runtime_directory() -> str:
    """A directory for $XDG_RUNTIME_DIR, so that a daemon run by hand puts its control socket there and never in
    the machine's /run."""
    return tempfile.mkdtemp(prefix="lifecycle-e2e-runtime.")

# What makes the daemon think it runs under systemd; the terminal run must not inherit any of it.
SYSTEMD_ENVIRONMENT = (
    "NOTIFY_SOCKET",
    "INVOCATION_ID",
    "JOURNAL_STREAM",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    "LISTEN_FDS",
    "LISTEN_PID",
    "LISTEN_FDNAMES",
    "MAINPID",
    "SYSTEMD_EXEC_PID",
    "LIFECYCLE_HANG_IN",
)


class Terminal:
    """The daemon as the session leader of a new pty, its output collected by a reader thread."""

    def __init__(self, argv: list[str], environment_extra: dict[str, str] | None = None):
        environment = {k: v for k, v in os.environ.items() if k not in SYSTEMD_ENVIRONMENT and k != "NO_COLOR"}
        self.runtime_directory = private_runtime_directory()
        environment["XDG_RUNTIME_DIR"] = self.runtime_directory
        environment.setdefault("TERM", "xterm")
        environment.update(environment_extra or {})
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.execve(argv[0], argv, environment)
            finally:
                os._exit(127)
        self.pid = pid
        self.fd = fd
        self.status: int | None = None
        self._output = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self._output += chunk

    @property
    def raw_output(self) -> str:
        """What the terminal received, colour sequences included."""
        with self._lock:
            return self._output.decode("utf-8", errors="replace").replace("\r\n", "\n")

    @property
    def output(self) -> str:
        """What a person reads: without the colour sequences."""
        return ANSI.sub("", self.raw_output)

    @property
    def control_socket(self) -> str:
        return os.path.join(self.runtime_directory, "lifecycled", "control")

    def lines_with(self, *words: str) -> list[str]:
        return [line for line in self.output.splitlines() if all(re.search(rf"\b{re.escape(w)}\b", line) for w in words)]

    def process_state(self) -> str | None:
        try:
            return Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return None

    def poll(self) -> int | None:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.status = status
        return self.status

    def close(self) -> None:
        if self.poll() is None:
            # Still running after the test: it is ours, end it by PID.
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        shutil.rmtree(self.runtime_directory, ignore_errors=True)
        os.close(self.fd)
        self._reader.join(timeout=5)


@pytest.fixture
def terminal(lifecycled_bin: DaemonBinary) -> Iterator[Callable[..., Terminal]]:
    """Starts the daemon (with --trace) in a new terminal when called; ends it afterwards if it still runs."""
    started: list[Terminal] = []

    def launch(*arguments: str, environment: dict[str, str] | None = None) -> Terminal:
        term = Terminal([str(lifecycled_bin.path()), "--trace", *arguments], environment)
        started.append(term)
        return term

    yield launch
    for term in started:
        term.close()


def test_sigtstp_in_a_terminal_backgrounds_then_stops_and_sigcont_resumes(
    terminal: Callable[..., Terminal],
) -> None:
    terminal = terminal()
    launched = wait_for(
        lambda: terminal.lines_with("applicationDidBecomeActive", "delegate"),
        timeout=15,
        message="the launch's applicationDidBecomeActive on stderr",
    )
    assert len(launched) == 1, terminal.output

    os.kill(terminal.pid, signal.SIGTSTP)
    wait_for(lambda: terminal.process_state() == "T", timeout=10, message="the process to stop (state T)")
    # It stopped only after the whole background transition was delivered (the delegate is last): a
    # stopped process writes nothing, so whatever the pty still delivers was written before the stop.
    wait_for(
        lambda: terminal.lines_with("applicationDidEnterBackground", "delegate"),
        timeout=3,
        message="applicationDidEnterBackground on the delegate, written before the process stopped",
    )
    time.sleep(0.5)
    assert terminal.process_state() == "T"

    os.kill(terminal.pid, signal.SIGCONT)
    wait_for(
        lambda: len(terminal.lines_with("applicationDidBecomeActive", "delegate")) == 2,
        timeout=10,
        message="applicationDidBecomeActive after SIGCONT",
    )
    assert terminal.lines_with("applicationWillEnterForeground", "delegate"), terminal.output
    assert terminal.process_state() not in ("T", "t", None)

    os.kill(terminal.pid, signal.SIGTERM)
    wait_for(lambda: terminal.poll() is not None, timeout=15, message="exit after SIGTERM")
    status = terminal.status
    assert status is not None
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, terminal.output)


def test_closing_the_terminal_terminates_cleanly_but_kill_hup_on_a_live_terminal_reloads(
    terminal: Callable[..., Terminal],
) -> None:
    terminal = terminal()
    wait_for(
        lambda: terminal.lines_with("applicationDidBecomeActive", "delegate"),
        timeout=15,
        message="the launch's applicationDidBecomeActive on stderr",
    )
    os.kill(terminal.pid, signal.SIGHUP)
    wait_for(
        lambda: terminal.lines_with("applicationDidReload", "delegate"),
        timeout=10,
        message="a reload after kill -HUP with the terminal still open",
    )
    assert terminal.poll() is None
    # The terminal goes away: the kernel sends SIGHUP (the daemon is the session leader) and its I/O fails.
    os.close(terminal.fd)
    terminal.fd = os.open("/dev/null", os.O_RDONLY)  # close() in the fixture closes something harmless
    wait_for(lambda: terminal.poll() is not None, timeout=15, message="exit after the terminal hung up")
    status = terminal.status
    assert status is not None
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


# A trace line of the human format: sequence number, state, then (after the cause, when it changed) the target and
# the event.
TRACE_LINE = re.compile(r"^\s*(\d+) (notRunning|inactive|active|background|terminated)\s+(?:\S+\s+)?(\S+) (\S+)$")


def test_in_a_terminal_the_trace_is_one_human_line_per_event_and_redraws_fold(
    terminal: Callable[..., Terminal], lifecyclectl_bin: CtlBinary
) -> None:
    term = terminal("--work-interval", "0.05")
    wait_for(
        lambda: term.lines_with("applicationDidBecomeActive", "delegate"),
        timeout=15,
        message="the launch's applicationDidBecomeActive on the terminal",
    )
    # In colour: the state green, the event bold.
    assert "\x1b[32mactive\x1b[0m" in term.raw_output and "\x1b[1mapplicationDidBecomeActive\x1b[0m" in term.raw_output
    became_active = term.lines_with("applicationDidBecomeActive", "delegate")[0]
    match = TRACE_LINE.match(became_active)
    assert match and match.group(3) == "delegate" and match.group(4) == "applicationDidBecomeActive", became_active
    # The cause is named where it changes: the first line of the launch says "launch".
    first = next(line for line in term.output.splitlines() if TRACE_LINE.match(line))
    assert first.split()[:3] == ["1", "inactive", "launch"], first
    # Controllers are indented by their depth in the tree.
    worker = term.lines_with("applicationDidBecomeActive", "root/worker")[0]
    root = term.lines_with("applicationDidBecomeActive", "root")[0]
    assert worker.index("root/worker") == root.index("root") + 2, (root, worker)

    # The worker redraws every 50 ms: a second of it is one line, not twenty.
    time.sleep(1.0)
    draws = term.lines_with("root/worker.view/progress", "draw")
    assert len(draws) <= 3, draws
    os.kill(term.pid, signal.SIGUSR1)
    wait_for(lambda: term.lines_with("applicationDidEnterBackground", "delegate"), timeout=10, message="background")
    folded = [line for line in term.output.splitlines() if "⋯ root/worker.view/progress draw" in line]
    assert folded and re.search(r"draw \d+ times more \(#\d+–#\d+\)$", folded[-1]), folded

    # lifecyclectl finds a daemon run by hand in $XDG_RUNTIME_DIR (here the terminal's, given explicitly).
    done = subprocess.run(
        [str(lifecyclectl_bin.path()), "tree", "--socket", term.control_socket],
        capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("<DemoRootController: root>, state: appeared"), done.stdout
    os.kill(term.pid, signal.SIGTERM)
    wait_for(lambda: term.poll() is not None, timeout=15, message="exit after SIGTERM")
    assert not os.path.exists(term.control_socket), "the daemon removes the socket it made"


def test_no_color_turns_the_colours_off(terminal: Callable[..., Terminal]) -> None:
    term = terminal(environment={"NO_COLOR": "1"})
    wait_for(
        lambda: term.lines_with("applicationDidBecomeActive", "delegate"),
        timeout=15,
        message="the launch's applicationDidBecomeActive on the terminal",
    )
    assert "\x1b[" not in term.raw_output
    assert TRACE_LINE.match(term.lines_with("applicationDidBecomeActive", "delegate")[0])
