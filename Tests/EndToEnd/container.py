#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Containers for the end-to-end tests: the example's image, podman as these machines allow it, and the Kubernetes
manifest read into podman's flags.

- The image is Examples/HelloService/Containerfile built by scripts/container-image from the binaries under test
  (no registry: FROM scratch, the binaries and the Debian libraries they link), under the manifest's repository with
  a tag of the session's own, removed afterwards.
- Every container runs with PODMAN_RUN_FLAGS (what podman needs on these machines: runc, the host's network,
  explicit rlimits) plus what the manifest declares (`Workload.run_flags`): its user, capabilities, env, limits, its
  claims as podman volumes and its ConfigMaps as read-only directories of their files; its probes run as the kubelet
  runs them (`Container.probe_passes`: exec with `podman exec`, httpGet against the port); its grace period is
  `podman stop -t`.
- `Podman` names everything it makes uniquely and removes exactly that (containers, volumes), never anything else.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from harness import CHECKOUT, CtlBinary, LifecycleEvent
from test_example import ExampleBinary

EXAMPLE = CHECKOUT / "Examples" / "HelloService"
MANIFEST = EXAMPLE / "kubernetes.yaml"
CONTAINERFILE = EXAMPLE / "Containerfile"
IMAGE_SCRIPT = CHECKOUT / "scripts" / "container-image"
FIGURES_PATH = CHECKOUT / ".build-e2e" / "container-figures.json"

# What `podman run` needs on these machines (measured with podman 4.3.1 on Debian 12; /work/shared/FACTS.md):
# - runc: Debian's default runtime, crun, refuses the hybrid cgroup layout ("cgroups in hybrid mode not supported");
# - the host's network: the example listens on 127.0.0.1, and the tests talk HTTP to it from here;
# - explicit rlimits: root here lacks CAP_SYS_RESOURCE, so podman's defaults and `--ulimit host` fail (setrlimit
#   RLIMIT_NOFILE/NPROC: Operation not permitted);
# - k8s-file logs (what the kubelet keeps too): `podman logs` reads them back whether or not the machine runs journald,
#   podman's default where systemd is PID 1.
PODMAN_RUN_FLAGS = [
    "--runtime", "runc",
    "--network", "host",
    "--ulimit", "nofile=1024:1024",
    "--ulimit", "nproc=4096:4096",
    "--log-driver", "k8s-file",
]

# `podman exec` itself takes 0.1 to 0.25 s here (conmon, runc exec) on top of the probe's own time; a probe's
# timeoutSeconds is the command's, so the wait for the whole `podman exec` allows this much more (a loaded machine).
PODMAN_EXEC_OVERHEAD_SECONDS = 5.0

# What the manifest may declare: the test translates every one of these into podman's terms (or checks it), and
# fails on anything else, so a setting added to the manifest is one the test runs too.
POD_SPEC_KEYS = {"terminationGracePeriodSeconds", "securityContext", "containers", "volumes"}
CONTAINER_KEYS = {
    "name", "image", "imagePullPolicy", "command", "args", "ports", "env", "volumeMounts", "securityContext",
    "resources", "startupProbe", "livenessProbe", "readinessProbe",
}
PROBE_KINDS = ("startupProbe", "livenessProbe", "readinessProbe")


def require_podman() -> None:
    """Fails the test (not skipped) when podman or runc is missing, saying how to install them."""
    missing = [tool for tool in ("podman", "runc") if shutil.which(tool) is None]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not installed: the container tests run the example under Debian's podman with "
            "runc. `scripts/install-packages test` installs them (scripts/debian-packages, purpose test).",
            pytrace=False,
        )


