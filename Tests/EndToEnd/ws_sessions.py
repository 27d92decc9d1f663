#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Real WebSocket clients of HelloService's sessions endpoint (Debian's python3-websockets), for the end-to-end tests
and scripts/bench: a fleet of sessions on one asyncio loop in a thread of its own, each receiving its stream, checking
every message for gaps and duplicates, acknowledging, and reconnecting with its token whenever its connection ends,
as an operator's client would (after a random pause of up to 100 ms, more after a failure).

Loopback only, bounded: the fleet stops when told to, or after `limit` seconds.
"""

from __future__ import annotations

import asyncio
import json
import random
import resource
import statistics
import threading
import time
from dataclasses import dataclass, field

import websockets

# What a client treats as "start a new session": its token resumes nothing.
NEW_SESSION_CODES = {4001, 4002, 4004}


@dataclass
class Figures:
    """What the fleet saw."""

    sessions: int = 0
    messages: int = 0
    gaps: int = 0
    duplicates: int = 0
    connects: int = 0
    resumed: int = 0
    # Resumes the server refused: the session was lost.
    lost: int = 0
    # State (set at the start) not given back on a resume.
    state_lost: int = 0
    close_codes: dict[int, int] = field(default_factory=dict)
    reconnect_seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def percentile(self, fraction: float) -> float:
        values = sorted(self.reconnect_seconds)
        if not values:
            return 0.0
        return values[min(len(values) - 1, int(fraction * len(values)))]

    def summary(self) -> dict:
        return {
            "sessions": self.sessions,
            "messages": self.messages,
            "gaps": self.gaps,
            "duplicates": self.duplicates,
            "connects": self.connects,
            "resumed": self.resumed,
            "lost": self.lost,
            "state lost": self.state_lost,
            "close codes": dict(sorted(self.close_codes.items())),
            "reconnect p50 ms": round(self.percentile(0.5) * 1000, 1),
            "reconnect p99 ms": round(self.percentile(0.99) * 1000, 1),
            "errors": self.errors[:5],
        }


class Session:
    """One client and its session: the token, the last sequence number received, the state it set."""

    def __init__(self, fleet: "Fleet", index: int) -> None:
        self.fleet = fleet
        self.index = index
        self.token: str | None = None
        self.last = 0
        self.topic = f"c{index}"
        self.closed_at: float | None = None
        self.resumes = 0
        # Welcomes received: a disruption is over for this client once it has one more than before.
        self.connects = 0
        # The close code of every connection it lost, in order (1006: no close frame).
        self.closes: list[int] = []

    async def run(self) -> None:
        figures = self.fleet.figures
        failures = 0
        while not self.fleet.stopping.is_set():
            try:
                async with websockets.connect(
                    self.fleet.url, open_timeout=30, close_timeout=5, ping_interval=None, max_size=1 << 16
                ) as ws:
                    failures = 0
                    await self.serve(ws)
                # A clean close (1000, 1001) ends the iteration without an exception.
                code = ws.close_code or 1006
                figures.close_codes[code] = figures.close_codes.get(code, 0) + 1
                self.closes.append(code)
            except websockets.ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd is not None else 1006
                figures.close_codes[code] = figures.close_codes.get(code, 0) + 1
                self.closes.append(code)
                if code in NEW_SESSION_CODES and self.token is not None:
                    figures.lost += 1
                    figures.errors.append(f"session {self.index} lost: {code} {closed.rcvd.reason if closed.rcvd else ''}")
                    self.token, self.last = None, 0
            except (OSError, asyncio.TimeoutError, websockets.InvalidHandshake) as error:
                failures += 1
                if failures > 50:
                    figures.errors.append(f"session {self.index}: {error!r}")
                    return
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 (a client that stops must say why)
                failures += 1
                figures.errors.append(f"session {self.index}: {error!r}")
                if failures > 50:
                    return
            if self.closed_at is None:
                self.closed_at = time.monotonic()
            if self.fleet.stopping.is_set():
                return
            await asyncio.sleep(random.uniform(0, 0.1) * (1 + min(failures, 10)))

    async def serve(self, ws) -> None:
        figures = self.fleet.figures
        if self.token is None:
            await ws.send(json.dumps({"op": "hello", "every_ms": self.fleet.every_ms}))
        else:
            await ws.send(json.dumps({"op": "resume", "token": self.token, "last": self.last}))
        welcome = json.loads(await ws.recv())
        assert welcome.get("op") == "welcome", welcome
        figures.connects += 1
        self.connects += 1
        if self.closed_at is not None:
            figures.reconnect_seconds.append(time.monotonic() - self.closed_at)
            self.closed_at = None
        if self.token is None:
            self.token = welcome["token"]
            figures.sessions += 1
            await ws.send(json.dumps({"op": "set", "key": "topic", "value": self.topic}))
        else:
            figures.resumed += 1
            self.resumes += 1
            if welcome["state"].get("topic") != self.topic:
                figures.state_lost += 1
        unacknowledged = 0
        last_ack = time.monotonic()
        async for text in ws:
            message = json.loads(text)
            seq = message["seq"]
            if seq <= self.last:
                figures.duplicates += 1
                continue
            if seq != self.last + 1:
                figures.gaps += 1
                figures.errors.append(f"session {self.index}: gap {self.last} -> {seq}")
            # The feed's message for this position (the topic once it is set).
            data = message["data"]
            if not data.endswith(f"tick {seq}"):
                figures.errors.append(f"session {self.index}: message {seq} is {data!r}")
            self.last = seq
            figures.messages += 1
            unacknowledged += 1
            now = time.monotonic()
            if unacknowledged >= 16 or now - last_ack > 0.2:
                await ws.send(json.dumps({"op": "ack", "seq": self.last}))
                unacknowledged, last_ack = 0, now


class Fleet:
    """`count` sessions on `url`, each sent a message every `every_ms`, in a thread of their own."""

    def __init__(self, url: str, count: int, every_ms: int = 250, limit: float = 900) -> None:
        self.url = url
        self.count = count
        self.every_ms = every_ms
        self.limit = limit
        self.figures = Figures()
        self.sessions: list[Session] = []
        self.stopping = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._main, name="ws-fleet", daemon=True)
        self._started = threading.Event()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = min(hard, max(soft, count * 2 + 256))
        if wanted > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))

    def start(self) -> "Fleet":
        self._thread.start()
        self._started.wait(10)
        return self

    def _main(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.stopping = asyncio.Event()
        self._started.set()
        self.sessions = [Session(self, index) for index in range(self.count)]
        tasks = []
        for session in self.sessions:
            tasks.append(asyncio.create_task(session.run()))
            # Not all in the same millisecond: a thousand in about half a second.
            await asyncio.sleep(0.0005)
        try:
            await asyncio.wait_for(self.stopping.wait(), timeout=self.limit)
        except asyncio.TimeoutError:
            self.figures.errors.append("the fleet ran out of time")
        self.stopping.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def connected(self) -> int:
        """Sessions whose client has its welcome and is reading now."""
        return sum(1 for s in self.sessions if s.token is not None and s.closed_at is None)

    def wait_connected(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.connected() == self.count:
                return
            time.sleep(0.05)
        raise AssertionError(f"{self.connected()} of {self.count} sessions connected; {self.figures.summary()}")

    def mark(self) -> list[int]:
        """Every session's count of welcomes now, for `wait_reconnected`."""
        return [s.connects for s in self.sessions]

    def close_marks(self) -> list[int]:
        """Every session's count of closes now, for `first_closes`."""
        return [len(s.closes) for s in self.sessions]

    def first_closes(self, marks: list[int]) -> dict[int, int]:
        """The close code of each session's first close since `marks`, counted by code (none: 0)."""
        codes: dict[int, int] = {}
        for session, mark in zip(self.sessions, marks):
            code = session.closes[mark] if len(session.closes) > mark else 0
            codes[code] = codes.get(code, 0) + 1
        return codes

    def wait_reconnected(self, marks: list[int], timeout: float = 90) -> None:
        """Waits until every session has been welcomed again since `marks` (it lost its connection and came back,
        resumed or new) and is connected."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            back = sum(1 for s, m in zip(self.sessions, marks) if s.connects > m and s.closed_at is None)
            if back == self.count:
                return
            time.sleep(0.05)
        raise AssertionError(f"{back} of {self.count} sessions came back; {self.figures.summary()}")

    def stop(self) -> Figures:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.stopping.set)
        self._thread.join(30)
        return self.figures


def rss_kib(pid: int | str) -> int:
    """The resident set of process `pid`, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0
