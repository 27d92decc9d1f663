#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""8. Services: the example (Examples/HelloService) as its clients see it: idle, SIGUSR1 → accepting stops and SIGUSR2
→ the waiting request answered; under a client load, restarts with the listening socket kept (the harness plays
systemd and its socket unit) beside the same binary binding its own socket, and background round trips."""

import datetime
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from .processes import (HARNESS, REPOSITORY, NotifyListener, environment_without_service_manager, quoted, start,
                        stop)
from .stats import fmt, percentile, percentiles, ratio, summary, verdict


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def measure_services(args, tmp, log, raw):
    """hello-service, the example (a Hummingbird server hosted by a ServiceController), as its clients see it: idle,
    SIGUSR1 → accepting stops and SIGUSR2 → the request that waited is answered (`measure_pause`); under a client load,
    restarts with the listening socket kept and background round trips, beside restarts of the same binary binding
    its own socket (`measure_restarts`)."""
    results = measure_pause(args, tmp, log, raw)
    results["restarts"] = measure_restarts(args, tmp, log, raw)
    return results


def measure_pause(args, tmp, log, raw):
    """Idle, signal → effect: SIGUSR1 → the first request kept waiting (the server stopped accepting; its socket stays
    open, the pause policy) and SIGUSR2 → that request answered, as request_poller.py sees them from a process of its
    own, sending request after request."""
    port = free_port()
    command = [str(args.hello_service), "--port", str(port)]
    listener = NotifyListener(tmp)
    process = start(command, {"NOTIFY_SOCKET": listener.path})
    log.append(f"NOTIFY_SOCKET=<harness socket> {quoted(command).replace(str(port), '<free port>')} &")
    poller_argv = [sys.executable, HARNESS / "request_poller.py", port]
    log.append(quoted(poller_argv).replace(str(port), "<free port>").replace(sys.executable, "python3")
               + "   # then, per cycle: stop, kill(SIGUSR1) after its `polling`; resume, kill(SIGUSR2) after its "
               "`polling`")
    poller = subprocess.Popen([str(a) for a in poller_argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, bufsize=1)

    def tell(command):
        poller.stdin.write(command + "\n")
        poller.stdin.flush()

    def answer(what):
        words = poller.stdout.readline().split()
        if not words or words[0] == "error":
            raise RuntimeError(f"request poller, {what}: {' '.join(words) or 'no answer'}")
        return words

    samples = {"stopped": [], "answered": []}
    windows = []  # how late each SIGUSR1 figure may be, ms
    void = 0
    status = None
    try:
        listener.wait_for("READY=1")
        tell("serving")
        answer("serving")
        listener.poll(0.2)
        for cycle in range(args.example_warmup + args.example_cycles):
            tell("stop")
            if answer("stop")[0] != "polling":
                raise RuntimeError("request poller, stop: no `polling`")
            sent = time.monotonic_ns()
            os.kill(process.pid, signal.SIGUSR1)
            began, window, _ = (int(value) for value in answer("a request kept waiting"))
            # Let the background settle (the run's drain end) and read sd_notify's datagrams meanwhile, so the notify
            # socket's queue never fills; a jitter so no period lines up.
            listener.poll(args.example_settle_ms / 1000.0 * (1 + random.random()))
            tell("resume")
            words = answer("resume")
            if words[0] == "early":
                # The kept request was slow, not waiting: this cycle says nothing. Back to the foreground.
                os.kill(process.pid, signal.SIGUSR2)
                tell("serving")
                answer("serving")
                void += cycle >= args.example_warmup
                listener.poll(args.example_settle_ms / 1000.0 * (1 + random.random()))
                continue
            resumed = time.monotonic_ns()
            os.kill(process.pid, signal.SIGUSR2)
            answered, _ = (int(value) for value in answer("the waiting request answered"))
            if cycle >= args.example_warmup:
                # A request that began a moment before the signal can be the first kept waiting: the stop itself
                # came after the signal, so such a figure counts as 0.
                samples["stopped"].append(max(0, began - sent) / 1e6)
                windows.append(min(window, max(0, began - sent)) / 1e6)
                samples["answered"].append((answered - resumed) / 1e6)
            listener.poll(args.example_settle_ms / 1000.0 * (1 + random.random()))
    finally:
        poller.stdin.close()
        try:
            poller.wait(15)
        except subprocess.TimeoutExpired:
            os.kill(poller.pid, signal.SIGKILL)
            poller.wait()
        status = stop(process)
        listener.close()
    if status != 0:
        raise RuntimeError(f"hello-service exited with {status} after the services run")
    results = {"void": void}
    for key in samples:
        with open(raw / f"services-{key}-ms.txt", "w") as handle:
            handle.writelines(f"{value:.4f}\n" for value in samples[key])
        results[key] = dict(summary(samples[key]), samples=samples[key])
    results["stopped"]["window_ms"] = statistics.median(windows) if windows else float("nan")
    return results


# Restarts under load: the harness plays systemd. With the socket kept, it is the socket unit (it binds and keeps the
# listening socket and passes it to every process as fd 3 with LISTEN_FDS=1, LISTEN_FDNAMES=http and LISTEN_PID); the
# baseline is the same binary binding 127.0.0.1:PORT itself at every start, as a plain Hummingbird server does.

RESTART_SUBJECTS = [("socket", "with the socket kept (socket activation)"),
                    ("bound", "the same binary binding its own socket (a plain server)")]


def server_port():
    """A free port on 127.0.0.1 below the ephemeral range: a client's connect() to a port nobody listens on can pick
    that very port as its own and connect to itself (TCP's simultaneous open), and then holds it; thousands of refused
    connects per restart make that likely for a port the kernel picked from the ephemeral range."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
        low = int(handle.read().split()[0])
    candidates = list(range(max(1024, low - 20000), low))
    random.shuffle(candidates)
    for port in candidates:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port on 127.0.0.1 below {low}")


def spawn_service(command, env, stderr_path, listening=None):
    """fork + execve, as systemd starts a service; with `listening`, that socket as fd 3 and LISTEN_FDS=1,
    LISTEN_FDNAMES=http, LISTEN_PID=<the child's pid>, set in the child between fork and exec as systemd sets them.
    The harness has no threads, so the child may run Python between fork and exec. Returns the pid."""
    argv = [str(a) for a in command]
    environment = dict(env)
    devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    stderr = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            os.dup2(stderr, 2)
            if listening is not None:
                if listening.fileno() == 3:
                    os.set_inheritable(3, True)
                else:
                    os.dup2(listening.fileno(), 3)
                environment.update(LISTEN_FDS="1", LISTEN_FDNAMES="http", LISTEN_PID=str(os.getpid()))
            os.execve(argv[0], argv, environment)
        finally:
            os._exit(127)
    os.close(devnull)
    os.close(stderr)
    return pid


def reap(pid, what):
    """waitpid for a process the harness forked; raises unless it exited 0."""
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"hello-service ({what}) exited with {code}")


