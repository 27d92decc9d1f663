#!/usr/bin/env python3
#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""The benchmark harness behind scripts/bench: runs every measurement against its same-run baseline and writes the
table (results.md) and the latency plot (latency.png).

It expects the release binaries of the Benchmarks package (scripts/bench builds them) and uses only the standard
library, plus matplotlib for the plot. Every process it starts is ended by its PID.
"""

import argparse
import csv
import datetime
import os
import platform
import random
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


# ---------------------------------------------------------------------------------------------------------------
# Processes and sd_notify


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


def start(command, env_extra, cpu=None, watchdog=False, stderr=subprocess.DEVNULL):
    """Starts a receiver (optionally pinned with taskset, optionally with WATCHDOG_PID=its own PID); its stderr goes
    to `stderr` (an open file), else nowhere."""
    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID",
                                                             "INVOCATION_ID", "LISTEN_FDS", "LISTEN_PID",
                                                             "JOURNAL_STREAM")}
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


# ---------------------------------------------------------------------------------------------------------------
# Statistics


def percentile(sorted_values, p):
    """Nearest-rank percentile of already sorted values."""
    if not sorted_values:
        return float("nan")
    rank = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(rank) - 1]


def summary(values):
    values = sorted(values)
    return {"n": len(values), "p50": percentile(values, 50), "p99": percentile(values, 99), "max": values[-1]}


def percentiles(rows, key, digits=1, maximum=False, labelled=False):
    """`p50 / p99` (and `/ max`), or `p50 …, p99 …`, of rows[key] where it was measured (not NaN); n/a for none."""
    values = [row[key] for row in rows if row[key] == row[key]]
    if not values:
        return "n/a"
    stats = summary(values)
    if labelled:
        return f"p50 {fmt(stats['p50'], digits)}, p99 {fmt(stats['p99'], digits)}"
    text = f"{fmt(stats['p50'], digits)} / {fmt(stats['p99'], digits)}"
    return text + (f" / {fmt(stats['max'], digits)}" if maximum else "")


def ratio(value, base):
    return value / base if base else float("inf")


def fmt(value, digits=1):
    if value != value:  # NaN
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def verdict(ok):
    return "yes" if ok else "**no**"


# ---------------------------------------------------------------------------------------------------------------
# 1. Signal latency


RECEIVERS = [("floor", "C signalfd + epoll (floor)"),
             ("daemon", "lifecycled main loop (Daemon.run)"),
             ("peer", "swift-service-lifecycle UnixSignalsSequence → @MainActor (peer)")]


def measure_latency(bins, args, tmp, log, raw):
    placements = [("same CPU", 0, 0), ("other CPU", 0, 1)]
    results = {}
    per_round = max(1, args.signals // args.rounds)
    for placement, receiver_cpu, sender_cpu in placements:
        samples = {name: [] for name, _ in RECEIVERS}
        lost = {name: 0 for name, _ in RECEIVERS}
        for round_index in range(args.rounds):
            # Rotate the order each round, so no receiver always runs first or last.
            order = RECEIVERS[round_index % 3:] + RECEIVERS[:round_index % 3]
            for name, _ in order:
                shm = f"/dev/shm/lifecycle-bench-{os.getpid()}-{name}"
                shm_shown = f"/dev/shm/lifecycle-bench-{name}"
                capacity = per_round + args.warmup + 16
                run([bins["probe"], "shm-create", shm, capacity], log,
                    shown=quoted([bins["probe"], "shm-create", shm_shown, capacity]))
                listener = NotifyListener(tmp)
                process = start([bins[name]], {"NOTIFY_SOCKET": listener.path, "LIFECYCLE_BENCH_SHM": shm},
                                cpu=receiver_cpu)
                log.append(f"LIFECYCLE_BENCH_SHM={shm_shown} NOTIFY_SOCKET=<harness socket> "
                           f"{quoted(['taskset', '-c', receiver_cpu, bins[name]])} &")
                try:
                    listener.wait_for("READY=1")
                    time.sleep(0.2)
                    out = os.path.join(tmp, f"latency-{name}.txt")
                    argv = ["taskset", "-c", sender_cpu, bins["probe"], "latency", "--pid", process.pid,
                            "--shm", shm, "--count", per_round, "--warmup", args.warmup, "--out", out]
                    shown = quoted(argv).replace(f"--pid {process.pid}", "--pid <receiver pid>")
                    shown = shown.replace(shm, shm_shown).replace(out, f"<latencies of {name}>")
                    line = run(argv, log, shown=shown)
                    fields = dict(item.split("=") for item in line.split())
                    lost[name] += int(fields["lost"])
                    with open(out) as handle:
                        samples[name].extend(int(value) / 1000.0 for value in handle)
                finally:
                    status = stop(process)
                    listener.close()
                    os.unlink(shm)
                if status != 0:
                    raise RuntimeError(f"{name} exited with {status} after the latency run")
        results[placement] = {name: dict(summary(samples[name]), lost=lost[name], samples=samples[name])
                              for name, _ in RECEIVERS}
        for name, _ in RECEIVERS:
            with open(raw / f"latency-{placement.replace(' ', '-')}-{name}.txt", "w") as handle:
                handle.writelines(f"{value:.3f}\n" for value in samples[name])
    return results


# ---------------------------------------------------------------------------------------------------------------
# 5, 3, 6. Startup, RSS, terminate (lifecycle-bench-probe launch)


def measure_launches(bins, args, tmp, log):
    # The empty window once more without the memory pressure trigger: closing a PSI trigger waits for an RCU grace
    # period, and the process exits only once that close has returned (docs/benchmarks.md, "Terminate").
    no_psi = os.path.join(tmp, "no-memory-pressure.conf")
    with open(no_psi, "w") as handle:
        handle.write("[MemoryPressure]\nWatch=no\n")
    subjects = [
        ("floor", [bins["floor"]]),
        ("peer", [bins["peer"]]),
        ("lifecycled", [bins["lifecycled"], "--work-interval", "0"]),
        ("daemon-0", [bins["daemon"]]),
        ("daemon-0-no-psi", [bins["daemon"], "--config", no_psi]),
        ("daemon-10000", [bins["daemon"], "--controllers", "10000"]),
    ]
    results = {}
    for name, command in subjects:
        argv = [bins["probe"], "launch", "--runs", args.launch_runs, "--settle-ms", args.settle_ms, "--"] + command
        out = run(argv, log, shown=quoted(argv).replace(no_psi, "<[MemoryPressure] Watch=no>"))
        rows = [dict((key, int(value)) for key, value in (item.split("=") for item in line.split()))
                for line in out.splitlines() if line.strip()]
        if any(row["status"] != 0 for row in rows):
            raise RuntimeError(f"{name} did not exit 0 on SIGTERM: {rows}")
        ready = sorted(row["ready_ns"] / 1e6 for row in rows)
        terminate = sorted(row["terminate_ns"] / 1e6 for row in rows)
        results[name] = {
            "ready_ms": statistics.median(ready),
            "ready_p90_ms": percentile(ready, 90),
            "rss_mib": statistics.median(row["rss_kib"] for row in rows) / 1024.0,
            "anon_mib": statistics.median(row["rss_anon_kib"] for row in rows) / 1024.0,
            "file_mib": statistics.median(row["rss_file_kib"] for row in rows) / 1024.0,
            "terminate_ms": statistics.median(terminate),
            "terminate_p90_ms": percentile(terminate, 90),
            "runs": len(rows),
        }
    return results


# ---------------------------------------------------------------------------------------------------------------
# 4. Idle


def thread_counters(pid):
    """Per thread: (voluntary + involuntary context switches, run time ns), from /proc/PID/task/*/{status,schedstat}."""
    counters = {}
    task_dir = f"/proc/{pid}/task"
    for tid in os.listdir(task_dir):
        try:
            switches = 0
            with open(f"{task_dir}/{tid}/status") as handle:
                for line in handle:
                    if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                        switches += int(line.split()[1])
            with open(f"{task_dir}/{tid}/schedstat") as handle:
                run_ns = int(handle.read().split()[0])
            counters[tid] = (switches, run_ns)
        except FileNotFoundError:
            continue  # the thread exited between listdir and open
    return counters


def idle_delta(before, after):
    """Sums the per-thread growth; threads born in the window count in full. A thread that exited in the window
    took its last counts with it: those are reported as `exited`, not guessed."""
    switches = sum(counts[0] - before.get(tid, (0, 0))[0] for tid, counts in after.items())
    run_ns = sum(counts[1] - before.get(tid, (0, 0))[1] for tid, counts in after.items())
    exited = sum(1 for tid in before if tid not in after)
    started = sum(1 for tid in after if tid not in before)
    return switches, run_ns, exited, started


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


def per_thread_switches(pid, before, after):
    """Context switches per thread between two snapshots: [("main" or "thread N", switches)], the main thread
    first."""
    rows = []
    for index, tid in enumerate(sorted(after, key=lambda tid: (int(tid) != pid, int(tid)))):
        label = "main" if int(tid) == pid else f"thread {index + 1}"
        rows.append((label, after[tid][0] - before.get(tid, (0, 0))[0]))
    return rows


def measure_idle(bins, args, tmp, log):
    watchdog_usec = 2_000_000
    subjects = [
        ("floor", [bins["floor"]], {}, False),
        ("peer", [bins["peer"]], {}, False),
        ("lifecycled", [bins["lifecycled"], "--work-interval", "0"], {}, False),
        ("lifecycled-watchdog", [bins["lifecycled"], "--work-interval", "0"],
         {"WATCHDOG_USEC": str(watchdog_usec)}, True),
    ]
    running = []
    # lifecycled's log (stderr, as on a terminal): what it logged inside the window says why it woke, if it did (a
    # memory warning from pressure on the cgroup it shares with the harness is a wake-up with a cause).
    logs = {}
    try:
        for name, command, env, watchdog in subjects:
            listener = NotifyListener(tmp)
            stderr = subprocess.DEVNULL
            if name.startswith("lifecycled"):
                logs[name] = os.path.join(tmp, f"idle-{name}.stderr")
                stderr = open(logs[name], "wb")
            process = start(command, dict(env, NOTIFY_SOCKET=listener.path), watchdog=watchdog, stderr=stderr)
            if stderr is not subprocess.DEVNULL:
                stderr.close()
            settings = "".join(f"{key}={value} " for key, value in env.items())
            settings += "WATCHDOG_PID=<its own pid> " if watchdog else ""
            log.append(f"NOTIFY_SOCKET=<harness socket> {settings}{quoted(command)} &")
            running.append((name, process, listener))
        for _, _, listener in running:
            listener.wait_for("READY=1")
        at_ready = {name: thread_counters(process.pid) for name, process, _ in running}
        # Let start-up work finish (first display pass, pool threads) and the launch's busy period end: lifecycled's
        # stall detector wakes once more at its warning threshold after the last callback began (1 s without a
        # watchdog), finds the loop idle and parks without a timeout.
        # Read the notify sockets meanwhile: a datagram sent before the window must not be read (and timestamped)
        # inside it.
        settle_until = time.monotonic() + args.idle_delay
        while time.monotonic() < settle_until:
            for _, _, listener in running:
                listener.poll(0.01)
        mappings = {name: rss_by_mapping(process.pid) for name, process, _ in running}
        before = {name: thread_counters(process.pid) for name, process, _ in running}
        logged_before = {name: os.path.getsize(path) for name, path in logs.items()}
        window_start = time.monotonic()
        deadline = window_start + args.idle_seconds
        while time.monotonic() < deadline:
            for _, _, listener in running:
                listener.poll(0.01)
        after = {name: thread_counters(process.pid) for name, process, _ in running}
        logged = {}
        for name, path in logs.items():
            with open(path, "rb") as file:
                file.seek(logged_before[name])
                logged[name] = file.read(os.path.getsize(path) - logged_before[name]).decode(errors="replace").splitlines()
        # A ping sent just before the last snapshot is read now, still inside the window (a ping takes one wake-up).
        for _, _, listener in running:
            listener.poll(0.002)
        window_end = time.monotonic()
        results = {}
        for name, process, listener in running:
            switches, run_ns, exited, started = idle_delta(before[name], after[name])
            results[name] = {
                "switches": switches,
                "cpu_us": run_ns / 1000.0,
                "threads": len(after[name]),
                "exited": exited,
                "started": started,
                "pings": listener.count("WATCHDOG=1", window_start, window_end),
                "by_thread": per_thread_switches(process.pid, before[name], after[name]),
                "settling_by_thread": per_thread_switches(process.pid, at_ready[name], before[name]),
                "logged": logged.get(name, []),
            }
        results["mappings"] = mappings
        results["watchdog_usec"] = watchdog_usec
        results["seconds"] = window_end - window_start
        return results
    finally:
        for name, process, listener in running:
            status = stop(process)
            listener.close()
            if status != 0:
                raise RuntimeError(f"{name} exited with {status} after the idle window")


# ---------------------------------------------------------------------------------------------------------------
# 8. Services: the example's listener (Examples/HelloService)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def measure_services(args, tmp, log, raw):
    """hello-service, the example (a Hummingbird server hosted by a ServiceController), as its clients see it: idle,
    SIGUSR1 → accepting stops and SIGUSR2 → the request that waited is answered (`measure_pause`); under a client load,
    restarts with the listening socket kept and background round trips, beside restarts of the same binary binding
    its own socket (`measure_restarts`)."""
    results = measure_pause(args, tmp, log, raw)
    results["restarts"] = measure_restarts(args, tmp, log, raw)
    return results


def measure_pause(args, tmp, log, raw):
    """Idle, signal → effect: SIGUSR1 → the first request kept waiting (the server stopped accepting; its socket stays
    open, the pause policy) and SIGUSR2 → that request answered, as request_poller.py sees them from a process of its
    own, sending request after request."""
    port = free_port()
    command = [str(args.hello_service), "--port", str(port)]
    listener = NotifyListener(tmp)
    process = start(command, {"NOTIFY_SOCKET": listener.path})
    log.append(f"NOTIFY_SOCKET=<harness socket> {quoted(command).replace(str(port), '<free port>')} &")
    poller_argv = [sys.executable, Path(__file__).resolve().with_name("request_poller.py"), port]
    log.append(quoted(poller_argv).replace(str(port), "<free port>").replace(sys.executable, "python3")
               + "   # then, per cycle: stop, kill(SIGUSR1) after its `polling`; resume, kill(SIGUSR2) after its "
               "`polling`")
    poller = subprocess.Popen([str(a) for a in poller_argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, bufsize=1)

    def tell(command):
        poller.stdin.write(command + "\n")
        poller.stdin.flush()

    def answer(what):
        words = poller.stdout.readline().split()
        if not words or words[0] == "error":
            raise RuntimeError(f"request poller, {what}: {' '.join(words) or 'no answer'}")
        return words

    samples = {"stopped": [], "answered": []}
    windows = []  # how late each SIGUSR1 figure may be, ms
    void = 0
    status = None
    try:
        listener.wait_for("READY=1")
        tell("serving")
        answer("serving")
        listener.poll(0.2)
        for cycle in range(args.example_warmup + args.example_cycles):
            tell("stop")
            if answer("stop")[0] != "polling":
                raise RuntimeError("request poller, stop: no `polling`")
            sent = time.monotonic_ns()
            os.kill(process.pid, signal.SIGUSR1)
            began, window, _ = (int(value) for value in answer("a request kept waiting"))
            # Let the background settle (the run's drain end) and read sd_notify's datagrams meanwhile, so the notify
            # socket's queue never fills; a jitter so no period lines up.
            listener.poll(args.example_settle_ms / 1000.0 * (1 + random.random()))
            tell("resume")
            words = answer("resume")
            if words[0] == "early":
                # The kept request was slow, not waiting: this cycle says nothing. Back to the foreground.
                os.kill(process.pid, signal.SIGUSR2)
                tell("serving")
                answer("serving")
                void += cycle >= args.example_warmup
                listener.poll(args.example_settle_ms / 1000.0 * (1 + random.random()))
                continue
            resumed = time.monotonic_ns()
            os.kill(process.pid, signal.SIGUSR2)
            answered, _ = (int(value) for value in answer("the waiting request answered"))
            if cycle >= args.example_warmup:
                # A request that began a moment before the signal can be the first kept waiting: the stop itself
                # came after the signal, so such a figure counts as 0.
                samples["stopped"].append(max(0, began - sent) / 1e6)
                windows.append(min(window, max(0, began - sent)) / 1e6)
                samples["answered"].append((answered - resumed) / 1e6)
            listener.poll(args.example_settle_ms / 1000.0 * (1 + random.random()))
    finally:
        poller.stdin.close()
        try:
            poller.wait(15)
        except subprocess.TimeoutExpired:
            os.kill(poller.pid, signal.SIGKILL)
            poller.wait()
        status = stop(process)
        listener.close()
    if status != 0:
        raise RuntimeError(f"hello-service exited with {status} after the services run")
    results = {"void": void}
    for key in samples:
        with open(raw / f"services-{key}-ms.txt", "w") as handle:
            handle.writelines(f"{value:.4f}\n" for value in samples[key])
        results[key] = dict(summary(samples[key]), samples=samples[key])
    results["stopped"]["window_ms"] = statistics.median(windows) if windows else float("nan")
    return results


# Restarts under load: the harness plays systemd. With the socket kept, it is the socket unit (it binds and keeps the
# listening socket and passes it to every process as fd 3 with LISTEN_FDS=1, LISTEN_FDNAMES=http and LISTEN_PID); the
# baseline is the same binary binding 127.0.0.1:PORT itself at every start, as a plain Hummingbird server does.

RESTART_SUBJECTS = [("socket", "with the socket kept (socket activation)"),
                    ("bound", "the same binary binding its own socket (a plain server)")]


def server_port():
    """A free port on 127.0.0.1 below the ephemeral range: a client's connect() to a port nobody listens on can pick
    that very port as its own and connect to itself (TCP's simultaneous open), and then holds it; thousands of refused
    connects per restart make that likely for a port the kernel picked from the ephemeral range."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
        low = int(handle.read().split()[0])
    candidates = list(range(max(1024, low - 20000), low))
    random.shuffle(candidates)
    for port in candidates:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port on 127.0.0.1 below {low}")


def spawn_service(command, env, stderr_path, listening=None):
    """fork + execve, as systemd starts a service; with `listening`, that socket as fd 3 and LISTEN_FDS=1,
    LISTEN_FDNAMES=http, LISTEN_PID=<the child's pid>, set in the child between fork and exec as systemd sets them.
    The harness has no threads, so the child may run Python between fork and exec. Returns the pid."""
    argv = [str(a) for a in command]
    environment = dict(env)
    devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    stderr = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            os.dup2(stderr, 2)
            if listening is not None:
                if listening.fileno() == 3:
                    os.set_inheritable(3, True)
                else:
                    os.dup2(listening.fileno(), 3)
                environment.update(LISTEN_FDS="1", LISTEN_FDNAMES="http", LISTEN_PID=str(os.getpid()))
            os.execve(argv[0], argv, environment)
        finally:
            os._exit(127)
    os.close(devnull)
    os.close(stderr)
    return pid


def reap(pid, what):
    """waitpid for a process the harness forked; raises unless it exited 0."""
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"hello-service ({what}) exited with {code}")


def wait_for_ready(listener, first, timeout=10.0):
    """The arrival of the first READY=1 among the datagrams from index `first` on."""
    deadline = time.monotonic() + timeout
    while True:
        for arrived, lines in listener.messages[first:]:
            if "READY=1" in lines:
                return arrived
        if time.monotonic() > deadline:
            raise RuntimeError(f"hello-service sent no READY=1 within {timeout:g} s")
        listener.poll(0.002)


def serving_stamp(stderr_path, realtime_offset_ns):
    """When the server logged `serving HTTP/1.1` (its descriptor bound to SwiftNIO's server channel: accepting),
    CLOCK_MONOTONIC ns, from the JSON line's timestamp (CLOCK_REALTIME, µs) less the clocks' offset; None if absent."""
    import json

    with open(stderr_path, errors="replace") as handle:
        for line in handle:
            if '"serving HTTP/1.1"' not in line:
                continue
            record = json.loads(line)
            wall = datetime.datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
            return int(wall.timestamp() * 1e6) * 1000 - realtime_offset_ns
    return None


def answered_once(port, timeout=10.0):
    """Waits until a request on a new connection is answered 200 "hello" (the end-to-end tests' client)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "EndToEnd"))
    from http_load import one_request

    deadline = time.monotonic() + timeout
    while True:
        ok, kind, detail = one_request(port, timeout=timeout)
        if ok:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"hello-service does not answer on 127.0.0.1:{port}: {kind} {detail}")
        time.sleep(0.01)


def measure_restarts(args, tmp, log, raw):
    """The example restarted under a client load (http_clients.py: a new connection per request, every response
    checked): with the socket kept, then the same binary binding its own socket; with the socket kept, background
    round trips (SIGUSR1, a pause, SIGUSR2) after the restarts, under the same load."""
    config = os.path.join(tmp, "restarts.conf")
    with open(config, "w") as handle:
        # The harness reads every datagram, but a listener the baseline put in the store would stay open while its
        # datagram waits unread, and accept connections nobody serves: neither subject uses the store.
        handle.write("[State]\nFileDescriptorStore=no\n")
    return {subject: restart_run(args, tmp, log, raw, subject, config) for subject, _ in RESTART_SUBJECTS}


def restart_run(args, tmp, log, raw, subject, config):
    port = server_port()
    listening = None
    if subject == "socket":
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(("127.0.0.1", port))
        listening.listen(4096)  # hello.socket's Backlog=
    state = tempfile.mkdtemp(prefix=f"state-{subject}-", dir=tmp)
    command = [args.hello_service, "--port", port, "--config", config]
    listener = NotifyListener(tmp)
    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID",
                                                             "INVOCATION_ID", "LISTEN_FDS", "LISTEN_PID",
                                                             "LISTEN_FDNAMES", "JOURNAL_STREAM")}
    env.update(NOTIFY_SOCKET=listener.path, STATE_DIRECTORY=state)
    shown = quoted(command).replace(str(port), "<port>").replace(config, "<[State] FileDescriptorStore=no>")
    count = args.restart_warmup + args.restarts
    if listening is not None:
        log.append(f"LISTEN_FDS=1 LISTEN_FDNAMES=http LISTEN_PID=<its pid> NOTIFY_SOCKET=<harness socket> "
                   f"STATE_DIRECTORY=<tmp> {shown} 3<listening socket on 127.0.0.1:<port>, kept by the harness>   # "
                   f"fork + exec; then {count} × (SIGTERM, waitpid, the next one), then {args.round_trips} × "
                   f"(SIGUSR1, {args.background_ms} ms, SIGUSR2)")
    else:
        log.append(f"NOTIFY_SOCKET=<harness socket> STATE_DIRECTORY=<tmp> {shown}   # fork + exec; then {count} × "
                   "(SIGTERM, waitpid, the next one)")
    clients_argv = [sys.executable, Path(__file__).resolve().with_name("http_clients.py"), port, args.restart_clients,
                    os.path.join(tmp, f"requests-{subject}.txt")]
    log.append(quoted(clients_argv).replace(sys.executable, "python3").replace(f" {port} ", " <port> ")
               .replace(str(clients_argv[-1]), "<requests>") + " &   # until SIGTERM")

    def launch(index):
        stderr_path = os.path.join(tmp, f"hello-{subject}-{index}.log")
        offset = time.time_ns() - time.monotonic_ns()
        first = len(listener.messages)
        spawned = time.monotonic_ns()
        pid = spawn_service(command, env, stderr_path, listening)
        ready = int(wait_for_ready(listener, first) * 1e9)
        return pid, {"spawn": spawned, "ready": ready, "log": stderr_path, "offset": offset}

    def settle(milliseconds):
        listener.poll(milliseconds / 1000.0 * (1 + random.random()))

    restarts, round_trips = [], []
    load = None
    pid = None
    try:
        pid, _ = launch(0)
        answered_once(port)
        load = subprocess.Popen([str(a) for a in clients_argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                text=True)
        line = load.stdout.readline().strip()
        if line != "running":
            raise RuntimeError(f"http_clients.py: {line or 'no answer'}")
        settle(args.restart_settle_ms)
        for index in range(count):
            terminated = time.monotonic_ns()
            os.kill(pid, signal.SIGTERM)
            reap(pid, f"restart {index + 1}")
            exited = time.monotonic_ns()
            pid = None
            pid, stamps = launch(index + 1)
            stamps.update(term=terminated, exit=exited)
            restarts.append(stamps)
            settle(args.restart_settle_ms)
        if listening is not None:
            for _ in range(args.round_trips):
                backgrounded = time.monotonic_ns()
                os.kill(pid, signal.SIGUSR1)
                listener.poll(args.background_ms / 1000.0)
                foregrounded = time.monotonic_ns()
                os.kill(pid, signal.SIGUSR2)
                round_trips.append({"usr1": backgrounded, "usr2": foregrounded})
                settle(args.restart_settle_ms)
        os.kill(load.pid, signal.SIGTERM)
        load.wait(60)
        ended = time.monotonic_ns()
        if load.returncode != 0:
            raise RuntimeError(f"http_clients.py exited with {load.returncode}")
    finally:
        if load is not None and load.poll() is None:
            os.kill(load.pid, signal.SIGKILL)
            load.wait()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            reap(pid, "the last one")
        listener.close()
        if listening is not None:
            listening.close()
    for stamps in restarts:
        stamps["serving"] = serving_stamp(stamps["log"], stamps["offset"])
    records = []
    with open(clients_argv[-1]) as handle:
        for line in handle:
            began, finished, kind = line.split()
            records.append((int(began), int(finished), kind))
    with open(raw / f"restarts-{subject}-requests.txt", "w") as handle:
        handle.write("# began_ns ended_ns kind (CLOCK_MONOTONIC), one request each\n")
        handle.writelines(f"{began} {finished} {kind}\n" for began, finished, kind in records)
    with open(raw / f"restarts-{subject}-stamps.txt", "w") as handle:
        handle.write("# per restart, CLOCK_MONOTONIC ns: SIGTERM sent, exit reaped, fork, READY=1, `serving` logged\n")
        handle.writelines(f"{s['term']} {s['exit']} {s['spawn']} {s['ready']} {s['serving']}\n" for s in restarts)
    results = analyze_restarts(records, restarts[args.restart_warmup:], round_trips, ended)
    results["before_failed"] = sum(1 for _, finished, kind in records
                                   if kind != "ok" and finished < restarts[0]["term"])
    results["clients"] = args.restart_clients
    return results


def analyze_restarts(records, restarts, round_trips, ended):
    """Per restart (from its SIGTERM to the next phase's first signal) and per round trip, from the client load's
    requests: the new process's first answer, the longest wait of a request that overlapped the restart, the failed
    requests by kind; between restarts, the load's own latency."""
    import bisect

    by_end = sorted(records, key=lambda record: record[1])
    ends = [record[1] for record in by_end]

    def ending_within(start, stop):
        return by_end[bisect.bisect_left(ends, start):bisect.bisect_left(ends, stop)]

    signals = [stamps["term"] for stamps in restarts] + [trip["usr1"] for trip in round_trips] + [ended]
    rows = []
    quiet = []  # (start, end) of every restart's troubled span: excluded from the load's own latency
    for index, stamps in enumerate(restarts):
        window = ending_within(stamps["term"], signals[index + 1])
        # The new process answers nothing before it serves: an answer read between the exit and then is the old
        # process's, read late by a client thread that waited for the interpreter lock.
        serves = min(stamps["ready"], stamps["serving"] or stamps["ready"])
        after = [finished for _, finished, kind in window if kind == "ok" and finished > serves]
        first = min(after) if after else None
        limit = first if first is not None else signals[index + 1]
        overlapped = [finished - began for began, finished, kind in window if kind == "ok" and began <= limit]
        failures = [(began, finished, kind) for began, finished, kind in window if kind != "ok"]
        kinds = {}
        for _, _, kind in failures:
            kinds[kind] = kinds.get(kind, 0) + 1
        rows.append({
            "term_exit_ms": (stamps["exit"] - stamps["term"]) / 1e6,
            "exit_spawn_ms": (stamps["spawn"] - stamps["exit"]) / 1e6,
            "spawn_ready_ms": (stamps["ready"] - stamps["spawn"]) / 1e6,
            "spawn_serving_ms": (stamps["serving"] - stamps["spawn"]) / 1e6 if stamps["serving"] else float("nan"),
            "spawn_answer_ms": (first - stamps["spawn"]) / 1e6 if first else float("nan"),
            "term_answer_ms": (first - stamps["term"]) / 1e6 if first else float("nan"),
            "wait_ms": max(overlapped) / 1e6 if overlapped else float("nan"),
            "failed": len(failures),
            "refused": kinds.get("refused", 0),
            "kinds": kinds,
            "failing_ms": (limit - min(began for began, _, _ in failures)) / 1e6 if failures else 0.0,
        })
        quiet.append((stamps["term"], limit))
    trips = []
    for index, trip in enumerate(round_trips):
        window = ending_within(trip["usr1"], signals[len(restarts) + index + 1])
        waited = [(began, finished) for began, finished, kind in window
                  if kind == "ok" and trip["usr1"] <= began <= trip["usr2"] < finished]
        failures = [kind for _, _, kind in window if kind != "ok"]
        trips.append({
            "waited": len(waited),
            "waits_ms": [(finished - began) / 1e6 for began, finished in waited],
            "first_ms": (min(f for _, f in waited) - trip["usr2"]) / 1e6 if waited else float("nan"),
            "last_ms": (max(f for _, f in waited) - trip["usr2"]) / 1e6 if waited else float("nan"),
            "held_ms": (min(b for b, _ in waited) - trip["usr1"]) / 1e6 if waited else float("nan"),
            "failed": len(failures),
            "kinds": {kind: failures.count(kind) for kind in set(failures)},
        })
        quiet.append((trip["usr1"], max([f for _, f in waited], default=trip["usr2"])))
    quiet.sort()
    starts = [start for start, _ in quiet]

    def troubled(began, finished):
        # The spans do not overlap one another: only the last one that starts before the request ends can hold it.
        index = bisect.bisect_right(starts, finished) - 1
        return index >= 0 and quiet[index][1] >= began

    steady = [(finished - began) / 1e6 for began, finished, kind in records
              if kind == "ok" and not troubled(began, finished)]
    kinds = {}
    for _, _, kind in records:
        if kind != "ok":
            kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "restarts": rows,
        "round_trips": trips,
        "requests": len(records),
        "answered": sum(1 for record in records if record[2] == "ok"),
        "kinds": kinds,
        "seconds": (ended - min((record[0] for record in records), default=ended)) / 1e9,
        "steady": summary(steady) if steady else None,
    }


def restart_goal_rows(services, launches):
    """Issue 25, item 5 ("a short restart"): [(goal, figure, same-run baseline, met)], met None when not measured."""
    rows = []
    if launches is not None:
        ours, peer = launches["lifecycled"]["ready_ms"], launches["peer"]["ready_ms"]
        rows.append(("exec → READY=1 of the demo daemon no slower than the swift-service-lifecycle peer (§5)",
                     f"{fmt(ours, 2)} ms", f"peer {fmt(peer, 2)} ms: {fmt(ratio(ours, peer), 2)}× the peer",
                     ours <= peer))
        empty, floor = launches["daemon-0"]["terminate_ms"], launches["floor"]["terminate_ms"]
        rows.append(("SIGTERM → exit ≤ 5 ms for an empty window (§6)", f"{fmt(empty, 2)} ms",
                     f"C floor {fmt(floor, 2)} ms", empty <= 5))
    else:
        rows.append(("exec → READY=1 of the demo daemon no slower than the swift-service-lifecycle peer (§5)",
                     "not measured in this run", "", None))
        rows.append(("SIGTERM → exit ≤ 5 ms for an empty window (§6)", "not measured in this run", "", None))
    restarts = (services or {}).get("restarts")
    if restarts is None:
        rows.append(("the restart gap of the example under load, p50/p99 over ≥ 20 restarts, no request failed (§8)",
                     "not measured: no --hello-service", "", None))
        return rows
    kept, bound = restarts["socket"], restarts["bound"]
    waits = summary([row["wait_ms"] for row in kept["restarts"]])
    failed = sum(row["failed"] for row in kept["restarts"])
    refused = summary([row["refused"] for row in bound["restarts"]])
    bound_failed = sum(row["failed"] for row in bound["restarts"])
    bound_failing = summary([row["failing_ms"] for row in bound["restarts"]])
    count = len(kept["restarts"])
    rows.append((f"the restart gap of the example under load: the longest wait of a request that overlapped a restart, "
                 f"p50/p99 over {count} restarts, and no request failed (§8)",
                 f"p50 {fmt(waits['p50'], 1)} ms, p99 {fmt(waits['p99'], 1)} ms; {failed} failed of "
                 f"{kept['requests']:,}",
                 f"the same binary binding its own socket (a plain Hummingbird server), {len(bound['restarts'])} "
                 f"restarts: {fmt(refused['p50'], 0)} refused connections per restart (p50; max "
                 f"{fmt(refused['max'], 0)}), {bound_failed:,} failed requests over those restarts, clients "
                 f"failing for {fmt(bound_failing['p50'], 1)} ms per restart (p50)",
                 failed == 0 and count >= 20))
    return rows


def report_services(add, services, latency, launches, args):
    """§8: the example's listener across the background and restarts, with issue 25's item-5 goals first."""
    add("## 8. Services: the example across the background and restarts")
    add("")
    if services is None:
        add("Not measured: no `--hello-service` binary was given (`scripts/bench` builds Examples/HelloService).")
        return
    add("**Issue 25, item 5: a short restart.** A restart's gap (the time a connection waits in the backlog) is "
        "SIGTERM → exit plus exec → serving; the goals, against baselines of this run:")
    add("")
    add("| goal | figure | same-run baseline | met |")
    add("|---|---|---|---|")
    for goal, figure, baseline, met in restart_goal_rows(services, launches):
        add(f"| {goal} | {figure} | {baseline} | {'' if met is None else verdict(met)} |")
    add("")
    add("`hello-service` (Examples/HelloService, release, the Swift runtime linked statically): a Hummingbird router "
        "served by `LifecycleHummingbird.HTTPServer` in a `ServiceController` on its listener `http`, background "
        "policy `.pause` (the default: in the background the server stops accepting and drains, the listening socket "
        "stays open, and connections wait in its backlog).")
    add("")
    report_pause(add, services, latency, args)
    report_restarts(add, services["restarts"], args)


def report_pause(add, services, latency, args):
    add(f"**Background and foreground, idle.** 127.0.0.1, nothing pinned. The harness stamps `CLOCK_MONOTONIC` just "
        "before `kill()`; `request_poller.py`, a process of its own, sends request after request (`GET /` on a new "
        "connection, the response read whole and checked, one every 50 µs) and stamps what a client sees: after "
        "SIGUSR1, the first request not answered within 50 ms, whose connect() began the moment a client is first "
        "kept waiting (it is answered only after SIGUSR2: else the cycle is void); after SIGUSR2, that waiting "
        f"request answered. {args.example_cycles} cycles ({args.example_warmup} warm-up cycles discarded), each signal "
        f"{args.example_settle_ms}–{2 * args.example_settle_ms} ms after the previous effect"
        + (f"; {services['void']} cycles void (the kept request was answered before SIGUSR2: slow, not waiting)"
           if services["void"] else "") + ".")
    add("")
    add("| transition | samples | p50 ms | p99 ms | max ms | resolution window, median ms | p50 ÷ plain signal "
        "latency p50 (same CPU; other CPU) |")
    add("|---|---|---|---|---|---|---|")
    plain = {placement: receivers["daemon"]["p50"] for placement, receivers in (latency or {}).items()}
    labels = [("stopped", "SIGUSR1 → accepting stops: the first request kept waiting (its connect() began)",
               services["stopped"].get("window_ms", float("nan"))),
              ("answered", "SIGUSR2 → the waiting request answered (a new run of the server accepts it)", None)]
    for key, label, window in labels:
        row = services[key]
        ratios = "; ".join(f"{fmt(ratio(row['p50'] * 1000, plain[placement]), 0)}×"
                           for placement in ("same CPU", "other CPU") if placement in plain)
        add(f"| {label} | {row['n']} | {fmt(row['p50'], 2)} | {fmt(row['p99'], 2)} | {fmt(row['max'], 2)} | "
            f"{'—' if window is None else fmt(window, 3)} | {ratios or '—'} |")
    add("")
    if plain:
        add("The plain signal latency of the same run (§1: `sigqueue` → the delegate's first callback in the "
            "lifecycled main loop), p50: " + "; ".join(f"{placement} {fmt(value)} µs" for placement, value in
                                                      plain.items())
            + ". The rest is the application's work: the background (or foreground) callbacks, the "
            "`ServiceController` shutting down (or starting) its `ServiceGroup`, Hummingbird's server stopping (or "
            "starting) to accept on its event loop, and, after SIGUSR2, the request itself. The SIGUSR1 figure is "
            "late by at most its resolution window: from the start of the last request answered to the start of the "
            "first kept waiting.")
        add("")


def report_restarts(add, restarts, args):
    kept, bound = restarts["socket"], restarts["bound"]
    add(f"**Restarts and round trips under load.** The harness plays systemd: it forks and execs the example "
        f"(`--port PORT`, `STATE_DIRECTORY` of its own, `[State] FileDescriptorStore=no`) and, per restart, sends "
        "SIGTERM, waits for the exit (`waitpid`) and starts the next one at once, as `systemctl restart` does; "
        f"{args.restart_settle_ms}–{2 * args.restart_settle_ms} ms between restarts, {args.restart_warmup} "
        "warm-up restart discarded. With the socket kept it is also the socket unit: it binds 127.0.0.1:PORT "
        "(backlog 4096, as hello.socket), keeps it, and passes it to every process as fd 3 (`LISTEN_FDS=1`, "
        "`LISTEN_FDNAMES=http`, `LISTEN_PID`). The baseline is the same binary with no socket passed: it binds "
        "127.0.0.1:PORT itself at every start, as a plain Hummingbird server does, so the socket is the only "
        f"difference. The load (`http_clients.py`): {kept['clients']} threads in a process of their own, each sending "
        "`GET /` on a new connection as soon as the last one was answered (1 ms after a failure), every response read "
        "whole and checked (the end-to-end tests' client); per request, its connect() → the end of its response or "
        "its failure. "
        "A p99 of fewer than 100 samples is their largest (nearest rank).")
    add("")
    add("| per restart | " + " | ".join(label for _, label in RESTART_SUBJECTS) + " |")
    add("|---|---|---|")
    runs = {"socket": kept, "bound": bound}

    def cells(key, digits=2, maximum=False):
        return " | ".join(
            percentiles(runs[subject]["restarts"], key, digits, maximum) for subject, _ in RESTART_SUBJECTS)

    add("| restarts measured | " + " | ".join(str(len(runs[subject]["restarts"])) for subject, _ in RESTART_SUBJECTS)
        + " |")
    add(f"| **gap: the longest wait of a request that overlapped the restart** (connect() → its answer; the successful "
        f"ones), p50 / p99 / max ms | {cells('wait_ms', 1, True)} |")
    add(f"| **failed requests**, p50 / p99 / max | {cells('failed', 0, True)} |")
    add(f"| of them refused (`ECONNREFUSED`), p50 / p99 / max | {cells('refused', 0, True)} |")
    add(f"| failing: the first failed request's connect() → the new process's first answer, p50 / p99 ms | "
        f"{cells('failing_ms', 1)} |")
    add(f"| SIGTERM → the new process's first answer (no answer from anyone meanwhile), p50 / p99 ms | "
        f"{cells('term_answer_ms', 1)} |")
    add(f"| SIGTERM → exit (the drain of the requests in flight, the state saved), p50 / p99 ms | "
        f"{cells('term_exit_ms')} |")
    add(f"| exit → fork of the next (the harness) p50 / p99 ms | {cells('exit_spawn_ms', 3)} |")
    add(f"| fork → READY=1, p50 / p99 ms | {cells('spawn_ready_ms')} |")
    add(f"| fork → `serving HTTP/1.1` logged (the server's descriptor accepting; the JSON line's µs timestamp), "
        f"p50 / p99 ms | {cells('spawn_serving_ms')} |")
    add(f"| fork → the first answer a client read, p50 / p99 ms | {cells('spawn_answer_ms')} |")
    add("")
    add("| the whole load | " + " | ".join(label for _, label in RESTART_SUBJECTS) + " |")
    add("|---|---|---|")

    def failures(run):
        return ", ".join(f"{count:,} {kind}" for kind, count in sorted(run["kinds"].items())) or "none"

    add("| requests sent / answered 200 `hello` | " + " | ".join(
        f"{runs[subject]['requests']:,} / {runs[subject]['answered']:,} in {fmt(runs[subject]['seconds'], 1)} s"
        for subject, _ in RESTART_SUBJECTS) + " |")
    add("| failed, by kind (every restart, the warm-up too, and the round trips) | " + " | ".join(
        failures(runs[subject]) for subject, _ in RESTART_SUBJECTS) + " |")
    add("| of them before the first restart (the load alone) | " + " | ".join(
        str(runs[subject]["before_failed"]) for subject, _ in RESTART_SUBJECTS) + " |")
    add("| a request's latency away from restarts and round trips, p50 / p99 ms | " + " | ".join(
        f"{fmt(runs[subject]['steady']['p50'], 2)} / {fmt(runs[subject]['steady']['p99'], 2)}"
        if runs[subject]["steady"] else "n/a" for subject, _ in RESTART_SUBJECTS) + " |")
    add("")
    trips = kept["round_trips"]
    if trips:
        waits = summary([wait for trip in trips for wait in trip["waits_ms"]]) if any(
            trip["waits_ms"] for trip in trips) else None
        failed = sum(trip["failed"] for trip in trips)
        kinds = {}
        for trip in trips:
            for kind, count in trip["kinds"].items():
                kinds[kind] = kinds.get(kind, 0) + count

        def per_trip(key, digits=2):
            return percentiles(trips, key, digits)

        add(f"Round trips under the same load, with the socket kept, after the restarts: {len(trips)} × (SIGUSR1, "
            f"{args.background_ms} ms, SIGUSR2), {args.restart_settle_ms}–{2 * args.restart_settle_ms} ms apart. A "
            "request waited if its connect() began between SIGUSR1 and SIGUSR2 and it was answered after SIGUSR2.")
        add("")
        add("| round trips | requests that waited (per trip: p50 / max) | their wait, p50 / p99 ms | SIGUSR1 → the "
            "first request kept waiting began, p50 / p99 ms | SIGUSR2 → the first / the last waiting request "
            "answered, p50 / p99 ms | failed requests (refused) |")
        add("|---|---|---|---|---|---|")
        counts = summary([trip["waited"] for trip in trips])
        add(f"| {len(trips)} | {sum(trip['waited'] for trip in trips)} ({fmt(counts['p50'], 0)} / "
            f"{fmt(counts['max'], 0)}) | "
            + (f"{fmt(waits['p50'], 1)} / {fmt(waits['p99'], 1)}" if waits else "n/a")
            + f" | {per_trip('held_ms')} | {per_trip('first_ms')}; {per_trip('last_ms')} | {failed} "
            f"({kinds.get('refused', 0)}) |")
        add("")


def print_restarts(restarts):
    """The restart and round-trip figures on stdout (`--only services`)."""
    for subject, label in RESTART_SUBJECTS:
        run = restarts[subject]
        rows = run["restarts"]

        def stats(key, digits=1):
            return percentiles(rows, key, digits, labelled=True)

        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(run["kinds"].items())) or "none"
        print(f"{len(rows)} restarts {label}: gap (longest wait) {stats('wait_ms')} ms; failed per restart "
              f"{stats('failed', 0)} (refused {stats('refused', 0)}); SIGTERM → exit {stats('term_exit_ms', 2)} ms, "
              f"fork → READY=1 {stats('spawn_ready_ms', 2)} ms, fork → serving {stats('spawn_serving_ms', 2)} ms, "
              f"fork → first answer {stats('spawn_answer_ms', 2)} ms; {run['requests']:,} requests, failed: {kinds}")
    trips = restarts["socket"]["round_trips"]
    if trips:
        waits = sorted(wait for trip in trips for wait in trip["waits_ms"])
        firsts = sorted(trip["first_ms"] for trip in trips if trip["first_ms"] == trip["first_ms"])
        print(f"{len(trips)} round trips under load: {len(waits)} requests waited, p50 {fmt(percentile(waits, 50))} "
              f"ms, p99 {fmt(percentile(waits, 99))} ms; SIGUSR2 → the first answered p50 "
              f"{fmt(percentile(firsts, 50), 2)} ms; {sum(trip['failed'] for trip in trips)} failed")


def print_restart_goals(services, launches):
    """Issue 25's item-5 goals on stdout, met or not, with the figures."""
    print("issue 25, item 5 (a short restart):")
    for goal, figure, baseline, met in restart_goal_rows(services, launches):
        state = "not measured" if met is None else ("met" if met else "NOT MET")
        print(f"  [{state}] {goal}: {figure}" + (f" (baseline: {baseline})" if baseline else ""))


# ---------------------------------------------------------------------------------------------------------------
# 9. Scaling: launch, fan-out, layout pass and terminate per controller, 1,000 to 1,000,000 controllers


SCALING_OPERATIONS = [
    ("ready_ms", "launch: exec → READY=1"),
    ("fanout_ms", "fan-out of one application event (memory warning): signal → the delegate's stamp after the tree"),
    ("layout_ms", "layout pass: every view marked, one pass (mark → stamp after the pass)"),
    ("terminate_ms", "terminate: SIGTERM → exit"),
]


def scaling_runs(args, size):
    """Runs per size: more for small trees (cheap, noisier relative to their cost), a few at 1,000,000."""
    if size <= 10_000:
        return args.scaling_runs
    if size <= 100_000:
        return args.scaling_runs_100k
    return args.scaling_runs_1m


def parse_scaling_line(line):
    """The probe's `key=value` line; the per-event keys hold comma-separated lists."""
    row = {}
    for item in line.split():
        key, value = item.split("=", 1)
        row[key] = [int(v) for v in value.split(",")] if key in ("fanout_ns", "reload_ns", "layout_ns") else int(value)
    return row


def measure_scaling(bins, args, tmp, log, raw):
    """lifecycle-bench-daemon with an empty window and with trees of each size, one process per run (the probe's
    `scaling` command), the sizes interleaved run by run so every size sees the same machine; medians per size.
    Informative, in the same rounds: the same binary without its stall detector (`[Stall] Watch=no`) at
    `--scaling-nostall-sizes`, against its own empty window."""
    sizes = [int(size) for size in args.scaling_sizes.split(",") if size.strip()]
    nostall_sizes = [int(size) for size in args.scaling_nostall_sizes.split(",") if size.strip()]
    config = os.path.join(tmp, "no-stall-detector.conf")
    with open(config, "w") as handle:
        handle.write("[Stall]\nWatch=no\n")
    def tree(size):
        return ["--controllers", size]

    variants = {"": ([0] + sizes, lambda size: scaling_runs(args, size), tree)}
    if nostall_sizes:
        variants["nostall"] = ([0] + nostall_sizes,
                               lambda size: scaling_runs(args, size) if size == 0 else max(1, scaling_runs(args, size) - 1),
                               lambda size: tree(size) + ["--config", config])
    # The launch's baseline at the largest size: the same binary, an empty window, and before READY=1 as many plain
    # controller and view pairs, linked, making the same callbacks (PlainTree.launch); against the default empty window.
    largest = sizes[-1]
    variants["plain"] = ([largest], lambda size: scaling_runs(args, size), lambda size: ["--plain-controllers", size])
    rows = {(variant, size): [] for variant, (plan, _, _) in variants.items() for size in plan}
    loads = []
    rounds = max(runs_of(size) for plan, runs_of, _ in variants.values() for size in plan)
    for round_index in range(rounds):
        for variant, (plan, runs_of, arguments) in variants.items():
            for size in plan:
                if round_index >= runs_of(size):
                    continue
                events = args.scaling_events if size < 1_000_000 else max(2, args.scaling_events - 2)
                shm = f"/dev/shm/lifecycle-bench-{os.getpid()}-scaling"
                command = [bins["daemon"]] + arguments(size)
                argv = [bins["probe"], "scaling", "--shm", shm, "--events", events, "--settle-ms",
                        args.scaling_settle_ms, "--"] + command
                with open("/proc/loadavg") as handle:
                    loads.append(float(handle.read().split()[0]))
                shown = quoted(argv).replace(shm, "/dev/shm/lifecycle-bench-scaling").replace(
                    config, "<[Stall] Watch=no>")
                line = run(argv, log, shown=shown)
                row = parse_scaling_line(line.strip())
                if row.get("status") != 0 or row.get("lost"):
                    raise RuntimeError(f"scaling run with {size} controllers {variant}: {line.strip()}")
                rows[(variant, size)].append(row)
                print(f"    {size:>9,} controllers{' (' + variant + ')' if variant else ''}: ready "
                      f"{row['ready_ns'] / 1e6:,.1f} ms, fan-out {statistics.median(row['fanout_ns']) / 1e6:,.2f} ms, "
                      f"layout {statistics.median(row['layout_ns']) / 1e6:,.2f} ms, terminate "
                      f"{row['terminate_ns'] / 1e6:,.1f} ms (load {loads[-1]:.2f})", flush=True)
    with open(raw / "scaling.txt", "w") as handle:
        for (variant, size), runs in rows.items():
            for row in runs:
                handle.write(f"variant={variant or 'default'} controllers={size} " + " ".join(
                    f"{key}={','.join(map(str, value)) if isinstance(value, list) else value}"
                    for key, value in row.items()) + "\n")
    results = summarize_scaling({size: rows[("", size)] for size in [0] + sizes}, sizes)
    results["loads"] = loads
    results["plain"] = {"size": largest, "runs": len(rows[("plain", largest)]),
                        "ready_ms": statistics.median(row["ready_ns"] for row in rows[("plain", largest)]) / 1e6}
    if nostall_sizes:
        results["nostall"] = summarize_scaling({size: rows[("nostall", size)] for size in [0] + nostall_sizes},
                                               nostall_sizes)
    return results


def summarize_scaling(rows, sizes):
    """Medians per size and the per-controller costs against the empty window (size 0)."""

    def events_of(runs, key):
        # The first event of each run is a warm-up (the first after launch and the release of start-up pages).
        values = []
        for row in runs:
            values.extend(row[key][1:] if len(row[key]) > 2 else row[key])
        return values

    results = {"sizes": sizes, "by_size": {}}
    for size, runs in rows.items():
        results["by_size"][size] = {
            "runs": len(runs),
            "events": len(runs[0]["fanout_ns"]) if runs else 0,
            "ready_ms": statistics.median(row["ready_ns"] for row in runs) / 1e6,
            "fanout_ms": statistics.median(events_of(runs, "fanout_ns")) / 1e6,
            "reload_ms": statistics.median(events_of(runs, "reload_ns")) / 1e6,
            "layout_ms": statistics.median(events_of(runs, "layout_ns")) / 1e6,
            "terminate_ms": statistics.median(row["terminate_ns"] for row in runs) / 1e6,
            "rss_mib": statistics.median(row["rss_kib"] for row in runs) / 1024.0,
            "rss_after_mib": statistics.median(row["rss_after_kib"] for row in runs) / 1024.0,
        }
    empty = results["by_size"][0]
    for size in sizes:
        row = results["by_size"][size]
        row["per_controller_ns"] = {key: (row[key] - empty[key]) * 1e6 / size
                                    for key, _ in SCALING_OPERATIONS + [("reload_ms", "")]}
        row["rss_per_controller_b"] = (row["rss_after_mib"] - empty["rss_after_mib"]) * 1024 * 1024 / size
    return results


def in_process_fanout_per_instance(benchmarks):
    """n -> (ns per controller, ns per plain instance) of the in-process fan-out benchmark."""
    fanout = benchmarks.get("fanout", {})
    plain = {params["n"]: params_metrics for params, params_metrics in
             ((params, (params, metrics)) for params, metrics in fanout.get("plain", []))}
    per = {}
    for params, metrics in fanout.get("lifecycle", []):
        n = params["n"]
        if n not in plain:
            continue
        base_params, base_metrics = plain[n]
        per[n] = (metrics["Time(wallclock)"] / (n * params["events"]),
                  base_metrics["Time(wallclock)"] / (base_params["n"] * base_params["events"]))
    return per


def report_scaling(add, scaling, benchmarks, args, beside):
    sizes = scaling["sizes"]
    by_size = scaling["by_size"]
    empty = by_size[0]
    loads = scaling["loads"]
    add("## 9. Scaling")
    add("")
    add("`lifecycle-bench-daemon --controllers N` (the daemon's real main loop, its stall detector and trace as in "
        "`lifecycled`, stderr to `/dev/null`): a tree of N controllers (10 children each, every one embedded with its "
        "view) built in `configure` and shown in the window at launch, against the same binary with an empty window "
        "in the same run. One process per run (`lifecycle-bench-probe scaling`): exec → `READY=1`; "
        f"{args.scaling_settle_ms} ms later the RSS; then SIGUSR1 (memory warning: the tree hears it first, in reverse "
        "pre-order, then the delegate, which stamps) and SIGHUP (reload: the delegate's `applicationDidReload` "
        "schedules end-of-turn work that records the time, marks every view with `setNeedsLayout` and schedules a "
        "stamp, which runs after the one layout pass: `viewWillLayoutSubviews`, `layoutSubviews`, "
        "`viewDidLayoutSubviews` per view), each signal once the previous stamp is in; then the RSS again and "
        "SIGTERM → exit. Runs per size: "
        + ", ".join(f"{'empty window' if size == 0 else f'{size:,}'} {by_size[size]['runs']}" for size in [0] + sizes)
        + f", the sizes interleaved run by run; {by_size[sizes[0]]['events']} events of each kind per run "
        f"({by_size[sizes[-1]]['events']} at {sizes[-1]:,}), the first of each run discarded as a warm-up; "
        "medians. **Per controller = (median at N − median with the empty window) / N.** Load average (1 min) "
        f"during these runs: {min(loads):.2f}–{max(loads):.2f}.")
    add("")
    header = "| operation | " + " | ".join(f"n = {size:,}" for size in sizes) + \
        f" | {sizes[-1]:,} ÷ {sizes[0]:,} | goal | met |"
    add(header)
    add("|---" * (len(sizes) + 4) + "|")
    verdicts = {}
    for key, label in SCALING_OPERATIONS:
        costs = [by_size[size]["per_controller_ns"][key] for size in sizes]
        growth = ratio(costs[-1], costs[0])
        verdicts[key] = growth <= 2.0
        add(f"| {label} | " + " | ".join(f"{fmt(cost, 0)} ns" for cost in costs) +
            f" | {fmt(growth, 2)}× | ≤ 2× | {verdict(growth <= 2.0)} |")
    reload_costs = [by_size[size]["per_controller_ns"]["reload_ms"] for size in sizes]
    add("| (informative) the whole reload with its layout pass: signal → stamp | " +
        " | ".join(f"{fmt(cost, 0)} ns" for cost in reload_costs) +
        f" | {fmt(ratio(reload_costs[-1], reload_costs[0]), 2)}× | — | |")
    rss_costs = [by_size[size]["rss_per_controller_b"] for size in sizes]
    add("| (informative) RSS per controller + view after the events: (RSS at N − empty) / N | " +
        " | ".join(f"{fmt(cost, 0)} B" for cost in rss_costs) +
        f" | {fmt(ratio(rss_costs[-1], rss_costs[0]), 2)}× | — | |")
    add("")
    add("The medians themselves (ms; RSS in MiB after the settle and after the events):")
    add("")
    add("| controllers | runs | exec → READY=1 | memory warning: signal → stamp | reload: signal → stamp | "
        "mark → stamp (layout pass) | SIGTERM → exit | RSS | RSS after the events |")
    add("|---|---|---|---|---|---|---|---|---|")
    for size in [0] + sizes:
        row = by_size[size]
        label = "empty window (baseline)" if size == 0 else f"{size:,}"
        add(f"| {label} | {row['runs']} | {fmt(row['ready_ms'], 2)} | {fmt(row['fanout_ms'], 3)} | "
            f"{fmt(row['reload_ms'], 3)} | {fmt(row['layout_ms'], 3)} | {fmt(row['terminate_ms'], 2)} | "
            f"{fmt(row['rss_mib'], 1)} | {fmt(row['rss_after_mib'], 1)} |")
    add("")
    add("| goal | value | met |")
    add("|---|---|---|")
    largest = sizes[-1]
    ready = by_size[largest]["ready_ms"] / 1000.0
    if largest == 1_000_000:
        add(f"| 1,000,000 controllers launched to READY=1 in under 5 s | {fmt(ready, 2)} s | {verdict(ready < 5)} |")
    else:
        add(f"| 1,000,000 controllers launched to READY=1 in under 5 s | not measured (largest: {largest:,}) | |")
    for key, label in SCALING_OPERATIONS:
        add(f"| {label.split(':')[0]}: cost per controller at {largest:,} within 2× of {sizes[0]:,} | "
            f"{fmt(ratio(by_size[largest]['per_controller_ns'][key], by_size[sizes[0]]['per_controller_ns'][key]), 2)}× "
            f"| {verdict(verdicts[key])} |")
    plain_launch = scaling.get("plain")
    if plain_launch:
        size = plain_launch["size"]
        empty = by_size[0]["ready_ms"]
        ours = (by_size[size]["ready_ms"] - empty) * 1e6 / size
        theirs = (plain_launch["ready_ms"] - empty) * 1e6 / size
        add(f"| launch of {size:,} controllers with the stall detector on, exec → READY=1 less the empty window's, "
            f"per controller within 3× a plain loop that allocates the same controller and view, links them and makes "
            f"the same 16 callbacks (`--plain-controllers`, {plain_launch['runs']} runs) | {fmt(ours, 0)} ns ÷ "
            f"{fmt(theirs, 0)} ns = {fmt(ratio(ours, theirs), 1)}× | {verdict(ratio(ours, theirs) <= 3)} |")
    per_instance = in_process_fanout_per_instance(benchmarks)
    for size in (100_000, 1_000_000):
        if size not in per_instance:
            continue
        lifecycle, plain = per_instance[size]
        add(f"| fan-out at {size:,} within 3× the plain loop (in-process, §2) | {fmt(lifecycle, 1)} ns ÷ "
            f"{fmt(plain, 1)} ns = {fmt(ratio(lifecycle, plain), 1)}× | {verdict(ratio(lifecycle, plain) <= 3)} |")
    add("")
    nostall = scaling.get("nostall")
    if nostall:
        shown = [size for size in nostall["sizes"] if size in by_size]
        add("What the stall detector costs (informative): the same binary with `[Stall] Watch=no` (no thread, no "
            "callback monitor), in the same rounds, against its own empty window; runs: "
            + ", ".join(f"{'empty window' if size == 0 else f'{size:,}'} {nostall['by_size'][size]['runs']}"
                        for size in [0] + nostall["sizes"]) + ". Per controller, with the detector → without:")
        add("")
        add("| operation | " + " | ".join(f"n = {size:,}" for size in shown) + " |")
        add("|---" * (len(shown) + 1) + "|")
        for key, label in SCALING_OPERATIONS:
            add(f"| {label.split(':')[0]} | " + " | ".join(
                f"{fmt(by_size[size]['per_controller_ns'][key], 0)} → "
                f"{fmt(nostall['by_size'][size]['per_controller_ns'][key], 0)} ns "
                f"({fmt(ratio(by_size[size]['per_controller_ns'][key], nostall['by_size'][size]['per_controller_ns'][key]), 1)}×)"
                for size in shown) + " |")
        add("| RSS per controller + view | " + " | ".join(
            f"{fmt(by_size[size]['rss_per_controller_b'], 0)} → {fmt(nostall['by_size'][size]['rss_per_controller_b'], 0)} B"
            for size in shown) + " |")
        add("")
        if 1_000_000 in nostall["by_size"]:
            ready = nostall["by_size"][1_000_000]["ready_ms"] / 1000
            add(f"Without the detector, 1,000,000 controllers reach READY=1 in {fmt(ready, 2)} s "
                f"({'under' if ready < 5 else 'over'} the 5 s of the goal).")
            add("")
    if per_instance:
        add("Fan-out per controller at each size, the daemon (above) beside the in-process benchmark of §2 (no stall "
            "detector, nothing written) and its plain loop:")
        add("")
        shown = [size for size in sizes if size in per_instance]
        add("| fan-out per controller | " + " | ".join(f"n = {size:,}" for size in shown) + " |")
        add("|---" * (len(shown) + 1) + "|")
        add("| daemon: (signal → stamp at n − empty) / n | " +
            " | ".join(f"{fmt(by_size[size]['per_controller_ns']['fanout_ms'], 0)} ns" for size in shown) + " |")
        add("| in-process `requestMemoryWarning()` | " +
            " | ".join(f"{fmt(per_instance[size][0], 1)} ns" for size in shown) + " |")
        add("| plain loop, overridden method on n instances | " +
            " | ".join(f"{fmt(per_instance[size][1], 1)} ns" for size in shown) + " |")
        add("| in-process ÷ plain | " +
            " | ".join(f"{fmt(ratio(*per_instance[size]), 1)}×" for size in shown) + " |")
        add("")
    add(f"Plot: [scaling.png](scaling.png). {beside}")
    add("")


def plot_scaling(path, scaling, benchmarks, machine, command):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = scaling["sizes"]
    by_size = scaling["by_size"]
    figure, axis = plt.subplots(figsize=(9, 5.6))
    styles = {"ready_ms": ("#4c72b0", "o", "launch (exec → READY=1)"),
              "fanout_ms": ("#dd8452", "s", "fan-out of a memory warning (daemon)"),
              "layout_ms": ("#55a868", "^", "layout pass (mark every view + one pass)"),
              "terminate_ms": ("#c44e52", "D", "terminate (SIGTERM → exit)")}
    for key, (color, marker, label) in styles.items():
        values = [by_size[size]["per_controller_ns"][key] for size in sizes]
        axis.plot(sizes, values, color=color, marker=marker, label=label)
    nostall = scaling.get("nostall")
    if nostall:
        axis.plot(nostall["sizes"], [nostall["by_size"][size]["per_controller_ns"]["fanout_ms"]
                                     for size in nostall["sizes"]],
                  color="#dd8452", linestyle="-.", marker="x", label="fan-out, daemon without its stall detector")
    per_instance = in_process_fanout_per_instance(benchmarks)
    shown = [size for size in sorted(per_instance) if size >= 1000]
    if shown:
        axis.plot(shown, [per_instance[size][0] for size in shown], color="#dd8452", linestyle="--", marker="s",
                  markerfacecolor="none", label="fan-out in-process, no stall detector (§2)")
        axis.plot(shown, [per_instance[size][1] for size in shown], color="#8c8c8c", linestyle=":", marker=".",
                  label="plain loop: overridden method on n instances (§2)")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("controllers in the window (each with its view)")
    axis.set_ylabel("cost per controller (ns, log scale)")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8, loc="best")
    figure.suptitle("Cost per controller against tree size: (time at n − empty window) / n, medians", fontsize=11)
    figure.text(0.5, 0.005, f"{machine['short']} · {command} · commit {machine['commit']}", ha="center", fontsize=7)
    figure.tight_layout(rect=(0, 0.03, 1, 0.96))
    figure.savefig(path, dpi=110)
    plt.close(figure)


# ---------------------------------------------------------------------------------------------------------------
# 3. RSS of the demo daemon after a steady-state workload, with the smaps breakdown


def read_status_kib(pid):
    values = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            for key in ("VmRSS", "RssAnon", "RssFile"):
                if line.startswith(key + ":"):
                    values[key] = int(line.split()[1])
    return values


def wait_for_status(listener, before, what, timeout=5.0):
    """Waits until a STATUS= datagram arrived after the first `before` ones; returns its arrival time."""
    deadline = time.monotonic() + timeout
    while True:
        for arrived, lines in listener.messages[before:]:
            if any(line.startswith("STATUS=") for line in lines):
                return arrived
        if time.monotonic() > deadline:
            raise RuntimeError(f"lifecycled sent no STATUS= within {timeout:g} s of {what}")
        listener.poll(0.005)


def measure_rss_workload(bins, args, tmp, log):
    """`lifecycled --work-interval 0`: RSS and its smaps breakdown `--settle-ms` after READY=1 (the pages only
    starting needed are released by then), then after a workload of transitions (SIGUSR1 background, SIGUSR2
    foreground, each once the STATUS= of the previous one arrived) and the same settle. Medians of the runs; the
    breakdown is the last run's."""
    command = [bins["lifecycled"], "--work-interval", "0"]
    cycles = max(1, args.rss_transitions // 2)
    samples = {"ready": [], "workload": []}
    breakdown = {}
    for _ in range(args.rss_runs):
        listener = NotifyListener(tmp)
        process = start(command, {"NOTIFY_SOCKET": listener.path})
        log.append(f"NOTIFY_SOCKET=<harness socket> {quoted(command)} &   # then {cycles} × (SIGUSR1, SIGUSR2), each "
                   "after the STATUS= of the previous transition")
        try:
            listener.wait_for("READY=1")
            time.sleep(args.settle_ms / 1000.0)
            samples["ready"].append(read_status_kib(process.pid))
            breakdown["ready"] = rss_by_mapping(process.pid, top=12)
            for _ in range(cycles):
                for signal_number in (signal.SIGUSR1, signal.SIGUSR2):
                    before = len(listener.messages)
                    os.kill(process.pid, signal_number)
                    wait_for_status(listener, before, "a transition's signal")
                    listener.poll(0.02)  # the turn ends, the trace lines go out
            time.sleep(args.settle_ms / 1000.0)
            samples["workload"].append(read_status_kib(process.pid))
            breakdown["workload"] = rss_by_mapping(process.pid, top=12)
        finally:
            status = stop(process)
            listener.close()
        if status != 0:
            raise RuntimeError(f"lifecycled exited with {status} after the RSS workload")
    results = {"runs": args.rss_runs, "transitions": 2 * cycles, "breakdown": breakdown}
    for point, values in samples.items():
        results[point] = {key: statistics.median(value[key] for value in values) / 1024.0
                          for key in ("VmRSS", "RssAnon", "RssFile")}
    return results


def private_and_pss_kib(pid):
    """What a process costs, from /proc/PID/smaps: private memory (per mapping, its anonymous pages or its private
    dirty ones, whichever is more: pages nobody else has and the kernel cannot drop) and PSS (every page shared
    with others counted in its share), in KiB."""
    private = pss = 0
    anonymous = dirty = 0
    with open(f"/proc/{pid}/smaps") as handle:
        for line in handle:
            parts = line.split()
            if parts and "-" in parts[0] and len(parts) >= 5 and ":" in parts[3]:
                private += max(anonymous, dirty)
                anonymous = dirty = 0
            elif parts and parts[0] == "Anonymous:":
                anonymous = int(parts[1])
            elif parts and parts[0] == "Private_Dirty:":
                dirty = int(parts[1])
            elif parts and parts[0] == "Pss:":
                pss += int(parts[1])
    return private + max(anonymous, dirty), pss


def measure_steady_memory(bins, args, tmp, log):
    """Steady state, the way memory costs: private memory and PSS after `--steady-transitions` transitions, for
    lifecycled with `[Memory] ReleaseStartupPages=` yes and no, beside the C floor and the peer (each sent as many
    SIGUSR1s, which they stamp and forget). For lifecycled also the first signal after an idle second, SIGUSR1 →
    the transition's STATUS= (what ReleaseStartupPages might cost: the pages it dropped fault back in). Medians of
    `--steady-runs` runs."""
    keep = os.path.join(tmp, "keep-startup-pages.conf")
    with open(keep, "w") as handle:
        handle.write("[Memory]\nReleaseStartupPages=no\n")
    release = os.path.join(tmp, "release-startup-pages.conf")
    with open(release, "w") as handle:
        handle.write("[Memory]\nReleaseStartupPages=yes\n")
    subjects = [
        ("release", [bins["lifecycled"], "--work-interval", "0", "--config", release]),
        ("keep", [bins["lifecycled"], "--work-interval", "0", "--config", keep]),
        ("floor", [bins["floor"]]),
        ("peer", [bins["peer"]]),
    ]
    transitions = args.steady_transitions
    results = {"transitions": transitions, "runs": args.steady_runs}
    for name, command in subjects:
        private, pss, first = [], [], []
        for _ in range(args.steady_runs):
            listener = NotifyListener(tmp)
            process = start(command, {"NOTIFY_SOCKET": listener.path})
            shown = quoted(command).replace(keep, "<[Memory] ReleaseStartupPages=no>").replace(
                release, "<[Memory] ReleaseStartupPages=yes>")
            if name in ("release", "keep"):
                log.append(f"NOTIFY_SOCKET=<harness socket> {shown} &   # 1 s idle, SIGUSR1 → STATUS=, then "
                           f"{transitions} transitions (SIGUSR1/SIGUSR2, each after the previous STATUS=); smaps")
            else:
                log.append(f"NOTIFY_SOCKET=<harness socket> {shown} &   # {transitions} × SIGUSR1 1 ms apart; smaps")
            try:
                listener.wait_for("READY=1")
                time.sleep(args.settle_ms / 1000.0 + 1.0)
                if name in ("release", "keep"):
                    before = len(listener.messages)
                    sent = time.monotonic()
                    os.kill(process.pid, signal.SIGUSR1)
                    first.append((wait_for_status(listener, before, "the first signal") - sent) * 1000.0)
                    numbers = [signal.SIGUSR2, signal.SIGUSR1]
                    for index in range(transitions - 1):
                        before = len(listener.messages)
                        os.kill(process.pid, numbers[index % 2])
                        wait_for_status(listener, before, "a transition's signal")
                else:
                    for _ in range(transitions):
                        os.kill(process.pid, signal.SIGUSR1)
                        time.sleep(0.001)
                time.sleep(args.settle_ms / 1000.0)
                kib = private_and_pss_kib(process.pid)
                private.append(kib[0] / 1024.0)
                pss.append(kib[1] / 1024.0)
            finally:
                status = stop(process)
                listener.close()
            if status != 0:
                raise RuntimeError(f"{name} exited with {status} after the steady-state workload")
        results[name] = {"private_mib": statistics.median(private), "pss_mib": statistics.median(pss)}
        if first:
            results[name]["first_signal_ms"] = statistics.median(first)
    return results


def report_steady_memory(add, steady, args):
    release, keep = steady["release"], steady["keep"]
    floor, peer = steady["floor"], steady["peer"]
    n = steady["transitions"]
    beside = (f"C floor {fmt(floor['private_mib'], 2)} MiB private, {fmt(floor['pss_mib'], 2)} MiB PSS; peer "
              f"{fmt(peer['private_mib'], 2)} MiB private, {fmt(peer['pss_mib'], 2)} MiB PSS")
    for label, row in (("`[Memory] ReleaseStartupPages=yes`", release),
                       ("`ReleaseStartupPages=no` (the default)", keep)):
        add(f"| steady state of the demo daemon after {n:,} transitions, {label}, median of {steady['runs']}: private "
            f"(per mapping, anonymous or private dirty, whichever is more) | {fmt(row['private_mib'], 2)} MiB | "
            f"{beside} | {fmt(ratio(row['private_mib'], peer['private_mib']), 2)}× peer | ≤ 3 MiB | "
            f"{verdict(row['private_mib'] <= 3)} |")
        add(f"| the same: PSS | {fmt(row['pss_mib'], 2)} MiB | {beside} | "
            f"{fmt(ratio(row['pss_mib'], peer['pss_mib']), 2)}× peer | ≤ 6 MiB | {verdict(row['pss_mib'] <= 6)} |")
    add(f"| the first signal after an idle second (SIGUSR1 → the transition's STATUS=), median of {steady['runs']}: "
        f"ReleaseStartupPages=yes | {fmt(release['first_signal_ms'], 2)} ms | no: "
        f"{fmt(keep['first_signal_ms'], 2)} ms | {fmt(ratio(release['first_signal_ms'], keep['first_signal_ms']), 2)}× "
        "| no slower | "
        f"{verdict(release['first_signal_ms'] <= keep['first_signal_ms'] * 1.1)} |")


def report_rss_workload(add, rss, args, launches):
    ready, workload = rss["ready"], rss["workload"]
    add(f"| RSS of the demo daemon after a steady-state workload: {rss['transitions']} transitions (SIGUSR1 → "
        f"background, SIGUSR2 → foreground, each after the previous one's STATUS=), {args.settle_ms} ms later, "
        f"median of {rss['runs']} | {fmt(workload['VmRSS'], 1)} MiB ({fmt(workload['RssAnon'], 1)} anonymous + "
        f"{fmt(workload['RssFile'], 1)} file-backed); the same processes {args.settle_ms} ms after READY=1: "
        f"{fmt(ready['VmRSS'], 1)} MiB | C floor {fmt(launches['floor']['rss_mib'], 1)} MiB; peer "
        f"{fmt(launches['peer']['rss_mib'], 1)} MiB | {fmt(ratio(workload['VmRSS'], ready['VmRSS']), 2)}× after "
        f"READY=1 | ≤ 10 MiB | {verdict(workload['VmRSS'] <= 10)} |")


def report_rss_breakdown(add, rss, args):
    (top_ready, total_ready) = rss["breakdown"]["ready"]
    (top_work, total_work) = rss["breakdown"]["workload"]
    ready = {name: (kib, anonymous) for name, kib, anonymous in top_ready}
    work = {name: (kib, anonymous) for name, kib, anonymous in top_work}
    names = sorted(set(ready) | set(work), key=lambda name: -max(ready.get(name, (0, 0))[0],
                                                                  work.get(name, (0, 0))[0]))
    add(f"Where the demo daemon's RSS is (`/proc/PID/smaps` of one `lifecycled --work-interval 0`, {args.settle_ms} ms "
        f"after READY=1: {fmt(total_ready / 1024, 1)} MiB; after the {rss['transitions']} transitions: "
        f"{fmt(total_work / 1024, 1)} MiB), with `[Memory] ReleaseStartupPages=no` (the default: the start-up pages "
        "stay; with `yes` they are dropped after READY=1 and what the running daemon touches again faults back in). "
        "File-backed pages of shared libraries count in full although other processes share them:")
    add("")
    add("| mapping | after READY=1: RSS KiB | of which anonymous | after the transitions: RSS KiB | of which anonymous |")
    add("|---|---|---|---|---|")
    for name in names:
        kib_ready, anon_ready = ready.get(name, (None, None))
        kib_work, anon_work = work.get(name, (None, None))
        cell = lambda value: "—" if value is None else f"{value:,}"  # noqa: E731
        add(f"| {name} | {cell(kib_ready)} | {cell(anon_ready)} | {cell(kib_work)} | {cell(anon_work)} |")
    add("")


def report_memory_attached(add, memory, held_base):
    """The memory rows of a live tree: attached to a launched application's window (the in-process benchmarks
    `memory lifecycle-attached` and `memory lifecycle-attached-detector`)."""
    labels = [("lifecycle-attached", "bytes held per controller + view, a live tree: {n:,} embedded controllers shown "
               "in a launched, active application's window (joined, appeared, laid out and displayed, one event "
               "delivered: the fan-out's list kept); malloc interposer, requested bytes, net of frees", "≤ 1 KiB"),
              ("lifecycle-attached-detector", "the same as `lifecycled` runs it: its stall detector told of every "
               "callback, so each controller's and each view's path is built and kept", "≤ 1 KiB")]
    for variant, label, goal in labels:
        if variant not in memory:
            continue
        params, metrics = memory[variant][0]
        n = params["n"]
        held = metrics["Malloc/freeΔ(bytes)"] / n
        allocations = metrics["Malloc/freeΔ"] / n
        gross = metrics["Malloc(bytestotal)"] / n
        add(f"| {label.format(n=n)} | {fmt(held, 0)} B ({fmt(allocations, 1)} live allocations; {fmt(gross, 0)} B "
            f"allocated in all) | {fmt(held_base, 0)} B (plain class pair, same links) | "
            f"{fmt(ratio(held, held_base), 1)}× | {goal} | {verdict(held <= 1024)} |")


# ---------------------------------------------------------------------------------------------------------------
# 2, 3. In-process benchmarks (ordo-one/benchmark)


def run_benchmark_tool(args, raw, log, env):
    out_dir = raw / "benchmark-tool"
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.csv"):
        old.unlink()
    argv = [args.swift, "package", "--package-path", args.package, "--scratch-path", args.scratch,
            "--allow-writing-to-directory", out_dir, "benchmark", "run", "--format", "influx", "--path", out_dir,
            "--no-progress"]
    log.append(quoted(argv).replace(str(out_dir), "<raw>/benchmark-tool"))
    with open(raw / "benchmark-tool.log", "w") as handle:
        subprocess.run([str(a) for a in argv], check=True, stdout=handle, stderr=subprocess.STDOUT, env=env)
    files = sorted(out_dir.glob("*.csv"))
    if not files:
        raise RuntimeError("the benchmark tool wrote no results")
    medians = {}  # (test, metric) -> p50
    with open(files[0]) as handle:
        rows = [row for row in csv.reader(handle) if row and not row[0].startswith("#")]
    header = rows[0]
    column = {name: index for index, name in enumerate(header)}
    for row in rows[1:]:
        if float(row[column["percentile"]]) == 50.0:
            medians[(row[column["test"]], row[column["metric"]])] = float(row[column["value"]])
    return medians


def parse_name(name):
    """'fanout lifecycle n=10 events=10000' -> ('fanout', 'lifecycle', {'n': 10, 'events': 10000})."""
    words = name.split()
    params = dict((key, int(value)) for key, value in (word.split("=") for word in words[2:]))
    return words[0], words[1], params


def in_process(medians):
    tests = {}
    for (test, metric), value in medians.items():
        tests.setdefault(test, {})[metric] = value
    by_kind = {}
    for test, metrics in tests.items():
        group, variant, params = parse_name(test)
        by_kind.setdefault(group, {}).setdefault(variant, []).append((params, metrics))
    return by_kind



# ---------------------------------------------------------------------------------------------------------------
# 10. Signal latency with the control socket under load


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
                    argv = ["taskset", "-c", "1", sys.executable, os.path.abspath(__file__), "--control-load",
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


def report_control_load(add, control, args, beside):
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

# ---------------------------------------------------------------------------------------------------------------
# Machine


def machine_description(args):
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    cores = os.cpu_count()
    memory_gib = 0
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                memory_gib = round(int(line.split()[1]) / 1024 / 1024)
    distro = "Linux"
    try:
        with open("/etc/os-release") as handle:
            for line in handle:
                if line.startswith("PRETTY_NAME="):
                    distro = line.split("=", 1)[1].strip().strip('"')
    except FileNotFoundError:
        pass
    swift = subprocess.run([args.swift, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True).stdout.splitlines()[0]
    try:
        commit = subprocess.run(["git", "-C", args.root, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", args.root, "status", "--porcelain", "--untracked-files=no"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
        commit = commit + ("+changes" if dirty else "")
    except FileNotFoundError:
        commit = "unknown"
    with open("/proc/loadavg") as handle:
        load = " ".join(handle.read().split()[:3])
    short = f"{cpu}, {cores} vCPUs, {memory_gib} GiB, {distro}, Linux {platform.release()}, {swift}"
    return {"short": short, "commit": commit, "load": load, "date": datetime.datetime.now(datetime.timezone.utc)
            .strftime("%Y-%m-%d %H:%M UTC")}


# ---------------------------------------------------------------------------------------------------------------
# Report


def write_report(path, machine, args, latency, launches, idle, benchmarks, logs, services=None, scaling=None,
                 rss_workload=None, control=None):
    command = args.command_line
    lines = []
    add = lines.append
    add("# Benchmark results")
    add("")
    add(f"Produced by `{command}` on {machine['date']}, commit {machine['commit']}.")
    add("")
    with open("/proc/loadavg") as handle:
        load_after = " ".join(handle.read().split()[:3])
    add(f"**Machine:** {machine['short']}. Load average (1, 5, 15 min) at the start {machine['load']}, at the end "
        f"{load_after}: other work on the machine shows up in the tails.")
    add("")
    add("Every figure is next to a baseline measured in the same run, and every goal the issue set is marked met or "
        "not. Method and caveats: [../benchmarks.md](../benchmarks.md).")
    add("")
    beside = f"<sub>{machine['short']} · `{command}`</sub>"

    # 1. Latency
    add("## 1. Signal → first callback latency")
    add("")
    add("`sigqueue(SIGUSR1)` → first line of the callback, stamped with `CLOCK_MONOTONIC`, "
        f"{args.signals} signals per receiver and placement ({args.rounds} rounds, {args.warmup} warm-up signals "
        "per round discarded), sends ≥ 1 ms apart, each after the previous one was seen. Receiver pinned to CPU 0; "
        "sender on CPU 0 (same CPU) or CPU 1 (other CPU). The daemon's first callback is the delegate's "
        "`applicationDidReceiveMemoryWarning` (SIGUSR1 mapped to memory-warning, empty window); its trace line "
        "for that callback is written to stderr (`/dev/null`), as on a terminal, once the loop's dispatch returns "
        "(after the stamp); its stall detector is told of the callback before it runs.")
    add("")
    add("| placement | receiver | signals (lost) | p50 µs | p99 µs | max µs | p50 × floor | p99 × floor "
        "| max × floor |")
    add("|---|---|---|---|---|---|---|---|---|")
    for placement, receivers in latency.items():
        floor = receivers["floor"]
        for name, label in RECEIVERS:
            row = receivers[name]
            add(f"| {placement} | {label} | {row['n']} ({row['lost']}) | {fmt(row['p50'])} | {fmt(row['p99'])} | "
                f"{fmt(row['max'])} | {fmt(ratio(row['p50'], floor['p50']), 2)} | "
                f"{fmt(ratio(row['p99'], floor['p99']), 2)} | {fmt(ratio(row['max'], floor['max']), 2)} |")
    add("")
    add("| goal | same CPU | met | other CPU | met |")
    add("|---|---|---|---|---|")
    goals = [
        ("daemon p50 ≤ 1.5 × floor p50", lambda r: ratio(r["daemon"]["p50"], r["floor"]["p50"]), lambda x: x <= 1.5),
        ("daemon p99 ≤ 2 × floor p99", lambda r: ratio(r["daemon"]["p99"], r["floor"]["p99"]), lambda x: x <= 2.0),
        ("peer p50 ≥ 2 × daemon p50", lambda r: ratio(r["peer"]["p50"], r["daemon"]["p50"]), lambda x: x >= 2.0),
    ]
    for label, value_of, ok in goals:
        cells = []
        for placement in ("same CPU", "other CPU"):
            value = value_of(latency[placement])
            cells += [f"{fmt(value, 2)}×", verdict(ok(value))]
        add(f"| {label} | " + " | ".join(cells) + " |")
    add("")
    add(f"Plot: [latency.png](latency.png). {beside}")
    add("")

    # 2. Fan-out, push/pop, layout
    add("## 2. Fan-out, push/pop, layout")
    add("")
    add("In-process, ordo-one/benchmark 1.38.1, medians. Fan-out: one memory warning delivered through a tree of "
        "n controllers (10 children each, every controller with its view, window visible, application active), "
        "against a loop calling an overridden method on n instances of a class. Both sides run the same override "
        "body (a counter).")
    add("")
    add("| benchmark | LifecycleKit | plain Swift baseline | ratio | goal | met |")
    add("|---|---|---|---|---|---|")
    fanout = benchmarks.get("fanout", {})
    plain = {params["n"]: (params, metrics) for params, metrics in fanout.get("plain", [])}
    for params, metrics in sorted(fanout.get("lifecycle", []), key=lambda item: item[0]["n"]):
        n, events = params["n"], params["events"]
        per = metrics["Time(wallclock)"] / (n * events)
        base_params, base_metrics = plain[n]
        base = base_metrics["Time(wallclock)"] / (base_params["n"] * base_params["events"])
        mallocs = metrics.get("Malloc(total)", 0) / events
        add(f"| fan-out, {n:,} controllers | {fmt(per, 2)} ns/controller ({fmt(mallocs, 0)} mallocs/event, the "
            f"delegate's log record included) | "
            f"{fmt(base, 2)} ns/instance | {fmt(ratio(per, base), 1)}× | ≤ 3× | {verdict(ratio(per, base) <= 3)} |")
    for params, metrics in fanout.get("lifecycle-quiet", []):
        n, events = params["n"], params["events"]
        per = metrics["Time(wallclock)"] / (n * events)
        base_params, base_metrics = plain[n]
        base = base_metrics["Time(wallclock)"] / (base_params["n"] * base_params["events"])
        add(f"| fan-out, {n:,} controllers, nothing logged (not even the delegate's line) | {fmt(per, 1)} "
            f"ns/controller | {fmt(base, 2)} ns/instance | {fmt(ratio(per, base), 1)}× | (informative) | |")
    for params, metrics in fanout.get("lifecycle-traced", []):
        n, events = params["n"], params["events"]
        per = metrics["Time(wallclock)"] / (n * events)
        base_params, base_metrics = plain[n]
        base = base_metrics["Time(wallclock)"] / (base_params["n"] * base_params["events"])
        add(f"| fan-out, {n:,} controllers, every event rendered for the log (the daemon's level under journald) | "
            f"{fmt(per, 1)} ns/controller | {fmt(base, 2)} ns/instance | {fmt(ratio(per, base), 0)}× | "
            f"(informative) | |")
    for params, metrics in fanout.get("lifecycle-detector", []):
        n, events = params["n"], params["events"]
        per = metrics["Time(wallclock)"] / (n * events)
        base_params, base_metrics = plain[n]
        base = base_metrics["Time(wallclock)"] / (base_params["n"] * base_params["events"])
        add(f"| fan-out, {n:,} controllers, with the daemon's stall detector told of every callback (as in "
            f"`lifecycled`) | {fmt(per, 1)} ns/controller | {fmt(base, 2)} ns/instance | {fmt(ratio(per, base), 1)}× | "
            f"(informative) | |")
    pushpop = benchmarks.get("pushpop", {})
    if pushpop:
        params, metrics = pushpop["lifecycle"][0]
        base_params, base_metrics = pushpop["plain"][0]
        per = metrics["Time(wallclock)"] / params["cycles"] / 1000.0
        base = base_metrics["Time(wallclock)"] / base_params["cycles"] / 1000.0
        callbacks = metrics.get("callbacks")
        detail = f" ({int(callbacks)} callbacks)" if callbacks else ""
        add(f"| push + pop on a visible navigation controller, turns ended{detail} | {fmt(per, 2)} µs/cycle | "
            f"{fmt(base, 2)} µs/cycle (allocate controller + view, link, make the same callbacks, unlink) | "
            f"{fmt(ratio(per, base), 1)}× | — | |")
    layout = benchmarks.get("layout", {})
    if layout:
        params, metrics = layout["lifecycle"][0]
        base_params, base_metrics = layout["plain"][0]
        per = metrics["Time(wallclock)"] / 1000.0
        base = base_metrics["Time(wallclock)"] / 1000.0
        add(f"| layout pass over {params['n']:,} marked views (`runEndOfTurn`) | {fmt(per, 0)} µs "
            f"({fmt(per * 1000 / params['n'], 1)} ns/view) | {fmt(base, 0)} µs (recursive walk, overridden "
            f"`layoutSubviews`) | {fmt(ratio(per, base), 1)}× | — | |")
    add("")
    add(beside)
    add("")

    # 3. Memory
    add("## 3. Memory")
    add("")
    add("| figure | LifecycleKit | baseline | ratio | goal | met |")
    add("|---|---|---|---|---|---|")
    memory = benchmarks.get("memory", {})
    if memory:
        params, metrics = memory["lifecycle"][0]
        base_params, base_metrics = memory["plain"][0]
        n = params["n"]
        held = metrics["Malloc/freeΔ(bytes)"] / n
        held_base = base_metrics["Malloc/freeΔ(bytes)"] / base_params["n"]
        allocations = metrics["Malloc/freeΔ"] / n
        gross = metrics["Malloc(bytestotal)"] / n
        report_memory_attached(add, memory, held_base)
        add(f"| (the previous figure) a tree built apart, never attached ({n:,} embedded): it also holds the trace "
            f"events a detached node keeps until it joins an application's tree, which a live tree never holds | "
            f"{fmt(held, 0)} B ({fmt(allocations, 1)} live allocations; {fmt(gross, 0)} B allocated in all) | "
            f"{fmt(held_base, 0)} B (plain class pair, same links) | {fmt(ratio(held, held_base), 1)}× | — | |")
    rss = launches["lifecycled"]["rss_mib"]
    add(f"| RSS of the demo daemon (`lifecycled --work-interval 0`) {args.settle_ms} ms after READY=1, median of "
        f"{launches['lifecycled']['runs']} | {fmt(rss, 1)} MiB ({fmt(launches['lifecycled']['anon_mib'], 1)} "
        f"anonymous + {fmt(launches['lifecycled']['file_mib'], 1)} file-backed) | "
        f"C floor {fmt(launches['floor']['rss_mib'], 1)} MiB; "
        f"peer {fmt(launches['peer']['rss_mib'], 1)} MiB | {fmt(ratio(rss, launches['floor']['rss_mib']), 1)}× floor; "
        f"{fmt(ratio(rss, launches['peer']['rss_mib']), 2)}× peer | ≤ 10 MiB | {verdict(rss <= 10)} |")
    if rss_workload is not None:
        report_rss_workload(add, rss_workload, args, launches)
        if "steady" in rss_workload:
            report_steady_memory(add, rss_workload["steady"], args)
        add("")
        report_rss_breakdown(add, rss_workload, args)
        add(beside)
        add("")
    else:
        report_idle_mappings(add, idle, beside)

    # 4. Idle
    add("## 4. Idle")
    add("")
    add(f"Context switches (voluntary + involuntary) and CPU time summed over every thread "
        f"(`/proc/PID/task/*/status`, `schedstat`) over a {fmt(idle['seconds'], 1)} s idle window that starts "
        f"{fmt(args.idle_delay, 1)} s after READY=1; all four processes idle side by side in the same window. A thread "
        "that exits within the window takes its last counts with it (`+`: at least this many). Per thread: in the "
        "window, and (settling) from READY=1 to the window's start; lifecycled's second thread is its stall "
        "detector.")
    add("")
    add("| process | threads (started, exited in the window) | context switches | per thread (settling) | CPU µs | "
        "watchdog pings received | goal | met |")
    add("|---|---|---|---|---|---|---|---|")
    labels = {"floor": "C floor (baseline)", "peer": "peer (baseline)",
              "lifecycled": "lifecycled, watchdog off",
              "lifecycled-watchdog": f"lifecycled, WATCHDOG_USEC={idle['watchdog_usec']}"}
    for name in ("floor", "peer", "lifecycled", "lifecycled-watchdog"):
        row = idle[name]
        if name == "lifecycled":
            goal, ok = "0 switches", row["switches"] == 0
        elif name == "lifecycled-watchdog":
            goal, ok = "switches = pings", row["switches"] == row["pings"]
        else:
            goal, ok = "—", None
        if row["exited"]:
            ok = False if ok is not None else None  # an exited thread's last switches are unknown
        plus = "+" if row["exited"] else ""
        settling = dict(row["settling_by_thread"])
        threads = ", ".join(f"{label} {count} ({settling.get(label, '—')})" for label, count in row["by_thread"])
        add(f"| {labels[name]} | {row['threads']} ({row['started']}, {row['exited']}) | {row['switches']}{plus} | "
            f"{threads} | {fmt(row['cpu_us'], 0)}{plus} | {row['pings']} | {goal} | {'' if ok is None else verdict(ok)} |")
    add("")
    for name in ("lifecycled", "lifecycled-watchdog"):
        logged = idle[name].get("logged", [])
        what = "nothing" if not logged else f"{len(logged)} line{'s' if len(logged) != 1 else ''}: " + " · ".join(
            f"`{line[:160]}`" for line in logged[:4]) + (" …" if len(logged) > 4 else "")
        add(f"What {labels[name]} logged (stderr) inside the window: {what}.")
        add("")
    add(beside)
    add("")

    # 5. Startup and 6. Terminate
    add("## 5. Startup and 6. Terminate")
    add("")
    add(f"`lifecycle-bench-probe launch`: exec → `READY=1` on a `NOTIFY_SOCKET` it bound, RSS {args.settle_ms} ms "
        f"later, then SIGTERM → exit (`waitpid`); medians of {args.launch_runs} runs each. `lifecycled` is built as "
        "`make install` builds it (`scripts/build-release`: the Swift runtime and libstdc++ linked statically).")
    add("")
    add("| process | exec → READY=1 ms | RSS MiB (anonymous + file) | SIGTERM → exit ms |")
    add("|---|---|---|---|")
    launch_labels = [("floor", "C floor (baseline)"), ("peer", "peer"),
                     ("lifecycled", "lifecycled (demo, 4 controllers)"),
                     ("daemon-0", "bench daemon, empty window (baseline for per-controller cost)"),
                     ("daemon-0-no-psi", "bench daemon, empty window, `[MemoryPressure] Watch=no`"),
                     ("daemon-10000", "bench daemon, 10,000 controllers")]
    for name, label in launch_labels:
        row = launches[name]
        add(f"| {label} | {fmt(row['ready_ms'], 2)} | {fmt(row['rss_mib'], 1)} ({fmt(row['anon_mib'], 1)} + "
            f"{fmt(row['file_mib'], 1)}) | {fmt(row['terminate_ms'], 2)} |")
    add("")
    startup = launches["lifecycled"]["ready_ms"]
    terminate = launches["daemon-10000"]["terminate_ms"]
    per_controller = (terminate - launches["daemon-0"]["terminate_ms"]) * 1e6 / 10000
    add("| figure | value | baseline | ratio | goal | met |")
    add("|---|---|---|---|---|---|")
    add(f"| startup of the demo daemon, exec → READY=1 | {fmt(startup, 2)} ms | C floor "
        f"{fmt(launches['floor']['ready_ms'], 2)} ms; peer {fmt(launches['peer']['ready_ms'], 2)} ms | "
        f"{fmt(ratio(startup, launches['floor']['ready_ms']), 1)}× floor | ≤ 10 ms | {verdict(startup <= 10)} |")
    peer_ready = launches["peer"]["ready_ms"]
    add(f"| startup of the demo daemon against the peer, exec → READY=1 (p90) | {fmt(startup, 2)} ms "
        f"({fmt(launches['lifecycled']['ready_p90_ms'], 2)}) | peer {fmt(peer_ready, 2)} ms "
        f"({fmt(launches['peer']['ready_p90_ms'], 2)}) | {fmt(ratio(startup, peer_ready), 2)}× peer | "
        f"no slower than the peer | {verdict(startup <= peer_ready)} |")
    empty_exit = launches["daemon-0"]["terminate_ms"]
    add(f"| terminate an empty window, SIGTERM → exit (p90) | {fmt(empty_exit, 2)} ms "
        f"({fmt(launches['daemon-0']['terminate_p90_ms'], 2)}) | C floor "
        f"{fmt(launches['floor']['terminate_ms'], 2)} ms; peer {fmt(launches['peer']['terminate_ms'], 2)} ms | "
        f"{fmt(ratio(empty_exit, launches['floor']['terminate_ms']), 1)}× floor | ≤ 5 ms | {verdict(empty_exit <= 5)} |")
    no_psi_exit = launches["daemon-0-no-psi"]["terminate_ms"]
    add(f"| the same without the memory pressure trigger (`[MemoryPressure] Watch=no`), SIGTERM → exit (p90) | "
        f"{fmt(no_psi_exit, 2)} ms ({fmt(launches['daemon-0-no-psi']['terminate_p90_ms'], 2)}) | with it "
        f"{fmt(empty_exit, 2)} ms | {fmt(ratio(empty_exit, no_psi_exit), 1)}× with it | — (what the trigger's close "
        "costs an exit, docs/benchmarks.md) | |")
    add(f"| terminate with 10,000 controllers, SIGTERM → exit | {fmt(terminate, 2)} ms | empty window "
        f"{fmt(launches['daemon-0']['terminate_ms'], 2)} ms; C floor {fmt(launches['floor']['terminate_ms'], 2)} ms | "
        f"{fmt(ratio(terminate, launches['daemon-0']['terminate_ms']), 1)}× empty | — | |")
    add(f"| terminate, per controller (10,000 − empty) / 10,000 | {fmt(per_controller, 0)} ns | | | — | |")
    add("")
    add(beside)
    add("")

    # 8. Services
    report_services(add, services, latency, launches, args)
    add("")
    add(beside)
    add("")

    if scaling is not None:
        report_scaling(add, scaling, benchmarks, args, beside)
    if control:
        report_control_load(add, control, args, beside)

    add("## Commands")
    add("")
    add(f"`{command}` ran these, each as often as the counts above say. `$SCRATCH` is `.build-bench`, `$BIN` its "
        "release folder (`swift build -c release --package-path Benchmarks --scratch-path .build-bench "
        "--show-bin-path`), `$CBIN` `$SCRATCH/c` (the C floor and probe, built with cc).")
    add("")
    add("```")
    seen = set()
    for entry in logs:
        shown = entry.replace(str(args.bin) + "/", "$BIN/").replace(str(args.c_bin) + "/", "$CBIN/")
        shown = shown.replace(str(args.scratch), "$SCRATCH").replace(str(args.root) + "/", "")
        if shown in seen:
            continue
        seen.add(shown)
        add(shown)
    add("```")
    add("")
    path.write_text("\n".join(lines))


