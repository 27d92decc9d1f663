#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""9. Scaling: launch, fan-out, layout pass and terminate per controller, 1,000 to 1,000,000 controllers, against an
empty window in the same run (one daemon per run, `lifecycle-bench-probe scaling`), and scaling.png."""

import os
import statistics

from .inprocess import in_process_fanout_per_instance
from .plots import pyplot, save_figure
from .processes import quoted, run
from .stats import fmt, ratio, verdict


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


def report_scaling(add, results, args, beside):
    """Section 9 (none when scaling was not measured): the cost per controller at each size, the medians, the goals,
    what the stall detector costs, the fan-out beside the in-process benchmark."""
    scaling, benchmarks = results.get("scaling"), results["benchmarks"]
    if scaling is None:
        return
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
    """scaling.png: the cost per controller of each operation against the tree size, log-log."""
    plt = pyplot()
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
    save_figure(plt, figure, path, machine, command, top=0.96)