def wait_for_ready(listener, first, timeout=10.0):
    """The arrival of the first READY=1 among the datagrams from index `first` on."""
    deadline = time.monotonic() + timeout
    while True:
        for arrived, lines in listener.messages[first:]:
            if "READY=1" in lines:
                return arrived
        if time.monotonic() > deadline:
            raise RuntimeError(f"hello-service sent no READY=1 within {timeout:g} s")
        listener.poll(0.002)


def serving_stamp(stderr_path, realtime_offset_ns):
    """When the server logged `serving HTTP/1.1` (its descriptor bound to SwiftNIO's server channel: accepting),
    CLOCK_MONOTONIC ns, from the JSON line's timestamp (CLOCK_REALTIME, µs) less the clocks' offset; None if absent."""
    import json

    with open(stderr_path, errors="replace") as handle:
        for line in handle:
            if '"serving HTTP/1.1"' not in line:
                continue
            record = json.loads(line)
            wall = datetime.datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
            return int(wall.timestamp() * 1e6) * 1000 - realtime_offset_ns
    return None


def answered_once(port, timeout=10.0):
    """Waits until a request on a new connection is answered 200 "hello" (the end-to-end tests' client)."""
    sys.path.insert(0, str(REPOSITORY / "Tests" / "EndToEnd"))
    from http_load import one_request

    deadline = time.monotonic() + timeout
    while True:
        ok, kind, detail = one_request(port, timeout=timeout)
        if ok:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"hello-service does not answer on 127.0.0.1:{port}: {kind} {detail}")
        time.sleep(0.01)