def report_idle_mappings(add, idle, beside):
    """Without the RSS workload: where the idle run's lifecycled has its RSS."""
    add("")
    top, total = idle["mappings"]["lifecycled"]
    add(f"Where the demo daemon's RSS is ({fmt(total / 1024, 1)} MiB in `/proc/PID/smaps` of the idle run's "
        "`lifecycled --work-interval 0`, 1 s after READY=1; file-backed pages of shared libraries count in full):")
    add("")
    add("| mapping | RSS KiB | of which anonymous KiB |")
    add("|---|---|---|")
    for name, kib, anonymous in top:
        add(f"| {name} | {kib:,} | {anonymous:,} |")
    add("")
    add(beside)
    add("")


def plot(path, latency, machine, command):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"floor": "#4c72b0", "daemon": "#dd8452", "peer": "#55a868"}
    labels = {"floor": "C signalfd+epoll (floor)", "daemon": "lifecycled (Daemon.run)",
              "peer": "UnixSignalsSequence → @MainActor (peer)"}
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    for axis, (placement, receivers) in zip(axes, latency.items()):
        for name in ("floor", "daemon", "peer"):
            values = sorted(receivers[name]["samples"])
            if not values:
                continue
            count = len(values)
            axis.step(values, [(index + 1) / count for index in range(count)], where="post", color=colors[name],
                      label=f"{labels[name]}: p50 {receivers[name]['p50']:.1f} µs, "
                            f"p99 {receivers[name]['p99']:.1f} µs")
            axis.axvline(receivers[name]["p50"], color=colors[name], linestyle=":", linewidth=0.8)
        axis.set_xscale("log")
        axis.set_xlabel("sigqueue → first line of the callback (µs, log scale)")
        axis.set_title(f"{placement}")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(loc="lower right", fontsize=8)
    axes[0].set_ylabel("fraction of signals (CDF)")
    figure.suptitle(f"Signal latency CDF, {receivers['floor']['n']} signals per receiver", fontsize=12)
    figure.text(0.5, 0.005, f"{machine['short']} · {command} · commit {machine['commit']}", ha="center", fontsize=7)
    figure.tight_layout(rect=(0, 0.03, 1, 0.95))
    figure.savefig(path, dpi=110)
    plt.close(figure)


