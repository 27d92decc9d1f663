#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""3. Memory: lifecycled's RSS after READY=1 and after a workload of transitions, with the smaps breakdown; its private
memory and PSS in the steady state beside the floor and the peer. The section also shows the in-process bytes per
controller (2's benchmark tool) and the RSS of 5's launches."""

import os
import signal
import statistics
import time

from .processes import NotifyListener, quoted, rss_by_mapping, start, stop
from .stats import fmt, ratio, verdict


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


def report_memory(add, results, args, beside):
    """Section 3: bytes per controller (in-process), RSS of the demo daemon after READY=1 and after the workloads, the
    steady state, where the RSS is."""
    benchmarks, launches = results["benchmarks"], results["launches"]
    rss_workload, idle = results.get("rss_workload"), results["idle"]
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