def measure_restarts(args, tmp, log, raw):
    """The example restarted under a client load (http_clients.py: a new connection per request, every response
    checked): with the socket kept, then the same binary binding its own socket; with the socket kept, background
    round trips (SIGUSR1, a pause, SIGUSR2) after the restarts, under the same load."""
    config = os.path.join(tmp, "restarts.conf")
    with open(config, "w") as handle:
        # The harness reads every datagram, but a listener the baseline put in the store would stay open while its
        # datagram waits unread, and accept connections nobody serves: neither subject uses the store.
        handle.write("[State]\nFileDescriptorStore=no\n")
    return {subject: restart_run(args, tmp, log, raw, subject, config) for subject, _ in RESTART_SUBJECTS}


def restart_run(args, tmp, log, raw, subject, config):
    port = server_port()
    listening = None
    if subject == "socket":
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(("127.0.0.1", port))
        listening.listen(4096)  # hello.socket's Backlog=
    state = tempfile.mkdtemp(prefix=f"state-{subject}-", dir=tmp)
    command = [args.hello_service, "--port", port, "--config", config]
    listener = NotifyListener(tmp)
    env = environment_without_service_manager(also=("LISTEN_FDNAMES",))
    env.update(NOTIFY_SOCKET=listener.path, STATE_DIRECTORY=state)
    shown = quoted(command).replace(str(port), "<port>").replace(config, "<[State] FileDescriptorStore=no>")
    count = args.restart_warmup + args.restarts
    if listening is not None:
        log.append(f"LISTEN_FDS=1 LISTEN_FDNAMES=http LISTEN_PID=<its pid> NOTIFY_SOCKET=<harness socket> "
                   f"STATE_DIRECTORY=<tmp> {shown} 3<listening socket on 127.0.0.1:<port>, kept by the harness>   # "
                   f"fork + exec; then {count} × (SIGTERM, waitpid, the next one), then {args.round_trips} × "
                   f"(SIGUSR1, {args.background_ms} ms, SIGUSR2)")
    else:
        log.append(f"NOTIFY_SOCKET=<harness socket> STATE_DIRECTORY=<tmp> {shown}   # fork + exec; then {count} × "
                   "(SIGTERM, waitpid, the next one)")
    clients_argv = [sys.executable, HARNESS / "http_clients.py", port, args.restart_clients,
                    os.path.join(tmp, f"requests-{subject}.txt")]
    log.append(quoted(clients_argv).replace(sys.executable, "python3").replace(f" {port} ", " <port> ")
               .replace(str(clients_argv[-1]), "<requests>") + " &   # until SIGTERM")

    def launch(index):
        stderr_path = os.path.join(tmp, f"hello-{subject}-{index}.log")
        offset = time.time_ns() - time.monotonic_ns()
        first = len(listener.messages)
        spawned = time.monotonic_ns()
        pid = spawn_service(command, env, stderr_path, listening)
        ready = int(wait_for_ready(listener, first) * 1e9)
        return pid, {"spawn": spawned, "ready": ready, "log": stderr_path, "offset": offset}

    def settle(milliseconds):
        listener.poll(milliseconds / 1000.0 * (1 + random.random()))

    restarts, round_trips = [], []
    load = None
    pid = None
    try:
        pid, _ = launch(0)
        answered_once(port)
        load = subprocess.Popen([str(a) for a in clients_argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                text=True)
        line = load.stdout.readline().strip()
        if line != "running":
            raise RuntimeError(f"http_clients.py: {line or 'no answer'}")
        settle(args.restart_settle_ms)
        for index in range(count):
            terminated = time.monotonic_ns()
            os.kill(pid, signal.SIGTERM)
            reap(pid, f"restart {index + 1}")
            exited = time.monotonic_ns()
            pid = None
            pid, stamps = launch(index + 1)
            stamps.update(term=terminated, exit=exited)
            restarts.append(stamps)
            settle(args.restart_settle_ms)
        if listening is not None:
            for _ in range(args.round_trips):
                backgrounded = time.monotonic_ns()
                os.kill(pid, signal.SIGUSR1)
                listener.poll(args.background_ms / 1000.0)
                foregrounded = time.monotonic_ns()
                os.kill(pid, signal.SIGUSR2)
                round_trips.append({"usr1": backgrounded, "usr2": foregrounded})
                settle(args.restart_settle_ms)
        os.kill(load.pid, signal.SIGTERM)
        load.wait(60)
        ended = time.monotonic_ns()
        if load.returncode != 0:
            raise RuntimeError(f"http_clients.py exited with {load.returncode}")
    finally:
        if load is not None and load.poll() is None:
            os.kill(load.pid, signal.SIGKILL)
            load.wait()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            reap(pid, "the last one")
        listener.close()
        if listening is not None:
            listening.close()
    for stamps in restarts:
        stamps["serving"] = serving_stamp(stamps["log"], stamps["offset"])
    records = []
    with open(clients_argv[-1]) as handle:
        for line in handle:
            began, finished, kind = line.split()
            records.append((int(began), int(finished), kind))
    with open(raw / f"restarts-{subject}-requests.txt", "w") as handle:
        handle.write("# began_ns ended_ns kind (CLOCK_MONOTONIC), one request each\n")
        handle.writelines(f"{began} {finished} {kind}\n" for began, finished, kind in records)
    with open(raw / f"restarts-{subject}-stamps.txt", "w") as handle:
        handle.write("# per restart, CLOCK_MONOTONIC ns: SIGTERM sent, exit reaped, fork, READY=1, `serving` logged\n")
        handle.writelines(f"{s['term']} {s['exit']} {s['spawn']} {s['ready']} {s['serving']}\n" for s in restarts)
    results = analyze_restarts(records, restarts[args.restart_warmup:], round_trips, ended)
    results["before_failed"] = sum(1 for _, finished, kind in records
                                   if kind != "ok" and finished < restarts[0]["term"])
    results["clients"] = args.restart_clients
    return results


def analyze_restarts(records, restarts, round_trips, ended):
    """Per restart (from its SIGTERM to the next phase's first signal) and per round trip, from the client load's
    requests: the new process's first answer, the longest wait of a request that overlapped the restart, the failed
    requests by kind; between restarts, the load's own latency."""
    import bisect

    by_end = sorted(records, key=lambda record: record[1])
    ends = [record[1] for record in by_end]

    def ending_within(start, stop):
        return by_end[bisect.bisect_left(ends, start):bisect.bisect_left(ends, stop)]

    signals = [stamps["term"] for stamps in restarts] + [trip["usr1"] for trip in round_trips] + [ended]
    rows = []
    quiet = []  # (start, end) of every restart's troubled span: excluded from the load's own latency
    for index, stamps in enumerate(restarts):
        window = ending_within(stamps["term"], signals[index + 1])
        # The new process answers nothing before it serves: an answer read between the exit and then is the old
        # process's, read late by a client thread that waited for the interpreter lock.
        serves = min(stamps["ready"], stamps["serving"] or stamps["ready"])
        after = [finished for _, finished, kind in window if kind == "ok" and finished > serves]
        first = min(after) if after else None
        limit = first if first is not None else signals[index + 1]
        overlapped = [finished - began for began, finished, kind in window if kind == "ok" and began <= limit]
        failures = [(began, finished, kind) for began, finished, kind in window if kind != "ok"]
        kinds = {}
        for _, _, kind in failures:
            kinds[kind] = kinds.get(kind, 0) + 1
        rows.append({
            "term_exit_ms": (stamps["exit"] - stamps["term"]) / 1e6,
            "exit_spawn_ms": (stamps["spawn"] - stamps["exit"]) / 1e6,
            "spawn_ready_ms": (stamps["ready"] - stamps["spawn"]) / 1e6,
            "spawn_serving_ms": (stamps["serving"] - stamps["spawn"]) / 1e6 if stamps["serving"] else float("nan"),
            "spawn_answer_ms": (first - stamps["spawn"]) / 1e6 if first else float("nan"),
            "term_answer_ms": (first - stamps["term"]) / 1e6 if first else float("nan"),
            "wait_ms": max(overlapped) / 1e6 if overlapped else float("nan"),
            "failed": len(failures),
            "refused": kinds.get("refused", 0),
            "kinds": kinds,
            "failing_ms": (limit - min(began for began, _, _ in failures)) / 1e6 if failures else 0.0,
        })
        quiet.append((stamps["term"], limit))
    trips = []
    for index, trip in enumerate(round_trips):
        window = ending_within(trip["usr1"], signals[len(restarts) + index + 1])
        waited = [(began, finished) for began, finished, kind in window
                  if kind == "ok" and trip["usr1"] <= began <= trip["usr2"] < finished]
        failures = [kind for _, _, kind in window if kind != "ok"]
        trips.append({
            "waited": len(waited),
            "waits_ms": [(finished - began) / 1e6 for began, finished in waited],
            "first_ms": (min(f for _, f in waited) - trip["usr2"]) / 1e6 if waited else float("nan"),
            "last_ms": (max(f for _, f in waited) - trip["usr2"]) / 1e6 if waited else float("nan"),
            "held_ms": (min(b for b, _ in waited) - trip["usr1"]) / 1e6 if waited else float("nan"),
            "failed": len(failures),
            "kinds": {kind: failures.count(kind) for kind in set(failures)},
        })
        quiet.append((trip["usr1"], max([f for _, f in waited], default=trip["usr2"])))
    quiet.sort()
    starts = [start for start, _ in quiet]

    def troubled(began, finished):
        # The spans do not overlap one another: only the last one that starts before the request ends can hold it.
        index = bisect.bisect_right(starts, finished) - 1
        return index >= 0 and quiet[index][1] >= began

    steady = [(finished - began) / 1e6 for began, finished, kind in records
              if kind == "ok" and not troubled(began, finished)]
    kinds = {}
    for _, _, kind in records:
        if kind != "ok":
            kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "restarts": rows,
        "round_trips": trips,
        "requests": len(records),
        "answered": sum(1 for record in records if record[2] == "ok"),
        "kinds": kinds,
        "seconds": (ended - min((record[0] for record in records), default=ended)) / 1e9,
        "steady": summary(steady) if steady else None,
    }


