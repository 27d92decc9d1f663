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
(container.PODMAN_RUN_FLAGS) and the manifest's own (its args, env, user, capabilities, limits, state volume); its
probes run with `podman exec`; its terminationGracePeriodSeconds is `podman stop -t`. The container shares the
machine's network (the example listens on 127.0.0.1), so the one thing the test changes is the port: a free one
instead of the manifest's. No systemd sandbox: podman runs on the machine, as root, and every container and volume a
test makes is removed afterwards (those only).

podman missing fails every test here except the manifest's own, saying how to install it
(`scripts/install-packages test`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, TypeVar

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
    trace_events,
)
from harness import pairs, wait_for
from test_example import CONTROLLER, SlowRequest, answers, connects, free_port, get

# The ServiceController's shutdownTimeout (Examples/HelloService/README.md): how long a drain may take at most.
DRAIN_BOUND_SECONDS = 10
# The exit status of a process killed by SIGKILL, as podman reports it (128 + 9).
SIGKILL_STATUS = 137
# What a test that reads the trace adds to the manifest's container: every callback at info (the controller's too),
# not only the delegate's. A deployment leaves it off.
TRACE_ALL = ("--env", "LIFECYCLE_TRACE=all")

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


def containerfile_setting(instruction: str) -> str:
    """The argument of the Containerfile's one `INSTRUCTION` line."""
    lines = [line for line in CONTAINERFILE.read_text().splitlines() if line.startswith(instruction + " ")]
    assert len(lines) == 1, f"{CONTAINERFILE}: {len(lines)} {instruction} lines"
    return lines[0].removeprefix(instruction + " ")


def containerfile_env() -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in containerfile_setting("ENV").split())


def start(
    pods: Podman, workload: Workload, role: str, extra: tuple[str, ...] = ()
) -> tuple[Container, dict[str, float]]:
    """`podman run` of the manifest's container on a free port (with `extra` flags); returns once its startup probe
    passed (within the manifest's failureThreshold × periodSeconds) and it answered HTTP. Figures: seconds from
    `podman run` to each."""
    port = free_port()
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


# The manifest and the image.


def test_the_manifest_wires_the_image_user_probes_grace_period_and_state_volume(workload: Workload) -> None:
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
    assert {"startupProbe", "livenessProbe"} <= set(probes), sorted(probes)
    for probe in probes.values():
        if probe.command and "--socket" in probe.command:
            assert probe.command[probe.command.index("--socket") + 1] == CONTROL_SOCKET, probe
        if probe.command and "--timeout" in probe.command:
            # lifecyclectl gives up before the kubelet does, so a stuck daemon is a failed probe, not a killed one.
            assert float(probe.command[probe.command.index("--timeout") + 1]) < probe.timeout, probe
    # SIGTERM drains (bounded by the ServiceController's shutdownTimeout) before the kubelet's SIGKILL.
    assert workload.grace_seconds > DRAIN_BOUND_SECONDS
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
    for program in ("hello-service", "lifecyclectl", "lifecycled"):
        done = podman("run", "--rm", *PODMAN_RUN_FLAGS, "--entrypoint", f"/usr/local/bin/{program}", name, "--help")
        assert "USAGE:" in done.stdout, (program, done.stdout, done.stderr)
    # Nothing else: no shell to exec into.
    shell = podman("run", "--rm", *PODMAN_RUN_FLAGS, "--entrypoint", "/bin/sh", name, "-c", "true", check=False)
    assert shell.returncode != 0 and "no such file or directory" in shell.stderr.lower(), shell.stderr
    size = int(podman("image", "inspect", "--format", "{{.Size}}", name).stdout)
    record_figures("image", {"bytes": size, "build_seconds": round(image.build_seconds, 1), "tag": name})


# The running container.


def test_it_serves_http_on_loopback_and_passes_its_probes(pods: Podman, workload: Workload) -> None:
    container, figures = start(pods, workload, "serve")
    assert get(container.port or 0, "/slow?seconds=0.1") == (200, "done")
    # The daemon is the container's PID 1, active, and its control socket is where the probes look.
    status = container.status_json()
    assert status is not None and status["pid"] == 1 and status["state"] == "active", status
    assert status["control"]["socket"] == CONTROL_SOCKET
    timings = {}
    for kind, probe in workload.probes.items():
        began = time.monotonic()
        assert container.probe_passes(probe), f"{kind} fails on an active daemon"
        timings[f"{kind}_seconds"] = round(time.monotonic() - began, 3)
    record_figures("start", {**figures, **timings})


def test_sigusr1_and_sigusr2_move_it_to_the_background_and_back_while_it_stays_alive(
    pods: Podman, workload: Workload
) -> None:
    container, _ = start(pods, workload, "signals")
    port = container.port or 0
    pid = container.host_pid
    liveness = workload.probes["livenessProbe"]

    container.kill("SIGUSR1")
    wait_for(lambda: state(container) == "background", message="lifecyclectl to show the background after SIGUSR1")
    wait_for(lambda: not connects(port), timeout=5, message="connections refused in the background")
    assert container.probe_passes(liveness), "a drained daemon in the background fails its liveness probe"

    container.kill("SIGUSR2")
    wait_for(lambda: state(container) == "active", message="lifecyclectl to show it active after SIGUSR2")
    assert wait_for(lambda: answers(port), timeout=10, message="an answer after SIGUSR2") == (200, "hello")
    assert container.probe_passes(liveness)
    # The same process all along: nothing restarted it.
    assert container.status == "running" and container.host_pid == pid
    assert container.inspect("{{.RestartCount}}") == "0"


