#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""11. Scenes: `lifecycle-bench-scenes` (Benchmarks/Sources/BenchScenes) in processes of its own, each run one
measurement printed as a line of JSON, beside its plain-Swift twin run the same way; the medians of the runs.

- connect + disconnect: a new session's scene connected into the foreground (one request and turn each, as a server
  does per client), then disconnected (its state kept in its session); nanoseconds per scene each way, for rounds of
  a few scenes and of many (each turn's passes look at every connected scene's window, so a connection among many
  costs more). The twin makes the same objects (a session record, two linked nodes each with a view) and as many
  calls as the lifecycle counted.
- memory: the C heap's bytes in use (glibc's `mallinfo2`, every Swift object included) per connected session, then per
  session once every scene is disconnected (what the session and its saved tree keep), and what a disconnection gives
  back; the twin's per unit.
- fan-out: a memory warning, and a background + foreground round trip (SIGUSR1 + SIGUSR2), through 1, 100 and 10,000
  connected scenes; nanoseconds per scene per event, beside a plain loop making the same number of calls per scene on
  the same shape of objects.
"""

import json
import os
import statistics

from .processes import quoted, run
from .stats import fmt, ratio


def _run(binary, arguments, log, raw_lines, env_extra=None):
    """One run of the benchmark binary (logged, with what the environment adds); its figures (one JSON object)."""
    argv = [binary] + list(arguments)
    shown = quoted(argv)
    if env_extra:
        shown = " ".join(f"{key}=<the lifecycle run's {key.lower()}>" for key in env_extra) + " " + shown
    env = dict(os.environ)
    env.update(env_extra or {})
    output = run(argv, log, shown=shown, env=env)
    figures = json.loads(output.strip().splitlines()[-1])
    raw_lines.append(json.dumps({"arguments": [str(a) for a in arguments], "env": env_extra or {}, "figures": figures}))
    return figures


def _plural(count, noun):
    """`1 scene`, `10,000 scenes`."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _medians(rows):
    return {key: statistics.median(row[key] for row in rows) for key in rows[0]}