def restart_goal_rows(services, launches):
    """Issue 25, item 5 ("a short restart"): [(goal, figure, same-run baseline, met)], met None when not measured."""
    rows = []
    if launches is not None:
        ours, peer = launches["lifecycled"]["ready_ms"], launches["peer"]["ready_ms"]
        rows.append(("exec → READY=1 of the demo daemon no slower than the swift-service-lifecycle peer (§5)",
                     f"{fmt(ours, 2)} ms", f"peer {fmt(peer, 2)} ms: {fmt(ratio(ours, peer), 2)}× the peer",
                     ours <= peer))
        empty, floor = launches["daemon-0"]["terminate_ms"], launches["floor"]["terminate_ms"]
        rows.append(("SIGTERM → exit ≤ 5 ms for an empty window (§6)", f"{fmt(empty, 2)} ms",
                     f"C floor {fmt(floor, 2)} ms", empty <= 5))
    else:
        rows.append(("exec → READY=1 of the demo daemon no slower than the swift-service-lifecycle peer (§5)",
                     "not measured in this run", "", None))
        rows.append(("SIGTERM → exit ≤ 5 ms for an empty window (§6)", "not measured in this run", "", None))
    restarts = (services or {}).get("restarts")
    if restarts is None:
        rows.append(("the restart gap of the example under load, p50/p99 over ≥ 20 restarts, no request failed (§8)",
                     "not measured: no --hello-service", "", None))
        return rows
    kept, bound = restarts["socket"], restarts["bound"]
    waits = summary([row["wait_ms"] for row in kept["restarts"]])
    failed = sum(row["failed"] for row in kept["restarts"])
    refused = summary([row["refused"] for row in bound["restarts"]])
    bound_failed = sum(row["failed"] for row in bound["restarts"])
    bound_failing = summary([row["failing_ms"] for row in bound["restarts"]])
    count = len(kept["restarts"])
    rows.append((f"the restart gap of the example under load: the longest wait of a request that overlapped a restart, "
                 f"p50/p99 over {count} restarts, and no request failed (§8)",
                 f"p50 {fmt(waits['p50'], 1)} ms, p99 {fmt(waits['p99'], 1)} ms; {failed} failed of "
                 f"{kept['requests']:,}",
                 f"the same binary binding its own socket (a plain Hummingbird server), {len(bound['restarts'])} "
                 f"restarts: {fmt(refused['p50'], 0)} refused connections per restart (p50; max "
                 f"{fmt(refused['max'], 0)}), {bound_failed:,} failed requests over those restarts, clients "
                 f"failing for {fmt(bound_failing['p50'], 1)} ms per restart (p50)",
                 failed == 0 and count >= 20))
    return rows


