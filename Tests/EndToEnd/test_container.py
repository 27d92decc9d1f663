#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""The example in a container, under Debian's podman, as Examples/HelloService/kubernetes.yaml declares it.

The image is built once per session from the binaries under test (Examples/HelloService/Containerfile, by
scripts/container-image; no registry). Every container runs with the flags podman needs on these machines
(container.PODMAN_RUN_FLAGS) and the manifest's own (its args, env, user, capabilities, limits, its ConfigMap as the
configuration file, its state volume); its probes run as the kubelet runs them (exec with `podman exec`, httpGet
against the port); its terminationGracePeriodSeconds is `podman stop -t`. The container shares the machine's network,
so the one thing the test changes is the port: a free one instead of the manifest's. No systemd sandbox: podman runs
on the machine, as root, and every container, volume and directory a test makes is removed afterwards (those only).

What runs here is what an orchestrator sees (issue 26): probes that tell ready from not ready across SIGUSR1/SIGUSR2,
exec and HTTP alike; `podman stop` with the grace period in the lame-duck order (not ready → served for the delay →
drain → exit 0), and a second SIGTERM cutting the delay short; `podman logs` as JSON lines in causal order; state
restored from the volume after SIGKILL; the daemon as PID 1 reaping orphans. Figures (probe latency, the stop's
phases, the image's size) go to .build-e2e/container-figures.json.

podman missing fails every test here except the manifest's own, saying how to install it
(`scripts/install-packages test`).
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import pytest

from container import (
    CONTAINERFILE,
    CONTROL_SOCKET,
    PODMAN_RUN_FLAGS,
    Container,
    ExampleImage,
    Podman,
    Workload,
    log_records,
    podman,
    record_figures,
    record_index,
    timestamp,
    trace_events,
)
from harness import pairs, wait_for
from test_example import CONTROLLER, SlowRequest, answers, free_port, get

ORPHANS_SOURCE = Path(__file__).with_name("orphans.c")
# The ServiceController's shutdownTimeout (Examples/HelloService/README.md): how long a drain may take at most.
DRAIN_BOUND_SECONDS = 10
# The exit status of a process killed by SIGKILL, as podman reports it (128 + 9).
SIGKILL_STATUS = 137
# What a test that reads the trace adds to the manifest's container: every callback at info (the controller's too),
# not only the delegate's. A deployment leaves it off.
TRACE_ALL = ("--env", "LIFECYCLE_TRACE=all")
# The daemon's notices around the lame-duck delay (Sources/LifecycleDaemon/Runner/LameDuckStop.swift).
LAME_DUCK_BEGINS = "termination requested (signal:SIGTERM): not ready, serving on for"
LAME_DUCK_OVER = "lame-duck delay over: terminating"
LAME_DUCK_CUT = "a second termination request (signal:SIGTERM) during the lame-duck delay: terminating now"
# The warning at start when the delay and the drain cannot fit the stop budget.
FIT_WARNING = "exceed [Termination] StopTimeoutSec="
# How soon after the signal a probe must fail, on this 2-core machine shared with builds: the daemon answers within
# milliseconds; the margin is for `podman kill`/`podman stop` and a loaded scheduler.
NOT_READY_WITHIN_SECONDS = 1.5

T = TypeVar("T")


@pytest.fixture(scope="session")
def workload() -> Workload:
    return Workload()


@pytest.fixture(scope="session")
def image(workload: Workload) -> Iterator[ExampleImage]:
    built = ExampleImage(workload)
    try:
        yield built
    finally:
        built.remove()


@pytest.fixture
def pods(image: ExampleImage) -> Iterator[Podman]:
    made = Podman(image)
    try:
        yield made
    finally:
        made.cleanup()


@pytest.fixture(scope="session")
def orphans_binary() -> Iterator[Path]:
    """Tests/EndToEnd/orphans.c, built static with the machine's C compiler (the image has no libc to spare)."""
    if shutil.which("cc") is None:
        pytest.fail(
            "cc is not installed: the PID 1 test builds a static helper. `scripts/install-packages test` installs "
            "gcc and libc6-dev (scripts/debian-packages, purpose test).",
            pytrace=False,
        )
    directory = Path(tempfile.mkdtemp(prefix="lifecycle-e2e-orphans."))
    try:
        binary = directory / "orphans"
        done = subprocess.run(
            ["cc", "-static", "-O2", "-Wall", "-Werror", "-o", str(binary), str(ORPHANS_SOURCE)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"cc -static {ORPHANS_SOURCE} failed: {done.stderr}"
        yield binary
    finally:
        shutil.rmtree(directory)


def containerfile_setting(instruction: str) -> str:
    """The argument of the Containerfile's one `INSTRUCTION` line."""
    lines = [line for line in CONTAINERFILE.read_text().splitlines() if line.startswith(instruction + " ")]
    assert len(lines) == 1, f"{CONTAINERFILE}: {len(lines)} {instruction} lines"
    return lines[0].removeprefix(instruction + " ")


def containerfile_env() -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in containerfile_setting("ENV").split())


def seconds_setting(workload: Workload, section: str, key: str, default: float) -> float:
    """A `…Sec=` key of the daemon's configuration file, as the manifest's ConfigMap has it."""
    return float(workload.configuration.get((section, key), default))


def lame_duck_seconds(workload: Workload) -> float:
    return seconds_setting(workload, "Termination", "LameDuckSec", 0)


def start(
    pods: Podman,
    workload: Workload,
    role: str,
    extra: tuple[str, ...] = (),
    volumes: dict[str, str] | None = None,
) -> tuple[Container, dict[str, float]]:
    """`podman run` of the manifest's container on a free port (with `extra` flags, on `volumes` or new ones); returns
    once its startup probe passed (within the manifest's failureThreshold × periodSeconds) and it answered HTTP.
    Figures: seconds from `podman run` to each."""
    port = free_port()
    if volumes is None:
        volumes = {claim: pods.volume(claim) for claim, _, _ in workload.mounts}
    began = time.monotonic()
    container = pods.run(workload, role, port, volumes, extra=extra)
    ran = time.monotonic()
    startup = workload.probes["startupProbe"]
    wait_with_log(
        container,
        lambda: container.probe_passes(startup),
        timeout=startup.initial_delay + startup.failure_threshold * startup.period,
        message="the startup probe to pass",
    )
    started = time.monotonic()
    assert wait_for(lambda: answers(port), timeout=10, interval=0.02, message="the first answer") == (200, "hello")
    return container, {
        "podman_run_seconds": round(ran - began, 3),
        "run_to_startup_probe_seconds": round(started - began, 3),
        "run_to_first_200_seconds": round(time.monotonic() - began, 3),
    }


def wait_with_log(container: Container, predicate: Callable[[], T], timeout: float, message: str) -> T:
    """`wait_for`, and on a timeout the container's log with the failure."""
    try:
        return wait_for(predicate, timeout=timeout, interval=0.05, message=message)
    except AssertionError as error:
        raise AssertionError(f"{error}\nthe container's log:\n{container.logs()}") from None


def state(container: Container) -> str | None:
    status = container.status_json()
    return status["state"] if status else None


def assert_in_order(order: list[tuple[str, str]], expected: list[tuple[str, str]]) -> None:
    """`expected` is a subsequence of `order`."""
    position = 0
    for step in expected:
        after = order[position - 1] if position else "the start"
        assert step in order[position:], f"{step} missing after {after}: {order}"
        position = order.index(step, position) + 1


def summary(samples: list[float]) -> dict[str, Any]:
    """Median and maximum of `samples` seconds, in milliseconds."""
    return {
        "samples": len(samples),
        "median_ms": round(statistics.median(samples) * 1000, 1),
        "max_ms": round(max(samples) * 1000, 1),
    }


def timed(action: Callable[[], T]) -> tuple[T, float]:
    began = time.monotonic()
    result = action()
    return result, time.monotonic() - began


class Background:
    """`action` on a thread of its own; `result()` joins it."""

    def __init__(self, action: Callable[[], T]):
        self.value: Any = None
        self.error: BaseException | None = None
        self.ended: float | None = None

        def run() -> None:
            try:
                self.value = action()
            except BaseException as error:  # reported by result()
                self.error = error
            finally:
                self.ended = time.time()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self, timeout: float = 60) -> Any:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"still running after {timeout}s"
        if self.error is not None:
            raise self.error
        return self.value


# The manifest and the image.


def test_the_manifest_wires_the_image_user_probes_grace_period_lame_duck_and_state_volume(workload: Workload) -> None:
    assert workload.repository == "localhost/hello-service", workload.image
    # A local image, never pulled: the node has it (kind load, ctr import, podman save | …) or the pod does not start.
    assert workload.container["imagePullPolicy"] == "Never"
    # The image's user is the pod's (numeric both, so runAsNonRoot can be checked without the image's /etc/passwd).
    user, group = workload.user
    assert containerfile_setting("USER") == f"{user}:{group}" and user != 0
    assert workload.security()["runAsNonRoot"] is True
    # The state volume is where the daemon keeps its state.
    env = {**containerfile_env(), **workload.env}
    assert [path for _, path, _ in workload.mounts] == [env["STATE_DIRECTORY"]], (workload.mounts, env)
    # Every probe that talks to the control socket names the one the image's RUNTIME_DIRECTORY puts it at.
    assert CONTROL_SOCKET == env["RUNTIME_DIRECTORY"] + "/control"
    probes = workload.probes
    assert set(probes) == {"startupProbe", "livenessProbe", "readinessProbe"}, sorted(probes)
    for probe in probes.values():
        if probe.command is not None:
            assert probe.command[:2] == ["/usr/local/bin/lifecyclectl", "check"], probe
            assert probe.command[probe.command.index("--socket") + 1] == CONTROL_SOCKET, probe
            # lifecyclectl gives up before the kubelet does, so a stuck daemon is a failed probe, not a killed one.
            assert float(probe.command[probe.command.index("--timeout") + 1]) < probe.timeout, probe
        if probe.http is not None:
            # The kubelet asks on the pod's address: the server listens on every address, on the declared port.
            assert probe.http[1] == workload.declared_port, probe
            args = workload.args
            assert "--address" in args and args[args.index("--address") + 1] in ("0.0.0.0", "::"), args
    assert probes["startupProbe"].command is not None and probes["startupProbe"].command[2] == "started"
    # Liveness on the control socket: in the background the server accepts nothing (connections wait), and an HTTP
    # liveness probe would have the kubelet restart a healthy, paused pod.
    assert probes["livenessProbe"].command is not None and probes["livenessProbe"].command[2] == "live"
    readiness = probes["readinessProbe"]
    assert readiness.http == ("/readyz", workload.declared_port) or (readiness.command or [""] * 3)[2] == "ready"

    # The stop: the lame-duck delay, then the drain (bounded by the server's shutdownTimeout and BudgetSec), inside
    # the grace period, which the daemon knows as StopTimeoutSec, with the second the teardown is given to spare.
    grace = workload.grace_seconds
    delay = lame_duck_seconds(workload)
    budget = seconds_setting(workload, "BackgroundTasks", "BudgetSec", 30)
    assert delay > 0 and seconds_setting(workload, "Termination", "StopTimeoutSec", 0) == grace
    assert DRAIN_BOUND_SECONDS <= budget and delay + budget + 1 <= grace, (delay, budget, grace)
    # The readiness probe fails within the delay: the endpoints stop routing before the server stops accepting.
    assert readiness.period * readiness.failure_threshold < delay, readiness
    assert "docs/operations.md" in workload.text and '"Containers and Kubernetes"' in workload.text


def test_the_image_is_built_offline_from_the_binaries_under_test_and_has_no_shell(image: ExampleImage) -> None:
    name = image.name()
    config = json.loads(podman("image", "inspect", "--format", "{{json .Config}}", name).stdout)
    assert config["User"] == containerfile_setting("USER")
    assert config["StopSignal"] == "SIGTERM"
    assert config["Entrypoint"] == ["/usr/local/bin/hello-service"]
    env = dict(variable.split("=", 1) for variable in config["Env"])
    assert {k: env.get(k) for k in containerfile_env()} == containerfile_env(), env
    # Every binary starts: its libraries and the dynamic loader are in the image.
    for program in ("hello-service", "lifecyclectl"):
        done = podman("run", "--rm", *PODMAN_RUN_FLAGS, "--entrypoint", f"/usr/local/bin/{program}", name, "--help")
        assert "USAGE:" in done.stdout, (program, done.stdout, done.stderr)
    # Nothing else: no shell to exec into.
    shell = podman("run", "--rm", *PODMAN_RUN_FLAGS, "--entrypoint", "/bin/sh", name, "-c", "true", check=False)
    assert shell.returncode != 0 and "no such file or directory" in shell.stderr.lower(), shell.stderr
    size = int(podman("image", "inspect", "--format", "{{.Size}}", name).stdout)
    record_figures("image", {"bytes": size, "build_seconds": round(image.build_seconds, 1), "tag": name})


# The running container.


def test_it_serves_on_the_pods_address_passes_its_probes_and_answers_them_in_milliseconds(
    pods: Podman, workload: Workload
) -> None:
    container, figures = start(pods, workload, "serve")
    port = container.port or 0
    assert get(port, "/slow?seconds=0.1") == (200, "done")
    # The daemon is the container's PID 1, active, its control socket where the probes look, listening on every
    # address as the args say, and its configuration fits the grace period (no warning).
    status = container.status_json()
    assert status is not None and status["pid"] == 1 and status["state"] == "active", status
    assert status["control"]["socket"] == CONTROL_SOCKET
    assert [(listener["name"], listener["address"], listener["state"]) for listener in status["listeners"]] == [
        ("http", f"0.0.0.0:{port}", "serving")
    ], status["listeners"]
    records = log_records(container.stderr_log())
    assert not [r for r in records if FIT_WARNING in str(r["message"])], [r["message"] for r in records]
    for kind, probe in workload.probes.items():
        assert container.probe_passes(probe), f"{kind} fails on an active daemon"

    # Latency: the exec probe as the kubelet pays for it here (podman exec: conmon, runc exec, then lifecyclectl),
    # lifecyclectl alone on the same socket from this machine, and the HTTP probe.
    exec_samples = []
    for _ in range(10):
        done, took = timed(lambda: container.check("ready"))
        assert done.returncode == 0, done.stdout + done.stderr
        exec_samples.append(took)
    control = container.host_socket
    direct_samples = []
    for _ in range(20):
        done, took = timed(
            lambda: container.lifecyclectl_from_host("check", "ready", "--timeout", "1", socket_path=control)
        )
        assert done.returncode == 0 and done.stdout == "" and done.stderr == "", (done.stdout, done.stderr)
        direct_samples.append(took)
    http_samples = []
    for _ in range(20):
        answer, took = timed(lambda: container.http_get("/readyz"))
        assert answer == (200, "active, 1 listener serving\n"), answer
        http_samples.append(took)
    record_figures(
        "probes",
        {
            **figures,
            "exec_probe_podman_exec": summary(exec_samples),
            "exec_probe_lifecyclectl_alone": summary(direct_samples),
            "http_probe_readyz": summary(http_samples),
        },
    )


def test_the_probes_tell_ready_from_not_ready_across_sigusr1_and_sigusr2_exec_and_http_alike(
    pods: Podman, workload: Workload
) -> None:
    container, _ = start(pods, workload, "signals")
    pid = container.host_pid
    readiness, liveness = workload.probes["readinessProbe"], workload.probes["livenessProbe"]
    for probe in ("ready", "live", "started"):
        assert container.check(probe).returncode == 0, probe
    for path, reason in (("/readyz", "active, 1 listener serving"), ("/livez", "the main loop answered"),
                         ("/startupz", "launched")):
        assert container.http_get(path) == (200, reason + "\n"), path

    container.kill("SIGUSR1")
    signalled = time.monotonic()
    wait_for(lambda: container.check("ready").returncode == 1, timeout=10, interval=0.02, message="not ready")
    not_ready = time.monotonic() - signalled
    assert not_ready < NOT_READY_WITHIN_SECONDS, not_ready
    assert container.check("ready", verbose=True).stdout == "ready: no (in the background)\n"
    # Alive and started all along: a kubelet restarts nothing, it only stops routing.
    assert container.check("live").returncode == 0 and container.check("started").returncode == 0
    assert container.probe_passes(liveness)
    # The server is paused: it accepts nothing, so an HTTP probe gets no answer within its timeout, which fails it
    # as the exec probe's "no" does. Its connection waits in the backlog; so does a client's request, served on the
    # return to the foreground instead of refused.
    assert not container.probe_passes(readiness)
    assert container.http_get("/livez", timeout=1) is None
    waiting = Background(lambda: get(container.port or 0, "/", timeout=30))
    time.sleep(1)
    assert not waiting.done, "a request was answered in the background"
    status = container.status_json()
    assert status is not None and status["state"] == "background", status
    assert [listener["state"] for listener in status["listeners"]] == ["paused"], status["listeners"]

    container.kill("SIGUSR2")
    signalled = time.monotonic()
    wait_for(lambda: container.check("ready").returncode == 0, timeout=10, interval=0.02, message="ready again")
    ready_again = time.monotonic() - signalled
    assert waiting.result(timeout=10) == (200, "hello")
    assert container.http_get("/readyz") == (200, "active, 1 listener serving\n")
    assert container.probe_passes(readiness) and container.probe_passes(liveness)
    # The same process all along: nothing restarted it.
    assert container.status == "running" and container.host_pid == pid
    assert container.inspect("{{.RestartCount}}") == "0"
    record_figures(
        "signals",
        {
            "sigusr1_to_exec_probe_not_ready_s": round(not_ready, 3),
            "sigusr2_to_exec_probe_ready_s": round(ready_again, 3),
        },
    )


def test_podman_stop_goes_not_ready_serves_through_the_lame_duck_delay_drains_and_exits_0(
    pods: Podman, workload: Workload
) -> None:
    container, _ = start(pods, workload, "stop", extra=TRACE_ALL)
    port = container.port or 0
    delay = lame_duck_seconds(workload)
    # In flight across the whole delay, it ends during the drain.
    slow = SlowRequest(port, seconds=delay + 2)
    slow_answer = Background(slow.result)

    # podman refuses `podman exec` while it stops a container, and `podman inspect` would wait: the exec probe's
    # command runs from this machine on the socket found now (container.lifecyclectl_from_host).
    control = container.host_socket
    sent = time.time()
    stopping = Background(container.stop)
    # Not ready first: the readiness probe (HTTP, as the manifest declares it) answers 503 with the reason.
    answer = wait_for(
        lambda: (a := container.http_get("/readyz", timeout=1)) and a[0] == 503 and a,
        timeout=5,
        interval=0.02,
        message="/readyz to answer 503",
    )
    probe_failed = time.time()
    assert answer == (503, "stopping (lame duck, not ready)\n"), answer
    assert probe_failed - sent < NOT_READY_WITHIN_SECONDS, probe_failed - sent
    assert not container.probe_passes(workload.probes["readinessProbe"])
    check = container.lifecyclectl_from_host("check", "ready", "--timeout", "1", "--verbose", socket_path=control)
    assert (check.returncode, check.stdout) == (1, "ready: no (stopping (lame duck, not ready))\n"), check
    for probe in ("live", "started"):
        assert container.lifecyclectl_from_host("check", probe, "--timeout", "1", socket_path=control).returncode == 0
    status = json.loads(container.lifecyclectl_from_host("status", "--json", socket_path=control).stdout)
    assert status["statusText"].startswith("active, stopping (lame duck, not ready)"), status

    # Served all the same: new connections get their answer until the delay is nearly over.
    served = []
    while time.time() < sent + delay - 1:
        served.append(get(port, "/"))
        time.sleep(0.2)
    assert served and set(served) == {(200, "hello")}, served

    # Then the drain: the request in flight ends with 200, after the delay; then the process exits 0, within the
    # grace period and no sooner than the delay.
    done, took = stopping.result(timeout=workload.grace_seconds + 60)
    assert done.returncode == 0, done.stderr
    assert slow_answer.result() == (200, "done")
    assert container.status == "exited" and container.exit_code == 0, container.logs()
    assert delay <= took < workload.grace_seconds, took

    records = log_records(container.stderr_log())
    begins = record_index(records, LAME_DUCK_BEGINS)
    over = record_index(records, LAME_DUCK_OVER, begins)
    assert records[begins]["LIFECYCLE_LAME_DUCK"] == f"{delay:g} s", records[begins]
    order = [(r.get("LIFECYCLE_EVENT", ""), r.get("LIFECYCLE_TARGET", "")) for r in records]
    # Nothing of termination's before the delay is over; then the drain outlives the teardown, as without a delay.
    assert ("applicationWillTerminate", "delegate") not in order[:over], order[:over]
    drained = order.index(("taskDidEnd", CONTROLLER), over)
    assert_in_order(
        order[over:],
        [
            ("applicationWillResignActive", "delegate"),
            ("taskWillStop", CONTROLLER),
            ("applicationWillTerminate", "delegate"),
            ("deinit", CONTROLLER),
            ("taskDidEnd", CONTROLLER),
        ],
    )
    assert {e.cause for e in trace_events(records) if e.event == "applicationWillTerminate"} == {"signal:SIGTERM"}
    assert records[-1]["message"] == "terminated cleanly", records[-3:]
    # The request in flight was answered during the drain: after the delay was over.
    assert slow_answer.ended is not None and slow_answer.ended > timestamp(records[over]), (slow_answer.ended, over)

    phases = {
        "lame_duck_seconds": delay,
        "sigterm_to_lame_duck_notice_s": round(timestamp(records[begins]) - sent, 3),
        "sigterm_to_readiness_probe_503_s": round(probe_failed - sent, 3),
        "lame_duck_delay_s": round(timestamp(records[over]) - timestamp(records[begins]), 3),
        "delay_end_to_drain_end_s": round(timestamp(records[drained]) - timestamp(records[over]), 3),
        "drain_end_to_terminated_cleanly_s": round(timestamp(records[-1]) - timestamp(records[drained]), 3),
        "sigterm_to_terminated_cleanly_s": round(timestamp(records[-1]) - sent, 3),
        "podman_stop_seconds": round(took, 3),
        "requests_served_during_delay": len(served),
        "slow_request_seconds": delay + 2,
    }
    record_figures("stop", phases)


def test_a_second_sigterm_during_the_lame_duck_delay_terminates_at_once(pods: Podman, workload: Workload) -> None:
    container, _ = start(pods, workload, "twice")
    delay = lame_duck_seconds(workload)
    sent = time.monotonic()
    container.kill("SIGTERM")
    wait_for(lambda: container.check("ready").returncode == 1, timeout=5, interval=0.02, message="the lame duck")
    assert container.http_get("/readyz") == (503, "stopping (lame duck, not ready)\n")
    again = time.monotonic()
    container.kill("SIGTERM")
    assert container.wait(timeout=30) == 0
    ended = time.monotonic()
    assert ended - sent < delay, f"the second SIGTERM did not cut the {delay} s delay short: {ended - sent:.2f} s"
    messages = [str(r["message"]) for r in log_records(container.stderr_log())]
    begins = record_index([{"message": m} for m in messages], LAME_DUCK_BEGINS)
    cut = record_index([{"message": m} for m in messages], LAME_DUCK_CUT, begins)
    assert LAME_DUCK_OVER not in messages and messages[-1] == "terminated cleanly", messages[cut:]
    record_figures("second_sigterm", {"second_sigterm_to_exit_s": round(ended - again, 3)})


def test_podman_logs_are_json_lines_with_the_trace_in_causal_order(pods: Podman, workload: Workload) -> None:
    container, _ = start(pods, workload, "logs", extra=TRACE_ALL)
    container.kill("SIGUSR1")
    wait_for(lambda: state(container) == "background", message="the background after SIGUSR1")
    container.kill("SIGUSR2")
    wait_for(lambda: state(container) == "active", message="active after SIGUSR2")
    done, _ = container.stop()
    assert done.returncode == 0 and container.exit_code == 0, done.stderr

    # Every line on stderr one JSON object with the record's own keys (log_records fails on any other line).
    records = log_records(container.stderr_log())
    assert {r["program"] for r in records} == {"hello-service"}
    assert {r["level"] for r in records} <= {"trace", "debug", "info", "notice", "warning", "error", "critical"}
    events = trace_events(records)
    # Every event once, in the order the daemon numbered them: one process, sequence 1, 2, 3 … in the log's order
    # (LIFECYCLE_SEQ a JSON number).
    assert all(isinstance(r["LIFECYCLE_SEQ"], int) for r in records if "LIFECYCLE_EVENT" in r)
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), [(e.seq, e.event, e.target) for e in events]
    assert_in_order(
        pairs(events),
        [
            ("willFinishLaunching", "delegate"),
            ("didFinishLaunching", "delegate"),
            ("taskDidStart", CONTROLLER),
            ("applicationDidBecomeActive", "delegate"),
            ("applicationDidEnterBackground", "delegate"),
            ("taskDidEnd", CONTROLLER),
            ("applicationWillEnterForeground", "delegate"),
            ("taskDidStart", CONTROLLER),
            ("applicationDidBecomeActive", "delegate"),
            ("applicationWillTerminate", "delegate"),
            ("deinit", CONTROLLER),
        ],
    )
    causes = {(e.event, e.cause) for e in events if e.target == "delegate"}
    assert ("applicationDidEnterBackground", "signal:SIGUSR1") in causes
    assert ("applicationWillEnterForeground", "signal:SIGUSR2") in causes
    assert ("applicationWillTerminate", "signal:SIGTERM") in causes
    # The daemon's own lines among the events, where they happened: the lame duck before termination's callbacks.
    lame_duck = record_index(records, LAME_DUCK_BEGINS)
    terminate = next(i for i, r in enumerate(records) if r.get("LIFECYCLE_EVENT") == "applicationWillTerminate")
    assert lame_duck < terminate


