#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""2. Fan-out, push/pop, layout, and 3's bytes per controller: the in-process benchmarks of
Benchmarks/Benchmarks/LifecycleBenchmarks (ordo-one/benchmark), run through `swift package benchmark`; their medians."""

import csv
import subprocess

from .processes import quoted
from .stats import fmt, ratio, verdict


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


def report_in_process(add, results, args, beside):
    """Section 2: the fan-out per controller against the plain loop, the informative variants, push/pop, layout."""
    benchmarks = results["benchmarks"]
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