def report_services(add, results, args, beside):
    """Section 8: the example's listener across the background and restarts, with issue 25's item-5 goals first."""
    services, latency, launches = results.get("services"), results["latency"], results["launches"]
    add("## 8. Services: the example across the background and restarts")
    add("")
    if services is None:
        add("Not measured: no `--hello-service` binary was given (`scripts/bench` builds Examples/HelloService).")
    else:
        add("**Issue 25, item 5: a short restart.** A restart's gap (the time a connection waits in the backlog) is "
            "SIGTERM → exit plus exec → serving; the goals, against baselines of this run:")
        add("")
        add("| goal | figure | same-run baseline | met |")
        add("|---|---|---|---|")
        for goal, figure, baseline, met in restart_goal_rows(services, launches):
            add(f"| {goal} | {figure} | {baseline} | {'' if met is None else verdict(met)} |")
        add("")
        add("`hello-service` (Examples/HelloService, release, the Swift runtime linked statically): a Hummingbird "
            "router served by `LifecycleHummingbird.HTTPServer` in a `ServiceController` on its listener `http`, "
            "background policy `.pause` (the default: in the background the server stops accepting and drains, the "
            "listening socket stays open, and connections wait in its backlog).")
        add("")
        report_pause(add, services, latency, args)
        report_restarts(add, services["restarts"], args)
    add("")
    add(beside)
    add("")


