#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""lifecycled run by hand, outside systemd: Dispatch's main queue runs on the daemon's loop (the demo worker's
timer), the worker pauses in the background, SIGINT ends it with 0, bad input gets sysexits codes and messages
that name the file and line; piped, it logs one JSON object a line unless told otherwise (docs/operations.md, "Log
formats")."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import Iterator

import pytest

from harness import CtlBinary, DaemonBinary, log_record, wait_for
from test_daemon_pty import SYSTEMD_ENVIRONMENT, private_runtime_directory


class Process:
    """The daemon with stdin from /dev/null (not a terminal) and stderr, a pipe, collected by a thread: by default
    one JSON object a line, each read as a record (`log_record`)."""

    def __init__(self, argv: list[str]):
        environment = {k: v for k, v in os.environ.items() if k not in SYSTEMD_ENVIRONMENT}
        # Its control socket in a directory of its own, never the machine's /run.
        self.runtime_directory = private_runtime_directory()
        environment["XDG_RUNTIME_DIR"] = self.runtime_directory
        self.popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment
        )
        self._lines: list[str] = []
        self._records: list[dict] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stderr is not None
        for raw in self.popen.stderr:
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            with self._lock:
                self._lines.append(line)
                self._records.append(log_record(line))

    def lines(self, *words: str) -> list[str]:
        """The raw lines that contain every word."""
        with self._lock:
            return [line for line in self._lines if all(word in line for word in words)]

    def records(self, *words: str, **fields: object) -> list[dict]:
        """The records whose message contains every word and whose fields have the values given."""
        with self._lock:
            return [
                record for record in self._records
                if all(word in str(record.get("message", "")) for word in words)
                and all(record.get(name) == value for name, value in fields.items())
            ]

    def close(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        self._reader.join(timeout=5)
        shutil.rmtree(self.runtime_directory, ignore_errors=True)


@pytest.fixture
def daemon(lifecycled_bin: DaemonBinary) -> Iterator:
    started: list[Process] = []

    def launch(*arguments: str) -> Process:
        process = Process([str(lifecycled_bin.path()), *arguments])
        started.append(process)
        return process

    yield launch
    for process in started:
        process.close()


WORKER_DRAW = ("draw", "root/worker.view/progress")


def test_the_main_queue_runs_on_the_loop_and_the_worker_pauses_in_the_background(daemon) -> None:
    process = daemon("--trace", "--work-interval", "0.05")
    # The worker's DispatchSourceTimer targets the main queue; each job redraws its progress view in the next
    # loop turn. Draws keep coming only if the loop drains the main queue.
    wait_for(lambda: len(process.records(*WORKER_DRAW)) >= 6, timeout=15, message="worker jobs drawn by the loop")

    process.popen.send_signal(signal.SIGUSR1)
    wait_for(lambda: process.records("applicationDidEnterBackground", "delegate"), timeout=10, message="background")
    # Over the next 0.8 s (16 ticks of a worker that kept running), the background sees at most two draws of the
    # progress view whenever they come: the "(paused)" redraw the pause asks for, and one for a tick the timer had
    # already queued on the main queue when it was suspended. (Each trace line names the state it was drawn in.)
    time.sleep(0.8)
    drawn_in_background = process.records(*WORKER_DRAW, LIFECYCLE_STATE="background")
    assert len(drawn_in_background) <= 2, ("the worker must not run in the background", drawn_in_background)
    assert process.records("worker paused after")
    paused = len(process.records(*WORKER_DRAW))

    process.popen.send_signal(signal.SIGUSR2)
    wait_for(lambda: len(process.records(*WORKER_DRAW)) >= paused + 3, timeout=10, message="worker resumed")

    process.popen.send_signal(signal.SIGINT)
    assert process.popen.wait(timeout=15) == 0
    assert process.records("applicationWillTerminate", "delegate")
    assert process.records("terminated cleanly")


def test_launching_into_the_background_shows_nothing_until_the_first_foreground(daemon) -> None:
    process = daemon("--trace", "--launch-into", "background", "--work-interval", "0")
    wait_for(lambda: process.records("applicationDidEnterBackground", "delegate"), timeout=15, message="launch")
    time.sleep(0.2)
    assert not process.records("viewWillAppear"), "nothing appears in a background launch"
    assert not process.records("applicationDidBecomeActive")
    process.popen.send_signal(signal.SIGUSR2)
    wait_for(lambda: process.records("applicationDidBecomeActive", "delegate"), timeout=10, message="foreground")
    assert process.records(LIFECYCLE_EVENT="viewDidAppear", LIFECYCLE_TARGET="root"), "the root appears on foreground"
    first_appear = process.records(LIFECYCLE_EVENT="viewWillAppear")[0]
    foreground = process.records(LIFECYCLE_EVENT="applicationWillEnterForeground", LIFECYCLE_TARGET="delegate")[0]
    assert foreground["LIFECYCLE_SEQ"] < first_appear["LIFECYCLE_SEQ"]
    events = [record for record in process.records() if "LIFECYCLE_SEQ" in record]
    assert events.index(foreground) < events.index(first_appear)
    process.popen.send_signal(signal.SIGTERM)
    assert process.popen.wait(timeout=15) == 0


def run_until_launched(process: Process) -> None:
    """Waits for the launch's applicationDidBecomeActive on the delegate, then ends the daemon with SIGTERM (exit 0)
    and reads what it wrote to the end."""
    wait_for(
        lambda: process.lines("applicationDidBecomeActive", "delegate"), timeout=15, message="the launch's last event"
    )
    process.popen.send_signal(signal.SIGTERM)
    assert process.popen.wait(timeout=15) == 0
    process.close()


# A line of the text format: RFC 3339 time in UTC with microseconds, the level, the program.
TEXT_LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z (trace|debug|info|notice|warning|error|critical) lifecycled: "
)


