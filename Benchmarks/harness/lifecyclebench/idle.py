#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""4. Idle: the floor, the peer and lifecycled (watchdog off, then on) idle side by side; context switches and CPU
time per thread over the window, from /proc/PID/task/*."""

import os
import subprocess
import time

from .processes import NotifyListener, quoted, rss_by_mapping, start, stop
from .stats import fmt, verdict


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
        results["delay"] = args.idle_delay
        return results
    finally:
        for name, process, listener in running:
            status = stop(process)
            listener.close()
            if status != 0:
                raise RuntimeError(f"{name} exited with {status} after the idle window")


def report_idle(add, results, args, beside):
    """Section 4: per process and per thread, in the window and while settling; what lifecycled logged meanwhile."""
    idle = results["idle"]
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


def print_idle(idle):
    """The idle window's figures on stdout (`--only idle`): per process, the switches in the window per thread (in
    parentheses, while settling), the CPU time, the watchdog pings, what lifecycled logged meanwhile."""
    print(f"idle window: {idle['seconds']:.1f} s, from {idle['delay']:g} s after READY=1")
    for name in ("floor", "peer", "lifecycled", "lifecycled-watchdog"):
        row = idle[name]
        plus = "+" if row["exited"] else ""
        settling = dict(row["settling_by_thread"])
        threads = ", ".join(f"{label} {count} ({settling.get(label, '—')})" for label, count in row["by_thread"])
        logged = " · ".join(row["logged"]) or "nothing"
        print(f"{name}: {row['switches']}{plus} context switches ({threads}), CPU {row['cpu_us']:,.0f}{plus} µs, "
              f"{row['pings']} watchdog pings; logged {logged}")
