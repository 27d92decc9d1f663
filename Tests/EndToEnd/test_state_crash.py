#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Crash safety of the saved state: lifecycled as a plain process with --state-directory in a temporary directory and
the tests' switch that spreads the state's write over 20 ms (LIFECYCLE_STATE_WRITE_DELAY_MS), SIGKILLed at 500 random moments
around a save (SIGUSR1: background → save) and restarted each time. Every launch either restores a complete archive
(the whole preserved tree, of a generation no older than the last save that completed) or starts fresh; a fresh start
with an archive on disk comes with one warning naming the file and why, and the file is kept aside. Never a crash,
never a partial tree. One launch in ten, the test damages the archive first (truncates it, flips a byte, overwrites it
with garbage, or stamps a newer format) to see the warning path under the same conditions.

The figures (kills, complete restores, fresh starts, files kept aside) are printed and written to
.build-e2e/state-crash-figures.json."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from harness import CHECKOUT, DaemonBinary, log_record
from test_daemon_pty import SYSTEMD_ENVIRONMENT

KILLS = 500
WRITE_DELAY_MS = 20
# The demo's preserved controllers: root, root/worker, root/modes, root/modes/serving (the cache is not preserved).
PRESERVED_CONTROLLERS = 4

RESTORING = re.compile(r"restoring saved state generation (\d+) from (\S+)")
RESTORED = re.compile(r"restored the saved state: generation (\d+), (\d+) controllers")
SAVED = re.compile(r"^saved state generation (\d+) \(")
REJECTED = re.compile(r"the saved state in (\S+) (.+); launching without saved state; the file is kept aside as (\S+)")


class Daemon:
    """One run of the daemon, its stderr (a pipe: one JSON object a line) read record by record by a thread."""

    def __init__(self, argv: list[str]):
        environment = {k: v for k, v in os.environ.items() if k not in SYSTEMD_ENVIRONMENT}
        environment["LIFECYCLE_STATE_WRITE_DELAY_MS"] = str(WRITE_DELAY_MS)
        self.popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment
        )
        self.records: list[dict] = []
        self.lock = threading.Lock()
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.popen.stderr is not None
        for raw in self.popen.stderr:
            record = log_record(raw.decode("utf-8", errors="replace").rstrip("\n"))
            with self.lock:
                self.records.append(record)
            if "active: serving" in str(record.get("message", "")):
                self.ready.set()
        self.ready.set()

    def text(self) -> list[str]:
        """The messages so far (a line that is not a record, such as a crash report, whole)."""
        with self.lock:
            return [str(record.get("message", "")) for record in self.records]

    def warnings(self) -> list[str]:
        """The messages of the warnings so far."""
        with self.lock:
            return [str(record.get("message", "")) for record in self.records if record.get("level") == "warning"]

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(timeout=10)
        self.reader.join(timeout=10)


# The share of kills timed from the start of the write rather than from the signal.
WRITE_ANCHORED_SHARE = 0.25


def write_began(directory: str, daemon: "Daemon") -> None:
    """Returns once the save's temporary file is there (the write has begun), or once the save is over (seen late)."""
    deadline = time.monotonic() + 10
    while not any(name.startswith(".state.archive.tmp-") for name in os.listdir(directory)):
        if any(SAVED.search(line) for line in daemon.text()) or daemon.popen.poll() is not None:
            return
        assert time.monotonic() < deadline, "no save began within 10 s of SIGUSR1:\n" + "\n".join(daemon.text())
        time.sleep(0.0005)


def damage(path: Path, rng: random.Random) -> str:
    data = path.read_bytes()
    how = rng.choice(["truncate", "flip", "garbage", "newer"])
    if how == "truncate":
        path.write_bytes(data[: rng.randrange(len(data))])
    elif how == "flip":
        index = rng.randrange(len(data))
        path.write_bytes(data[:index] + bytes([data[index] ^ (1 << rng.randrange(8))]) + data[index + 1 :])
    elif how == "garbage":
        path.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))))
    else:
        path.write_bytes(data.replace(b"LifecycleKit-State 2 ", b"LifecycleKit-State 9 ", 1))
    return how


