#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""The processes the harness starts and ends, the sd_notify socket it binds for them, the commands it runs (each
logged for the Commands section of results.md) and what /proc says about a process's memory."""

import os
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

# Benchmarks/harness: the entry point (bench.py) and the helper programs that run in processes of their own.
HARNESS = Path(__file__).resolve().parents[1]
# The repository: Tests/EndToEnd's client is shared with the services benchmark.
REPOSITORY = Path(__file__).resolve().parents[3]
# The entry point as the harness itself was started (a benchmark that runs a helper in a process of its own starts
# bench.py with the helper's option, e.g. --control-load).
ENTRY_POINT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench.py")


class NotifyListener:
    """A NOTIFY_SOCKET bound by the harness: records every sd_notify datagram with its CLOCK_MONOTONIC arrival."""

    def __init__(self, directory):
        self.path = os.path.join(directory, f"notify-{id(self)}")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []  # (monotonic seconds, [lines])

    def poll(self, timeout):
        """Reads what arrives within `timeout` seconds (at least one read attempt)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            self.sock.settimeout(max(remaining, 0.0001))
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, BlockingIOError):
                return
            self.messages.append((time.monotonic(), data.decode(errors="replace").splitlines()))
            if time.monotonic() >= deadline:
                return

    def wait_for(self, line, timeout=10.0):
        """Waits until a datagram with `line` arrived; returns its arrival time."""
        deadline = time.monotonic() + timeout
        while True:
            for arrived, lines in self.messages:
                if line in lines:
                    return arrived
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"no {line} on {self.path} within {timeout} s")
            self.poll(min(remaining, 0.05))

    def count(self, line, start, end):
        return sum(1 for arrived, lines in self.messages if start <= arrived <= end and line in lines)

    def close(self):
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def environment_without_service_manager(also=()):
    """The harness's environment less what a service manager passes the process it starts (its notification socket,
    watchdog, invocation, passed sockets, journal stream) and the names in `also`: a process the harness starts gets
    only what the harness gives it."""
    dropped = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "INVOCATION_ID", "LISTEN_FDS", "LISTEN_PID",
               "JOURNAL_STREAM") + tuple(also)
    return {k: v for k, v in os.environ.items() if k not in dropped}


def start(command, env_extra, cpu=None, watchdog=False, stderr=subprocess.DEVNULL):
    """Starts a receiver (optionally pinned with taskset, optionally with WATCHDOG_PID=its own PID); its stderr goes
    to `stderr` (an open file), else nowhere."""
    env = environment_without_service_manager()
    env.update(env_extra)
    argv = list(command)
    if watchdog:
        # sd_watchdog_enabled() wants WATCHDOG_PID to be the daemon's PID: the shell's $$ survives its exec.
        argv = ["/bin/sh", "-c", 'WATCHDOG_PID=$$ exec "$0" "$@"'] + argv
    if cpu is not None:
        argv = ["taskset", "-c", str(cpu)] + argv
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)


def stop(process, timeout=10.0):
    """SIGTERM to the PID we started, then SIGKILL to the same PID if it does not exit."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode


def quoted(argv):
    return " ".join(shlex.quote(str(a)) for a in argv)


def run(argv, log, shown=None, **kwargs):
    """Runs a command, logging it (or `shown`, a version with placeholders); returns stdout."""
    log.append(shown if shown is not None else quoted(argv))
    result = subprocess.run([str(a) for a in argv], check=True, stdout=subprocess.PIPE, text=True, **kwargs)
    return result.stdout


def rss_by_mapping(pid, top=10):
    """Rss and Anonymous kB per mapped file (or [heap], [stack], [anon]) from /proc/PID/smaps, largest first."""
    rss, anon = {}, {}
    current = None
    with open(f"/proc/{pid}/smaps") as handle:
        for line in handle:
            parts = line.split()
            if parts and "-" in parts[0] and len(parts) >= 5 and ":" in parts[3]:
                current = os.path.basename(parts[5]) if len(parts) > 5 else "[anonymous]"
            elif parts and parts[0] == "Rss:":
                rss[current] = rss.get(current, 0) + int(parts[1])
            elif parts and parts[0] == "Anonymous:":
                anon[current] = anon.get(current, 0) + int(parts[1])
    ranked = sorted(rss.items(), key=lambda item: -item[1])
    return [(name, kib, anon.get(name, 0)) for name, kib in ranked[:top]], sum(rss.values())