def report_pause(add, services, latency, args):
    add(f"**Background and foreground, idle.** 127.0.0.1, nothing pinned. The harness stamps `CLOCK_MONOTONIC` just "
        "before `kill()`; `request_poller.py`, a process of its own, sends request after request (`GET /` on a new "
        "connection, the response read whole and checked, one every 50 µs) and stamps what a client sees: after "
        "SIGUSR1, the first request not answered within 50 ms, whose connect() began the moment a client is first "
        "kept waiting (it is answered only after SIGUSR2: else the cycle is void); after SIGUSR2, that waiting "
        f"request answered. {args.example_cycles} cycles ({args.example_warmup} warm-up cycles discarded), each signal "
        f"{args.example_settle_ms}–{2 * args.example_settle_ms} ms after the previous effect"
        + (f"; {services['void']} cycles void (the kept request was answered before SIGUSR2: slow, not waiting)"
           if services["void"] else "") + ".")
    add("")
    add("| transition | samples | p50 ms | p99 ms | max ms | resolution window, median ms | p50 ÷ plain signal "
        "latency p50 (same CPU; other CPU) |")
    add("|---|---|---|---|---|---|---|")
    plain = {placement: receivers["daemon"]["p50"] for placement, receivers in (latency or {}).items()}
    labels = [("stopped", "SIGUSR1 → accepting stops: the first request kept waiting (its connect() began)",
               services["stopped"].get("window_ms", float("nan"))),
              ("answered", "SIGUSR2 → the waiting request answered (a new run of the server accepts it)", None)]
    for key, label, window in labels:
        row = services[key]
        ratios = "; ".join(f"{fmt(ratio(row['p50'] * 1000, plain[placement]), 0)}×"
                           for placement in ("same CPU", "other CPU") if placement in plain)
        add(f"| {label} | {row['n']} | {fmt(row['p50'], 2)} | {fmt(row['p99'], 2)} | {fmt(row['max'], 2)} | "
            f"{'—' if window is None else fmt(window, 3)} | {ratios or '—'} |")
    add("")
    if plain:
        add("The plain signal latency of the same run (§1: `sigqueue` → the delegate's first callback in the "
            "lifecycled main loop), p50: " + "; ".join(f"{placement} {fmt(value)} µs" for placement, value in
                                                      plain.items())
            + ". The rest is the application's work: the background (or foreground) callbacks, the "
            "`ServiceController` shutting down (or starting) its `ServiceGroup`, Hummingbird's server stopping (or "
            "starting) to accept on its event loop, and, after SIGUSR2, the request itself. The SIGUSR1 figure is "
            "late by at most its resolution window: from the start of the last request answered to the start of the "
            "first kept waiting.")
        add("")


