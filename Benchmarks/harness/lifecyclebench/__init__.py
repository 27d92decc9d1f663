#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""The benchmark harness behind scripts/bench, whose entry point is ../bench.py (`bench.py --help`): one module per
benchmark of docs/benchmarks.md, and the harness they share. Standard library only, plus matplotlib for the plots.

The harness, shared by every benchmark (each helper lives in exactly one of these):

    processes.py   start and stop (by PID), the environment they start with, the NOTIFY_SOCKET listener (sd_notify
                   datagrams with their arrival), run (a command, logged for the Commands section), quoted,
                   rss_by_mapping; the harness's paths
    stats.py       percentile (nearest rank), summary, percentiles, ratio; fmt and verdict (a figure, a goal met)
    plots.py       matplotlib without a display, and what every plot has under it
    report.py      results.md: the header, SECTIONS (every benchmark's section, in order), the commands that ran
    cli.py         the command line, the order the benchmarks run in, the plots; --only, --control-load

The benchmarks, one module each (the numbers are the sections of docs/benchmarks.md and results.md):

    latency.py (1, 7)   inprocess.py (2)   memory.py (3)   idle.py (4)   launches.py (5, 6)   services.py (8)
    scaling.py (9)      control_load.py (10)   scenes.py (11)   sessions.py (12)

Each has `measure_NAME(...)`, which starts what it measures, ends it, and returns its figures, and
`report_NAME(add, results, args, beside)`, which writes its section of results.md with `add` from `results`, the
figures of every benchmark by name (results["NAME"]; another benchmark's figures are its same-run baseline).

To add a benchmark (WebSocket sessions, the exit record):

1. Write NAME.py, with the license header: `measure_NAME(bins, args, tmp, log, raw)` starts its processes with
   processes.start (or run for a command that ends by itself), ends each by its PID with processes.stop, reads
   sd_notify through a NotifyListener, logs every command it runs (run does; `log.append(...)` for a process it starts),
   keeps its raw samples under `raw`, and returns its figures. `report_NAME(add, results, args, beside)` writes its
   section: every figure beside a baseline of the same run, a goal as a row marked with verdict(...). A benchmark
   measures; it never asserts a time.
2. In cli.py: its options (argparse), and a step in main() that measures it and puts its figures in `results`;
   in scripts/bench, its small counts for --smoke.
3. In report.py: report_NAME in SECTIONS, where its section goes.
4. In docs/benchmarks.md: its row of "What is measured, and how", its paragraph, its module in "Files".

Anything two benchmarks need goes into the shared modules above, not into a copy.
"""