# State across containers, and PID 1.


def test_a_sigkilled_service_comes_back_in_a_new_container_with_its_count_from_the_volume(
    pods: Podman, workload: Workload
) -> None:
    volumes = {claim: pods.volume(claim) for claim, _, _ in workload.mounts}
    (state_directory,) = [path for _, path, _ in workload.mounts]
    first, _ = start(pods, workload, "saves", volumes=volumes)
    port = first.port or 0
    for _ in range(4):
        assert get(port, "/") == (200, "hello")
    # start()'s first answer, and these four.
    counted = 5
    assert get(port, "/count") == (200, str(counted))
    # The background saves the state (docs/restoration.md, "When the state is saved"); what happens after the last
    # save is what a SIGKILL loses.
    first.kill("SIGUSR1")

    def save() -> re.Match[str] | None:
        for record in log_records(first.stderr_log()):
            if match := re.fullmatch(r"saved state generation (\d+) \(\d+ bytes\) to (\S+)", str(record["message"])):
                return match
        return None

    saved = wait_for(save, message="the save after SIGUSR1")
    assert saved[2] == f"{state_directory}/state.archive", saved[0]
    first.kill("SIGUSR2")
    wait_for(lambda: first.check("ready").returncode == 0, message="ready after SIGUSR2")
    assert get(port, "/") == (200, "hello") and get(port, "/count") == (200, str(counted + 1))
    first.kill("SIGKILL")
    assert first.wait(timeout=30) == SIGKILL_STATUS

    # The runtime's termination log (Kubernetes mounts /dev/termination-log: lastState.terminated.message).
    termination_log = Path(tempfile.mkdtemp(prefix="lifecycle-e2e-termination-")) / "termination-log"
    termination_log.write_text("")
    termination_log.chmod(0o666)
    second, _ = start(
        pods, workload, "restores", volumes=volumes, extra=("--volume", f"{termination_log}:/dev/termination-log")
    )
    records = log_records(second.stderr_log())
    restoring = f"restoring saved state generation {saved[1]} from {state_directory}/state.archive"
    assert any(str(r["message"]).startswith(restoring) for r in records), [r["message"] for r in records]
    # The count goes on from the save, without the request answered after it: start()'s first answer makes it one
    # more (two more, had the lost request been saved).
    assert get(second.port or 0, "/count") == (200, str(counted + 1))
    # Why the last run ended (docs/restoration.md): the SIGKILLed container left a run record and no exit record, and a
    # container has no ExecStopPost= to say more.
    launch = [r for r in records if "LIFECYCLE_LAST_RUN" in r]
    assert [r["LIFECYCLE_LAST_RUN"] for r in launch] == ["unknown"], [r["message"] for r in launch]
    assert "an end nothing recorded" in str(launch[0]["message"]), launch[0]["message"]
    # A stop: its exit record, and the termination message.
    done, _ = second.stop()
    assert done.returncode == 0, done.stderr
    message = termination_log.read_text()
    assert message.startswith("hello-service terminated cleanly (SIGTERM) after "), message
    third, _ = start(pods, workload, "after-a-stop", volumes=volumes)
    launch = [r for r in log_records(third.stderr_log()) if "LIFECYCLE_LAST_RUN" in r]
    # A clean stop; a new container within [Restoration] RestartGapSec= (2 s) of it is named a restart.
    assert [r["LIFECYCLE_LAST_RUN"] for r in launch] in (["stop"], ["restart"]), [r["message"] for r in launch]
    assert "before a stop (SIGTERM)" in str(launch[0]["message"]) or "before a restart" in str(launch[0]["message"])
    shutil.rmtree(termination_log.parent, ignore_errors=True)