def podman(*arguments: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    require_podman()
    done = subprocess.run(["podman", *arguments], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(arguments)} exited {done.returncode}: {done.stderr.strip()}")
    return done


def record_figures(name: str, figures: dict) -> None:
    """Adds one test's figures to .build-e2e/container-figures.json and prints them."""
    print(f"{name}:", json.dumps(figures))
    FIGURES_PATH.parent.mkdir(exist_ok=True)
    everything = json.loads(FIGURES_PATH.read_text()) if FIGURES_PATH.exists() else {}
    everything[name] = figures
    FIGURES_PATH.write_text(json.dumps(everything, indent=2, sort_keys=True) + "\n")


# The image.


class ExampleImage:
    """The example's image, built by scripts/container-image from the binaries under test (hello-service and
    lifecyclectl, what `make image` puts in) the first time a test asks for it, under the manifest's repository with a
    tag of this session's own; a missing podman or binary fails that test."""

    def __init__(self, workload: "Workload"):
        self.tag = f"{workload.repository}:e2e-{os.getpid()}-{secrets.token_hex(3)}"
        self.built = False
        self.failure: str | None = None
        self.build_seconds = 0.0

    def name(self) -> str:
        if self.failure is not None:
            pytest.fail(self.failure, pytrace=False)
        if not self.built:
            require_podman()
            binaries = [str(ExampleBinary().path()), str(CtlBinary().path())]
            began = time.monotonic()
            done = subprocess.run(
                [str(IMAGE_SCRIPT), "--tag", self.tag, *binaries], capture_output=True, text=True, timeout=900
            )
            self.build_seconds = time.monotonic() - began
            if done.returncode != 0:
                self.failure = f"scripts/container-image exited {done.returncode}:\n{done.stderr}{done.stdout}"
                pytest.fail(self.failure, pytrace=False)
            self.built = True
        return self.tag

    def remove(self) -> None:
        if self.built:
            podman("rmi", self.tag, check=False)
            self.built = False


# The manifest.


class Probe(NamedTuple):
    """One of the manifest's probes, with Kubernetes' defaults where it says nothing."""

    kind: str
    # exec: the command run in the container; httpGet: (path, port); tcpSocket: port.
    command: list[str] | None
    http: tuple[str, int] | None
    tcp_port: int | None
    initial_delay: float
    period: float
    timeout: float
    failure_threshold: int

    @classmethod
    def load(cls, kind: str, spec: dict[str, Any], ports: dict[str, int]) -> "Probe":
        """The probe `spec`; a port given by name is the container's port of that name (`ports`)."""
        handlers = [key for key in ("exec", "httpGet", "tcpSocket", "grpc") if key in spec]
        assert len(handlers) == 1, f"{kind} must have one of exec, httpGet, tcpSocket: {spec}"
        assert handlers[0] != "grpc", f"{kind}: the test cannot run a grpc probe"

        def port(value: str | int) -> int:
            if isinstance(value, int):
                return value
            assert value in ports, f"{kind}: port {value!r} is not one of the container's ports {sorted(ports)}"
            return ports[value]

        if "httpGet" in spec:
            unknown = set(spec["httpGet"]) - {"path", "port"}
            assert not unknown, f"{kind}: httpGet {sorted(unknown)} (host, scheme, headers) is not run by the test"
        return cls(
            kind=kind,
            command=[str(word) for word in spec["exec"]["command"]] if "exec" in spec else None,
            http=(str(spec["httpGet"].get("path", "/")), port(spec["httpGet"]["port"])) if "httpGet" in spec else None,
            tcp_port=port(spec["tcpSocket"]["port"]) if "tcpSocket" in spec else None,
            initial_delay=float(spec.get("initialDelaySeconds", 0)),
            period=float(spec.get("periodSeconds", 10)),
            timeout=float(spec.get("timeoutSeconds", 1)),
            failure_threshold=int(spec.get("failureThreshold", 3)),
        )


def memory_bytes(quantity: str) -> int:
    """A Kubernetes memory quantity ("128Mi", "1G", "500000") in bytes."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    match = re.fullmatch(r"(\d+)([KMGT]i?|k)?", str(quantity))
    assert match, f"memory quantity {quantity!r} is not one the test reads (e.g. 128Mi)"
    return int(match.group(1)) * units.get(match.group(2) or "", 1)


def cpus(quantity: str | int | float) -> str:
    """A Kubernetes CPU quantity ("500m", "1", 2) as podman's --cpus."""
    text = str(quantity)
    return str(int(text[:-1]) / 1000) if text.endswith("m") else str(float(text))


class Workload:
    """The Deployment's pod of Examples/HelloService/kubernetes.yaml, as podman flags."""

    def __init__(self, path: Path = MANIFEST):
        self.path = path
        self.text = path.read_text()
        documents = [d for d in yaml.safe_load_all(self.text) if d]
        deployments = [d for d in documents if d.get("kind") == "Deployment"]
        assert len(deployments) == 1, f"{path}: one Deployment expected, found {len(deployments)}"
        self.deployment = deployments[0]
        self.claims = {d["metadata"]["name"]: d for d in documents if d.get("kind") == "PersistentVolumeClaim"}
        self.config_maps: dict[str, dict[str, str]] = {
            d["metadata"]["name"]: {str(k): str(v) for k, v in d.get("data", {}).items()}
            for d in documents
            if d.get("kind") == "ConfigMap"
        }
        self.pod: dict[str, Any] = self.deployment["spec"]["template"]["spec"]
        unknown = set(self.pod) - POD_SPEC_KEYS
        assert not unknown, f"{path}: the pod declares {sorted(unknown)}, which test_container.py does not run"
        assert len(self.pod["containers"]) == 1, f"{path}: one container expected"
        self.container: dict[str, Any] = self.pod["containers"][0]
        unknown = set(self.container) - CONTAINER_KEYS
        assert not unknown, f"{path}: the container declares {sorted(unknown)}, which test_container.py does not run"

    @property
    def image(self) -> str:
        return str(self.container["image"])

    @property
    def repository(self) -> str:
        """The image's name without its tag: the test builds it under a tag of its own."""
        return self.image.rsplit(":", 1)[0] if ":" in self.image.rsplit("/", 1)[-1] else self.image

    @property
    def grace_seconds(self) -> int:
        """terminationGracePeriodSeconds (Kubernetes' default 30): `podman stop -t`."""
        return int(self.pod.get("terminationGracePeriodSeconds", 30))

    @property
    def args(self) -> list[str]:
        return [str(word) for word in self.container.get("args", [])]

    @property
    def declared_port(self) -> int:
        """The port the args give with --port."""
        args = self.args
        assert "--port" in args, f"{self.path}: the args {args} set no --port"
        return int(args[args.index("--port") + 1])

    def args_on(self, port: int) -> list[str]:
        """The args with the test's port: the container shares the machine's network, so the manifest's may be taken."""
        args = self.args
        args[args.index("--port") + 1] = str(port)
        return args

    @property
    def env(self) -> dict[str, str]:
        env: dict[str, str] = {}
        for variable in self.container.get("env", []):
            assert "value" in variable, f"{self.path}: env {variable['name']} is not a plain value (valueFrom)"
            env[str(variable["name"])] = str(variable["value"])
        return env

    def security(self) -> dict[str, Any]:
        """The pod's securityContext with the container's on top (the container's wins, as in Kubernetes)."""
        return {**self.pod.get("securityContext", {}), **self.container.get("securityContext", {})}

    @property
    def user(self) -> tuple[int, int]:
        security = self.security()
        return int(security["runAsUser"]), int(security.get("runAsGroup", security["runAsUser"]))

    def _volume_mounts(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(volume, mount) of each volume mount; every volume is a claim or a ConfigMap the file declares."""
        volumes = {v["name"]: v for v in self.pod.get("volumes", [])}
        mounts = []
        for mount in self.container.get("volumeMounts", []):
            unknown = set(mount) - {"name", "mountPath", "readOnly"}
            assert not unknown, f"{self.path}: volume mount {mount['name']}: {sorted(unknown)} is not run by the test"
            volume = volumes[mount["name"]]
            if "persistentVolumeClaim" in volume:
                claim = volume["persistentVolumeClaim"]["claimName"]
                assert claim in self.claims, f"{self.path}: claim {claim} is not declared"
            else:
                assert "configMap" in volume, f"{self.path}: volume {volume['name']} is neither a claim nor a ConfigMap"
                assert set(volume["configMap"]) == {"name"}, f"{self.path}: {volume['configMap']}: only a name is run"
                assert volume["configMap"]["name"] in self.config_maps, f"{self.path}: {volume['configMap']} undeclared"
            mounts.append((volume, mount))
        return mounts

    @property
    def mounts(self) -> list[tuple[str, str, bool]]:
        """(claim name, mount path, read-only) of each claim's volume mount."""
        return [
            (str(volume["persistentVolumeClaim"]["claimName"]), str(mount["mountPath"]), bool(mount.get("readOnly")))
            for volume, mount in self._volume_mounts()
            if "persistentVolumeClaim" in volume
        ]

    @property
    def config_mounts(self) -> list[tuple[str, str]]:
        """(ConfigMap name, mount path) of each ConfigMap's volume mount: always read-only, as Kubernetes mounts one."""
        return [
            (str(volume["configMap"]["name"]), str(mount["mountPath"]))
            for volume, mount in self._volume_mounts()
            if "configMap" in volume
        ]

    def mounted_file(self, path: str) -> str:
        """The text of the file at `path` in the container when a ConfigMap's key puts it there."""
        for name, directory in self.config_mounts:
            key = path.removeprefix(directory.rstrip("/") + "/")
            if key != path and key in self.config_maps[name]:
                return self.config_maps[name][key]
        raise AssertionError(f"{self.path}: no ConfigMap puts a file at {path}")

    @property
    def configuration(self) -> dict[tuple[str, str], str]:
        """The daemon's configuration file (`--config` in the args), from the ConfigMap that holds it:
        {(section, key): value}; empty without --config."""
        args = self.args
        if "--config" not in args:
            return {}
        settings: dict[tuple[str, str], str] = {}
        section = ""
        for line in self.mounted_file(args[args.index("--config") + 1]).splitlines():
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]")
            else:
                key, value = line.split("=", 1)
                settings[(section, key.strip())] = value.strip()
        return settings

    @property
    def ports(self) -> dict[str, int]:
        """The container's named ports."""
        return {str(p["name"]): int(p["containerPort"]) for p in self.container.get("ports", []) if "name" in p}

    @property
    def probes(self) -> dict[str, Probe]:
        return {
            kind: Probe.load(kind, self.container[kind], self.ports) for kind in PROBE_KINDS if kind in self.container
        }

    def run_flags(self, volumes: dict[str, str], config_directories: dict[str, str]) -> list[str]:
        """`podman run` flags for what the manifest declares, with `volumes` mapping each claim to a podman volume and
        `config_directories` each ConfigMap to a directory of its files."""
        security = self.security()
        user, group = self.user
        if security.get("runAsNonRoot"):
            assert user != 0, f"{self.path}: runAsNonRoot with runAsUser 0"
        flags = ["--user", f"{user}:{group}"]
        if "fsGroup" in security:
            # The kubelet adds fsGroup to the container's supplementary groups (and gives it the volume).
            flags += ["--group-add", str(security["fsGroup"])]
        if security.get("allowPrivilegeEscalation") is False:
            flags += ["--security-opt", "no-new-privileges"]
        capabilities = security.get("capabilities", {})
        for capability in capabilities.get("drop", []):
            flags += ["--cap-drop", str(capability).lower()]
        for capability in capabilities.get("add", []):
            flags += ["--cap-add", str(capability).lower()]
        profile = security.get("seccompProfile", {}).get("type", "RuntimeDefault")
        assert profile == "RuntimeDefault", f"{self.path}: seccompProfile {profile}: podman runs its default only"
        limits = self.container.get("resources", {}).get("limits", {})
        if "memory" in limits:
            flags += ["--memory", str(memory_bytes(limits["memory"]))]
        if "cpu" in limits:
            flags += ["--cpus", cpus(limits["cpu"])]
        for name, value in self.env.items():
            flags += ["--env", f"{name}={value}"]
        for claim, path, read_only in self.mounts:
            flags += ["--volume", f"{volumes[claim]}:{path}" + (":ro" if read_only else "")]
        for name, path in self.config_mounts:
            flags += ["--volume", f"{config_directories[name]}:{path}:ro"]
        if "command" in self.container:
            flags += ["--entrypoint", json.dumps([str(word) for word in self.container["command"]])]
        return flags


# Logs.


def log_records(text: str) -> list[dict[str, Any]]:
    """One record per line of the daemon's log, as a pipeline reads it: every line one JSON object (the format the
    daemon picks when stderr is neither a terminal nor journald: docs/operations.md, "Log formats") with at least
    `timestamp`, `level` and `message`. Any other line fails, naming it."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            record = json.loads(line)
        except ValueError as error:
            raise AssertionError(f"log line {number} is not JSON ({error}): {line!r}") from None
        assert isinstance(record, dict), f"log line {number} is not a JSON object: {line!r}"
        missing = {"timestamp", "level", "message"} - set(record)
        assert not missing, f"log line {number} lacks {sorted(missing)}: {line!r}"
        records.append(record)
    return records


def record_index(records: list[dict[str, Any]], message_prefix: str, start: int = 0) -> int:
    """The position of the first record from `start` whose message begins with `message_prefix`."""
    for index in range(start, len(records)):
        if str(records[index]["message"]).startswith(message_prefix):
            return index
    raise AssertionError(f"no record {message_prefix!r}… after record {start}: {[r['message'] for r in records]}")


def timestamp(record: dict[str, Any]) -> float:
    """A record's `timestamp` (RFC 3339, UTC, microseconds) as seconds since the epoch, the clock of time.time()."""
    return datetime.strptime(str(record["timestamp"]), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def trace_events(records: list[dict[str, Any]]) -> list[LifecycleEvent]:
    """The trace events among the records, in the order the log has them (not sorted: the order is under test)."""
    return [
        LifecycleEvent(
            event=r["LIFECYCLE_EVENT"],
            target=r.get("LIFECYCLE_TARGET", ""),
            state=r.get("LIFECYCLE_STATE", ""),
            seq=int(r.get("LIFECYCLE_SEQ", 0)),
            cause=r.get("LIFECYCLE_CAUSE", ""),
            detail=r.get("LIFECYCLE_DETAIL", ""),
        )
        for r in records
        if "LIFECYCLE_EVENT" in r
    ]


# Containers.

# The control socket: $RUNTIME_DIRECTORY/control, RUNTIME_DIRECTORY as the Containerfile sets it.
CONTROL_SOCKET = "/run/hello-service/control"


class Container:
    """One container the test made."""

    def __init__(self, name: str, workload: Workload, port: int | None):
        self.name = name
        self.workload = workload
        # The port the service was given (--port), for HTTP probes.
        self.port = port

    def exec(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return podman("exec", self.name, *argv, check=False, timeout=timeout)

    def kill(self, signal_name: str) -> None:
        """`podman kill -s SIGNAL`: to the container's PID 1, the daemon."""
        podman("kill", "--signal", signal_name, self.name)

    def inspect(self, template: str) -> str:
        return podman("inspect", "--format", template, self.name).stdout.strip()

    @property
    def status(self) -> str:
        return self.inspect("{{.State.Status}}")

    @property
    def exit_code(self) -> int:
        return int(self.inspect("{{.State.ExitCode}}"))

    @property
    def host_pid(self) -> int:
        return int(self.inspect("{{.State.Pid}}"))

    def wait(self, timeout: float) -> int:
        """`podman wait`: until the container has exited; its exit status."""
        return int(podman("wait", self.name, timeout=timeout).stdout.strip())

    def copy_in(self, source: Path, destination: str) -> None:
        """`podman cp` a file of this machine into the running container."""
        podman("cp", str(source), f"{self.name}:{destination}")

    def logs(self) -> str:
        """What the daemon wrote to stderr (and stdout, which it does not use), as `podman logs` reads it back."""
        done = podman("logs", self.name)
        return done.stdout + done.stderr

    def stderr_log(self) -> str:
        """Only stderr, in the order it was written: the daemon's log."""
        return podman("logs", self.name).stderr

    def lifecyclectl(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """lifecyclectl in the container, on the socket the image's RUNTIME_DIRECTORY puts it at."""
        return self.exec("/usr/local/bin/lifecyclectl", *argv, "--socket", CONTROL_SOCKET, timeout=timeout)

    def check(self, probe: str, verbose: bool = False) -> subprocess.CompletedProcess:
        """`lifecyclectl check PROBE --timeout 1` in the container, as an exec probe runs it."""
        return self.lifecyclectl("check", probe, "--timeout", "1", *(["--verbose"] if verbose else []))

    @property
    def host_socket(self) -> str:
        """The control socket as this machine reaches it (root, through the daemon's root directory)."""
        return f"/proc/{self.host_pid}/root{CONTROL_SOCKET}"

    def lifecyclectl_from_host(self, *argv: str, socket_path: str | None = None) -> subprocess.CompletedProcess:
        """The same lifecyclectl (the binary under test) run on this machine against the container's control socket:
        what an exec probe runs, without `podman exec` around it. podman refuses to exec in a container it is
        stopping ("container state improper"), where a kubelet keeps running exec probes; a test of the stop asks
        this way (`socket_path`: the socket found before the stop began)."""
        return subprocess.run(
            [str(CtlBinary().path()), *argv, "--socket", socket_path or self.host_socket],
            capture_output=True,
            text=True,
            timeout=30,
        )

    def status_json(self) -> dict[str, Any] | None:
        """`lifecyclectl status --json`: the daemon's status; None while it does not answer."""
        done = self.lifecyclectl("status", "--json", "--timeout", "5")
        return json.loads(done.stdout) if done.returncode == 0 else None

    def http_get(self, path: str, timeout: float = 10) -> tuple[int, str] | None:
        """GET `path` on a new connection to the service's port: (status, body), or None when nothing answers within
        `timeout` (the server paused: the connection waits in the backlog) or the connection is refused or reset."""
        assert self.port is not None
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            return response.status, response.read().decode()
        except (OSError, http.client.HTTPException):
            return None
        finally:
            connection.close()

    def probe_passes(self, probe: Probe) -> bool:
        """Runs the probe once, as the kubelet would: an exec probe in the container (exit 0 passes), an HTTP probe
        against the service's port (200–399 within timeoutSeconds passes), a TCP probe as a connect. The manifest's
        port is the test's."""
        if probe.command is not None:
            try:
                done = self.exec(*probe.command, timeout=probe.timeout + PODMAN_EXEC_OVERHEAD_SECONDS)
            except subprocess.TimeoutExpired:
                return False
            return done.returncode == 0
        declared = probe.http[1] if probe.http is not None else probe.tcp_port
        assert declared == self.workload.declared_port and self.port is not None, (
            f"{probe.kind}: port {declared} is not the one the service listens on (--port)"
        )
        if probe.http is not None:
            answer = self.http_get(probe.http[0], timeout=probe.timeout)
            return answer is not None and 200 <= answer[0] < 400
        with socket.socket() as client:
            client.settimeout(probe.timeout)
            return client.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self) -> tuple[subprocess.CompletedProcess, float]:
        """`podman stop -t <terminationGracePeriodSeconds>`: SIGTERM (the image's STOPSIGNAL), SIGKILL only once the
        grace period is over. Returns podman's result and how long the stop took."""
        grace = self.workload.grace_seconds
        began = time.monotonic()
        done = podman("stop", "--time", str(grace), self.name, check=False, timeout=grace + 60)
        return done, time.monotonic() - began


class Podman:
    """Makes containers, volumes and ConfigMap directories with names of its own (`lifecycle-e2e-<pid>-<random>-…`)
    and removes exactly those, whatever state they are in."""

    def __init__(self, image: ExampleImage):
        self.image = image
        self.prefix = f"lifecycle-e2e-{os.getpid()}-{secrets.token_hex(3)}"
        self.containers: list[str] = []
        self.volumes: list[str] = []
        self.directories: list[Path] = []

    def volume(self, role: str) -> str:
        name = f"{self.prefix}-{role}-{len(self.volumes)}"
        podman("volume", "create", name)
        self.volumes.append(name)
        return name

    def config_directory(self, data: dict[str, str]) -> str:
        """A ConfigMap as the kubelet mounts it: a directory with one file per key, readable by every user."""
        directory = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-config."))
        self.directories.append(directory)
        directory.chmod(0o755)
        for key, text in data.items():
            (directory / key).write_text(text)
            (directory / key).chmod(0o644)
        return str(directory)

    def run(
        self, workload: Workload, role: str, port: int, volumes: dict[str, str], extra: tuple[str, ...] = ()
    ) -> Container:
        """`podman run --detach` of the image with the manifest's flags and its args with `port`; `volumes` maps each
        claim to a podman volume, and each ConfigMap is mounted from a directory of its own."""
        name = f"{self.prefix}-{role}-{len(self.containers)}"
        self.containers.append(name)
        configs = {config: self.config_directory(workload.config_maps[config]) for config, _ in workload.config_mounts}
        flags = workload.run_flags(volumes, configs)
        podman(
            "run", "--detach", "--name", name, *PODMAN_RUN_FLAGS, *flags, *extra, self.image.name(),
            *workload.args_on(port),
        )
        return Container(name, workload, port)

    def cleanup(self) -> None:
        for name in reversed(self.containers):
            podman("rm", "--force", "--time", "0", name, check=False)
        self.containers.clear()
        for name in reversed(self.volumes):
            podman("volume", "rm", "--force", name, check=False)
        self.volumes.clear()
        for directory in self.directories:
            shutil.rmtree(directory, ignore_errors=True)
        self.directories.clear()
