#!/usr/bin/python3
#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Load on a control socket, for test_control.py: malformed requests, then many connections held open at once.

    control_load.py --socket PATH [--malformed 1000] [--connections 200] [--hold 5] [--ready FILE] [--out FILE]

1. Sends --malformed broken requests one after another, of every kind the server must survive (not JSON, not an
   object, deep nesting, a missing or mistyped method, unknown interfaces and methods, mistyped and unknown
   parameters, a message over the size limit, a call cut short), reconnecting whenever the server closes the
   connection. Each one must get an error reply or a closed connection within 5 s; a timeout is a failure.
2. Opens --connections connections at once and sends io.systemd.service.Ping on every one: each gets its reply, or is
   closed at once when the server is full. They are held open, idle, for --hold seconds, after writing the --ready
   file (the test sends signals meanwhile), then closed.

Writes a JSON summary to --out (or stdout). Standard library only: it runs inside the test sandbox.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time

TIMEOUT = 5.0

MALFORMED: list[bytes] = [
    b"this is not json\0",
    b"[1, 2, 3]\0",
    b"\"a string\"\0",
    b"{" + b"\"a\":[" * 200 + b"\0",
    b"{}\0",
    b"{\"method\": 42}\0",
    b"{\"method\": \"NoInterface\"}\0",
    b"{\"method\": \"io.nowhere.Nothing\"}\0",
    b"{\"method\": \"io.lifecyclekit.Lifecycle.Explode\"}\0",
    b"{\"method\": \"io.lifecyclekit.Lifecycle.GetTree\", \"parameters\": {\"views\": \"yes\"}}\0",
    b"{\"method\": \"io.lifecyclekit.Lifecycle.Request\", \"parameters\": {\"request\": \"sideways\"}}\0",
    b"{\"method\": \"io.lifecyclekit.Lifecycle.Request\", \"parameters\": {\"request\": 7}}\0",
    b"{\"method\": \"io.lifecyclekit.Lifecycle.GetStatus\", \"parameters\": {\"surprise\": true}}\0",
    b"{\"method\": \"io.lifecyclekit.Lifecycle.GetStatus\", \"more\": \"please\"}\0",
    b"{\"method\": \"io.lifecyclekit.Lifecycle.GetStatus\", \"parameters\": [1]}\0",
    b"{\"method\": \"io.systemd.service.SetLogLevel\", \"parameters\": {\"level\": 99}}\0",
    b"{\"method\": \"io.lifecyclekit.Lifecycle.Trace\", \"parameters\": {\"backlog\": -1}}\0",
    b"{\"method\": \"io.lifecyclekit.Lifecycle.GetStatus\", \"upgrade\": true}\0",
    b"\xff\xfe\xfd\0",
    b"x" * 70_000,
]


def connect(path: str) -> socket.socket:
    # A blocking connect, as clients make them: a burst waits in the listen backlog until the server accepts it
    # (a non-blocking AF_UNIX connect would fail with EAGAIN instead while the backlog is full).
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sock.settimeout(TIMEOUT)
    return sock


def outcome(sock: socket.socket) -> str:
    """'error' (an error reply), 'reply' (parameters), 'closed', or 'timeout'."""
    data = b""
    try:
        while b"\0" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return "closed"
            data += chunk
    except socket.timeout:
        return "timeout"
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
    message = json.loads(data.split(b"\0", 1)[0])
    return "error" if "error" in message else "reply"


def malformed(path: str, count: int) -> dict[str, int]:
    results: dict[str, int] = {}
    sock = connect(path)
    for index in range(count):
        request = MALFORMED[index % len(MALFORMED)]
        try:
            sock.sendall(request)
            seen = outcome(sock)
        except (BrokenPipeError, ConnectionResetError):
            seen = "closed"
        results[seen] = results.get(seen, 0) + 1
        if seen != "error":
            # Closed by the server (or stuck): start again on a fresh connection.
            sock.close()
            sock = connect(path)
    # A call cut short: the idle timeout ends it, the test does not wait for that.
    sock.sendall(b"{\"method\": \"io.systemd.serv")
    sock.close()
    return results


def connections(path: str, count: int, hold: float, ready: str | None) -> dict[str, int]:
    results: dict[str, int] = {}
    opened: list[socket.socket] = []
    for _ in range(count):
        try:
            opened.append(connect(path))
        except OSError:
            results["connect failed"] = results.get("connect failed", 0) + 1
    for sock in opened:
        try:
            sock.sendall(b"{\"method\": \"io.systemd.service.Ping\"}\0")
        except (BrokenPipeError, ConnectionResetError):
            pass
    for sock in opened:
        seen = outcome(sock)
        results[seen] = results.get(seen, 0) + 1
    if ready:
        with open(ready, "w") as handle:
            handle.write("held\n")
    time.sleep(hold)
    for sock in opened:
        sock.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--malformed", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--hold", type=float, default=5.0)
    parser.add_argument("--ready")
    parser.add_argument("--out")
    args = parser.parse_args()
    began = time.monotonic()
    summary = {"malformed": malformed(args.socket, args.malformed)}
    summary["malformedSeconds"] = round(time.monotonic() - began, 3)
    summary["connections"] = connections(args.socket, args.connections, args.hold, args.ready)
    text = json.dumps(summary)
    if args.out:
        with open(args.out + ".tmp", "w") as handle:
            handle.write(text + "\n")
        os.replace(args.out + ".tmp", args.out)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