def report_restarts(add, restarts, args):
    kept, bound = restarts["socket"], restarts["bound"]
    add(f"**Restarts and round trips under load.** The harness plays systemd: it forks and execs the example "
        f"(`--port PORT`, `STATE_DIRECTORY` of its own, `[State] FileDescriptorStore=no`) and, per restart, sends "
        "SIGTERM, waits for the exit (`waitpid`) and starts the next one at once, as `systemctl restart` does; "
        f"{args.restart_settle_ms}–{2 * args.restart_settle_ms} ms between restarts, {args.restart_warmup} "
        "warm-up restart discarded. With the socket kept it is also the socket unit: it binds 127.0.0.1:PORT "
        "(backlog 4096, as hello.socket), keeps it, and passes it to every process as fd 3 (`LISTEN_FDS=1`, "
        "`LISTEN_FDNAMES=http`, `LISTEN_PID`). The baseline is the same binary with no socket passed: it binds "
        "127.0.0.1:PORT itself at every start, as a plain Hummingbird server does, so the socket is the only "
        f"difference. The load (`http_clients.py`): {kept['clients']} threads in a process of their own, each sending "
        "`GET /` on a new connection as soon as the last one was answered (1 ms after a failure), every response read "
        "whole and checked (the end-to-end tests' client); per request, its connect() → the end of its response or "
        "its failure. "
        "A p99 of fewer than 100 samples is their largest (nearest rank).")
    add("")
    add("| per restart | " + " | ".join(label for _, label in RESTART_SUBJECTS) + " |")
    add("|---|---|---|")
    runs = {"socket": kept, "bound": bound}

    def cells(key, digits=2, maximum=False):
        return " | ".join(
            percentiles(runs[subject]["restarts"], key, digits, maximum) for subject, _ in RESTART_SUBJECTS)

    add("| restarts measured | " + " | ".join(str(len(runs[subject]["restarts"])) for subject, _ in RESTART_SUBJECTS)
        + " |")
    add(f"| **gap: the longest wait of a request that overlapped the restart** (connect() → its answer; the successful "
        f"ones), p50 / p99 / max ms | {cells('wait_ms', 1, True)} |")
    add(f"| **failed requests**, p50 / p99 / max | {cells('failed', 0, True)} |")
    add(f"| of them refused (`ECONNREFUSED`), p50 / p99 / max | {cells('refused', 0, True)} |")
    add(f"| failing: the first failed request's connect() → the new process's first answer, p50 / p99 ms | "
        f"{cells('failing_ms', 1)} |")
    add(f"| SIGTERM → the new process's first answer (no answer from anyone meanwhile), p50 / p99 ms | "
        f"{cells('term_answer_ms', 1)} |")
    add(f"| SIGTERM → exit (the drain of the requests in flight, the state saved), p50 / p99 ms | "
        f"{cells('term_exit_ms')} |")
    add(f"| exit → fork of the next (the harness) p50 / p99 ms | {cells('exit_spawn_ms', 3)} |")
    add(f"| fork → READY=1, p50 / p99 ms | {cells('spawn_ready_ms')} |")
    add(f"| fork → `serving HTTP/1.1` logged (the server's descriptor accepting; the JSON line's µs timestamp), "
        f"p50 / p99 ms | {cells('spawn_serving_ms')} |")
    add(f"| fork → the first answer a client read, p50 / p99 ms | {cells('spawn_answer_ms')} |")
    add("")
    add("| the whole load | " + " | ".join(label for _, label in RESTART_SUBJECTS) + " |")
    add("|---|---|---|")

    def failures(run):
        return ", ".join(f"{count:,} {kind}" for kind, count in sorted(run["kinds"].items())) or "none"

    add("| requests sent / answered 200 `hello` | " + " | ".join(
        f"{runs[subject]['requests']:,} / {runs[subject]['answered']:,} in {fmt(runs[subject]['seconds'], 1)} s"
        for subject, _ in RESTART_SUBJECTS) + " |")
    add("| failed, by kind (every restart, the warm-up too, and the round trips) | " + " | ".join(
        failures(runs[subject]) for subject, _ in RESTART_SUBJECTS) + " |")
    add("| of them before the first restart (the load alone) | " + " | ".join(
        str(runs[subject]["before_failed"]) for subject, _ in RESTART_SUBJECTS) + " |")
    add("| a request's latency away from restarts and round trips, p50 / p99 ms | " + " | ".join(
        f"{fmt(runs[subject]['steady']['p50'], 2)} / {fmt(runs[subject]['steady']['p99'], 2)}"
        if runs[subject]["steady"] else "n/a" for subject, _ in RESTART_SUBJECTS) + " |")
    add("")
    trips = kept["round_trips"]
    if trips:
        waits = summary([wait for trip in trips for wait in trip["waits_ms"]]) if any(
            trip["waits_ms"] for trip in trips) else None
        failed = sum(trip["failed"] for trip in trips)
        kinds = {}
        for trip in trips:
            for kind, count in trip["kinds"].items():
                kinds[kind] = kinds.get(kind, 0) + count

        def per_trip(key, digits=2):
            return percentiles(trips, key, digits)

        add(f"Round trips under the same load, with the socket kept, after the restarts: {len(trips)} × (SIGUSR1, "
            f"{args.background_ms} ms, SIGUSR2), {args.restart_settle_ms}–{2 * args.restart_settle_ms} ms apart. A "
            "request waited if its connect() began between SIGUSR1 and SIGUSR2 and it was answered after SIGUSR2.")
        add("")
        add("| round trips | requests that waited (per trip: p50 / max) | their wait, p50 / p99 ms | SIGUSR1 → the "
            "first request kept waiting began, p50 / p99 ms | SIGUSR2 → the first / the last waiting request "
            "answered, p50 / p99 ms | failed requests (refused) |")
        add("|---|---|---|---|---|---|")
        counts = summary([trip["waited"] for trip in trips])
        add(f"| {len(trips)} | {sum(trip['waited'] for trip in trips)} ({fmt(counts['p50'], 0)} / "
            f"{fmt(counts['max'], 0)}) | "
            + (f"{fmt(waits['p50'], 1)} / {fmt(waits['p99'], 1)}" if waits else "n/a")
            + f" | {per_trip('held_ms')} | {per_trip('first_ms')}; {per_trip('last_ms')} | {failed} "
            f"({kinds.get('refused', 0)}) |")
        add("")


