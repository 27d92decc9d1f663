#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""bench.py's command line: the options, the order the benchmarks run in, results.md and the plots; `--only` runs
one benchmark and prints its figures; `--control-load` is the load generator of 10, in a process of its own."""

import argparse
import os
import sys
import tempfile
from pathlib import Path

from .control_load import control_load_main, measure_control_load
from .idle import measure_idle, print_idle
from .inprocess import in_process, run_benchmark_tool
from .latency import measure_latency, plot_latency
from .launches import measure_launches
from .memory import measure_rss_workload, measure_steady_memory
from .report import machine_description, write_report
from .scaling import measure_scaling, plot_scaling
from .scenes import measure_scenes, print_scenes
from .services import measure_services, print_restart_goals, print_restarts
from .sessions import measure_sessions, print_sessions


def main(description):
    """Runs what the command line asks; `description` is bench.py's, for --help."""
    if len(sys.argv) > 1 and sys.argv[1] == "--control-load":
        sys.exit(control_load_main(sys.argv[2:]))
    parser = argparse.ArgumentParser(description=description)
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
    parser.add_argument("--restarts", type=int, default=None,
                        help="restarts of the example under load, each way (default 50; 3 with --smoke)")
    parser.add_argument("--restart-warmup", type=int, default=1, help="first restarts discarded")
    parser.add_argument("--restart-settle-ms", type=int, default=300,
                        help="from a restart's READY=1 to the next signal: this, up to twice this")
    parser.add_argument("--restart-clients", type=int, default=8, help="client threads of the load")
    parser.add_argument("--round-trips", type=int, default=None,
                        help="background round trips under load (default 20; 2 with --smoke)")
    parser.add_argument("--background-ms", type=int, default=300, help="SIGUSR1 → SIGUSR2 of a round trip")
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
    parser.add_argument("--scene-sizes", default="1,100,10000",
                        help="connected scenes a process-level event fans out to (the scenes benchmark)")
    parser.add_argument("--scene-events", type=int, default=20000,
                        help="scene-events per fan-out run: the events of a run are this divided by the scenes")
    parser.add_argument("--scene-connect", default="10,1000",
                        help="scenes connected, then disconnected, per round; one measurement per size")
    parser.add_argument("--scene-rounds", type=int, default=5,
                        help="rounds of connections and disconnections (more for small rounds: 1,000 connections a run)")
    parser.add_argument("--scene-sessions", type=int, default=10000, help="sessions of the memory measurement")
    parser.add_argument("--scene-runs", type=int, default=5, help="runs of each scenes measurement (medians)")
    parser.add_argument("--sessions", type=int, default=None,
                        help="WebSocket sessions of the sessions benchmark (default 1000; 50 with --smoke)")
    parser.add_argument("--session-restarts", type=int, default=None,
                        help="SIGTERM restarts of each sessions server (default 20; 2 with --smoke)")
    parser.add_argument("--session-kills", type=int, default=None,
                        help="SIGKILLs of the sessions endpoint (default 5; 1 with --smoke)")
    parser.add_argument("--only", choices=["services", "scaling", "idle", "scenes", "sessions"], default=None,
                        help="run only this measurement, print its figures and keep its raw data; no report")
    parser.add_argument("--smoke", action="store_true", help="tiny runs; checks that everything works")
    parser.add_argument("--command-line", default="scripts/bench")
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    args.raw.mkdir(parents=True, exist_ok=True)
    bins = {name: args.bin / f"lifecycle-bench-{name}" for name in ("daemon", "peer")}
    bins.update({name: args.c_bin / f"lifecycle-bench-{name}" for name in ("floor", "probe")})
    bins["lifecycled"] = args.lifecycled or args.bin / "lifecycled"
    bins["scenes"] = args.bin / "lifecycle-bench-scenes"
    if args.hello_service is not None and not args.hello_service.exists():
        sys.exit(f"bench.py: {args.hello_service} is missing; scripts/bench builds it")
    if args.restarts is None:
        args.restarts = 3 if args.smoke else 50
    if args.round_trips is None:
        args.round_trips = 2 if args.smoke else 20
    if args.only == "scenes":
        # In-process: its one binary, no daemon, no socket.
        if not bins["scenes"].exists():
            sys.exit(f"bench.py: {bins['scenes']} is missing; scripts/bench builds it")
        print_scenes(measure_scenes(bins, args, None, [], args.raw))
        return
    if args.sessions is None:
        args.sessions = 50 if args.smoke else 1000
    if args.session_restarts is None:
        args.session_restarts = 2 if args.smoke else 20
    if args.session_kills is None:
        args.session_kills = 1 if args.smoke else 5
    if args.only == "sessions":
        if args.hello_service is None:
            sys.exit("bench.py: --only sessions needs --hello-service")
        with tempfile.TemporaryDirectory(prefix="lifecycle-bench.") as tmp:
            os.environ["XDG_RUNTIME_DIR"] = tmp
            print_sessions(measure_sessions(args, tmp, [], args.raw))
        return
    if args.only == "services":
        if args.hello_service is None:
            sys.exit("bench.py: --only services needs --hello-service")
        with open("/proc/loadavg") as handle:
            load_before = " ".join(handle.read().split()[:3])
        with tempfile.TemporaryDirectory(prefix="lifecycle-bench.") as tmp:
            os.environ["XDG_RUNTIME_DIR"] = tmp  # the daemon's control socket goes there, not into /run
            services = measure_services(args, tmp, [], args.raw)
        with open("/proc/loadavg") as handle:
            load_after = " ".join(handle.read().split()[:3])
        for key, label in (("stopped", "SIGUSR1 → accepting stops"),
                           ("answered", "SIGUSR2 → the waiting request answered")):
            row = services[key]
            print(f"{label}: n={row['n']} p50 {row['p50']:.3f} ms, p99 {row['p99']:.3f} ms, max {row['max']:.3f} ms")
        print_restarts(services["restarts"])
        print_restart_goals(services, None)
        print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}")
        return
    for name, path in bins.items():
        if not path.exists():
            sys.exit(f"bench.py: {path} is missing; scripts/bench builds it")
    if args.only == "idle":
        with tempfile.TemporaryDirectory(prefix="lifecycle-bench.") as tmp:
            os.environ["XDG_RUNTIME_DIR"] = tmp  # the daemons' control sockets go there, not into /run
            print_idle(measure_idle(bins, args, tmp, []))
        return
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
        print(f"1/9 signal latency: {args.signals} signals × 3 receivers × 2 placements", flush=True)
        latency = measure_latency(bins, args, tmp, logs, args.raw)
        print(f"2/9 launches: exec → READY=1, RSS, SIGTERM → exit, {args.launch_runs} runs × 6", flush=True)
        launches = measure_launches(bins, args, tmp, logs)
        print(f"3/9 RSS of lifecycled after READY=1 and after {args.rss_transitions} transitions, "
              f"{args.rss_runs} runs", flush=True)
        rss_workload = measure_rss_workload(bins, args, tmp, logs)
        print(f"3/9 steady-state memory: private and PSS after {args.steady_transitions} transitions, "
              f"ReleaseStartupPages yes and no, floor, peer, {args.steady_runs} runs", flush=True)
        rss_workload["steady"] = measure_steady_memory(bins, args, tmp, logs)
        print(f"4/9 idle: {args.idle_seconds} s", flush=True)
        idle = measure_idle(bins, args, tmp, logs)
        services = None
        if args.hello_service is not None:
            print(f"5/9 services: hello-service, {args.example_cycles} × SIGUSR1 → kept waiting, SIGUSR2 → answered; "
                  f"{args.restarts} restarts under load with the socket kept and without, {args.round_trips} round "
                  "trips", flush=True)
            services = measure_services(args, tmp, logs, args.raw)
        sessions = None
        if args.hello_service is not None:
            print(f"5/9 sessions: {args.sessions} WebSocket sessions through {args.session_restarts} restarts and "
                  f"{args.session_kills} SIGKILLs, beside plain hummingbird-websocket", flush=True)
            sessions = measure_sessions(args, tmp, logs, args.raw)
        print(f"6/9 scaling: {args.scaling_sizes} controllers against an empty window", flush=True)
        scaling = measure_scaling(bins, args, tmp, logs, args.raw)
        print(f"7/9 signal latency with the control socket idle, paced and saturated: {args.signals} signals each",
              flush=True)
        control = measure_control_load(bins, args, tmp, logs, args.raw)
    print(f"8/9 scenes: connect + disconnect, memory per session, fan-out to {args.scene_sizes.replace(',', ', ')} "
          f"scenes, {args.scene_runs} run(s) each", flush=True)
    scenes = measure_scenes(bins, args, None, logs, args.raw)
    print("9/9 in-process benchmarks (ordo-one/benchmark)", flush=True)
    benchmarks = in_process(run_benchmark_tool(args, args.raw, logs, env))

    results = {"latency": latency, "launches": launches, "rss_workload": rss_workload, "idle": idle,
               "benchmarks": benchmarks, "services": services, "scaling": scaling, "control": control,
               "scenes": scenes, "sessions": sessions}
    report = args.out / "results.md"
    write_report(report, machine, args, results, logs)
    print(f"wrote {report}")
    print_restart_goals(services, launches)
    try:
        plot_scaling(args.out / "scaling.png", scaling, benchmarks, machine, args.command_line)
        print(f"wrote {args.out / 'scaling.png'}")
    except ImportError:
        if not args.smoke:
            raise
    try:
        plot_latency(args.out / "latency.png", latency, machine, args.command_line)
        print(f"wrote {args.out / 'latency.png'}")
    except ImportError:
        if not args.smoke:
            raise
        print("matplotlib is not installed: no plot in a smoke run")
