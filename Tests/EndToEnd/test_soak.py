#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""A soak: one lifecycled driven through 100,000 transitions from every source it has at once — signals, logind's
announcements, memory warnings and control requests — with its memory and file descriptors sampled, its pid watched
and every event of its trace checked against the contract's state machine (docs/lifecycle.md §1, §2, §7).

**The daemon** runs as a plain process, not under the sandboxed systemd: the soak needs its whole trace (over a
million events), which journald and `journalctl -o json` would take minutes to store and give back, while the
daemon's stderr (`--trace --log-format text`, one `key=value` line per event, read through a pipe as it is written and
matched with one bytes regex; a pipe's default would be JSON lines) costs seconds.
Everything else is what the daemon has under systemd: the default signal map, a configuration file (reloaded by
SIGHUP and by control requests), a state directory (every background saves the state; on a tmpfs, `/dev/shm`, so
that tens of thousands of saves do not wait for a disk), the control socket in a private `$XDG_RUNTIME_DIR`, logind
on a system bus of its own — a private dbus-daemon with python3-dbusmock's logind template owning
`org.freedesktop.login1`, as the unit tests (`LogindTests.swift`) run it — and the memory-pressure trigger on the
machine's own PSI file.

**The drive** is one thread around `selectors`: three control connections each keep one varlink
`io.lifecyclekit.Lifecycle.Request` in flight (background, foreground, inactive, memory-warning, reload; a reload now
and then through `io.systemd.service.Reload`, and one request in 25 on a connection of its own, opened and closed as
lifecyclectl does); each reply sends the next request and, at random, a signal (SIGUSR1, SIGTSTP, SIGUSR2, SIGCONT,
SIGHUP, SIGRTMIN+2, SIGRTMIN+3) and a logind announcement (`PrepareForSleep` or `PrepareForShutdown`, true, then false
at a later turn), each chosen from the state the trace last showed (never that state), so most requests change
something while the others, overtaken by another source, arrive where they change nothing. Control replies pace
the whole drive, so signals and announcements never run far ahead of the daemon. The seed is `$LIFECYCLE_SOAK_SEED`.

**One transition** is one request that was performed: the application walked to another state (one or more §1
steps: a background, a return to the foreground, an interruption), delivered a memory warning, or reloaded. Requests
that changed nothing, were folded into another or were dropped leave no events and do not count. They are counted
from the trace: transitions never nest, so the trace splits into requests wherever a delivery starts one (a change
of cause, a memory warning, a reload, a walk that turns round) and, between two control requests in a row, where a
control reply says the next one began (each performed reply lists its events; they must be exactly the trace's
events with the cause `control`, each claimed by one reply). At least `$LIFECYCLE_SOAK_TRANSITIONS` (default 100,000)
must be reached; the drive stops once that many are seen.

**The checks**, event by event: sequence numbers from 1 without a gap; every application event delivered to the
delegate and the whole demo tree in the §2 order (entering: delegate, then pre-order; leaving: reverse pre-order, then
the delegate), with the state §1 says each callback sees, from the state the previous step reached (no step skipped,
no step from the wrong state); the state saved after every `applicationDidEnterBackground`; only redraws as end-of-turn
work; every signal's and announcement's walk ends where its request points; at SIGTERM, the walk to the background,
`applicationWillTerminate`, the save, and every controller disappearing and released once, in order, exit 0.
Every control reply's events are the trace's (same numbers, callbacks, targets, states), a state request's reply
ends in the state it asked for. Every logind announcement was handled: each `true` backgrounded the application (or
found it there) and released both delay inhibitors, each `false` took them again. The checker itself is tested on
made-up traces (`test_the_soak_checker_...`): a skipped step, a delivery out of order, a controller left out, a wrong
state, a gap, a walk that stops short, a missing save each fail it.

**Bounds.** Ten checkpoints, one per tenth of the run, stop the drive, let the replies, the trace and logind settle
(the delay inhibitors held again, as the daemon reports them and as logind lists them: exactly its two) and read
`/proc/PID/status` and `/proc/PID/fd`; the first is the warm-up baseline. Every checkpoint has exactly the baseline's
descriptors (the same number of each kind: the three control connections stay open, one-shot ones are closed, and the
daemon counts 3 connections); between checkpoints, every half second, at most the baseline plus the one-shot
connections open at that moment plus `FD_TRANSIENT` (an inhibitor being replaced, a state file being written). RSS at
the last checkpoint is within `RSS_GROWTH_MIB` (2 MiB) of the baseline, and no sample after it exceeds the baseline by
more than `RSS_PEAK_MIB` (4 MiB): 2 MiB over the 90,000 transitions after warm-up is about 23 bytes each, less than
one leaked allocation per transition. The daemon keeps its pid (each checkpoint asks `GetStatus`), writes no warning
or error, and exits 0 at SIGTERM.

