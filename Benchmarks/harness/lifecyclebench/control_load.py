#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""10. Signal latency with the control socket under load: the latency of 1 for the bench daemon with its control
socket idle, then under a paced and an unpaced load from a generator (`bench.py --control-load`, control_load_main)
in a process of its own."""

import os
import signal
import socket
import subprocess
import sys
import time

from .processes import ENTRY_POINT, NotifyListener, quoted, run, start, stop
from .stats import fmt, ratio, summary


# Requests the load generator sends as fast as they are answered: each gets an error reply (unknown method, mistyped
# or unknown parameter), except the last, which is not JSON and gets the connection closed (the generator reconnects).
CONTROL_LOAD_REQUESTS = [
    b'{"method":"io.lifecyclekit.Lifecycle.Explode"}\0',
    b'{"method":"io.lifecyclekit.Lifecycle.GetTree","parameters":{"views":"yes"}}\0',
    b'{"method":"io.lifecyclekit.Lifecycle.GetStatus","parameters":{"surprise":1}}\0',
    b'{"method":"io.nowhere.Nothing"}\0',
    b'not json\0',
]


def control_load_main(argv):
    """The load generator (bench.py --control-load SOCKET IDLE BUSY RATE OUT): IDLE connections held open (a Ping
    every 4 s keeps them under the idle timeout), BUSY connections sending malformed requests, each as soon as the last
    was answered (RATE 0) or at RATE requests/s in all, until SIGTERM; then writes {"requests", "errors", "closed",
    "reconnects", "seconds", "held"} to OUT."""
    import heapq
    import json
    import selectors

    path, idle_count, busy_count, rate, out = argv[0], int(argv[1]), int(argv[2]), float(argv[3]), argv[4]
    # With a rate, each busy connection sends on its own schedule: one request every `interval` seconds.
    interval = busy_count / rate if rate > 0 else 0.0
    due = []  # (time, sequence, sock, index): requests waiting for their time
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))

    def connect(blocking=True):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        sock.setblocking(blocking)
        return sock

    held = []
    for _ in range(idle_count):
        sock = connect()
        sock.sendall(b'{"method":"io.systemd.service.Ping"}\0')
        held.append(sock)
    for sock in held:
        sock.settimeout(5)
        sock.recv(65536)
    selector = selectors.DefaultSelector()
    counts = {"requests": 0, "errors": 0, "closed": 0, "reconnects": 0}
    state = {}
    sent_at = {}

    def begin(sock, index):
        request = CONTROL_LOAD_REQUESTS[index % len(CONTROL_LOAD_REQUESTS)]
        state[sock] = [index, b""]
        sent_at.setdefault(sock, time.monotonic())
        try:
            sock.sendall(request)
            counts["requests"] += 1
        except OSError:
            pass
        selector.register(sock, selectors.EVENT_READ)

    def next_request(sock, index, started):
        if interval <= 0:
            begin(sock, index)
        else:
            heapq.heappush(due, (started + interval, id(sock), sock, index))

    for index in range(busy_count):
        begin(connect(False), index)
    began = time.monotonic()
    last_ping = began
    while not stopping:
        now = time.monotonic()
        while due and due[0][0] <= now:
            _, _, sock, index = heapq.heappop(due)
            sent_at[sock] = now
            begin(sock, index)
        timeout = min(0.5, max(0.0, due[0][0] - now)) if due else 0.5
        for key, _ in selector.select(timeout=timeout):
            sock = key.fileobj
            index, data = state[sock]
            try:
                chunk = sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                counts["closed"] += 1
                selector.unregister(sock)
                del state[sock]
                sock.close()
                counts["reconnects"] += 1
                fresh = connect(False)
                next_request(fresh, index + 1, sent_at.pop(sock, time.monotonic()))
                continue
            data += chunk
            if b"\0" not in data:
                state[sock][1] = data
                continue
            counts["errors"] += data.count(b"\0")
            selector.unregister(sock)
            next_request(sock, index + 1, sent_at.get(sock, time.monotonic()))
        if time.monotonic() - last_ping > 4:
            last_ping = time.monotonic()
            for sock in held:
                sock.sendall(b'{"method":"io.systemd.service.Ping"}\0')
                sock.recv(65536)
    counts["seconds"] = time.monotonic() - began
    counts["held"] = len(held)
    with open(out, "w") as handle:
        json.dump(counts, handle)
    return 0


def measure_control_load(bins, args, tmp, log, raw):
    """Signal → first callback latency of the benchmark daemon, with its control socket idle and then under load,
    back to back in the same run: receiver on CPU 0, sender (and load generator) on CPU 1."""
    import json

    results = {}
    socket_path = os.path.join(tmp, "control")
    config = os.path.join(tmp, "control.conf")
    with open(config, "w") as handle:
        handle.write(f"[Control]\nSocket={socket_path}\n")
    per_round = max(1, args.signals // args.rounds)
    for condition, rate in (("idle", None), ("paced", args.control_rate), ("loaded", 0)):
        samples, lost, load = [], 0, None
        for _ in range(args.rounds):
            shm = f"/dev/shm/lifecycle-bench-{os.getpid()}-control"
            run([bins["probe"], "shm-create", shm, per_round + args.warmup + 16], log,
                shown=quoted([bins["probe"], "shm-create", "/dev/shm/lifecycle-bench-control",
                              per_round + args.warmup + 16]))
            listener = NotifyListener(tmp)
            command = [bins["daemon"], "--config", config]
            process = start(command, {"NOTIFY_SOCKET": listener.path, "LIFECYCLE_BENCH_SHM": shm}, cpu=0)
            log.append(f"LIFECYCLE_BENCH_SHM=/dev/shm/lifecycle-bench-control NOTIFY_SOCKET=<harness socket> "
                       f"taskset -c 0 {quoted([bins['daemon'], '--config', '<[Control] Socket=<tmp>/control>'])} &")
            generator = None
            out = os.path.join(tmp, "control-load.json")
            try:
                listener.wait_for("READY=1")
                if rate is not None:
                    argv = ["taskset", "-c", "1", sys.executable, ENTRY_POINT, "--control-load",
                            socket_path, str(args.control_idle), str(args.control_busy), str(rate), out]
                    log.append(quoted(argv).replace(socket_path, "<tmp>/control").replace(out, "<summary>") + " &")
                    generator = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
                    time.sleep(1.0)  # the held connections are open and the busy ones in full swing
                else:
                    time.sleep(0.2)
                latencies = os.path.join(tmp, "latency-control.txt")
                argv = ["taskset", "-c", "1", bins["probe"], "latency", "--pid", process.pid, "--shm", shm,
                        "--count", per_round, "--warmup", args.warmup, "--out", latencies]
                shown = quoted(argv).replace(f"--pid {process.pid}", "--pid <receiver pid>")
                line = run(argv, log, shown=shown.replace(shm, "/dev/shm/lifecycle-bench-control")
                           .replace(latencies, "<latencies>"))
                fields = dict(item.split("=") for item in line.split())
                lost += int(fields["lost"])
                with open(latencies) as handle:
                    samples.extend(int(value) / 1000.0 for value in handle)
                if generator is not None:
                    os.kill(generator.pid, signal.SIGTERM)
                    generator.wait(30)
                    with open(out) as handle:
                        counts = json.load(handle)
                    if load is None:
                        load = dict(counts)
                    else:
                        for key in ("requests", "errors", "closed", "reconnects", "seconds"):
                            load[key] += counts[key]
            finally:
                if generator is not None and generator.poll() is None:
                    os.kill(generator.pid, signal.SIGKILL)
                    generator.wait()
                status = stop(process)
                listener.close()
                os.unlink(shm)
            if status != 0:
                raise RuntimeError(f"the benchmark daemon exited with {status} after the {condition} run")
        results[condition] = dict(summary(samples), lost=lost, samples=samples, load=load)
        with open(raw / f"latency-control-{condition}.txt", "w") as handle:
            handle.writelines(f"{value:.3f}\n" for value in samples)
    return results


def report_control_load(add, results, args, beside):
    """Section 10 (none when not measured): the latency with the socket idle, paced and saturated."""
    control = results.get("control")
    if not control:
        return
    add("## 10. Signal latency with the control socket under load")
    add("")

    def rate_of(condition):
        load = control[condition]["load"] or {}
        return load.get("requests", 0) / load["seconds"] if load.get("seconds") else float("nan")

    add("The benchmark daemon with its control socket (`[Control] Socket=`), the latency of section 1 measured three "
        "times back to back: socket idle, then under load from a generator on the sender's CPU: "
        f"{args.control_idle} connections held open and {args.control_busy} connections sending malformed requests "
        "(unknown methods, mistyped and unknown parameters: error replies; one in five not JSON: the connection "
        f"closed, the generator reconnects), first paced at {fmt(args.control_rate, 0)} requests/s in all, then each "
        "as soon as the last was answered, which keeps the daemon's CPU busy all the time. Receiver on CPU 0, sender "
        "and generator on CPU 1.")
    add("")
    add("| control socket | requests answered/s | signals (lost) | p50 µs | p99 µs | max µs | p50 × idle | p99 × idle |")
    add("|---|---|---|---|---|---|---|---|")
    idle = control["idle"]
    labels = (("idle", "idle"), ("paced", f"{args.control_idle} held + {args.control_busy} paced"),
              ("loaded", f"{args.control_idle} held + {args.control_busy} as fast as answered"))
    for condition, label in labels:
        row = control[condition]
        rate = "—" if condition == "idle" else fmt(rate_of(condition), 0)
        add(f"| {label} | {rate} | {row['n']} ({row['lost']}) | {fmt(row['p50'])} | {fmt(row['p99'])} | "
            f"{fmt(row['max'])} | {fmt(ratio(row['p50'], idle['p50']), 2)} | {fmt(ratio(row['p99'], idle['p99']), 2)} |")
    add("")
    load = control["loaded"]["load"] or {}
    add(f"In the unpaced run the daemon sent {load.get('errors', 0):,} error replies and closed "
        f"{load.get('closed', 0):,} connections; the socket never delays a signal by more than the dispatch in "
        "progress (its sources run after signals), but a daemon whose CPU is busy all the time waits for the "
        "scheduler like any busy process: that, not the socket, is its p99 on a shared machine.")
    add("")
    add(beside)
    add("")
