#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Helpers for the end-to-end tests: the systemd sandbox, journald readback, the lifecycle trace.

The sandbox is scripts/systemd-sandbox: systemd 252 booted as PID 1 of private pid, mount, uts, ipc and
cgroup namespaces, with the machine-touching units masked. Every command here runs inside it through
`systemd-sandbox exec PID -- ...` (nsenter into its mount and pid namespaces).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple, TypeVar

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
SANDBOX_SCRIPT = CHECKOUT / "scripts" / "systemd-sandbox"
SHIPPED_UNIT = CHECKOUT / "systemd" / "lifecycled.service"
SHIPPED_SYSUSERS = CHECKOUT / "systemd" / "lifecycled.sysusers"

UNIT = "lifecycled.service"
# Where the daemon lives inside the sandbox: the shipped unit's ExecStart path (a tmpfs there, so the
# machine's /usr/local/bin is untouched). The binary is copied, not run from the build directory, so a
# rebuild during a session cannot change it underneath the tests.
SANDBOX_BIN = "/usr/local/bin/lifecycled"
# lifecyclectl beside it, on the sandbox's PATH.
SANDBOX_CTL = "/usr/local/bin/lifecyclectl"
DROPIN_DIR = f"/etc/systemd/system/{UNIT}.d"
DROPIN = f"{DROPIN_DIR}/e2e.conf"

# The demo application's controllers in pre-order (parent before children, children in the order added).
# Every expected ordering below is derived from this one list.
DEMO_TREE_PREORDER = ["root", "root/worker", "root/cache", "root/modes", "root/modes/serving"]

# The controllers the demo preserves (the cache is rebuilt, not restored), in pre-order.
DEMO_PRESERVED_PREORDER = ["root", "root/worker", "root/modes", "root/modes/serving"]

# The callbacks of state preservation and restoration (docs/restoration.md): not application events, though the
# delegate's are named application(_:...).
RESTORATION_EVENTS = {
    "application(_:shouldSaveApplicationState:)",
    "application(_:willEncodeRestorableStateWith:)",
    "encodeRestorableState(with:)",
    "application(_:shouldRestoreApplicationState:)",
    "application(_:viewControllerWithRestorationIdentifierPath:coder:)",
    "decodeRestorableState(with:)",
    "applicationFinishedRestoringState",
    "application(_:didDecodeRestorableStateWith:)",
}

MEMORY_WARNING_SIGNAL = "SIGRTMIN+2"

T = TypeVar("T")


class LifecycleEvent(NamedTuple):
    """One trace record: the LIFECYCLE_* journald fields of one callback."""

    event: str
    target: str
    state: str
    seq: int
    cause: str
    # LIFECYCLE_DETAIL, when the callback's argument matters (empty otherwise).
    detail: str = ""


def entering(event: str, tree: list[str] = DEMO_TREE_PREORDER) -> list[tuple[str, str]]:
    """An entering event's delivery order: the delegate first, then the tree in pre-order."""
    return [(event, "delegate")] + [(event, path) for path in tree]


def leaving(
    event: str, delegate_event: str | None = None, tree: list[str] = DEMO_TREE_PREORDER
) -> list[tuple[str, str]]:
    """A leaving event's delivery order: the tree in reverse pre-order, then the delegate."""
    return [(event, path) for path in reversed(tree)] + [(delegate_event or event, "delegate")]


def offering(tree: list[str] = DEMO_TREE_PREORDER) -> list[tuple[str, str]]:
    """A reload's offer (docs/lifecycle.md §1, reload as a transaction): the delegate first, then the tree in pre-order,
    each asked to validate the configuration before anything applies it."""
    return [("application(_:validateReload:)", "delegate")] + [("validateReload(_:)", path) for path in tree]


def preservation(tree: list[str] = DEMO_PRESERVED_PREORDER) -> list[tuple[str, str]]:
    """What saving the state fires, after applicationDidEnterBackground (and after applicationWillTerminate): the
    delegate's two callbacks, then encodeRestorableState(with:) on each preserved controller, pre-order."""
    return [
        ("application(_:shouldSaveApplicationState:)", "delegate"),
        ("application(_:willEncodeRestorableStateWith:)", "delegate"),
    ] + [("encodeRestorableState(with:)", path) for path in tree]


