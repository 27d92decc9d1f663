#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Real HTTP clients on the loopback for the zero-gap tests and the benchmark: a load that opens a new connection for
every request and checks every response, and Debian's `wrk` for a keep-alive load. Both are bounded in time.

A new connection per request is the honest count of refused connections (FACTS.md: `wrk -H "Connection: close"`
reports a read error for nearly every request, whatever the server does).
"""

from __future__ import annotations

import errno
import re
import shutil
import socket
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
EXPECTED_BODY = b"hello"


@dataclass
class Failure:
    """One failed request: when (monotonic seconds), what kind, and the detail."""

    at: float
    kind: str
    detail: str


@dataclass
class LoadResult:
    """What a load saw: requests that got a checked 200 "hello", and every failure by kind."""

    requests: int = 0
    succeeded: int = 0
    failures: list[Failure] = field(default_factory=list)
    # Each request's wait for its connection to be accepted and answered, in seconds (successful ones only).
    latencies: list[float] = field(default_factory=list)

    @property
    def kinds(self) -> Counter:
        return Counter(f.kind for f in self.failures)

    def failures_between(self, start: float, end: float) -> list[Failure]:
        return [f for f in self.failures if start <= f.at <= end]

    def summary(self) -> str:
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(self.kinds.items())) or "none"
        return f"{self.requests} requests, {self.succeeded} answered 200 hello, failures: {kinds}"


def _classify(error: BaseException) -> str:
    if isinstance(error, ConnectionRefusedError):
        return "refused"
    if isinstance(error, ConnectionResetError):
        return "reset"
    if isinstance(error, BrokenPipeError):
        return "broken pipe"
    if isinstance(error, (socket.timeout, TimeoutError)):
        return "timeout"
    if isinstance(error, OSError) and error.errno is not None:
        return errno.errorcode.get(error.errno, str(error.errno)).lower()
    return type(error).__name__


def one_request(port: int, timeout: float = 10.0) -> tuple[bool, str, str]:
    """A new connection, one GET /, the whole response read and checked. Returns (ok, kind, detail)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
        client.settimeout(timeout)
        try:
            client.connect(("127.0.0.1", port))
            client.sendall(REQUEST)
            chunks = []
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except BaseException as error:  # noqa: BLE001 - every failure is counted by kind
            return False, _classify(error), repr(error)
    response = b"".join(chunks)
    if not response:
        return False, "closed without a response", ""
    head, _, body = response.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0]
    if not status.startswith(b"HTTP/1.1 200"):
        return False, "status", status.decode(errors="replace")
    if body != EXPECTED_BODY:
        return False, "body", body[:80].decode(errors="replace")
    return True, "", ""


class ConnectionPerRequestLoad:
    """Threads that each send one request per new connection, as fast as answers come, until stopped or `limit`
    seconds have passed. Every response is checked."""

    def __init__(self, port: int, threads: int = 8, limit: float = 600.0):
        self.port = port
        self.result = LoadResult()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._deadline = time.monotonic() + limit
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]

    def __enter__(self) -> "ConnectionPerRequestLoad":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set() and time.monotonic() < self._deadline:
            began = time.monotonic()
            ok, kind, detail = one_request(self.port)
            ended = time.monotonic()
            with self._lock:
                self.result.requests += 1
                if ok:
                    self.result.succeeded += 1
                    self.result.latencies.append(ended - began)
                else:
                    self.result.failures.append(Failure(ended, kind, detail))

    def stop(self) -> LoadResult:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)
        return self.result

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self.result.requests, len(self.result.failures)

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> None:
        """Until `count` more requests have been answered (the load runs), or fails after `timeout`."""
        with self._lock:
            target = self.result.succeeded + count
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self.result.succeeded >= target:
                    return
            time.sleep(0.01)
        raise AssertionError(f"the load did not get {count} more answers within {timeout}s: {self.result.summary()}")


@dataclass
class WrkResult:
    """What `wrk` reported."""

    requests: int
    connect_errors: int
    read_errors: int
    write_errors: int
    timeouts: int
    non_2xx: int
    output: str

    @property
    def errors(self) -> int:
        return self.connect_errors + self.read_errors + self.write_errors + self.timeouts + self.non_2xx


def wrk_path() -> str:
    path = shutil.which("wrk")
    if path is None:
        raise AssertionError("wrk is missing: scripts/install-packages test installs it (Debian's wrk)")
    return path


class WrkLoad:
    """Debian's `wrk` on the loopback, keep-alive, for `seconds`, on a thread: `result()` once it has ended."""

    def __init__(self, port: int, seconds: float, connections: int = 16, threads: int = 2):
        self.seconds = seconds
        self._argv = [
            wrk_path(), f"-t{threads}", f"-c{connections}", f"-d{max(1, int(seconds))}s", "--timeout", "10s",
            f"http://127.0.0.1:{port}/",
        ]
        self._done: subprocess.CompletedProcess | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "WrkLoad":
        self._thread.start()
        return self

    def _run(self) -> None:
        self._done = subprocess.run(self._argv, capture_output=True, text=True, timeout=self.seconds + 60)

    def result(self) -> WrkResult:
        self._thread.join(self.seconds + 90)
        assert self._done is not None, "wrk did not end"
        output = self._done.stdout + self._done.stderr
        assert self._done.returncode == 0, output
        requests = re.search(r"(\d+) requests in", output)
        errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
        non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
        assert requests, output
        return WrkResult(
            requests=int(requests.group(1)),
            connect_errors=int(errors.group(1)) if errors else 0,
            read_errors=int(errors.group(2)) if errors else 0,
            write_errors=int(errors.group(3)) if errors else 0,
            timeouts=int(errors.group(4)) if errors else 0,
            non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
            output=output,
        )
