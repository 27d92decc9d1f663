"""lifecycled in a terminal, without systemd: SIGTSTP backgrounds and then stops it as job control does;
SIGCONT resumes it into the foreground; SIGTERM ends it with status 0."""

from __future__ import annotations

import os
import pty
import re
import signal
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from harness import DaemonBinary, wait_for

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

    def __init__(self, argv: list[str]):
        environment = {k: v for k, v in os.environ.items() if k not in SYSTEMD_ENVIRONMENT}
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
    def output(self) -> str:
        with self._lock:
            return self._output.decode("utf-8", errors="replace").replace("\r\n", "\n")

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
        os.close(self.fd)
        self._reader.join(timeout=5)


@pytest.fixture
def terminal(lifecycled_bin: DaemonBinary) -> Iterator[Callable[[], Terminal]]:
    """Starts the daemon (with --trace) in a new terminal when called; ends it afterwards if it still runs."""
    started: list[Terminal] = []

    def launch() -> Terminal:
        term = Terminal([str(lifecycled_bin.path()), "--trace"])
        started.append(term)
        return term

    yield launch
    for term in started:
        term.close()


def test_sigtstp_in_a_terminal_backgrounds_then_stops_and_sigcont_resumes(
    terminal: Callable[[], Terminal],
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
    terminal: Callable[[], Terminal],
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