The figures (transitions by source, cause and kind, requests sent, duration, transitions per second, RSS and
descriptors at each checkpoint) are printed and written to `.build-e2e/soak-figures.json`.
"""

from __future__ import annotations

import collections
import fcntl
import json
import os
import random
import re
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from harness import CHECKOUT, DEMO_TREE_PREORDER, DaemonBinary, entering, leaving, offering, preservation
from test_daemon_pty import SYSTEMD_ENVIRONMENT

TRANSITIONS = int(os.environ.get("LIFECYCLE_SOAK_TRANSITIONS", "100000"))
SEED = int(os.environ.get("LIFECYCLE_SOAK_SEED", "20261123"))
# The whole test must end by then, whatever happens (the target on a 2-core machine is 4 minutes).
DEADLINE_SECONDS = float(os.environ.get("LIFECYCLE_SOAK_DEADLINE", "900"))

CONTROL_LANES = 3
ONE_SHOT_EVERY = 25
CHECKPOINTS = 10
SAMPLE_SECONDS = 0.5
# RSS at the last checkpoint against the first (after warm-up), and any sample against the first.
RSS_GROWTH_MIB = 2
RSS_PEAK_MIB = 4
# Descriptors a sample between checkpoints may show beyond the baseline and the one-shot control connections open.
FD_TRANSIENT = 4

# Per control reply: the chance of a signal, and of a logind announcement.
SIGNAL_CHANCE = 0.8
LOGIND_CHANCE = 0.15

# What each source asks for, weighted, by the state the trace last showed (never the state itself, so that most
# requests change something; the others still arrive in the wrong state through the sources' races).
SIGNALS_BY_STATE: dict[str, list[tuple[str, int]]] = {
    "active": [("SIGUSR1", 3), ("SIGTSTP", 1), ("SIGRTMIN+3", 2), ("SIGRTMIN+2", 2), ("SIGHUP", 1)],
    "inactive": [("SIGUSR2", 2), ("SIGCONT", 1), ("SIGUSR1", 2), ("SIGRTMIN+2", 1), ("SIGHUP", 1)],
    "background": [("SIGUSR2", 3), ("SIGCONT", 1), ("SIGRTMIN+3", 1), ("SIGRTMIN+2", 1), ("SIGHUP", 1)],
}
CONTROL_BY_STATE: dict[str, list[tuple[str, int]]] = {
    "active": [("background", 3), ("inactive", 2), ("memory-warning", 1), ("reload", 1)],
    "inactive": [("foreground", 2), ("background", 2), ("memory-warning", 1), ("reload", 1)],
    "background": [("foreground", 3), ("inactive", 1), ("memory-warning", 1), ("reload", 1)],
}
SYSTEMD_RELOAD_SHARE = 0.2

SIGNAL_NUMBERS = {
    "SIGUSR1": signal.SIGUSR1,
    "SIGUSR2": signal.SIGUSR2,
    "SIGTSTP": signal.SIGTSTP,
    "SIGCONT": signal.SIGCONT,
    "SIGHUP": signal.SIGHUP,
    "SIGRTMIN+2": signal.SIGRTMIN + 2,
    "SIGRTMIN+3": signal.SIGRTMIN + 3,
}

# What a request from each cause asks for (docs/lifecycle.md §6, the default signal map): a state, or a kind.
TARGETS = {
    "signal:SIGUSR1": "background",
    "signal:SIGTSTP": "background",
    "signal:SIGUSR2": "active",
    "signal:SIGCONT": "active",
    "signal:SIGRTMIN+3": "inactive",
    "signal:SIGRTMIN+2": "memory-warning",
    "signal:SIGHUP": "reload",
    "psi": "memory-warning",
}
CONTROL_TARGETS = {"background": "background", "foreground": "active", "inactive": "inactive"}
KIND_OF_TARGET = {"background": "background", "active": "foreground", "inactive": "inactive"}

CONFIGURATION = """\
# test_soak.py: the defaults, but a worker job every 100 ms while active (end-of-turn redraws between requests).
[Demo]
WorkIntervalSec=0.1
"""

BUS_CONFIGURATION = """\
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>{address}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
  </policy>
</busconfig>
"""

LOGIND = "org.freedesktop.login1"
# ListInhibitors while the daemon holds its delay locks: one on sleep, one on shutdown (what, who, mode).
BOTH_LOCKS = [("shutdown", "lifecycled", "delay"), ("sleep", "lifecycled", "delay")]
LOGIND_PATH = "/org/freedesktop/login1"
MANAGER = "org.freedesktop.login1.Manager"

TRACE_LINE = re.compile(
    rb" lifecycle\.cause=(\S+) (?:lifecycle\.detail=(?:\"(?:[^\"\\]|\\.)*\"|\S*) )?lifecycle\.event=(\S+)"
    rb" lifecycle\.seq=(\d+) lifecycle\.state=(\S+) lifecycle\.target=(\S+)$"
)
LEVEL = re.compile(rb"^\S+ (trace|debug|info|notice|warning|error|critical) ")


# MARK: the contract's state machine


def post_order(tree: list[str]) -> list[str]:
    """The tree's controllers children first (a parent after all its descendants), siblings in the order added."""
    def children(path: str) -> list[str]:
        return [p for p in tree if p.rsplit("/", 1)[0] == path and p != path and "/" in p]

    order: list[str] = []

    def visit(path: str) -> None:
        for child in children(path):
            visit(child)
        order.append(path)

    visit(tree[0])
    return order


def with_state(pairs: list[tuple[str, str]], state: str) -> list[tuple[str, str, str]]:
    return [(event, target, state) for event, target in pairs]


# A state step: (the state it leaves, the state its callbacks see, the state it reaches, its direction).
STEPS = {
    "applicationWillResignActive": ("active", "active", "inactive", -1),
    "applicationDidEnterBackground": ("inactive", "background", "background", -1),
    "applicationWillEnterForeground": ("background", "background", "inactive", +1),
    "applicationDidBecomeActive": ("inactive", "active", "active", +1),
}
DELIVERY = {
    "applicationWillResignActive": leaving("applicationWillResignActive"),
    "applicationDidEnterBackground": leaving("applicationDidEnterBackground"),
    "applicationWillEnterForeground": entering("applicationWillEnterForeground"),
    "applicationDidBecomeActive": entering("applicationDidBecomeActive"),
}
MEMORY_WARNING = leaving("didReceiveMemoryWarning", delegate_event="applicationDidReceiveMemoryWarning")
# A reload that every participant accepted: offered, then let go of, then applied (docs/lifecycle.md §1).
RELOAD = offering() + leaving("applicationWillReload") + entering("applicationDidReload")
WILL_TERMINATE = leaving("applicationWillTerminate")
# End-of-turn work: the redraws a transition or a worker job asked for.
END_OF_TURN_EVENTS = {"draw"}


class Violation(AssertionError):
    pass


class Segment:
    """One request's events in the trace: a walk of state steps in one direction, a memory warning or a reload."""

    __slots__ = ("cause", "kind", "direction", "first", "start", "end")

    def __init__(self, cause: str, kind: str, direction: int, first: int, start: str):
        self.cause = cause
        self.kind = kind
        self.direction = direction
        self.first = first
        self.start = start
        self.end = start


