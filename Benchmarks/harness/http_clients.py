#!/usr/bin/env python3
#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""The client load of bench.py's restart and round-trip figures, in a process of its own:

    http_clients.py PORT THREADS OUT

THREADS threads each send `GET /` on a new connection, read the whole response and check it (200, body "hello"), and
start the next request as soon as the last one was answered, or 1 ms after it failed, until SIGTERM. Every request is
written to OUT, one line each: `<began> <ended> <kind>`, CLOCK_MONOTONIC nanoseconds (the clock bench.py stamps its
signals with) from just before connect() to the end of the response or the failure; kind is `ok`, or the failure
(`refused`, `reset`, `timeout`, `status`, `body`, `closed-without-a-response`, ...). It prints `running` once the
first request was answered.

The request itself is the end-to-end tests' client (Tests/EndToEnd/http_load.py, `one_request`), so the benchmark and
the tests count a failed request the same way. A process of its own, not threads of bench.py: the clients hold
Python's interpreter lock most of the time, and the harness's stamps around kill() and waitpid() must not wait for it.
"""

import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "EndToEnd"))
from http_load import one_request  # noqa: E402 (the path above first)


def main():
    port, threads, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    records = [[] for _ in range(threads)]  # one list per thread: no lock on the hot path
    answered = threading.Event()

    def client(mine):
        while not stopping.is_set():
            began = time.monotonic_ns()
            ok, kind, _ = one_request(port)
            ended = time.monotonic_ns()
            mine.append((began, ended, "ok" if ok else kind.replace(" ", "-")))
            if ok:
                answered.set()
            else:
                # A refused connect takes the kernel a few µs: retried at once, 8 threads would spin on refusals and
                # take a CPU from the process that is starting (2 vCPUs), lengthening the very gap they count.
                time.sleep(0.001)

    workers = [threading.Thread(target=client, args=(records[index],), daemon=True) for index in range(threads)]
    for worker in workers:
        worker.start()
    if not answered.wait(30):
        print("error no request answered within 30 s", flush=True)
        return 1
    print("running", flush=True)
    while not stopping.wait(0.5):
        pass
    for worker in workers:
        # A request waits at most one_request's timeout (10 s); the harness stops the load while the server serves.
        worker.join(15)
    with open(out + ".partial", "w") as handle:
        for mine in records:
            handle.writelines(f"{began} {ended} {kind}\n" for began, ended, kind in mine)
    os.replace(out + ".partial", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
