#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Sessions on several replicas (issue 33): two containers of the example's image (Examples/HelloService/Containerfile,
run as kubernetes.yaml declares it, under podman), `[Hello] Sessions=postgresql` on a PostgreSQL server of the test's
own (scripts/postgres-sandbox: Debian's postgresql, a cluster in a temporary directory, stopped by its PID), behind one
address: a TCP proxy in the test that sends each new connection to a replica in its endpoints, as a Service does. A
rolling update replaces each replica in turn — the new one started and ready, put in the endpoints, the old one taken
out, then stopped (`podman stop`: the lame-duck delay, then its connections closed with 1012 over the close window) —
while real clients keep their sessions: every session resumes on whichever replica it reaches, none lost, no message
lost or repeated.

Each container keeps the image's rlimit of 1,024 descriptors (container.py), so the fleet is 400 sessions.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from container import Container, Podman, Workload
from harness import CHECKOUT, wait_for
from test_container import image, pods, workload  # noqa: F401 (fixtures)
from ws_sessions import Fleet

SESSIONS = 400
POSTGRES_SANDBOX = CHECKOUT / "scripts" / "postgres-sandbox"
CONFIG_MAP = "hello-service-config"
CONFIG_FILE = "hello-service.conf"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def postgres() -> Iterator[str]:
    """A PostgreSQL server of the test's own on the loopback: its URL. Stopped by its PID afterwards."""
    if shutil.which("setpriv") is None or not list(Path("/usr/lib/postgresql").glob("*/bin/postgres")):
        pytest.fail("Debian's postgresql is not installed: scripts/install-packages test", pytrace=False)
    directory = tempfile.mkdtemp(prefix="lifecycle-e2e-postgres.")
    port = free_port()
    try:
        done = subprocess.run(
            [str(POSTGRES_SANDBOX), "start", directory, str(port)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr + done.stdout
        yield done.stdout.strip()
    finally:
        subprocess.run([str(POSTGRES_SANDBOX), "stop", directory], timeout=60, check=False)
        shutil.rmtree(directory, ignore_errors=True)


class Proxy:
    """One address in front of the replicas: each new connection goes to the next port of `endpoints` (round robin),
    bytes copied both ways until either side closes. Loopback only."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoints: list[int] = []
        self._turn = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)
        self._stop: asyncio.Event | None = None

    def start(self) -> "Proxy":
        self._thread.start()
        self._ready.wait(10)
        return self

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, "127.0.0.1", self.port, backlog=2048)
        self._ready.set()
        async with server:
            await self._stop.wait()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        endpoints = list(self.endpoints)
        if not endpoints:
            writer.close()
            return
        port = endpoints[next(self._turn) % len(endpoints)]
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.close()
            return

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def ready(container: Container) -> bool:
    answer = container.http_get("/readyz", timeout=1)
    return answer is not None and answer[0] == 200


@pytest.mark.load
def test_two_replicas_keep_every_session_through_a_rolling_update(
    pods: Podman, workload: Workload, postgres: str
) -> None:
    sessions_workload = copy.deepcopy(workload)
    sessions_workload.config_maps[CONFIG_MAP][CONFIG_FILE] += (
        f"\n[Hello]\nSessions=postgresql\nSessionsDatabase={postgres}\nSessionCloseWindowSec=1\n"
    )

    def replica(role: str) -> Container:
        port = free_port()
        container = pods.run(sessions_workload, role, port, {"hello-service-state": pods.volume(role)})
        wait_for(lambda: ready(container), timeout=60, message=f"replica {role} ready")
        return container

    proxy = Proxy().start()
    fleet: Fleet | None = None
    try:
        a, b = replica("a"), replica("b")
        proxy.endpoints = [a.port, b.port]
        fleet = Fleet(f"ws://127.0.0.1:{proxy.port}/ws", SESSIONS, every_ms=250, limit=300).start()
        fleet.wait_connected(timeout=90)
        time.sleep(2)
        steps = []
        # The rolling update: each old replica replaced by a new one, the new one ready first.
        for old, role in ((a, "a2"), (b, "b2")):
            began = time.monotonic()
            new = replica(role)
            proxy.endpoints = [p for p in proxy.endpoints if p != old.port] + [new.port]
            resumed = fleet.figures.resumed
            done, _ = old.stop()
            assert done.returncode == 0, done.stderr
            time.sleep(1)
            fleet.wait_connected(timeout=90)
            steps.append({"replaced": role, "seconds": round(time.monotonic() - began, 1),
                          "resumed": fleet.figures.resumed - resumed})
            time.sleep(1)
    finally:
        figures = fleet.stop() if fleet is not None else None
        proxy.stop()
    assert figures is not None
    summary = figures.summary()
    print(f"\nrolling update of two replicas, {SESSIONS} sessions in PostgreSQL: {json.dumps(steps)} {json.dumps(summary)}")
    assert figures.sessions == SESSIONS, summary
    assert figures.lost == 0 and figures.state_lost == 0, summary
    assert figures.gaps == 0 and figures.duplicates == 0, summary
    # Every client of a stopped replica came back by its resume (recovered 100 %), told to by 1012.
    assert figures.resumed >= sum(1 for _ in steps) and all(step["resumed"] > 0 for step in steps), steps
    assert figures.close_codes.get(1012, 0) == figures.resumed, summary
    assert not figures.errors, summary
