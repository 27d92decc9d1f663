#!/usr/bin/python3
#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Hostile peers of a control socket, for test_hostile_control.py (docs/security.md). Run inside the test sandbox, as
whichever user the test chooses; standard library only. Each prints one JSON summary on stdout.

    control_hostile.py connect-flood --socket PATH --seconds S [--workers N]
        N processes connect and close as fast as they can for S seconds, never reading (another uid: each connection
        is refused). Summary: connects made, connects that failed.
    control_hostile.py oneway-flood --socket PATH --bytes N
        One connection sends N bytes of pipelined oneway io.systemd.service.Ping calls without pausing, then one Ping
        that wants a reply, and reads it. Summary: calls sent, seconds, whether the reply came.
    control_hostile.py pipeline --socket PATH --calls N --hold S
        One connection sends N pipelined GetStatus calls and never reads; after S seconds, whether the daemon closed it.
    control_hostile.py trickle --socket PATH --interval S --limit T
        One connection sends a call one byte every S seconds; when (seconds) the daemon closed it, or null after T.
    control_hostile.py hold --socket PATH --connections N --seconds S [--ready FILE]
        Opens N connections (blocking connects), writes FILE, holds them idle for S seconds. Summary: opened, failed.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time

PING_ONEWAY = b'{"method":"io.systemd.service.Ping","oneway":true}\0'
PING = b'{"method":"io.systemd.service.Ping"}\0'
STATUS = b'{"method":"io.lifecyclekit.Lifecycle.GetStatus"}\0'


def connect(path: str, timeout: float | None = 10.0) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.connect(path)
    return sock


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the daemon closed the connection (end of file or a reset), without waiting."""
    sock.setblocking(False)
    try:
        while True:
            data = sock.recv(1 << 20)
            if not data:
                return True
    except BlockingIOError:
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True
    finally:
        sock.setblocking(True)


def connect_flood(args: argparse.Namespace) -> dict:
    deadline = time.monotonic() + args.seconds
    children = []
    for _ in range(args.workers):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            made = failed = 0
            while time.monotonic() < deadline:
                try:
                    sock = connect(args.socket, timeout=1.0)
                    made += 1
                    sock.close()
                except OSError:
                    failed += 1
            os.write(write, json.dumps([made, failed]).encode())
            os._exit(0)
        os.close(write)
        children.append((pid, read))
    made = failed = 0
    for pid, read in children:
        data = b""
        while chunk := os.read(read, 4096):
            data += chunk
        os.waitpid(pid, 0)
        counts = json.loads(data or b"[0, 0]")
        made += counts[0]
        failed += counts[1]
    return {"connects": made, "failed": failed}


def oneway_flood(args: argparse.Namespace) -> dict:
    sock = connect(args.socket, timeout=None)
    calls = max(1, args.bytes // len(PING_ONEWAY))
    chunk = PING_ONEWAY * 1024
    began = time.monotonic()
    sent = 0
    while sent < calls:
        count = min(1024, calls - sent)
        sock.sendall(chunk if count == 1024 else PING_ONEWAY * count)
        sent += count
    sock.sendall(PING)
    sock.settimeout(120)
    reply = b""
    try:
        while b"\0" not in reply:
            data = sock.recv(65536)
            if not data:
                break
            reply += data
    except OSError:
        pass
    return {"calls": calls + 1, "seconds": round(time.monotonic() - began, 2), "answered": reply.startswith(b'{"parameters"')}


def pipeline(args: argparse.Namespace) -> dict:
    sock = connect(args.socket, timeout=None)
    sock.setblocking(False)
    sent = 0
    data = STATUS * args.calls
    began = time.monotonic()
    # Sends what the socket takes without ever reading; the rest is given up once the daemon stops reading or closes.
    while sent < len(data) and time.monotonic() - began < args.hold:
        try:
            sent += sock.send(data[sent : sent + 65536])
        except BlockingIOError:
            time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            break
    while time.monotonic() - began < args.hold:
        time.sleep(0.05)
    return {"bytesSent": sent, "closed": closed_by_peer(sock)}


def trickle(args: argparse.Namespace) -> dict:
    sock = connect(args.socket)
    began = time.monotonic()
    message = PING * 1000
    for byte in message:
        if closed_by_peer(sock):
            return {"closedAfter": round(time.monotonic() - began, 2)}
        if time.monotonic() - began > args.limit:
            break
        try:
            sock.send(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return {"closedAfter": round(time.monotonic() - began, 2)}
        time.sleep(args.interval)
    return {"closedAfter": None}


def hold(args: argparse.Namespace) -> dict:
    opened = []
    failed = 0
    for _ in range(args.connections):
        try:
            opened.append(connect(args.socket, timeout=2.0))
        except OSError:
            failed += 1
    if args.ready:
        with open(args.ready, "w") as handle:
            handle.write("held\n")
    time.sleep(args.seconds)
    for sock in opened:
        sock.close()
    return {"opened": len(opened), "failed": failed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    flood = commands.add_parser("connect-flood")
    flood.add_argument("--socket", required=True)
    flood.add_argument("--seconds", type=float, required=True)
    flood.add_argument("--workers", type=int, default=2)
    oneway = commands.add_parser("oneway-flood")
    oneway.add_argument("--socket", required=True)
    oneway.add_argument("--bytes", type=int, required=True)
    piped = commands.add_parser("pipeline")
    piped.add_argument("--socket", required=True)
    piped.add_argument("--calls", type=int, required=True)
    piped.add_argument("--hold", type=float, required=True)
    slow = commands.add_parser("trickle")
    slow.add_argument("--socket", required=True)
    slow.add_argument("--interval", type=float, required=True)
    slow.add_argument("--limit", type=float, required=True)
    held = commands.add_parser("hold")
    held.add_argument("--socket", required=True)
    held.add_argument("--connections", type=int, required=True)
    held.add_argument("--seconds", type=float, required=True)
    held.add_argument("--ready")
    args = parser.parse_args()
    run = {
        "connect-flood": connect_flood,
        "oneway-flood": oneway_flood,
        "pipeline": pipeline,
        "trickle": trickle,
        "hold": hold,
    }[args.command]
    print(json.dumps(run(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
