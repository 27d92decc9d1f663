#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""5. Startup and 6. Terminate (and the RSS of 3): `lifecycle-bench-probe launch` runs each subject again and again,
exec → READY=1, its RSS, then SIGTERM → exit."""

import os
import statistics

from .processes import quoted, run
from .stats import fmt, percentile, ratio, verdict


def measure_launches(bins, args, tmp, log):
    # The empty window once more without the memory pressure trigger: closing a PSI trigger waits for an RCU grace
    # period, and the process exits only once that close has returned (docs/benchmarks.md, "Terminate").
    no_psi = os.path.join(tmp, "no-memory-pressure.conf")
    with open(no_psi, "w") as handle:
        handle.write("[MemoryPressure]\nWatch=no\n")
    # Issue 31: the trigger's descriptor is kept in the file descriptor store (the probe holds what FDSTORE=1 sends until
    # the exit was timed, as systemd holds it until the service stops), so the exiting process's close is not the last.
    # Without the store the exiting process closes the last copy, as before.
    no_store = os.path.join(tmp, "no-fd-store.conf")
    with open(no_store, "w") as handle:
        handle.write("[State]\nFileDescriptorStore=no\n")
    # And with a state directory: the run record at launch and the exit record at exit (docs/restoration.md).
    records = os.path.join(tmp, "run-records")
    os.makedirs(records, exist_ok=True)
    subjects = [
        ("floor", [bins["floor"]]),
        ("peer", [bins["peer"]]),
        ("lifecycled", [bins["lifecycled"], "--work-interval", "0"]),
        ("daemon-0", [bins["daemon"]]),
        ("daemon-0-no-psi", [bins["daemon"], "--config", no_psi]),
        ("daemon-0-no-store", [bins["daemon"], "--config", no_store]),
        ("daemon-0-records", [bins["daemon"], "--state-directory", records]),
        ("daemon-10000", [bins["daemon"], "--controllers", "10000"]),
    ]
    results = {}
    for name, command in subjects:
        argv = [bins["probe"], "launch", "--runs", args.launch_runs, "--settle-ms", args.settle_ms, "--"] + command
        shown = quoted(argv).replace(no_psi, "<[MemoryPressure] Watch=no>").replace(no_store, "<[State] FileDescriptorStore=no>")
        out = run(argv, log, shown=shown.replace(records, "<a state directory>"))
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


def report_launches(add, results, args, beside):
    """Sections 5 and 6: every subject's medians, then the goals against the floor and the peer."""
    launches = results["launches"]
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
                     ("daemon-0-no-store", "bench daemon, empty window, `[State] FileDescriptorStore=no` (the trigger's "
                      "last close in the exit, as before issue 31)"),
                     ("daemon-0-records", "bench daemon, empty window, with a state directory (run and exit records)"),
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
    no_store_exit = launches["daemon-0-no-store"]["terminate_ms"]
    add(f"| the trigger closed by the exiting process (`[State] FileDescriptorStore=no`), SIGTERM → exit (p90) | "
        f"{fmt(no_store_exit, 2)} ms ({fmt(launches['daemon-0-no-store']['terminate_p90_ms'], 2)}) | kept in the store "
        f"{fmt(empty_exit, 2)} ms | {fmt(ratio(no_store_exit, empty_exit), 1)}× kept | — (what keeping the trigger in the "
        "file descriptor store saves an exit) | |")
    records_exit = launches["daemon-0-records"]["terminate_ms"]
    add(f"| with the run record and the exit record (a state directory), SIGTERM → exit (p90) | "
        f"{fmt(records_exit, 2)} ms ({fmt(launches['daemon-0-records']['terminate_p90_ms'], 2)}) | without "
        f"{fmt(empty_exit, 2)} ms | {fmt(ratio(records_exit, empty_exit), 2)}× without | the exit record does not "
        f"lengthen the exit | |")
    add(f"| terminate with 10,000 controllers, SIGTERM → exit | {fmt(terminate, 2)} ms | empty window "
        f"{fmt(launches['daemon-0']['terminate_ms'], 2)} ms; C floor {fmt(launches['floor']['terminate_ms'], 2)} ms | "
        f"{fmt(ratio(terminate, launches['daemon-0']['terminate_ms']), 1)}× empty | — | |")
    add(f"| terminate, per controller (10,000 − empty) / 10,000 | {fmt(per_controller, 0)} ns | | | — | |")
    add("")
    add(beside)
    add("")