class TraceChecker:
    """Checks the trace event by event against docs/lifecycle.md §1, §2 and §7 for the demo tree, and cuts it into
    requests. Fed one (seq, cause, event, state, target) at a time, it keeps counters only."""

    def __init__(self, tree: list[str]):
        self.tree = tree
        self.seq = 0
        self.state = "notRunning"
        self.launched = False
        self.launch_events: list[tuple[str, str, str]] = []
        self.expect: list[tuple[str, str, str]] = []
        self.expect_index = 0
        self.expect_cause = ""
        self.segment: Segment | None = None
        self.terminating = False
        self.teardown: list[tuple[str, str]] | None = None
        self.teardown_follows = False
        self.recent: collections.deque[str] = collections.deque(maxlen=40)
        # Counts.
        self.events = 0
        self.end_of_turn = 0
        self.steps = 0
        self.deliveries: collections.Counter[str] = collections.Counter()
        self.transitions_by_cause: collections.Counter[str] = collections.Counter()
        self.transitions_by_kind: collections.Counter[str] = collections.Counter()
        self.noncontrol_segments = 0
        self.control_segments = 0
        # Control events: where a control delivery starts, and the events no reply has claimed yet.
        self.control_delivery_starts: set[int] = set()
        self.unclaimed: dict[int, tuple[str, str, str]] = {}
        self.claims: dict[int, tuple[str, str, str]] = {}

    def fail(self, message: str) -> None:
        raise Violation(f"trace event {self.seq}: {message}\nthe last events:\n" + "\n".join(self.recent))

    def feed(self, seq: int, cause: str, event: str, state: str, target: str) -> None:
        self.recent.append(f"{seq} {state} {cause} {target} {event}")
        if seq != self.seq + 1:
            self.seq = seq
            self.fail(f"sequence number {seq} follows {self.seq}: a gap or a repeat")
        self.seq = seq
        self.events += 1
        if not self.launched:
            self.feed_launch(cause, event, state, target)
            return
        if cause == "control":
            claimed = self.claims.pop(seq, None)
            if claimed is None:
                self.unclaimed[seq] = (event, target, state)
            elif claimed != (event, target, state):
                self.fail(f"a control reply listed {claimed} as event {seq}; the trace has {(event, target, state)}")
        if self.teardown is not None:
            if cause != self.expect_cause or state != "terminated":
                self.fail(f"teardown event {event} of {target} with cause {cause} in state {state}")
            self.teardown.append((event, target))
            return
        if self.expect_index < len(self.expect):
            wanted = self.expect[self.expect_index]
            if (event, target, state) != wanted or cause != self.expect_cause:
                self.fail(f"expected {wanted} with cause {self.expect_cause}, got {(event, target, state)} ({cause})")
            self.expect_index += 1
            if self.expect_index == len(self.expect) and self.teardown_follows:
                self.teardown = []
            return
        if cause == "api":
            if event not in END_OF_TURN_EVENTS or state != self.state:
                self.fail(f"end-of-turn work {event} of {target} in state {state} (the application is {self.state})")
            self.end_of_turn += 1
            return
        self.start_delivery(seq, cause, event, state, target)

    def start_delivery(self, seq: int, cause: str, event: str, state: str, target: str) -> None:
        """An event outside any delivery: it must start one, from the state the last step reached."""
        if event in STEPS:
            leaves, sees, reaches, direction = STEPS[event]
            if self.state != leaves:
                self.fail(f"{event} in state {self.state}: a step from {leaves} only (§1)")
            expect = with_state(DELIVERY[event], sees)
            if event == "applicationDidEnterBackground" and not (self.terminating and cause == self.terminate_cause):
                # The demo saves its state once applicationDidEnterBackground has reached the whole tree (at
                # termination, after applicationWillTerminate instead).
                expect = expect + with_state(preservation(), "background")
            kind = "state"
            self.state = reaches
            self.steps += 1
        elif event == "didReceiveMemoryWarning":
            expect, kind, direction = with_state(MEMORY_WARNING, self.state), "memory-warning", 0
        elif event == "application(_:validateReload:)":
            expect, kind, direction = with_state(RELOAD, self.state), "reload", 0
        elif event == "applicationWillTerminate" and self.terminating and cause == self.terminate_cause:
            if self.state != "background":
                self.fail(f"applicationWillTerminate in state {self.state}: termination walks to the background first")
            expect = with_state(WILL_TERMINATE, "background") + with_state(preservation(), "terminated")
            kind, direction = "terminate", 0
            self.state = "terminated"
            self.teardown_follows = True
        else:
            self.fail(f"{event} of {target} ({cause}, {state}) starts no delivery the contract has")
            return
        if (event, target, state) != expect[0]:
            self.fail(f"a delivery of {event} must start with {expect[0]}, not {(event, target, state)}")
        self.deliveries[event] += 1
        self.expect, self.expect_index, self.expect_cause = expect, 1, cause
        if len(expect) == 1 and kind == "terminate":
            self.teardown = []
        if cause == "control":
            self.control_delivery_starts.add(seq)
        current = self.segment
        if (
            current is None
            or current.cause != cause
            or kind != "state"
            or current.kind != "state"
            or current.direction != direction
        ):
            self.close_segment()
            self.segment = Segment(cause, kind, direction, seq, STEPS[event][0] if kind == "state" else self.state)
            if cause == "control":
                self.control_segments += 1
            elif kind != "terminate":
                self.noncontrol_segments += 1
        assert self.segment is not None
        self.segment.end = self.state

    def close_segment(self) -> None:
        """The request of the current segment is over: check where a signal's or an announcement's walk ended."""
        segment, self.segment = self.segment, None
        if segment is None or segment.cause == "control" or segment.kind == "terminate":
            return
        if segment.cause == self.terminate_cause and self.terminating:
            return
        if segment.cause.startswith("logind:"):
            if segment.kind != "state":
                self.seq = segment.first
                self.fail(f"{segment.cause} asked for {segment.kind}: logind asks only for the background or back")
            wanted = "background" if segment.direction < 0 else "active"
        else:
            wanted = TARGETS.get(segment.cause)
            if wanted is None:
                self.seq = segment.first
                self.fail(f"a request with cause {segment.cause}, which the soak never sends")
        if segment.kind == "state":
            if segment.end != wanted:
                self.fail(
                    f"the request of event {segment.first} ({segment.cause}) walked {segment.start} → {segment.end}; "
                    f"it asks for {wanted}"
                )
            kind = KIND_OF_TARGET[wanted]
        else:
            if segment.kind != wanted:
                self.fail(f"the request of event {segment.first} ({segment.cause}) delivered a {segment.kind}")
            kind = segment.kind
        self.transitions_by_cause[segment.cause] += 1
        self.transitions_by_kind[kind] += 1

    terminate_cause = "signal:SIGTERM"

    def feed_launch(self, cause: str, event: str, state: str, target: str) -> None:
        """Launch (§1 Launch): willFinishLaunching first, ending with applicationDidBecomeActive delivered to the
        delegate and the tree in pre-order, in state active."""
        if cause != "launch":
            self.fail(f"{event} of {target} with cause {cause} before the launch completed")
        self.launch_events.append((event, target, state))
        if len(self.launch_events) == 1 and (event, target) != ("willFinishLaunching", "delegate"):
            self.fail(f"the launch must start with willFinishLaunching on the delegate, not {event} of {target}")
        did_become_active = with_state(entering("applicationDidBecomeActive"), "active")
        if self.launch_events[-len(did_become_active):] == did_become_active:
            names = [e for e, t, _ in self.launch_events if t == "delegate"]
            if names[:2] != ["willFinishLaunching", "didFinishLaunching"]:
                self.fail(f"the delegate's launch callbacks were {names}")
            self.launched = True
            self.state = "active"
            self.deliveries["applicationDidBecomeActive"] += 1

    # After the run.

    def finish(self) -> None:
        if self.expect_index < len(self.expect):
            self.fail(f"the trace ended inside a delivery: {self.expect[self.expect_index:]} never came")
        self.close_segment()

    def check_teardown(self) -> None:
        """SIGTERM's end: every controller disappears (will pre-order, did post-order: a parent's disappearance
        brackets its children's) and is released once, pre-order (§2, §3)."""
        if self.teardown is None:
            self.fail("no applicationWillTerminate after SIGTERM")
        teardown = self.teardown or []
        controllers = set(self.tree)
        for name, order in (
            ("viewWillDisappear", self.tree),
            ("viewDidDisappear", post_order(self.tree)),
            ("deinit", self.tree),
        ):
            seen = [t for e, t in teardown if e == name and t in controllers]
            if seen != order:
                self.fail(f"teardown: {name} reached {seen}; every controller once, in the order {order}")