def print_restarts(restarts):
    """The restart and round-trip figures on stdout (`--only services`)."""
    for subject, label in RESTART_SUBJECTS:
        run = restarts[subject]
        rows = run["restarts"]

        def stats(key, digits=1):
            return percentiles(rows, key, digits, labelled=True)

        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(run["kinds"].items())) or "none"
        print(f"{len(rows)} restarts {label}: gap (longest wait) {stats('wait_ms')} ms; failed per restart "
              f"{stats('failed', 0)} (refused {stats('refused', 0)}); SIGTERM → exit {stats('term_exit_ms', 2)} ms, "
              f"fork → READY=1 {stats('spawn_ready_ms', 2)} ms, fork → serving {stats('spawn_serving_ms', 2)} ms, "
              f"fork → first answer {stats('spawn_answer_ms', 2)} ms; {run['requests']:,} requests, failed: {kinds}")
    trips = restarts["socket"]["round_trips"]
    if trips:
        waits = sorted(wait for trip in trips for wait in trip["waits_ms"])
        firsts = sorted(trip["first_ms"] for trip in trips if trip["first_ms"] == trip["first_ms"])
        print(f"{len(trips)} round trips under load: {len(waits)} requests waited, p50 {fmt(percentile(waits, 50))} "
              f"ms, p99 {fmt(percentile(waits, 99))} ms; SIGUSR2 → the first answered p50 "
              f"{fmt(percentile(firsts, 50), 2)} ms; {sum(trip['failed'] for trip in trips)} failed")


def print_restart_goals(services, launches):
    """Issue 25's item-5 goals on stdout, met or not, with the figures."""
    print("issue 25, item 5 (a short restart):")
    for goal, figure, baseline, met in restart_goal_rows(services, launches):
        state = "not measured" if met is None else ("met" if met else "NOT MET")
        print(f"  [{state}] {goal}: {figure}" + (f" (baseline: {baseline})" if baseline else ""))