def measure_scenes(bins, args, tmp, log, raw):
    """Runs every measurement `args.scene_runs` times, each in a fresh process; returns the medians."""
    binary = bins["scenes"]
    runs = args.scene_runs
    raw_lines = []
    connect = {}
    for size in [int(s) for s in args.scene_connect.split(",") if s]:
        # At least 1,000 connections a run, whatever the round's size.
        rounds = max(args.scene_rounds, -(-1000 // size)) if not args.smoke else args.scene_rounds
        lifecycle = _medians([_run(binary, ["connect", size, rounds], log, raw_lines) for _ in range(runs)])
        calls = f"{round(lifecycle['connectCallbacks'])},{round(lifecycle['disconnectCallbacks'])}"
        plain = _medians([
            _run(binary, ["plain", "connect", size, rounds], log, raw_lines, {"CALLBACKS": calls}) for _ in range(runs)
        ])
        connect[size] = {"lifecycle": lifecycle, "plain": plain, "rounds": rounds}
    memory = _medians([_run(binary, ["memory", args.scene_sessions], log, raw_lines) for _ in range(runs)])
    plain_memory = _medians([_run(binary, ["plain", "memory", args.scene_sessions, 1], log, raw_lines)
                             for _ in range(runs)])
    fanout = {}
    for size in [int(s) for s in args.scene_sizes.split(",") if s]:
        events = max(1, args.scene_events // size)
        lifecycle = _medians([_run(binary, ["fanout", size, events], log, raw_lines) for _ in range(runs)])
        plain = {}
        for name, key in (("warning", "memoryWarningCallbacks"), ("roundTrip", "roundTripCallbacks")):
            plain[name] = _medians([
                _run(binary, ["plain", "fanout", size, events], log, raw_lines, {"CALLBACKS": str(lifecycle[key])})
                for _ in range(runs)
            ])
        fanout[size] = {"lifecycle": lifecycle, "plain": plain, "events": events}
    with open(raw / "scenes.jsonl", "w") as handle:
        handle.write("\n".join(raw_lines) + "\n")
    return {"connect": connect, "memory": memory, "plain_memory": plain_memory, "fanout": fanout, "runs": runs}


def print_scenes(scenes):
    """`bench.py --only scenes`: the figures, one line each."""
    for line in scene_lines(scenes):
        print(line)


def scene_lines(scenes):
    memory, plain_memory = scenes["memory"], scenes["plain_memory"]
    lines = []
    for size, row in sorted(scenes["connect"].items()):
        life, plain = row["lifecycle"], row["plain"]
        lines.append(
            f"rounds of {size:,} scenes: connect {fmt(life['connectNs'] / 1000, 1)} µs per scene "
            f"({fmt(life['connectCallbacks'], 0)} callbacks; plain {fmt(plain['connectNs'] / 1000, 2)} µs), "
            f"disconnect {fmt(life['disconnectNs'] / 1000, 1)} µs ({fmt(life['disconnectCallbacks'], 0)} "
            f"callbacks; plain {fmt(plain['disconnectNs'] / 1000, 2)} µs)"
        )
    lines.append(
        f"memory: {fmt(memory['connectedBytes'], 0)} B per connected session "
        f"(plain {fmt(plain_memory['connectedBytes'], 0)} B), {fmt(memory['disconnectedBytes'], 0)} B per "
        f"disconnected one (plain {fmt(plain_memory['disconnectedBytes'], 0)} B); a disconnection gives back "
        f"{fmt(memory['releasedBytes'], 0)} B"
    )
    for size, row in sorted(scenes["fanout"].items()):
        life, plain = row["lifecycle"], row["plain"]
        warning, trip = plain["warning"]["ns"], plain["roundTrip"]["ns"]
        lines.append(
            f"fan-out to {_plural(size, 'scene')}: memory warning {fmt(life['memoryWarningNs'], 0)} ns per scene "
            f"(plain {fmt(warning, 1)} ns, {fmt(ratio(life['memoryWarningNs'], warning), 0)}×); background + "
            f"foreground {fmt(life['roundTripNs'], 0)} ns per scene (plain {fmt(trip, 1)} ns, "
            f"{fmt(ratio(life['roundTripNs'], trip), 0)}×)"
        )
    return lines


def report_scenes(add, results, args, beside):
    """Section 11: per scene, each figure beside its plain twin of the same run; no goal was set, none is judged."""
    scenes = results.get("scenes")
    if not scenes:
        return
    memory, plain_memory = scenes["memory"], scenes["plain_memory"]
    add("## 11. Scenes")
    add("")
    add(f"`lifecycle-bench-scenes`, in-process, each measurement in a process of its own, medians of "
        f"{_plural(scenes['runs'], 'run')}. Every scene has the scene service's tree (a root controller with a label "
        "view and one child, each with its view); the application traces as the daemon on a terminal (the "
        "delegates' events, the scene delegates' among them, rendered at info). The plain twin does the same work on "
        "plain class instances: the same objects, as many calls as the lifecycle counted.")
    add("")
    add("| figure | LifecycleKit | plain Swift twin | ratio |")
    add("|---|---|---|---|")
    for size, row in sorted(scenes["connect"].items()):
        life, plain = row["lifecycle"], row["plain"]
        add(f"| connect a new session's scene into the foreground, one request and turn, in rounds of {size:,} "
            f"({_plural(row['rounds'], 'round')}) | {fmt(life['connectNs'] / 1000, 1)} µs per scene "
            f"({fmt(life['connectCallbacks'], 0)} callbacks) | {fmt(plain['connectNs'] / 1000, 2)} µs | "
            f"{fmt(ratio(life['connectNs'], plain['connectNs']), 0)}× |")
        add(f"| then disconnect each (its tree's state kept in its session) | "
            f"{fmt(life['disconnectNs'] / 1000, 1)} µs per scene ({fmt(life['disconnectCallbacks'], 0)} callbacks) | "
            f"{fmt(plain['disconnectNs'] / 1000, 2)} µs | "
            f"{fmt(ratio(life['disconnectNs'], plain['disconnectNs']), 0)}× |")
    connected, disconnected = memory["connectedBytes"], memory["disconnectedBytes"]
    add(f"| heap per connected session ({args.scene_sessions:,} sessions; RSS {fmt(memory['connectedRssBytes'], 0)} "
        f"B) | {fmt(connected, 0)} B | {fmt(plain_memory['connectedBytes'], 0)} B | "
        f"{fmt(ratio(connected, plain_memory['connectedBytes']), 1)}× |")
    add(f"| heap per disconnected session (the session and its saved tree) | {fmt(disconnected, 0)} B | "
        f"{fmt(plain_memory['disconnectedBytes'], 0)} B | "
        f"{fmt(ratio(disconnected, plain_memory['disconnectedBytes']), 1)}× |")
    add(f"| heap a disconnection gives back, per scene | {fmt(memory['releasedBytes'], 0)} B | | |")
    for size, row in sorted(scenes["fanout"].items()):
        life, plain = row["lifecycle"], row["plain"]
        warning, trip = plain["warning"]["ns"], plain["roundTrip"]["ns"]
        add(f"| a memory warning through {_plural(size, 'scene')}, per scene ({_plural(row['events'], 'event')}) | "
            f"{fmt(life['memoryWarningNs'], 0)} ns ({fmt(life['memoryWarningCallbacks'], 0)} callbacks) | "
            f"{fmt(warning, 1)} ns | {fmt(ratio(life['memoryWarningNs'], warning), 0)}× |")
        add(f"| a background + foreground round trip through {_plural(size, 'scene')}, per scene | "
            f"{fmt(life['roundTripNs'], 0)} ns ({fmt(life['roundTripCallbacks'], 0)} callbacks) | {fmt(trip, 1)} ns | "
            f"{fmt(ratio(life['roundTripNs'], trip), 0)}× |")
    add("")
    add(beside)
    add("")