def is_application_event(event: str) -> bool:
    """An application event (applicationDidEnterBackground …), not a restoration callback."""
    return event.startswith("application") and event not in RESTORATION_EVENTS


def signal_cause(name: str) -> str:
    """The LIFECYCLE_CAUSE of a transition requested by a signal: `signal:SIGUSR1`."""
    return f"signal:{name}"


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.1, message: str = "") -> T:
    """Polls `predicate` until it returns something truthy, and returns that; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T = predicate()
    while not last:
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message or predicate}; last value: {last!r}")
        time.sleep(interval)
        last = predicate()
    return last


def _field(value: object) -> object:
    """journalctl -o json writes binary fields as byte arrays and repeated fields as lists."""
    if isinstance(value, list) and value and all(isinstance(b, int) for b in value):
        return bytes(value).decode("utf-8", errors="replace")
    return value


def record_belongs_to(record: dict, unit: str, identifiers: Iterable[str] = ()) -> bool:
    """Whether a journal record is about `unit`: logged by it, or by systemd about it.

    A record logged by a process in its last moments may lack _SYSTEMD_UNIT (journald resolves the unit
    from /proc after the fact), so the daemon's SYSLOG_IDENTIFIER counts too.
    """
    if record.get("_SYSTEMD_UNIT") == unit or record.get("OBJECT_SYSTEMD_UNIT") == unit:
        return True
    if record.get("UNIT") == unit and record.get("_PID") == "1":
        return True
    return record.get("SYSLOG_IDENTIFIER") in set(identifiers)


def lifecycle_events(records: Iterable[dict], pid: str | None = None) -> list[LifecycleEvent]:
    """The trace events among `records`, ordered by LIFECYCLE_SEQ.

    LIFECYCLE_SEQ restarts at 1 with every process, so events are grouped by process (in the order the
    processes first appear in the journal) and ordered by sequence within each. `pid` keeps one process.
    """
    by_pid: dict[str, list[LifecycleEvent]] = {}
    for record in records:
        if "LIFECYCLE_EVENT" not in record:
            continue
        process = str(record.get("_PID", ""))
        if pid is not None and process != str(pid):
            continue
        by_pid.setdefault(process, []).append(
            LifecycleEvent(
                event=str(record["LIFECYCLE_EVENT"]),
                target=str(record.get("LIFECYCLE_TARGET", "")),
                state=str(record.get("LIFECYCLE_STATE", "")),
                seq=int(str(record.get("LIFECYCLE_SEQ", "0"))),
                cause=str(record.get("LIFECYCLE_CAUSE", "")),
                detail=str(record.get("LIFECYCLE_DETAIL", "")),
            )
        )
    ordered: list[LifecycleEvent] = []
    for events in by_pid.values():
        ordered.extend(sorted(events, key=lambda e: e.seq))
    return ordered


def pairs(events: Iterable[LifecycleEvent]) -> list[tuple[str, str]]:
    """(event, target) of each event, the shape the expected orderings are written in."""
    return [(e.event, e.target) for e in events]


def sandbox_script(*arguments: str, state_root: Path | None = None, **run: Any) -> subprocess.CompletedProcess:
    """Runs scripts/systemd-sandbox; `state_root` is its SYSTEMD_SANDBOX_DIR (default: the script's own)."""
    environment = None
    if state_root is not None:
        environment = {**os.environ, "SYSTEMD_SANDBOX_DIR": str(state_root)}
    return subprocess.run([str(SANDBOX_SCRIPT), *arguments], env=environment, **run)


class Sandbox:
    """A running systemd sandbox, addressed by the host PID of its systemd."""

    def __init__(self, pid: int, boot_seconds: float, state_root: Path | None = None):
        self.pid = pid
        self.boot_seconds = boot_seconds
        self.state_root = state_root

    @classmethod
    def start(cls, state_root: Path | None = None) -> "Sandbox":
        began = time.monotonic()
        done = sandbox_script(
            "start", state_root=state_root, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
        )
        if done.returncode != 0:
            raise RuntimeError(f"systemd-sandbox start failed ({done.returncode}):\n{done.stderr}")
        return cls(int(done.stdout.strip().splitlines()[-1]), time.monotonic() - began, state_root)

    def stop(self) -> None:
        sandbox_script(
            "stop", str(self.pid), state_root=self.state_root, check=True, timeout=60, stdin=subprocess.DEVNULL
        )

    def is_running(self) -> bool:
        try:
            return os.readlink(f"/proc/{self.pid}/exe").endswith("/systemd/systemd")
        except OSError:
            return False

    # Commands inside the sandbox.

    def run(
        self, *argv: str, check: bool = True, input: str | bytes | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess:
        """Runs argv inside the sandbox; raises with its output when it fails and `check` is set."""
        binary = isinstance(input, bytes)
        done = sandbox_script(
            "exec",
            str(self.pid),
            "--",
            *argv,
            state_root=self.state_root,
            input=input,
            capture_output=True,
            text=not binary,
            timeout=timeout,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"in sandbox: {shlex.join(argv)} exited {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
            )
        return done

    def sh(self, script: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run("/bin/sh", "-c", script, check=check)

    def systemctl(self, *args: str, check: bool = True, timeout: float = 90) -> subprocess.CompletedProcess:
        return self.run("systemctl", *args, check=check, timeout=timeout)

    def show(self, unit: str, *properties: str) -> dict[str, str]:
        """`systemctl show -p ...` as a dict; by default the properties the tests look at."""
        names = properties or (
            "ActiveState",
            "SubState",
            "StatusText",
            "NRestarts",
            "Result",
            "MainPID",
            "ExecMainCode",
            "ExecMainStatus",
        )
        output = self.systemctl("show", "-p", ",".join(names), unit).stdout
        return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)

    def write_file(self, path: str, content: str, mode: int = 0o644) -> None:
        self.run(
            "/bin/sh",
            "-c",
            'mkdir -p "$(dirname "$1")" && cat >"$1" && chmod "$2" "$1"',
            "sh",
            path,
            f"{mode:o}",
            input=content,
        )

    def remove(self, *paths: str) -> None:
        self.run("rm", "-rf", "--", *paths)

    def copy_in(self, source: Path, destination: str) -> None:
        sandbox_script(
            "copy-in",
            str(self.pid),
            str(source),
            destination,
            state_root=self.state_root,
            check=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    def daemon_reload(self) -> None:
        self.systemctl("daemon-reload")

    # The journal.

    def cursor(self) -> str:
        """The cursor of the newest journal entry; pass it to `journal` to see only what came after."""
        self.run("journalctl", "--sync")
        output = self.run("journalctl", "-n", "1", "-o", "json", "--no-pager").stdout
        return json.loads(output.splitlines()[-1])["__CURSOR"]

    def journal(
        self,
        unit: str | None = None,
        since_cursor: str | None = None,
        identifiers: Iterable[str] | None = None,
    ) -> list[dict]:
        """Parsed `journalctl -o json` records after `since_cursor`, about `unit` if given, in journal order.

        `identifiers` (default: the unit's name without its suffix) are SYSLOG_IDENTIFIERs that count as the
        unit's own records (see `record_belongs_to`).
        """
        # --sync: everything journald has received so far is in the files before we read them.
        self.run("journalctl", "--sync")
        argv = ["journalctl", "-o", "json", "--all", "--no-pager"]
        if since_cursor:
            argv.append(f"--after-cursor={since_cursor}")
        records = []
        for line in self.run(*argv).stdout.splitlines():
            if line.strip():
                records.append({key: _field(value) for key, value in json.loads(line).items()})
        if unit is None:
            return records
        if identifiers is None:
            identifiers = [unit.rsplit(".", 1)[0]]
        return [r for r in records if record_belongs_to(r, unit, identifiers)]

    def process_state(self, pid: int | str) -> str | None:
        """The state letter of /proc/PID/stat inside the sandbox (R, S, T, ...), or None if it is gone."""
        done = self.run("cat", f"/proc/{pid}/stat", check=False)
        if done.returncode != 0:
            return None
        return done.stdout.rsplit(")", 1)[1].split()[0]


def log_record(line: str) -> dict[str, Any]:
    """One line a daemon wrote to a pipe, where it logs in the JSON format by default (docs/operations.md, "Log
    formats"): its object; any other line (a crash report) as {"level": "unparsed", "message": line}."""
    try:
        record = json.loads(line)
    except ValueError:
        return {"level": "unparsed", "message": line}
    return record if isinstance(record, dict) else {"level": "unparsed", "message": line}


def messages(records: Iterable[dict]) -> list[str]:
    return [str(r.get("MESSAGE", "")) for r in records]


def resolve_binary(name: str = "lifecycled", variable: str = "LIFECYCLED_BIN") -> Path:
    """A binary of the package: $<variable>, else `swift build --show-bin-path`/<name> in the checkout. For
    lifecyclectl without $LIFECYCLECTL_BIN, the one beside $LIFECYCLED_BIN when that is given."""
    explicit = os.environ.get(variable)
    if explicit:
        return Path(explicit)
    daemon = os.environ.get("LIFECYCLED_BIN")
    if name != "lifecycled" and daemon:
        return Path(daemon).parent / name
    swift = "swift"
    if not any((Path(d) / "swift").exists() for d in os.environ.get("PATH", "").split(os.pathsep) if d):
        swift = "/opt/swift/usr/bin/swift"
    argv = [swift, "build", "--show-bin-path"]
    scratch = os.environ.get("LIFECYCLED_SCRATCH_PATH")
    if scratch:
        argv += ["--scratch-path", scratch]
    try:
        done = subprocess.run(argv, cwd=CHECKOUT, capture_output=True, text=True, timeout=120)
        if done.returncode == 0 and done.stdout.strip():
            return Path(done.stdout.strip().splitlines()[-1]) / name
    except (OSError, subprocess.TimeoutExpired):
        pass
    # SwiftPM unavailable or busy (another build holds the lock): its default debug path.
    return CHECKOUT / (scratch or ".build") / "debug" / name


class DaemonBinary:
    """The built daemon, looked up when a test first needs it.

    A missing binary fails that test (inside the test, so it is reported FAILED, not ERROR or skipped).
    """

    def __init__(self) -> None:
        self._path: Path | None = None
        self._installed_in: int | None = None

    def path(self) -> Path:
        if self._path is None:
            self._path = resolve_binary()
        if not (self._path.is_file() and os.access(self._path, os.X_OK)):
            pytest.fail(
                f"the lifecycled binary is missing: {self._path} does not exist or is not executable. "
                "Build it (`swift build --product lifecycled`) or point LIFECYCLED_BIN at it.",
                pytrace=False,
            )
        return self._path

    def install(self, sandbox: Sandbox) -> str:
        """Copies the daemon into the sandbox at the shipped unit's ExecStart path, once per sandbox."""
        source = self.path()
        if self._installed_in != sandbox.pid:
            sandbox.copy_in(source, SANDBOX_BIN)
            self._installed_in = sandbox.pid
        return SANDBOX_BIN


class CtlBinary:
    """lifecyclectl, looked up when a test first needs it ($LIFECYCLECTL_BIN, else beside the daemon, else the build
    folder's), and copied into the sandbox's /usr/local/bin once per sandbox. A missing binary fails that test."""

    def __init__(self) -> None:
        self._path: Path | None = None
        self._installed_in: int | None = None

    def path(self) -> Path:
        if self._path is None:
            self._path = resolve_binary("lifecyclectl", "LIFECYCLECTL_BIN")
        if not (self._path.is_file() and os.access(self._path, os.X_OK)):
            pytest.fail(
                f"the lifecyclectl binary is missing: {self._path} does not exist or is not executable. "
                "Build it (`swift build --product lifecyclectl`) or point LIFECYCLECTL_BIN at it.",
                pytrace=False,
            )
        return self._path

    def install(self, sandbox: Sandbox) -> str:
        source = self.path()
        if self._installed_in != sandbox.pid:
            sandbox.copy_in(source, SANDBOX_CTL)
            self._installed_in = sandbox.pid
        return SANDBOX_CTL