# ---------------------------------------------------------------------------------------------------------------


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--control-load":
        sys.exit(control_load_main(sys.argv[2:]))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", required=True, type=Path)
    parser.add_argument("--package", required=True, type=Path)
    parser.add_argument("--scratch", required=True, type=Path)
    parser.add_argument("--bin", required=True, type=Path, help="the release bin directory")
    parser.add_argument("--lifecycled", type=Path, default=None,
                        help="the lifecycled binary to measure (default: --bin's; scripts/bench passes the static one)")
    parser.add_argument("--c-bin", required=True, type=Path, help="where the C floor and probe were built")
    parser.add_argument("--out", required=True, type=Path, help="where results.md and latency.png go")
    parser.add_argument("--raw", required=True, type=Path, help="where raw data goes")
    parser.add_argument("--swift", default="swift")
    parser.add_argument("--signals", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--launch-runs", type=int, default=20)
    parser.add_argument("--settle-ms", type=int, default=200)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--control-idle", type=int, default=100, help="connections held open on the control socket")
    parser.add_argument("--control-busy", type=int, default=4,
                        help="connections sending malformed requests to the control socket")
    parser.add_argument("--control-rate", type=float, default=1000,
                        help="requests/s of the paced load (the other loaded run sends as fast as answered)")
    parser.add_argument("--idle-delay", type=float, default=2.0,
                        help="seconds from READY=1 to the idle window (after the stall detector's 1 s threshold)")
    parser.add_argument("--hello-service", type=Path, default=None,
                        help="the example's binary (Examples/HelloService), for the services figures")
    parser.add_argument("--example-cycles", type=int, default=200)
    parser.add_argument("--example-warmup", type=int, default=10)
    parser.add_argument("--example-settle-ms", type=int, default=30)
    parser.add_argument("--restarts", type=int, default=None,
                        help="restarts of the example under load, each way (default 50; 3 with --smoke)")
    parser.add_argument("--restart-warmup", type=int, default=1, help="first restarts discarded")
    parser.add_argument("--restart-settle-ms", type=int, default=300,
                        help="from a restart's READY=1 to the next signal: this, up to twice this")
    parser.add_argument("--restart-clients", type=int, default=8, help="client threads of the load")
    parser.add_argument("--round-trips", type=int, default=None,
                        help="background round trips under load (default 20; 2 with --smoke)")
    parser.add_argument("--background-ms", type=int, default=300, help="SIGUSR1 → SIGUSR2 of a round trip")
    parser.add_argument("--scaling-sizes", default="1000,10000,100000,1000000",
                        help="tree sizes of the scaling benchmark (the empty window is always measured)")
    parser.add_argument("--scaling-runs", type=int, default=15, help="scaling runs per size up to 10,000 (and empty)")
    parser.add_argument("--scaling-runs-100k", type=int, default=5, help="scaling runs per size up to 100,000")
    parser.add_argument("--scaling-runs-1m", type=int, default=3, help="scaling runs per larger size")
    parser.add_argument("--scaling-events", type=int, default=5,
                        help="memory warnings and reloads per scaling run (2 fewer at 1,000,000 and above)")
    parser.add_argument("--scaling-settle-ms", type=int, default=500)
    parser.add_argument("--scaling-nostall-sizes", default="100000,1000000",
                        help="sizes also measured without the stall detector ([Stall] Watch=no); empty: none")
    parser.add_argument("--rss-runs", type=int, default=5, help="runs of the RSS workload (lifecycled)")
    parser.add_argument("--rss-transitions", type=int, default=20, help="transitions of the RSS workload")
    parser.add_argument("--steady-runs", type=int, default=3, help="runs of the steady-state memory workload")
    parser.add_argument("--steady-transitions", type=int, default=1000,
                        help="transitions (lifecycled) or signals (floor, peer) before the steady-state memory")
    parser.add_argument("--only", choices=["services", "scaling"], default=None,
                        help="run only this measurement, print its figures and keep its raw data; no report")
    parser.add_argument("--smoke", action="store_true", help="tiny runs; checks that everything works")
    parser.add_argument("--command-line", default="scripts/bench")
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    args.raw.mkdir(parents=True, exist_ok=True)
    bins = {name: args.bin / f"lifecycle-bench-{name}" for name in ("daemon", "peer")}
    bins.update({name: args.c_bin / f"lifecycle-bench-{name}" for name in ("floor", "probe")})
    bins["lifecycled"] = args.lifecycled or args.bin / "lifecycled"
    if args.hello_service is not None and not args.hello_service.exists():
        sys.exit(f"bench.py: {args.hello_service} is missing; scripts/bench builds it")
    if args.restarts is None:
        args.restarts = 3 if args.smoke else 50
    if args.round_trips is None:
        args.round_trips = 2 if args.smoke else 20
    if args.only == "services":
        if args.hello_service is None:
            sys.exit("bench.py: --only services needs --hello-service")
        with open("/proc/loadavg") as handle:
            load_before = " ".join(handle.read().split()[:3])
        with tempfile.TemporaryDirectory(prefix="lifecycle-bench.") as tmp:
            os.environ["XDG_RUNTIME_DIR"] = tmp  # the daemon's control socket goes there, not into /run
            services = measure_services(args, tmp, [], args.raw)
        with open("/proc/loadavg") as handle:
            load_after = " ".join(handle.read().split()[:3])
        for key, label in (("stopped", "SIGUSR1 → accepting stops"),
                           ("answered", "SIGUSR2 → the waiting request answered")):
            row = services[key]
            print(f"{label}: n={row['n']} p50 {row['p50']:.3f} ms, p99 {row['p99']:.3f} ms, max {row['max']:.3f} ms")
        print_restarts(services["restarts"])
        print_restart_goals(services, None)
        print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}")
        return
    for name, path in bins.items():
        if not path.exists():
            sys.exit(f"bench.py: {path} is missing; scripts/bench builds it")
    if args.only == "scaling":
        with tempfile.TemporaryDirectory(prefix="lifecycle-bench.") as tmp:
            scaling = measure_scaling(bins, args, tmp, [], args.raw)
        for size in scaling["sizes"]:
            costs = scaling["by_size"][size]["per_controller_ns"]
            print(f"{size:>9,}: " + ", ".join(f"{key[:-3]} {value:,.0f} ns" for key, value in costs.items())
                  + f", RSS {scaling['by_size'][size]['rss_per_controller_b']:,.0f} B per controller")
        return
    env = dict(os.environ)
    if args.smoke:
        env["LIFECYCLE_BENCH_SMOKE"] = "1"

    machine = machine_description(args)
    print(f"machine: {machine['short']}", flush=True)
    logs = []
    with tempfile.TemporaryDirectory(prefix="lifecycle-bench.") as tmp:
        # Every daemon started here serves its control socket in $XDG_RUNTIME_DIR (run by hand): keep them in the
        # run's own folder, never the machine's /run.
        os.environ["XDG_RUNTIME_DIR"] = tmp
        print(f"1/8 signal latency: {args.signals} signals × 3 receivers × 2 placements", flush=True)
        latency = measure_latency(bins, args, tmp, logs, args.raw)
        print(f"2/8 launches: exec → READY=1, RSS, SIGTERM → exit, {args.launch_runs} runs × 6", flush=True)
        launches = measure_launches(bins, args, tmp, logs)
        print(f"3/8 RSS of lifecycled after READY=1 and after {args.rss_transitions} transitions, "
              f"{args.rss_runs} runs", flush=True)
        rss_workload = measure_rss_workload(bins, args, tmp, logs)
        print(f"3/8 steady-state memory: private and PSS after {args.steady_transitions} transitions, "
              f"ReleaseStartupPages yes and no, floor, peer, {args.steady_runs} runs", flush=True)
        rss_workload["steady"] = measure_steady_memory(bins, args, tmp, logs)
        print(f"4/8 idle: {args.idle_seconds} s", flush=True)
        idle = measure_idle(bins, args, tmp, logs)
        services = None
        if args.hello_service is not None:
            print(f"5/8 services: hello-service, {args.example_cycles} × SIGUSR1 → kept waiting, SIGUSR2 → answered; "
                  f"{args.restarts} restarts under load with the socket kept and without, {args.round_trips} round "
                  "trips", flush=True)
            services = measure_services(args, tmp, logs, args.raw)
        print(f"6/8 scaling: {args.scaling_sizes} controllers against an empty window", flush=True)
        scaling = measure_scaling(bins, args, tmp, logs, args.raw)
        print(f"7/8 signal latency with the control socket idle, paced and saturated: {args.signals} signals each",
              flush=True)
        control = measure_control_load(bins, args, tmp, logs, args.raw)
    print("8/8 in-process benchmarks (ordo-one/benchmark)", flush=True)
    benchmarks = in_process(run_benchmark_tool(args, args.raw, logs, env))

    results = args.out / "results.md"
    write_report(results, machine, args, latency, launches, idle, benchmarks, logs, services, scaling=scaling,
                 rss_workload=rss_workload, control=control)
    print(f"wrote {results}")
    print_restart_goals(services, launches)
    try:
        plot_scaling(args.out / "scaling.png", scaling, benchmarks, machine, args.command_line)
        print(f"wrote {args.out / 'scaling.png'}")
    except ImportError:
        if not args.smoke:
            raise
    try:
        plot(args.out / "latency.png", latency, machine, args.command_line)
        print(f"wrote {args.out / 'latency.png'}")
    except ImportError:
        if not args.smoke:
            raise
        print("matplotlib is not installed: no plot in a smoke run")


if __name__ == "__main__":
    main()