def test_piped_it_logs_one_json_object_a_line_in_causal_order(daemon) -> None:
    """Not a terminal, not journald: `auto` is JSON lines. Each is one object: the record's own keys first, the trace's
    fields under the journal's names with LIFECYCLE_SEQ a number, rising by one from 1 (`--trace`: every event is
    written), and `terminated cleanly` last. `--config /dev/null` is an empty configuration."""
    process = daemon("--trace", "--work-interval", "0", "--config", "/dev/null")
    run_until_launched(process)
    records = process.records()
    assert records and all(record.get("level") != "unparsed" for record in records), process.lines()
    for record in records:
        assert list(record)[:3] == ["timestamp", "level", "program"] and "message" in record, record
        assert TEXT_LINE.match(f"{record['timestamp']} {record['level']} {record['program']}: "), record
    events = [record for record in records if "LIFECYCLE_SEQ" in record]
    assert [event["LIFECYCLE_SEQ"] for event in events] == list(range(1, len(events) + 1))
    assert all(event["message"] == f"{event['LIFECYCLE_EVENT']} {event['LIFECYCLE_TARGET']}" for event in events)
    assert events[0]["LIFECYCLE_CAUSE"] == "launch" and events[0]["LIFECYCLE_TARGET"] == "delegate"
    assert records[-1]["message"] == "terminated cleanly", records[-5:]


def test_the_text_format_on_request_from_the_flag_or_the_file_and_the_flag_wins(daemon) -> None:
    with tempfile.TemporaryDirectory(prefix="lifecycle-e2e-format.") as directory:
        text_file = os.path.join(directory, "text.conf")
        with open(text_file, "w") as file:
            file.write("[Logging]\nFormat=text\n")
        for arguments, expected in [
            (["--log-format", "text"], "text"),
            (["--config", text_file], "text"),
            (["--config", text_file, "--log-format", "json"], "json"),
            (["--log-format", "auto"], "json"),
        ]:
            process = daemon("--work-interval", "0", *arguments)
            run_until_launched(process)
            lines = process.lines()
            if expected == "text":
                assert all(TEXT_LINE.match(line) for line in lines), (arguments, lines)
                assert process.lines("lifecycle.event=applicationDidBecomeActive", "lifecycle.target=delegate")
            else:
                assert all(record.get("level") != "unparsed" for record in process.records()), (arguments, lines)
                assert process.records(LIFECYCLE_EVENT="applicationDidBecomeActive", LIFECYCLE_TARGET="delegate")


def test_a_bad_log_format_is_refused_naming_what_is_valid(lifecycled_bin: DaemonBinary) -> None:
    binary = str(lifecycled_bin.path())
    flag = subprocess.run([binary, "--log-format", "yaml"], capture_output=True, text=True, timeout=30)
    assert flag.returncode == 64
    assert "--log-format yaml is not a log format; use auto, journal, json, text" in flag.stderr
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as handle:
        handle.write("[Logging]\n# the format\nFormat=yaml\n")
        path = handle.name
    try:
        result = subprocess.run([binary, "--config", path], capture_output=True, text=True, timeout=30)
    finally:
        os.unlink(path)
    assert result.returncode == 78
    assert f"{path}:3: Format=yaml is not a log format; valid: auto, journal, json, text" in result.stderr
    # /dev/null is an empty configuration; another device is still refused.
    zero = subprocess.run([binary, "--config", "/dev/zero"], capture_output=True, text=True, timeout=30)
    assert zero.returncode == 78
    assert "/dev/zero: cannot be read: it is a character device, not a regular file" in zero.stderr


def test_a_bad_configuration_exits_78_naming_the_file_and_line(lifecycled_bin: DaemonBinary) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as handle:
        handle.write("[Signals]\nSIGUSR1=background\nSIGKILL=terminate\n")
        path = handle.name
    try:
        result = subprocess.run(
            [str(lifecycled_bin.path()), "--config", path], capture_output=True, text=True, timeout=30
        )
    finally:
        os.unlink(path)
    assert result.returncode == 78
    assert f"{path}:3: SIGKILL cannot be mapped" in result.stderr


