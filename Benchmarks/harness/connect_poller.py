#!/usr/bin/env python3
#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Watches 127.0.0.1:PORT in a tight loop, in a process of its own, for bench.py's services figures.

    connect_poller.py PORT [INTERVAL_US]

Protocol, one line each way per measurement: bench.py writes `refused` or `accepting` (the state to wait for). The
poller checks that the port is in the other state (else it answers `error <reason>`), answers `polling`, and polls
(an attempt every INTERVAL µs, default 50) until the awaited state; it then answers `<seen> <window> <attempts>`: `seen` is CLOCK_MONOTONIC (ns) when the first
attempt that found the new state returned, `window` how long before that the last attempt that found the old state
began. The state changed inside that window. bench.py stamps the clock just before its kill(), after it read
`polling`: `seen` minus that stamp is signal → state change, late by at most `window` (the resolution; it grows
when the poller is preempted, e.g. by the very threads doing the transition on a small machine).

- `accepting`: connect() after connect() until one succeeds. A refused connect costs the server nothing (the
  kernel answers with a reset), so the loop does not disturb what it measures.
- `refused`: a connect() that succeeds is a connection the draining server has to accept and close, and a tight
  loop of them fills its accept queue (a SYN then waits a second for its retransmission). So the loop asks the
  kernel instead whether a socket still listens on 127.0.0.1:PORT (sock_diag netlink: a dump of the listening TCP
  sockets, what `ss -lt` does); once none does, one connect() must be refused (ECONNREFUSED), and the figure is
  taken when it returns: the first moment a client is refused.
"""

import ctypes
import errno
import socket
import struct
import sys
import time

PR_SET_TIMERSLACK = 29
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
TCP_LISTEN = 10
LOOPBACK = socket.inet_aton("127.0.0.1")


def connects(port):
    """True if a connect succeeds, False if it is refused, None if it was reset: the listening socket closed while
    this connection waited in its queue (neither state yet). Anything else is an error."""
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        result = client.connect_ex(("127.0.0.1", port))
    finally:
        client.close()
    if result == 0:
        return True
    if result == errno.ECONNREFUSED:
        return False
    if result == errno.ECONNRESET:
        return None
    raise OSError(result, f"connect to 127.0.0.1:{port}: {errno.errorcode.get(result, result)}")


class ListeningProbe:
    """Whether a TCP socket listens on 127.0.0.1:port, from the kernel's socket table (sock_diag), without a
    connection."""

    def __init__(self, port):
        self.port = port
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
        # struct inet_diag_req_v2: family, protocol, extensions, pad, the states wanted (LISTEN only), then an
        # inet_diag_sockid of 48 zero bytes (a dump does not filter on it).
        request = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN) + bytes(48)
        self.message = struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP,
                                   1, 0) + request

    def listening(self):
        self.sock.send(self.message)
        found = False
        while True:
            data = self.sock.recv(1 << 16)
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if kind == NLMSG_DONE:
                    return found
                if kind == NLMSG_ERROR:
                    code = struct.unpack_from("=i", data, offset + 16)[0]
                    raise OSError(-code, f"sock_diag: {errno.errorcode.get(-code, code)}")
                # struct inet_diag_msg: family, state, timer, retrans, then the sockid: sport, dport (big-endian),
                # src[4], dst[4], ...
                sport = struct.unpack_from("!H", data, offset + 16 + 4)[0]
                source = data[offset + 16 + 8: offset + 16 + 12]
                if sport == self.port and source in (LOOPBACK, bytes(4)):
                    found = True
                offset += (length + 3) & ~3


def main():
    port = int(sys.argv[1])
    interval = float(sys.argv[2]) / 1e6 if len(sys.argv) > 2 else 50e-6
    timeout_ns = 10_000_000_000
    # Sleeps between attempts are what keep the poller from being preempted: a task that spins uses up its share of
    # the CPU and the scheduler then runs the threads that wake for the transition first (on 2 vCPUs, seen: the
    # poller off the CPU for the whole transition, a 1 ms window). A task that mostly sleeps is run as soon as it
    # wakes. 1 µs of timer slack instead of the default 50 µs keeps the interval what it says.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0)
    probe = ListeningProbe(port)
    for line in sys.stdin:
        wanted = line.strip()
        if wanted not in ("refused", "accepting"):
            print(f"error unknown request {wanted!r}", flush=True)
            continue
        accepting = wanted == "accepting"
        first = time.monotonic_ns()
        # Before a foreground the port refuses connections; before a background a socket listens on it.
        ready = connects(port) is False if accepting else probe.listening()
        if not ready:
            print(f"error not {'refusing' if accepting else 'listening'} before the signal", flush=True)
            continue
        print("polling", flush=True)
        attempts = 1
        deadline = first + timeout_ns
        previous = first  # when the last attempt that found the old state began
        while True:
            began = time.monotonic_ns()
            if accepting:
                done = connects(port) is True
            else:
                done = not probe.listening() and connects(port) is False
            now = time.monotonic_ns()
            attempts += 1
            if done:
                print(f"{now} {now - previous} {attempts}", flush=True)
                break
            previous = began
            if interval > 0:
                time.sleep(interval)
            if now > deadline:
                print(f"error timeout after {attempts} attempts", flush=True)
                break


if __name__ == "__main__":
    main()
