#!/usr/bin/env python3
#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Sends requests to 127.0.0.1:PORT in a tight loop, in a process of its own, for bench.py's services figures.

    request_poller.py PORT [INTERVAL_US [PATIENCE_MS]]

In the background the example stops accepting but keeps its listening socket (the pause policy): a connection made
then is not refused, it waits in the backlog and is answered on the return to the foreground. So what a client sees
of a SIGUSR1 is its request kept waiting, and of a SIGUSR2 the waiting request answered. Every request is `GET /` on
a new connection, its response read whole and checked (200, body "hello"), as the end-to-end tests' client does
(Tests/EndToEnd/http_load.py).

Protocol, one line each way, bench.py first; times are CLOCK_MONOTONIC nanoseconds, the clock bench.py stamps its
kill() with:

- `stop`: one request must be answered now (else `error ...`); the poller answers `polling`, and bench.py sends
  SIGUSR1. Then request after request (one every INTERVAL µs, default 50) until one is not answered within PATIENCE
  ms (default 50): the poller keeps that one open and answers `<began> <window> <attempts>`, `began` when its
  connect() began, `window` how long before that the last request that was answered began. Accepting stopped inside
  that window, if the request is still waiting when the foreground comes (bench.py checks that next).
- `resume`: the kept request must still be waiting: the poller answers `polling` and bench.py sends SIGUSR2; the
  poller then answers `<answered> <began>` once the kept request's response has been read whole and checked.
  `early <answered>` instead of `polling` means the kept request was answered before the foreground: it was slow,
  not waiting (a busy machine), and the pair of figures is void.
- `serving`: request after request until one is answered; answers `ok`.

The requests are the only load: each one the draining server accepts, it answers and closes (with `Connection:
close`), so the poller never holds up the drain it measures, and the kept request waits in the backlog, where the
server does not see it.
"""

import ctypes
import select
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "EndToEnd"))
from http_load import EXPECTED_BODY, REQUEST  # noqa: E402 (the path above first)

PR_SET_TIMERSLACK = 29
TIMEOUT = 10.0  # seconds any request may take once the server serves


class Request:
    """One `GET /` on a new connection, sent at once; its answer read later."""

    def __init__(self, port):
        self.began = time.monotonic_ns()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(TIMEOUT)
        self.sock.connect(("127.0.0.1", port))
        self.sock.sendall(REQUEST)

    def wait(self, seconds):
        """Whether the response has begun within `seconds`."""
        return bool(select.select([self.sock], [], [], seconds)[0])

    def finish(self):
        """Reads the whole response and checks it; returns when it ended. Raises RuntimeError if it is not 200
        "hello"."""
        chunks = []
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
        ended = time.monotonic_ns()
        self.sock.close()
        head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0]
        if not status.startswith(b"HTTP/1.1 200") or body != EXPECTED_BODY:
            raise RuntimeError(f"unexpected response {status!r} {body[:80]!r}")
        return ended

    def close(self):
        self.sock.close()


def main():
    port = int(sys.argv[1])
    interval = float(sys.argv[2]) / 1e6 if len(sys.argv) > 2 else 50e-6
    patience = float(sys.argv[3]) / 1e3 if len(sys.argv) > 3 else 0.05
    # Sleeps between requests keep the poller from being preempted: a task that spins uses up its share of the CPU and
    # the scheduler then runs the threads that wake for the transition first (on 2 vCPUs, seen with the connect
    # poller this replaces: the poller off the CPU for the whole transition). 1 µs of timer slack instead of the
    # default 50 µs keeps the interval what it says.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0)
    kept = None
    for line in sys.stdin:
        command = line.strip()
        try:
            if command == "stop":
                request = Request(port)
                if not request.wait(TIMEOUT):
                    request.close()
                    print("error not serving before the signal", flush=True)
                    continue
                previous = request.began
                request.finish()
                print("polling", flush=True)
                attempts = 0
                deadline = time.monotonic() + TIMEOUT
                while True:
                    request = Request(port)
                    attempts += 1
                    if not request.wait(patience):
                        kept = request
                        print(f"{request.began} {request.began - previous} {attempts}", flush=True)
                        break
                    request.finish()
                    previous = request.began
                    if time.monotonic() > deadline:
                        print(f"error still answered after {attempts} requests", flush=True)
                        break
                    time.sleep(interval)
            elif command == "resume":
                if kept is None:
                    print("error no request waiting", flush=True)
                    continue
                request, kept = kept, None
                if request.wait(0):
                    print(f"early {request.finish()}", flush=True)
                    continue
                print("polling", flush=True)
                if not request.wait(TIMEOUT):
                    request.close()
                    print("error the waiting request was not answered", flush=True)
                    continue
                print(f"{request.finish()} {request.began}", flush=True)
            elif command == "serving":
                deadline = time.monotonic() + TIMEOUT
                while True:
                    request = Request(port)
                    if request.wait(0.1):
                        request.finish()
                        print("ok", flush=True)
                        break
                    request.close()
                    if time.monotonic() > deadline:
                        print("error not serving", flush=True)
                        break
            else:
                print(f"error unknown command {command!r}", flush=True)
        except (OSError, RuntimeError) as error:
            print(f"error {error!r}", flush=True)


if __name__ == "__main__":
    main()