# MARK: peers


class PrivateBus:
    """A private dbus-daemon (a permissive policy) with python3-dbusmock's logind template owning
    org.freedesktop.login1 on it: the daemon's system bus (DBUS_SYSTEM_BUS_ADDRESS)."""

    def __init__(self, directory: str):
        try:
            import dbus  # Debian's python3-dbus, which python3-dbusmock depends on
        except ImportError:
            pytest.fail("the soak needs python3-dbus and python3-dbusmock (Debian's /usr/bin/python3)", pytrace=False)
        self.directory = directory
        self.address = f"unix:path={directory}/bus"
        config = os.path.join(directory, "bus.conf")
        Path(config).write_text(BUS_CONFIGURATION.format(address=self.address))
        self.log = open(os.path.join(directory, "bus.log"), "wb")
        self.daemon = subprocess.Popen(
            ["/usr/bin/dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile", "--print-address=1"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.log,
        )
        assert self.daemon.stdout is not None
        if not self.daemon.stdout.readline():
            self.daemon.wait()
            pytest.fail(f"dbus-daemon did not start; {directory}/bus.log:\n{Path(directory, 'bus.log').read_text()}")
        self.mock = subprocess.Popen(
            ["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "logind"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            env={**os.environ, "DBUS_SYSTEM_BUS_ADDRESS": self.address},
        )
        self.connection = None
        try:
            self.connect(dbus)
        except BaseException:
            self.close()
            raise

    def connect(self, dbus: Any) -> None:
        self.connection = dbus.bus.BusConnection(self.address)
        deadline = time.monotonic() + 15
        while not self.connection.name_has_owner(LOGIND):
            if time.monotonic() > deadline or self.mock.poll() is not None:
                pytest.fail(f"the logind mock never owned {LOGIND}: {Path(self.directory, 'bus.log').read_text()}")
            time.sleep(0.05)
        self.logind = self.connection.get_object(LOGIND, LOGIND_PATH)
        # logind's own wait for delay inhibitors, which the template lacks (the daemon reads it).
        self.logind.AddProperty(
            MANAGER, "InhibitDelayMaxUSec", dbus.UInt64(5_000_000), dbus_interface="org.freedesktop.DBus.Mock"
        )

    def emit(self, member: str, value: bool) -> None:
        """logind's signal, from the connection that owns its name."""
        self.logind.EmitSignal(MANAGER, member, "b", [value], dbus_interface="org.freedesktop.DBus.Mock")

    def inhibitors(self) -> list[tuple[str, str, str]]:
        rows = self.logind.ListInhibitors(dbus_interface=MANAGER)
        return sorted((str(r[0]), str(r[1]), str(r[3])) for r in rows)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        for process in (self.mock, self.daemon):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.log.close()


class Connection:
    """A varlink connection to the daemon's control socket: one call in flight at a time."""

    def __init__(self, path: str, lane: int, one_shot: bool):
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(path)
        self.socket.setblocking(False)
        self.lane = lane
        self.one_shot = one_shot
        self.buffer = b""
        self.call: tuple[str, str] | None = None

    def send(self, method: str, parameters: dict[str, Any], what: str) -> None:
        assert self.call is None
        self.call = (method, what)
        self.socket.sendall(json.dumps({"method": method, "parameters": parameters}).encode() + b"\0")

    def replies(self) -> list[tuple[tuple[str, str], dict]]:
        """The replies read now, each with the call it answers; raises if the daemon closed the connection."""
        try:
            data = self.socket.recv(1 << 20)
        except BlockingIOError:
            return []
        except ConnectionResetError:
            data = b""
        if not data:
            raise AssertionError(f"the daemon closed control connection {self.lane} (call in flight: {self.call})")
        self.buffer += data
        done = []
        while b"\0" in self.buffer:
            message, self.buffer = self.buffer.split(b"\0", 1)
            call, self.call = self.call, None
            assert call is not None, f"a reply nobody asked for: {message[:200]!r}"
            done.append((call, json.loads(message)))
        return done


def descriptors(pid: int) -> dict[int, str]:
    found = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/{pid}/fd/{name}")
        except FileNotFoundError:
            pass
    return found


def descriptor_kinds(fds: dict[int, str]) -> dict[str, int]:
    """How many descriptors of each kind: socket, pipe, anon_inode:[eventfd], or the file's path."""
    kinds: collections.Counter[str] = collections.Counter()
    for target in fds.values():
        kinds[re.sub(r":\[\d+\]$", "", target)] += 1
    return dict(sorted(kinds.items()))


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


# MARK: the soak


class Soak:
    def __init__(self, binary: str, directory: str, state_directory: str, bus: PrivateBus):
        self.rng = random.Random(SEED)
        self.bus = bus
        self.checker = TraceChecker(DEMO_TREE_PREORDER)
        config = os.path.join(directory, "lifecycled.conf")
        Path(config).write_text(CONFIGURATION)
        runtime = os.path.join(directory, "runtime")
        os.mkdir(runtime, 0o700)
        environment = {k: v for k, v in os.environ.items() if k not in SYSTEMD_ENVIRONMENT and k != "LIFECYCLE_TRACE"}
        environment.update(XDG_RUNTIME_DIR=runtime, DBUS_SYSTEM_BUS_ADDRESS=bus.address)
        self.process = subprocess.Popen(
            [binary, "--trace", "--log-format", "text", "--config", config, "--state-directory", state_directory],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment,
        )
        self.pid = self.process.pid
        self.socket_path = os.path.join(runtime, "lifecycled", "control")
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.fileno()
        try:
            fcntl.fcntl(self.stderr, 1031, 1 << 20)  # F_SETPIPE_SZ: the daemon never waits for the reader
        except OSError:
            pass
        os.set_blocking(self.stderr, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stderr, selectors.EVENT_READ, None)
        self.partial = b""
        self.stderr_closed = False
        self.levels: collections.Counter[str] = collections.Counter()
        self.problems: list[str] = []
        self.notices: collections.Counter[str] = collections.Counter()
        self.terminated_cleanly = False
        self.inhibitor_releases = 0
        self.inhibitor_retakes = 0
        self.announcements_handled = 0
        self.lanes: list[Connection] = []
        self.in_flight: dict[int, Connection] = {}
        self.paused = True
        self.one_shots_open = 0
        self.one_shots_opened = 0
        self.max_connections = 0
        self.logind_phase: str | None = None  # the member announced with true, until its false
        # Figures.
        self.sent: collections.Counter[str] = collections.Counter()
        self.replies: collections.Counter[str] = collections.Counter()
        self.performed_by_request: collections.Counter[str] = collections.Counter()
        self.performed_ranges: list[tuple[int, int, str]] = []
        self.systemd_reloads = 0
        self.samples: list[tuple[float, int, int]] = []
        # Sampling starts with the drive.
        self.next_sample = float("inf")
        self.began = time.monotonic()

    # Reading what the daemon writes.

    def read_stderr(self) -> None:
        if self.stderr_closed:
            return
        try:
            chunk = os.read(self.stderr, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self.stderr_closed = True
            self.selector.unregister(self.stderr)
            return
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()
        feed = self.checker.feed
        for line in lines:
            if b" lifecycle.seq=" in line:
                match = TRACE_LINE.search(line)
                if match is None:
                    raise AssertionError(f"a trace line the soak cannot read: {line!r}")
                cause, event, seq, state, target = match.groups()
                feed(int(seq), cause.decode(), event.decode(), state.decode(), target.decode())
                continue
            level = LEVEL.match(line)
            name = level.group(1).decode() if level else "unknown"
            self.levels[name] += 1
            text = line.decode("utf-8", errors="replace")
            if name in ("warning", "error", "critical", "unknown") and len(self.problems) < 50:
                self.problems.append(text)
            elif name == "notice":
                self.notices[text.split(": ", 1)[-1][:70]] += 1
            if "terminated cleanly" in text:
                self.terminated_cleanly = True
            elif "logind: released the delay inhibitors" in text:
                self.inhibitor_releases += 1
            elif "taking new delay inhibitors" in text:
                self.inhibitor_retakes += 1
            elif "logind: the system prepares to" in text:
                self.announcements_handled += 1

    # Control calls.

    def connect(self, lane: int, one_shot: bool) -> Connection:
        connection = Connection(self.socket_path, lane, one_shot)
        self.selector.register(connection.socket, selectors.EVENT_READ, connection)
        if one_shot:
            self.one_shots_open += 1
            self.one_shots_opened += 1
        self.max_connections = max(self.max_connections, CONTROL_LANES + self.one_shots_open)
        return connection

    def handle_reply(self, connection: Connection, call: tuple[str, str], message: dict) -> None:
        method, what = call
        if "error" in message:
            raise AssertionError(f"{method} ({what}) failed: {message}")
        parameters = message.get("parameters", {})
        if method == "io.systemd.service.Reload":
            self.systemd_reloads += 1
            self.replies["systemd Reload"] += 1
            return
        if method != "io.lifecyclekit.Lifecycle.Request":
            return
        outcome = parameters["outcome"]
        self.replies[f"{what} {outcome}"] += 1
        events = parameters["events"]
        assert parameters["eventsOmitted"] == 0, parameters
        if outcome == "noChange":
            assert events == [], parameters
            return
        if outcome == "coalesced":
            assert what in ("memory-warning", "reload"), parameters
            return
        assert outcome == "performed", parameters
        assert events, f"a performed {what} with no events: {parameters}"
        if what in CONTROL_TARGETS:
            assert parameters["state"] == CONTROL_TARGETS[what], f"{what} ended in {parameters['state']}: {parameters}"
        seqs = [e["seq"] for e in events]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), parameters
        for e in events:
            assert e["cause"] == "control", e
            key = (e["event"], e["target"], e["state"])
            seen = self.checker.unclaimed.pop(e["seq"], None)
            if seen is None:
                if e["seq"] in self.checker.claims or e["seq"] <= self.checker.seq:
                    raise AssertionError(f"event {e['seq']} claimed twice, or not control in the trace: {e}")
                self.checker.claims[e["seq"]] = key
            elif seen != key:
                raise AssertionError(f"the reply to {what} lists {e}; the trace has {seen}")
        self.performed_by_request[what] += 1
        self.performed_ranges.append((seqs[0], seqs[-1], what))

    def send_request(self, lane: int) -> None:
        state = self.checker.state
        what = self.choose(CONTROL_BY_STATE.get(state, CONTROL_BY_STATE["active"]))
        one_shot = self.rng.randrange(ONE_SHOT_EVERY) == 0
        connection = self.connect(lane, True) if one_shot else self.lanes[lane]
        if what == "reload" and self.rng.random() < SYSTEMD_RELOAD_SHARE:
            connection.send("io.systemd.service.Reload", {}, "reload")
            self.sent["control io.systemd.service.Reload"] += 1
        else:
            connection.send("io.lifecyclekit.Lifecycle.Request", {"request": what}, what)
            self.sent[f"control {what}"] += 1
        self.in_flight[lane] = connection

    def call(self, method: str, parameters: dict[str, Any] | None = None) -> dict:
        """A call on lane 0 while the drive is paused: pumps everything else until its reply."""
        assert self.paused and 0 not in self.in_flight
        answer: list[dict] = []
        connection = self.lanes[0]
        connection.send(method, parameters or {}, "checkpoint")
        self.in_flight[0] = connection
        self.on_checkpoint_reply = answer.append
        self.run_until(lambda: bool(answer), 20, f"the reply to {method}")
        reply = answer[0]
        assert "error" not in reply, reply
        return reply["parameters"]

    on_checkpoint_reply: Callable[[dict], None] | None = None

    # The other sources.

    def choose(self, weighted: list[tuple[str, int]]) -> str:
        total = sum(w for _, w in weighted)
        pick = self.rng.randrange(total)
        for name, weight in weighted:
            pick -= weight
            if pick < 0:
                return name
        raise AssertionError("unreachable")

    def send_signal(self) -> None:
        name = self.choose(SIGNALS_BY_STATE.get(self.checker.state, SIGNALS_BY_STATE["active"]))
        os.kill(self.pid, SIGNAL_NUMBERS[name])
        self.sent[f"signal {name}"] += 1

    def logind_step(self) -> None:
        if self.logind_phase is None:
            member = "PrepareForSleep" if self.rng.random() < 0.75 else "PrepareForShutdown"
            self.bus.emit(member, True)
            self.logind_phase = member
            self.sent[f"logind {member}(true)"] += 1
        else:
            self.bus.emit(self.logind_phase, False)
            self.sent[f"logind {self.logind_phase}(false)"] += 1
            self.logind_phase = None

    def tick(self, lane: int) -> None:
        """A reply came back on `lane`: maybe a signal, maybe an announcement, then its next request."""
        if self.rng.random() < SIGNAL_CHANCE:
            self.send_signal()
        if self.rng.random() < LOGIND_CHANCE:
            self.logind_step()
        self.send_request(lane)

    # The loop.

    def transitions_seen(self) -> int:
        """A lower bound of the transitions so far (control ones counted by their replies)."""
        return self.checker.noncontrol_segments + sum(self.performed_by_request.values())

    def pump(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            if key.data is None:
                self.read_stderr()
                continue
            connection: Connection = key.data
            for call, message in connection.replies():
                if call[1] == "checkpoint":
                    del self.in_flight[connection.lane]
                    assert self.on_checkpoint_reply is not None
                    self.on_checkpoint_reply(message)
                    continue
                self.handle_reply(connection, call, message)
                del self.in_flight[connection.lane]
                if connection.one_shot:
                    self.selector.unregister(connection.socket)
                    connection.socket.close()
                    self.one_shots_open -= 1
                if not self.paused:
                    self.tick(connection.lane)
        now = time.monotonic()
        if now >= self.next_sample and not self.checker.terminating:
            self.next_sample = now + SAMPLE_SECONDS
            self.sample(now)
        if now - self.began > DEADLINE_SECONDS:
            raise AssertionError(
                f"the soak ran past its deadline of {DEADLINE_SECONDS} s: {self.transitions_seen()} transitions"
            )

    def run_until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            if self.process.poll() is not None and self.stderr_closed:
                raise AssertionError(f"the daemon exited ({self.process.returncode}) while waiting for {what}")
            self.pump(0.05)

    def sample(self, now: float) -> None:
        try:
            fds = len(os.listdir(f"/proc/{self.pid}/fd"))
            rss = rss_kib(self.pid)
        except (FileNotFoundError, ProcessLookupError):
            return
        self.samples.append((round(now - self.began, 2), rss, fds, self.one_shots_open))


@pytest.mark.load
def test_soak_100000_transitions_from_signals_logind_memory_warnings_and_control_requests(
    lifecycled_bin: DaemonBinary,
) -> None:
    binary = str(lifecycled_bin.path())
    directory = tempfile.mkdtemp(prefix="lifecycle-soak.")
    # The saved state on a tmpfs when there is one: every background saves it.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    state_directory = tempfile.mkdtemp(prefix="lifecycle-soak-state.", dir=shm)
    bus = PrivateBus(directory)
    soak: Soak | None = None
    try:
        soak = Soak(binary, directory, state_directory, bus)
        try:
            run(soak, bus)
        except (AssertionError, OSError) as failure:
            # What the daemon said that was not the trace: a crash's last words, warnings, errors.
            if soak.process.poll() is None:
                soak.process.kill()
            status = soak.process.wait()
            while not soak.stderr_closed:
                soak.read_stderr()
            said = "\n".join(soak.problems[-20:]) or "(nothing)"
            raise AssertionError(
                f"{failure}\n\nlifecycled (pid {soak.pid}) exit status {status}; its warnings, errors and unreadable "
                f"lines:\n{said}"
            ) from failure
    finally:
        if soak is not None and soak.process.poll() is None:
            soak.process.kill()
            soak.process.wait()
        bus.close()
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(state_directory, ignore_errors=True)


def run(soak: Soak, bus: PrivateBus) -> None:
    checker = soak.checker
    # Launch: the trace up to applicationDidBecomeActive, the control socket, both delay inhibitors.
    soak.run_until(lambda: checker.launched and os.path.exists(soak.socket_path), 30, "the launch")
    soak.lanes = [soak.connect(lane, False) for lane in range(CONTROL_LANES)]
    # The daemon subscribes to logind's signals before it asks for its delay inhibitors, on the same connection: once
    # logind lists both, an announcement cannot pass before the subscription.
    deadline = time.monotonic() + 15
    while bus.inhibitors() != BOTH_LOCKS:
        assert time.monotonic() < deadline, f"the daemon never took its delay inhibitors: {bus.inhibitors()}"
        soak.pump(0.05)
    rss_start = rss_kib(soak.pid)
    fds_start = descriptor_kinds(descriptors(soak.pid))

    checkpoints: list[dict[str, Any]] = []

    def checkpoint() -> dict[str, Any]:
        """Stops the drive and lets everything settle: no request in flight, logind awake with both delay
        inhibitors held again, the trace read up to the last event. Then reads the daemon's descriptors and RSS."""
        soak.paused = True
        soak.run_until(lambda: not soak.in_flight, 30, "the control requests in flight")
        if soak.logind_phase is not None:
            soak.logind_step()
        deadline = time.monotonic() + 10
        while True:
            status = soak.call("io.lifecyclekit.Lifecycle.GetStatus")
            # Held, as the daemon says and as logind (the mock) lists them: exactly its two delay locks.
            if len(status["inhibitors"]) == 2 and status["logind"] == "awake" and bus.inhibitors() == BOTH_LOCKS:
                break
            assert time.monotonic() < deadline, (
                f"the delay inhibitors were not taken again: {status['logind']}, {status['inhibitors']}; "
                f"logind lists {bus.inhibitors()}"
            )
            soak.pump(0.05)
        assert status["pid"] == soak.pid, f"the daemon restarted: pid {status['pid']}, started as {soak.pid}"
        soak.run_until(lambda: checker.seq >= status["traceSeq"], 20, f"trace event {status['traceSeq']}")
        assert soak.process.poll() is None, "the daemon exited"
        # A one-shot connection closed just before may still be open on the daemon's side for a loop turn or two: wait
        # (briefly) until the daemon counts only the three lanes, and the descriptors are the baseline's.
        settle = time.monotonic() + 5
        rounds = 0
        while True:
            rounds += 1
            connections = soak.call("io.lifecyclekit.Lifecycle.GetStatus")["control"]["connections"]
            fds = descriptors(soak.pid)
            settled = connections == CONTROL_LANES and (
                not checkpoints or descriptor_kinds(fds) == checkpoints[0]["fdKinds"]
            )
            if settled or time.monotonic() > settle:
                break
            soak.pump(0.05)
        point = {
            "seconds": round(time.monotonic() - soak.began, 1),
            "transitions": soak.transitions_seen(),
            "traceSeq": status["traceSeq"],
            "state": status["state"],
            "rssKiB": rss_kib(soak.pid),
            "fds": len(fds),
            "fdKinds": descriptor_kinds(fds),
            "controlConnections": connections,
            "settleRounds": rounds,
        }
        assert connections == CONTROL_LANES, f"the daemon has {connections} control connections, not {CONTROL_LANES}"
        checkpoints.append(point)
        if len(checkpoints) > 1:
            baseline = checkpoints[0]
            assert point["fdKinds"] == baseline["fdKinds"], (
                f"descriptors at checkpoint {len(checkpoints)}: {point['fdKinds']}; "
                f"after warm-up: {baseline['fdKinds']}"
                f"\n{fds}"
            )
        return point

    # The drive.
    soak.began = time.monotonic()
    soak.next_sample = soak.began
    soak.paused = False
    for lane in range(CONTROL_LANES):
        soak.tick(lane)
    for index in range(1, CHECKPOINTS + 1):
        goal = TRANSITIONS * index // CHECKPOINTS
        soak.run_until(lambda: soak.transitions_seen() >= goal, DEADLINE_SECONDS, f"{goal} transitions")
        checkpoint()
        if index < CHECKPOINTS:
            soak.paused = False
            for lane in range(CONTROL_LANES):
                soak.tick(lane)
    drive_seconds = time.monotonic() - soak.began

    # Termination: SIGTERM, the termination sequence, exit 0.
    for connection in soak.lanes:
        soak.selector.unregister(connection.socket)
        connection.socket.close()
    checker.terminating = True
    state_before_term = checker.state
    os.kill(soak.pid, signal.SIGTERM)
    exit_code = soak.process.wait(timeout=60)
    soak.run_until(lambda: soak.stderr_closed, 30, "the daemon's stderr to close")
    checker.finish()
    checker.check_teardown()

    # Control: every control event in the trace was claimed by exactly one performed Request reply, except the
    # reloads asked for through io.systemd.service.Reload (whose reply lists no events).
    assert not checker.claims, f"control replies listed events the trace does not have: {sorted(checker.claims)[:20]}"
    unclaimed_events = collections.Counter(event for event, _, _ in checker.unclaimed.values())
    assert set(unclaimed_events) <= {
        "application(_:validateReload:)", "validateReload(_:)", "applicationWillReload", "applicationDidReload"
    }, unclaimed_events
    systemd_reload_transitions = len(checker.unclaimed) // len(RELOAD)
    assert len(checker.unclaimed) % len(RELOAD) == 0
    assert systemd_reload_transitions <= soak.systemd_reloads
    ranges = sorted(soak.performed_ranges)
    for (first, last, what), (next_first, _, _) in zip(ranges, ranges[1:]):
        assert last < next_first, f"two control replies claim overlapping events: {first}-{last} and {next_first}"
    for first, _, what in ranges:
        assert first in checker.control_delivery_starts, f"the reply to {what} starts inside a delivery (event {first})"

    control_transitions = sum(soak.performed_by_request.values()) + systemd_reload_transitions
    by_cause = dict(checker.transitions_by_cause)
    by_cause["control"] = control_transitions
    by_kind = collections.Counter(checker.transitions_by_kind)
    for what, count in soak.performed_by_request.items():
        by_kind[KIND_OF_TARGET.get(CONTROL_TARGETS.get(what, ""), what)] += count
    by_kind["reload"] += systemd_reload_transitions
    by_source: collections.Counter[str] = collections.Counter()
    for cause, count in by_cause.items():
        by_source[cause.split(":", 1)[0]] += count
    transitions = sum(by_cause.values())

    baseline = checkpoints[0]
    rss_values = [rss for seconds, rss, _, _ in soak.samples if seconds >= baseline["seconds"]]
    figures = {
        "transitions": transitions,
        "target": TRANSITIONS,
        "seed": SEED,
        "bySource": dict(sorted(by_source.items())),
        "byCause": dict(sorted(by_cause.items())),
        "byKind": dict(sorted(by_kind.items())),
        "stateSteps": checker.steps,
        "deliveries": dict(sorted(checker.deliveries.items())),
        "traceEvents": checker.events,
        "endOfTurnEvents": checker.end_of_turn,
        "sent": dict(sorted(soak.sent.items())),
        "controlReplies": dict(sorted(soak.replies.items())),
        "oneShotConnections": soak.one_shots_opened,
        "announcementsHandled": soak.announcements_handled,
        "inhibitorReleases": soak.inhibitor_releases,
        "inhibitorRetakes": soak.inhibitor_retakes,
        "driveSeconds": round(drive_seconds, 1),
        "transitionsPerSecond": round(transitions / drive_seconds),
        "pid": soak.pid,
        "exitCode": exit_code,
        "rssKiB": {
            "start": rss_start,
            "warmUp": baseline["rssKiB"],
            "peakAfterWarmUp": max(rss_values + [c["rssKiB"] for c in checkpoints]),
            "peakBeforeWarmUp": max(
                [rss for seconds, rss, _, _ in soak.samples if seconds < baseline["seconds"]], default=None
            ),
            "end": checkpoints[-1]["rssKiB"],
            "growthBoundMiB": RSS_GROWTH_MIB,
            "peakBoundMiB": RSS_PEAK_MIB,
        },
        "fds": {
            "start": sum(fds_start.values()),
            "warmUp": baseline["fds"],
            "end": checkpoints[-1]["fds"],
            "min": min(fds for _, _, fds, _ in soak.samples),
            "max": max(fds for _, _, fds, _ in soak.samples),
            "kinds": baseline["fdKinds"],
            "transientBound": FD_TRANSIENT,
        },
        "samples": len(soak.samples),
        "checkpoints": [{k: v for k, v in c.items() if k != "fdKinds"} for c in checkpoints],
        "logLines": dict(sorted(soak.levels.items())),
        "notices": dict(soak.notices.most_common(10)),
    }
    print("soak:", json.dumps(figures))
    out = CHECKOUT / ".build-e2e"
    out.mkdir(exist_ok=True)
    (out / "soak-figures.json").write_text(json.dumps(figures, indent=2) + "\n")

    assert transitions >= TRANSITIONS, f"{transitions} transitions, fewer than {TRANSITIONS}"
    # The count is not inflated: no source performed more requests than it was sent (a signal or an announcement
    # performs one request at most; standard signals may coalesce, requests may change nothing).
    for cause, count in by_cause.items():
        if cause.startswith("signal:"):
            assert count <= soak.sent[f"signal {cause[7:]}"], (cause, count, soak.sent)
        elif cause.startswith("logind:"):
            member = cause[7:]
            assert count <= soak.sent[f"logind {member}(true)"] + soak.sent[f"logind {member}(false)"], (cause, count)
    assert checker.control_segments <= control_transitions, (checker.control_segments, control_transitions)
    # Every announcement reached the daemon and was handled: each true backgrounded (or found it there), each false
    # took the delay inhibitors again; every true's inhibitors were released.
    announced = {
        value: sum(n for k, n in soak.sent.items() if k.startswith("logind") and k.endswith(f"({value})"))
        for value in ("true", "false")
    }
    assert (soak.announcements_handled, soak.inhibitor_releases, soak.inhibitor_retakes) == (
        announced["true"], announced["true"], announced["false"]
    ), (soak.announcements_handled, soak.inhibitor_releases, soak.inhibitor_retakes, announced)
    assert all(by_source.get(source, 0) > 0 for source in ("signal", "logind", "control")), by_source
    assert by_kind["memory-warning"] > 0 and by_kind["reload"] > 0, by_kind
    assert exit_code == 0, f"lifecycled exited {exit_code} at SIGTERM (state {state_before_term})"
    assert soak.terminated_cleanly, "no 'terminated cleanly' line"
    assert not soak.problems, "the daemon logged warnings or errors:\n" + "\n".join(soak.problems)
    growth = checkpoints[-1]["rssKiB"] - baseline["rssKiB"]
    assert growth <= RSS_GROWTH_MIB * 1024, f"RSS grew by {growth} KiB after warm-up: {figures['rssKiB']}"
    peak = figures["rssKiB"]["peakAfterWarmUp"] - baseline["rssKiB"]
    assert peak <= RSS_PEAK_MIB * 1024, f"RSS peaked {peak} KiB above the warm-up: {figures['rssKiB']}"
    warm = [s for s in soak.samples if s[0] >= baseline["seconds"]]
    worst = max(warm, key=lambda s: s[2] - s[3], default=None)
    if worst is not None:
        assert worst[2] - worst[3] <= baseline["fds"] + FD_TRANSIENT, (
            f"{worst[2]} descriptors at {worst[0]} s with {worst[3]} one-shot connections open; "
            f"the baseline is {baseline['fds']} (+{FD_TRANSIENT} transient)"
        )


# MARK: the checker itself


def test_the_soak_checker_accepts_the_contract_and_rejects_what_breaks_it() -> None:
    """The checker on made-up traces (no daemon): legal walks pass and are counted; a skipped step, a wrong order in
    a delivery, a wrong state, a gap, a walk that stops short, an unknown event each fail."""
    tree = DEMO_TREE_PREORDER

    def launch() -> list[tuple[str, str, str, str]]:
        callbacks = [("willFinishLaunching", "delegate", "inactive"), ("didFinishLaunching", "delegate", "inactive")]
        callbacks += with_state(entering("applicationDidBecomeActive"), "active")
        return [("launch", e, t, s) for e, t, s in callbacks]

    def step(cause: str, event: str, save: bool = True) -> list[tuple[str, str, str, str]]:
        sees = STEPS[event][1]
        events = with_state(DELIVERY[event], sees)
        if event == "applicationDidEnterBackground" and save:
            events += with_state(preservation(), "background")
        return [(cause, e, t, s) for e, t, s in events]

    def feed(trace: list[tuple[str, str, str, str]]) -> TraceChecker:
        checker = TraceChecker(tree)
        for seq, (cause, event, target, state) in enumerate(trace, 1):
            checker.feed(seq, cause, event, state, target)
        checker.finish()
        return checker

    usr1 = step("signal:SIGUSR1", "applicationWillResignActive")
    usr1 += step("signal:SIGUSR1", "applicationDidEnterBackground")
    usr2 = step("signal:SIGUSR2", "applicationWillEnterForeground")
    usr2 += step("signal:SIGUSR2", "applicationDidBecomeActive")
    memory = [("signal:SIGRTMIN+2", e, t, "active") for e, t, _ in with_state(MEMORY_WARNING, "active")]
    redraw = [("api", "draw", "root/worker.view/progress", "active")]
    sleep = [(c.replace("signal:SIGUSR1", "logind:PrepareForSleep"), e, t, s) for c, e, t, s in usr1]
    resume = [(c.replace("signal:SIGUSR2", "logind:PrepareForSleep"), e, t, s) for c, e, t, s in usr2]
    legal = launch() + usr1 + usr2 + redraw + memory + memory + sleep + resume
    checker = feed(legal)
    assert dict(checker.transitions_by_cause) == {
        "signal:SIGUSR1": 1, "signal:SIGUSR2": 1, "signal:SIGRTMIN+2": 2, "logind:PrepareForSleep": 2,
    }
    assert dict(checker.transitions_by_kind) == {"background": 2, "foreground": 2, "memory-warning": 2}
    assert checker.steps == 8 and checker.end_of_turn == 1

    broken = {
        "a step skipped (active straight to the background)": (
            launch() + step("signal:SIGUSR1", "applicationDidEnterBackground"),
            "applicationDidEnterBackground in state active: a step from inactive only",
        ),
        "a delivery out of order": (launch() + [usr1[1], usr1[0]] + usr1[2:], "must start with"),
        "a controller left out": (launch() + [e for e in usr1 if e[2] != "root/cache"], "expected .*root/cache"),
        "a callback seeing the wrong state": (
            launch() + usr1[:2] + [(c, e, t, "inactive") for c, e, t, _ in usr1[2:3]] + usr1[3:],
            "expected .*'active'",
        ),
        "a walk that stops short": (
            launch() + step("signal:SIGUSR1", "applicationWillResignActive") + memory_in("inactive"),
            "walked active → inactive; it asks for background",
        ),
        "the save missing": (
            launch()
            + step("signal:SIGUSR1", "applicationWillResignActive")
            + step("signal:SIGUSR1", "applicationDidEnterBackground", save=False)
            + usr2,
            "shouldSaveApplicationState",
        ),
        "an event the contract has not": (
            launch() + [("signal:SIGUSR1", "viewWillDisappear", "root", "active")],
            "starts no delivery",
        ),
        "a source asking for what it never asks": (
            launch() + [("signal:SIGUSR2", e, t, s) for _, e, t, s in memory],
            "delivered a memory-warning",
        ),
    }
    for name, (trace, message) in broken.items():
        with pytest.raises(Violation, match=message):
            feed(trace)
            pytest.fail(f"the checker accepted {name}")
    gap = TraceChecker(tree)
    with pytest.raises(Violation, match="a gap or a repeat"):
        for seq, (cause, event, target, state) in enumerate(launch() + usr1, 1):
            gap.feed(seq if seq < 20 else seq + 1, cause, event, state, target)


def memory_in(state: str) -> list[tuple[str, str, str, str]]:
    return [("signal:SIGRTMIN+2", e, t, state) for e, t, _ in with_state(MEMORY_WARNING, state)]