def test_sigkill_at_random_moments_of_a_save_never_leaves_a_partial_tree(lifecycled_bin: DaemonBinary) -> None:
    binary = str(lifecycled_bin.path())
    rng = random.Random(int(os.environ.get("LIFECYCLED_CRASH_SEED", "20261123")))
    figures = {
        "kills": 0,
        "complete_restores": 0,
        "fresh_starts": 0,
        "fresh_starts_with_warning": 0,
        "fresh_starts_without_an_archive": 0,
        "archives_damaged_by_the_test": 0,
        "unfinished_saves_removed": 0,
        "kills_during_a_write": 0,
        "files_kept_aside": 0,
        "seconds": 0.0,
    }
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lifecycled-crash-") as directory:
        state = Path(directory) / "state.archive"
        # Every run here is killed within seconds of a launch that restored what the last one saved, by design: the safe
        # launch's rule for abnormal ends in a row (docs/restoration.md) would set that generation aside, which this
        # test of the writes' crash safety must not confuse with a lost save. A crash during a launch still counts.
        config = Path(directory) / "lifecycled.conf"
        config.write_text("[Restoration]\nSafeLaunchAfter=0\n")
        # The generations the archive on disk may have: None when there may be none.
        lowest: int | None = None
        highest: int | None = None
        for kill in range(KILLS):
            damaged = None
            if state.exists() and rng.random() < 0.1:
                damaged = damage(state, rng)
                figures["archives_damaged_by_the_test"] += 1
            daemon = Daemon(
                [binary, "--state-directory", directory, "--work-interval", "0", "--config", str(config)]
            )
            try:
                assert daemon.ready.wait(20), f"launch {kill} never became active:\n" + "\n".join(daemon.text())
                assert daemon.popen.poll() is None, f"launch {kill} exited:\n" + "\n".join(daemon.text())
                # The kills below are meant for a save, not for the launch: the run record says the launch is over
                # (a kill before that would be a crash during the launch, which the safe launch answers).
                run_record = Path(directory) / "run.record"
                deadline = time.monotonic() + 10
                while "phase=running" not in (run_record.read_text() if run_record.exists() else ""):
                    assert time.monotonic() < deadline, f"launch {kill}: the run record never said running"
                    time.sleep(0.001)
                launch = daemon.text()
                launch_warnings = daemon.warnings()
                restoring = [m for line in launch if (m := RESTORING.search(line))]
                restored = [m for line in launch if (m := RESTORED.search(line))]
                rejected = [m for line in launch if (m := REJECTED.search(line))]
                warnings = [message for message in launch_warnings if "state" in message]
                figures["unfinished_saves_removed"] += sum(
                    int(m.group(1)) for line in launch if (m := re.search(r"removed (\d+) unfinished save", line))
                )
                if damaged:
                    assert not restored, f"launch {kill} restored an archive the test damaged ({damaged})"
                    assert len(rejected) == 1 and len(warnings) == 1, f"launch {kill} ({damaged}): {launch}"
                    assert rejected[0].group(1) == str(state)
                    figures["fresh_starts"] += 1
                    figures["fresh_starts_with_warning"] += 1
                    base = 0
                elif restored:
                    assert len(restoring) == 1 and len(restored) == 1, launch
                    generation = int(restored[0].group(1))
                    assert highest is not None, f"launch {kill} restored generation {generation} where no save had begun"
                    assert (lowest or 0) <= generation <= highest, (
                        f"launch {kill} restored generation {generation}; the disk had {lowest}..{highest}"
                    )
                    assert int(restored[0].group(2)) == PRESERVED_CONTROLLERS, f"a partial tree: {restored[0].group(0)}"
                    assert not warnings, f"launch {kill}: {warnings}"
                    figures["complete_restores"] += 1
                    base = generation
                else:
                    assert lowest is None, f"launch {kill} started fresh though generation {lowest} was saved: {launch}"
                    assert any("no saved state: launching fresh" in line for line in launch), launch
                    assert not warnings, f"launch {kill}: {warnings}"
                    figures["fresh_starts"] += 1
                    figures["fresh_starts_without_an_archive"] += 1
                    base = 0
                # A save, and SIGKILL at a random moment around it (the write takes WRITE_DELAY_MS): timed from the
                # signal, or (one kill in four) from the moment the write began, so that some kills land in writes
                # however long the transition before the save takes on this machine.
                daemon.popen.send_signal(signal.SIGUSR1)
                if rng.random() < WRITE_ANCHORED_SHARE:
                    write_began(directory, daemon)
                    time.sleep(rng.uniform(0, WRITE_DELAY_MS / 1000))
                else:
                    time.sleep(rng.uniform(0, 1.5 * WRITE_DELAY_MS / 1000))
                before = set(os.listdir(directory))
                daemon.kill()
                figures["kills"] += 1
                if any(name.startswith(".state.archive.tmp-") for name in before):
                    figures["kills_during_a_write"] += 1
                completed = [int(m.group(1)) for line in daemon.text() if (m := SAVED.search(line))]
                assert all(g == base + 1 for g in completed), (base, completed, daemon.text())
                lowest = base + 1 if completed else (base or None)
                highest = base + 1
                kept = [n for n in os.listdir(directory) if n.startswith("state.archive.rejected-")]
                assert len(kept) <= 3, kept
                assert not any("Fatal error" in line for line in daemon.text()), daemon.text()
            finally:
                daemon.kill()
        figures["files_kept_aside"] = len([n for n in os.listdir(directory) if n.startswith("state.archive.rejected-")])
    figures["seconds"] = round(time.monotonic() - began, 1)
    print("state crash test:", json.dumps(figures))
    out = CHECKOUT / ".build-e2e"
    out.mkdir(exist_ok=True)
    (out / "state-crash-figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    assert figures["kills"] == KILLS
    assert figures["complete_restores"] + figures["fresh_starts"] == KILLS
    assert figures["kills_during_a_write"] > 0, "no kill landed while the state was being written"
