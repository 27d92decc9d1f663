#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""results.md: the header (the machine, the load, the command), every benchmark's section in the order of
docs/benchmarks.md, and the commands that ran."""

import datetime
import os
import platform
import subprocess

from .control_load import report_control_load
from .idle import report_idle
from .inprocess import report_in_process
from .latency import report_latency
from .launches import report_launches
from .memory import report_memory
from .sessions import report_sessions
from .scaling import report_scaling
from .scenes import report_scenes
from .services import report_services

# The sections of results.md, in order. Each is `report_NAME(add, results, args, beside)`: it writes its lines with
# `add`, from `results`, every benchmark's figures by name (a section may quote another's as its baseline, or write
# nothing when its own were not measured), and ends with `beside`, the machine and the command, where it shows figures.
SECTIONS = [report_latency, report_in_process, report_memory, report_idle, report_launches, report_services,
            report_scaling, report_control_load, report_scenes, report_sessions]


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


def write_report(path, machine, args, results, logs):
    """Writes results.md: `results` holds every benchmark's figures by name (None for one not measured), `logs` the
    commands that ran, in order."""
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

    for section in SECTIONS:
        section(add, results, args, beside)

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