def test_podman_stop_with_the_grace_period_finishes_the_request_in_flight_and_exits_0(
    pods: Podman, workload: Workload
) -> None:
    container, _ = start(pods, workload, "stop", extra=TRACE_ALL)
    slow = SlowRequest(container.port or 0, seconds=2)
    done, took = container.stop()
    stopped = time.monotonic()
    assert done.returncode == 0, done.stderr
    assert slow.result() == (200, "done")
    # SIGTERM, not the SIGKILL at the end of the grace period: the container ended once the request was answered,
    # at least 2 s after it was sent, and with exit status 0.
    assert container.status == "exited" and container.exit_code == 0, container.logs()
    assert slow.sending is not None and stopped - slow.sending >= 2, (stopped, slow.sending)
    assert took < workload.grace_seconds, took
    records = log_records(container.stderr_log())
    order = pairs(trace_events(records))
    # The drain began with the way to termination (through the background) and outlived the teardown: the server's
    # run ended, with the request answered, after the controller was gone; the process exited after that.
    assert_in_order(
        order,
        [
            ("taskWillStop", CONTROLLER),
            ("applicationWillTerminate", "delegate"),
            ("deinit", CONTROLLER),
            ("taskDidEnd", CONTROLLER),
        ],
    )
    assert order[-1] == ("taskDidEnd", CONTROLLER), order
    assert {e.cause for e in trace_events(records) if e.event == "applicationWillTerminate"} == {"signal:SIGTERM"}
    assert records[-1]["message"] == "terminated cleanly", records[-3:]
    record_figures("stop", {"podman_stop_seconds": round(took, 3), "request_seconds": 2})


def test_podman_logs_carry_the_trace_in_the_order_it_happened(pods: Podman, workload: Workload) -> None:
    container, _ = start(pods, workload, "logs", extra=TRACE_ALL)
    container.kill("SIGUSR1")
    wait_for(lambda: state(container) == "background", message="the background after SIGUSR1")
    container.kill("SIGUSR2")
    wait_for(lambda: state(container) == "active", message="active after SIGUSR2")
    done, _ = container.stop()
    assert done.returncode == 0 and container.exit_code == 0, done.stderr

    records = log_records(container.stderr_log())
    events = trace_events(records)
    # Every event once, in the order the daemon numbered them: one process, sequence 1, 2, 3 … in the log's order.
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
    # The log's own timestamps never go back between trace events (one writer, in order).
    stamps = [r["timestamp"] for r in records if "LIFECYCLE_EVENT" in r]
    assert stamps == sorted(stamps), stamps


# State across containers: the demo daemon of the same image, on the manifest's state volume.


def test_a_sigkilled_daemon_comes_back_in_a_new_container_with_its_state_from_the_volume(
    pods: Podman, workload: Workload
) -> None:
    # The example saves no state (it does not opt in to restoration); lifecycled, in the same image, does: its
    # mode stack, pushed by reloads with ModeChange=push (docs/restoration.md, "What the demo preserves").
    configuration = Path(tempfile.mkdtemp(prefix="lifecycle-e2e-container."))
    try:
        configuration.chmod(0o755)
        config_file = configuration / "lifecycled.conf"

        def configure(mode: str) -> None:
            config_file.write_text(f"[Demo]\nMode={mode}\nModeChange=push\n")
            config_file.chmod(0o644)

        configure("alpha")
        volumes = {claim: pods.volume(claim) for claim, _, _ in workload.mounts}
        (state_directory,) = [path for _, path, _ in workload.mounts]

        def demo(role: str) -> Container:
            container = pods.run(
                workload,
                role,
                None,
                volumes,
                entrypoint=["/usr/local/bin/lifecycled"],
                args=["--config", "/etc/lifecycle-e2e/lifecycled.conf", "--trace"],
                extra=("--volume", f"{configuration}:/etc/lifecycle-e2e:ro"),
            )
            wait_with_log(container, lambda: state(container) == "active", timeout=10, message="lifecycled active")
            return container

        first = demo("saves")
        configure("beta")
        first.kill("SIGHUP")
        wait_for(
            lambda: "stack alpha/beta" in ((first.status_json() or {}).get("statusText") or ""),
            message="the stack alpha/beta after the reload",
        )
        first.kill("SIGUSR1")
        saved = wait_for(
            lambda: re.search(r"saved state generation (\d+) \(\d+ bytes\) to (\S+)", first.logs()),
            message="the save after SIGUSR1",
        )
        assert saved[2] == f"{state_directory}/state.archive", saved[0]
        first.kill("SIGKILL")
        wait_for(lambda: first.status == "exited", message="the container to end after SIGKILL")
        assert first.exit_code == SIGKILL_STATUS

        second = demo("restores")
        status = second.status_json()
        assert status is not None and "stack alpha/beta" in status["statusText"], status
        log = second.logs()
        assert f"restoring saved state generation {saved[1]} from {state_directory}/state.archive" in log, log
        order = pairs(trace_events(log_records(second.stderr_log())))
        will, did = order.index(("willFinishLaunching", "delegate")), order.index(("didFinishLaunching", "delegate"))
        decoded = [target for event, target in order[will:did] if event == "decodeRestorableState(with:)"]
        assert decoded == ["root", "root/worker", "root/modes", "root/modes/alpha", "root/modes/beta"], order
    finally:
        shutil.rmtree(configuration)
