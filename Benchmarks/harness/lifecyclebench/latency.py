#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""1. Signal → first callback latency, and 7. its CDF (latency.png): the C floor, lifecycled's main loop and the
swift-service-lifecycle peer, each receiver pinned to CPU 0, the sender on the same CPU or the other one."""

import os
import time

from .plots import pyplot, save_figure
from .processes import NotifyListener, quoted, run, start, stop
from .stats import fmt, ratio, summary, verdict


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


def report_latency(add, results, args, beside):
    """Section 1: the three receivers in both placements, against the floor, and the goals."""
    latency = results["latency"]
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


def plot_latency(path, latency, machine, command):
    """latency.png: the CDF of every receiver's samples, one panel per placement."""
    plt = pyplot()
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
    save_figure(plt, figure, path, machine, command, top=0.95)
