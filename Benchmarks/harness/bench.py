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
    """hello-service, the example (a Hummingbird server hosted by a ServiceController): SIGUSR1 → its listener closed
    (a connect() is refused) and SIGUSR2 → listening again (a connect() succeeds), as connect_poller.py sees them
    from a process of its own, polling in a tight loop."""
    port = free_port()
    command = [str(args.hello_service), "--port", str(port)]
    listener = NotifyListener(tmp)
    process = start(command, {"NOTIFY_SOCKET": listener.path})
    log.append(f"NOTIFY_SOCKET=<harness socket> {quoted(command).replace(str(port), '<free port>')} &")
    poller_argv = [sys.executable, Path(__file__).resolve().with_name("connect_poller.py"), port]
    log.append(quoted(poller_argv).replace(str(port), "<free port>").replace(sys.executable, "python3")
               + "   # then, per transition: refused|accepting on stdin, kill(SIGUSR1|SIGUSR2) after its `polling`")
    poller = subprocess.Popen([str(a) for a in poller_argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, bufsize=1)
    transitions = [("closed", signal.SIGUSR1, "refused"), ("listening", signal.SIGUSR2, "accepting")]
    samples = {key: [] for key, _, _ in transitions}
    windows = {key: [] for key, _, _ in transitions}  # how late each figure may be, ms
    status = None
    try:
        listener.wait_for("READY=1")
        deadline = time.monotonic() + 10
        while True:  # the services start right after READY=1; the listener a moment later
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"hello-service does not listen on 127.0.0.1:{port}")
            time.sleep(0.01)
        listener.poll(0.2)
        for cycle in range(args.example_warmup + args.example_cycles):
            for key, signal_number, wanted in transitions:
                poller.stdin.write(wanted + "\n")
                poller.stdin.flush()
                answer = poller.stdout.readline().strip()
                if answer != "polling":
                    raise RuntimeError(f"connect poller, waiting for {wanted}: {answer or 'no answer'}")
                sent = time.monotonic_ns()
                os.kill(process.pid, signal_number)
                answer = poller.stdout.readline().split()
                if not answer or answer[0] == "error":
                    raise RuntimeError(f"connect poller, waiting for {wanted}: {' '.join(answer) or 'no answer'}")
                seen, window, _ = (int(value) for value in answer)
                if cycle >= args.example_warmup:
                    samples[key].append((seen - sent) / 1e6)
                    windows[key].append(min(window, seen - sent) / 1e6)
                # Let the transition finish (the drained run end, the new one settle) and read sd_notify's datagrams
                # meanwhile, so the notify socket's queue never fills; a jitter so no period lines up.
                listener.poll(args.example_settle_ms / 1000.0 * (1 + random.random()))
    finally:
        poller.stdin.close()
        try:
            poller.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(poller.pid, signal.SIGKILL)
            poller.wait()
        status = stop(process)
        listener.close()
    if status != 0:
        raise RuntimeError(f"hello-service exited with {status} after the services run")
    results = {}
    for key, _, _ in transitions:
        with open(raw / f"services-{key}-ms.txt", "w") as handle:
            handle.writelines(f"{value:.4f}\n" for value in samples[key])
        results[key] = dict(summary(samples[key]), samples=samples[key],
                            window_ms=statistics.median(windows[key]) if windows[key] else float("nan"))
    return results


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
    add("## 8. Services: the example's listener")
    add("")
    if services is None:
        add("Not measured: no `--hello-service` binary was given (`scripts/bench` builds Examples/HelloService).")
    else:
        add("`hello-service` (Examples/HelloService, release, the Swift runtime linked statically): a Hummingbird "
            "server hosted by a `ServiceController` (background policy `.drain`) on 127.0.0.1, idle, nothing "
            "pinned. The harness stamps `CLOCK_MONOTONIC` just before `kill()`; `connect_poller.py`, a process of "
            "its own, polls (an attempt every 50 µs) and stamps the first attempt that finds the new state: after SIGUSR1, no "
            "socket listening on the port (sock_diag, as `ss -lt` asks) and then a `connect()` refused "
            "(`ECONNREFUSED`); after SIGUSR2, a `connect()` that succeeds. "
            f"{args.example_cycles} cycles of SIGUSR1 then SIGUSR2 ({args.example_warmup} warm-up cycles discarded), "
            f"each signal {args.example_settle_ms}–{2 * args.example_settle_ms} ms after the previous change. A "
            "figure is late by at most its resolution window (from the start of the last attempt that still found "
            "the old state to the end of the first that found the new one).")
        add("")
        add("| transition | samples | p50 ms | p99 ms | max ms | resolution window, median ms | p50 ÷ plain signal "
            "latency p50 (same CPU; other CPU) |")
        add("|---|---|---|---|---|---|---|")
        plain = {placement: receivers["daemon"]["p50"] for placement, receivers in latency.items()}
        labels = [("closed", "SIGUSR1 → listener closed, a connect is refused (background: graceful shutdown)"),
                  ("listening", "SIGUSR2 → listening again, a connect succeeds (foreground: a new run binds)")]
        for key, label in labels:
            row = services[key]
            ratios = "; ".join(f"{fmt(ratio(row['p50'] * 1000, plain[placement]), 0)}×"
                               for placement in ("same CPU", "other CPU") if placement in plain)
            add(f"| {label} | {row['n']} | {fmt(row['p50'], 2)} | {fmt(row['p99'], 2)} | {fmt(row['max'], 2)} | "
                f"{fmt(row['window_ms'], 3)} | {ratios} |")
        add("")
        add("The plain signal latency of the same run (§1: `sigqueue` → the delegate's first callback in the "
            "lifecycled main loop), p50: " + "; ".join(f"{placement} {fmt(value)} µs" for placement, value in
                                                      plain.items())
            + ". The rest is the application's work: the background (or foreground) callbacks, the "
            "`ServiceController` shutting down (or starting) its `ServiceGroup`, and Hummingbird closing (or "
            "binding) its listening socket on its event loop.")
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
    if args.only == "services":
        if args.hello_service is None:
            sys.exit("bench.py: --only services needs --hello-service")
        with tempfile.TemporaryDirectory(prefix="lifecycle-bench.") as tmp:
            os.environ["XDG_RUNTIME_DIR"] = tmp  # the daemon's control socket goes there, not into /run
            services = measure_services(args, tmp, [], args.raw)
        for key, label in (("closed", "SIGUSR1 → listener closed"), ("listening", "SIGUSR2 → listening again")):
            row = services[key]
            print(f"{label}: n={row['n']} p50 {row['p50']:.3f} ms, p99 {row['p99']:.3f} ms, max {row['max']:.3f} ms "
                  f"(median resolution window {row['window_ms']:.3f} ms)")
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
            print(f"5/8 services: hello-service, {args.example_cycles} × SIGUSR1 → refused, SIGUSR2 → accepted",
                  flush=True)
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