def test_a_signal_mapped_twice_on_the_command_line_exits_78(lifecycled_bin: DaemonBinary) -> None:
    result = subprocess.run(
        [str(lifecycled_bin.path()), "--signal", "SIGUSR1=reload", "--signal", "USR1=background"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 78
    assert "SIGUSR1 is mapped twice" in result.stderr


def test_a_usage_error_exits_64(lifecycled_bin: DaemonBinary) -> None:
    result = subprocess.run(
        [str(lifecycled_bin.path()), "--launch-into", "sideways"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 64
    assert "--launch-into sideways is not a launch target" in result.stderr


def test_help_version_and_completions_come_from_the_standard_command_line(lifecycled_bin: DaemonBinary) -> None:
    """`@main` on the delegate (ApplicationMain) gives every program the standard command line; --help does not
    start the daemon."""
    binary = str(lifecycled_bin.path())
    help_text = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    assert help_text.returncode == 0
    assert help_text.stdout.startswith("OVERVIEW: A daemon with the iOS application lifecycle")
    # Every exit code the daemon returns, restarts exhausted (75) among them.
    overview = " ".join(help_text.stdout.split("USAGE:")[0].split())
    assert "Exit codes: 0 clean termination, 64 usage, 71 the main loop cannot run, 75 terminated as a failure" in (
        overview
    )
    for option in ("--config", "--trace", "--launch-into", "--log-format", "--signal", "--work-interval", "--version"):
        assert option in help_text.stdout, option
    assert "starting" not in help_text.stderr
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    assert version.returncode == 0 and version.stdout.strip()
    for shell in ("bash", "zsh", "fish"):
        script = subprocess.run(
            [binary, "--generate-completion-script", shell], capture_output=True, text=True, timeout=30
        )
        assert script.returncode == 0 and "lifecycled" in script.stdout, shell
    checked = subprocess.run(
        ["bash", "-n"], input=subprocess.run(
            [binary, "--generate-completion-script", "bash"], capture_output=True, text=True, timeout=30
        ).stdout, capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stderr


def test_the_applications_own_section_is_read_with_the_daemons(lifecycled_bin: DaemonBinary) -> None:
    """The demo's [Demo] section is its own (ConfigurationSection): its errors name the file and line, exit 78."""
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as handle:
        handle.write("[Demo]\nMode=serving\nAllocateMiB=lots\n")
        path = handle.name
    try:
        result = subprocess.run(
            [str(lifecycled_bin.path()), "--config", path], capture_output=True, text=True, timeout=30
        )
    finally:
        os.unlink(path)
    assert result.returncode == 78
    assert f"{path}:3: AllocateMiB=lots is not a whole number at least 0" in result.stderr


def test_lifecyclectl_completions_and_its_control_socket_handed_over_by_systemd(
    lifecycled_bin: DaemonBinary, lifecyclectl_bin: CtlBinary
) -> None:
    """A listening socket passed in LISTEN_FDS (here by systemd-socket-activate, as a .socket unit would: named
    `control`) is served as it is: the first connection starts the daemon and is answered; the daemon leaves the
    socket file alone when it exits. lifecyclectl's completions are valid shell."""
    ctl = str(lifecyclectl_bin.path())
    for shell in ("bash", "zsh", "fish"):
        script = subprocess.run([ctl, "--generate-completion-script", shell], capture_output=True, text=True, timeout=30)
        assert script.returncode == 0 and "lifecyclectl" in script.stdout and "memory-warning" in script.stdout, shell
    bash = subprocess.run([ctl, "--generate-completion-script", "bash"], capture_output=True, text=True, timeout=30)
    assert subprocess.run(["bash", "-n"], input=bash.stdout, capture_output=True, text=True).returncode == 0

    runtime = private_runtime_directory()
    path = os.path.join(runtime, "handed-over")
    environment = {k: v for k, v in os.environ.items() if k not in SYSTEMD_ENVIRONMENT}
    environment["XDG_RUNTIME_DIR"] = runtime
    activator = subprocess.Popen(
        ["systemd-socket-activate", "--listen", path, "--fdname=control", str(lifecycled_bin.path()),
         "--work-interval", "0"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment,
    )
    try:
        wait_for(lambda: os.path.exists(path), timeout=10, message="systemd-socket-activate listening")
        done = subprocess.run([ctl, "status", "--json", "--socket", path], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        status = json.loads(done.stdout)
        assert status["state"] == "active"
        assert status["control"]["socket"] == "fd 3 (control, from systemd)"
        # systemd-socket-activate became the daemon (exec): its PID is the daemon's.
        assert status["pid"] == activator.pid
        # The socket of a run by hand was not made: only the one handed over is served.
        assert not os.path.exists(os.path.join(runtime, "lifecycled", "control"))
        activator.send_signal(signal.SIGTERM)
        assert activator.wait(timeout=15) == 0
        assert os.path.exists(path), "a socket handed over is systemd's: the daemon does not remove it"
    finally:
        if activator.poll() is None:
            activator.kill()
            activator.wait()
        shutil.rmtree(runtime, ignore_errors=True)