def test_pid_1_reaps_the_orphans_reparented_to_it(pods: Podman, workload: Workload, orphans_binary: Path) -> None:
    container, _ = start(pods, workload, "reaps")
    daemon = container.host_pid
    container.copy_in(orphans_binary, "/tmp/orphans")
    done = container.exec("/tmp/orphans", "3", "/tmp/orphans-go")
    assert done.returncode == 0 and len(done.stdout.split()) == 3, (done.stdout, done.stderr)

    def orphans() -> dict[int, str]:
        """This machine's processes whose parent is the daemon and whose name is the helper's: pid → state."""
        found = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue
            name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
            if name == "orphans" and int(rest[1]) == daemon:
                found[int(stat.parent.name)] = rest[0]
        return found

    # The three children, their parent gone, are the daemon's now (PID 1 in the container).
    wait_for(lambda: len(orphans()) == 3, timeout=10, interval=0.02, message="the orphans under PID 1")
    # Let them exit: each is then a zombie until its parent waits for it; the daemon does, at once.
    Path(f"/proc/{daemon}/root/tmp/orphans-go").touch()
    wait_for(lambda: not orphans(), timeout=5, interval=0.02, message=f"the orphans reaped; left: {orphans()}")
    assert container.check("live").returncode == 0 and container.check("ready").returncode == 0
    assert get(container.port or 0, "/") == (200, "hello")
