#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Self-tests of the harness: the sandbox, readiness, status, journald readback and stop, without the daemon."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from harness import Sandbox, lifecycle_events, messages, pairs, sandbox_script, wait_for

SELFTEST_UNIT = "e2e-selftest.service"
TRACE_UNIT = "e2e-trace.service"
TRACE_SCRIPT = "/run/e2e-trace.py"


def test_sandbox_is_isolated_from_the_machine(sandbox: Sandbox) -> None:
    assert sandbox.run("cat", "/proc/1/comm").stdout.strip() == "systemd"
    assert sandbox.systemctl("is-system-running", check=False).stdout.strip() in ("running", "degraded")
    for path in ("/tmp", "/var/tmp", "/var/log/journal", "/etc/systemd/system", "/run", "/usr/local/bin"):
        assert sandbox.run("findmnt", "-n", "-o", "FSTYPE", "--mountpoint", path).stdout.strip() == "tmpfs", path
    assert sandbox.run("findmnt", "-n", "-o", "FSTYPE", "--mountpoint", "/var").stdout.strip() == "overlay"
    for unit in ("systemd-tmpfiles-setup.service", "systemd-tmpfiles-clean.timer", "systemd-sysctl.service"):
        assert sandbox.systemctl("is-enabled", unit, check=False).stdout.strip() == "masked", unit
    # The machine's /tmp is not the sandbox's, in either direction.
    with tempfile.NamedTemporaryFile(dir="/tmp", prefix="lifecycle-e2e-") as marker:
        assert sandbox.run("test", "-e", marker.name, check=False).returncode != 0
        inside = f"/tmp/lifecycle-e2e-inside-{os.getpid()}"
        sandbox.run("touch", inside)
        assert not Path(inside).exists()
        assert Path(marker.name).exists()


SELFTEST_GO = "/run/e2e-selftest-go"


def test_notify_unit_is_active_only_after_ready(sandbox: Sandbox) -> None:
    sandbox.remove(SELFTEST_GO)
    sandbox.write_file(
        f"/etc/systemd/system/{SELFTEST_UNIT}",
        "[Service]\n"
        "Type=notify\n"
        "NotifyAccess=all\n"
        f"ExecStart=/bin/sh -c 'echo selftest-starting; while [ ! -e {SELFTEST_GO} ]; do sleep 0.05; done; "
        "systemd-notify --ready --status=hi; exec sleep infinity'\n",
    )
    sandbox.daemon_reload()
    try:
        cursor = sandbox.cursor()
        sandbox.systemctl("start", "--no-block", SELFTEST_UNIT)
        # The shell sends READY=1 only once the test says so: until then the unit is activating, not active.
        wait_for(lambda: sandbox.show(SELFTEST_UNIT)["ActiveState"] != "inactive", timeout=10)
        assert sandbox.show(SELFTEST_UNIT)["ActiveState"] == "activating"
        sandbox.write_file(SELFTEST_GO, "")
        wait_for(lambda: sandbox.show(SELFTEST_UNIT)["ActiveState"] == "active", timeout=10)
        shown = sandbox.show(SELFTEST_UNIT)
        assert shown["SubState"] == "running"
        assert shown["StatusText"] == "hi"
        assert int(shown["MainPID"]) > 0
        assert shown["NRestarts"] == "0"

        records = wait_for(
            lambda: (r := sandbox.journal(SELFTEST_UNIT, cursor, identifiers=["sh"]))
            and any("Started" in m for m in messages(r))
            and r,
            message="the selftest's own line and systemd's Started",
        )
        texts = messages(records)
        own = [r for r in records if r.get("MESSAGE") == "selftest-starting"]
        assert own and own[0]["_SYSTEMD_UNIT"] == SELFTEST_UNIT
        started = next(i for i, m in enumerate(texts) if m.startswith("Started"))
        assert texts.index("selftest-starting") < started

        cursor = sandbox.cursor()
        sandbox.systemctl("stop", SELFTEST_UNIT)
        shown = sandbox.show(SELFTEST_UNIT)
        assert (shown["ActiveState"], shown["Result"]) == ("inactive", "success")
        stopped = wait_for(
            lambda: [m for m in messages(sandbox.journal(SELFTEST_UNIT, cursor)) if m.startswith("Stopped")],
            message="systemd's Stopped line",
        )
        assert len(stopped) == 1
    finally:
        sandbox.systemctl("stop", SELFTEST_UNIT, check=False)
        sandbox.remove(f"/etc/systemd/system/{SELFTEST_UNIT}", SELFTEST_GO)
        sandbox.daemon_reload()


def test_trace_fields_read_back_in_sequence_order(sandbox: Sandbox) -> None:
    # Three structured records written out of sequence order, as journald fields like the daemon's.
    entries = [(2, "applicationWillResignActive", "root"), (1, "applicationWillResignActive", "root/worker"),
               (3, "applicationWillResignActive", "delegate")]
    # One process, like the daemon (events are grouped by _PID), writing journald's native protocol.
    script = (
        "import socket\n"
        "entries = " + repr(entries) + "\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
        "s.connect('/run/systemd/journal/socket')\n"
        "for seq, event, target in entries:\n"
        "    fields = ['MESSAGE=e2e trace', 'SYSLOG_IDENTIFIER=e2e-trace', 'LIFECYCLE_EVENT=' + event,\n"
        "              'LIFECYCLE_TARGET=' + target, 'LIFECYCLE_STATE=active', 'LIFECYCLE_SEQ=%d' % seq,\n"
        "              'LIFECYCLE_CAUSE=signal:SIGUSR1']\n"
        "    s.send(('\\n'.join(fields) + '\\n').encode())\n"
    )
    sandbox.write_file(TRACE_SCRIPT, script)
    sandbox.write_file(
        f"/etc/systemd/system/{TRACE_UNIT}", f"[Service]\nType=oneshot\nExecStart=/usr/bin/python3 {TRACE_SCRIPT}\n"
    )
    sandbox.daemon_reload()
    try:
        cursor = sandbox.cursor()
        sandbox.systemctl("start", TRACE_UNIT)
        assert sandbox.show(TRACE_UNIT)["Result"] == "success"
        events = wait_for(
            lambda: len(e := lifecycle_events(sandbox.journal(TRACE_UNIT, cursor, identifiers=["e2e-trace"]))) == 3
            and e,
            message="three trace records",
        )
        assert pairs(events) == [
            ("applicationWillResignActive", "root/worker"),
            ("applicationWillResignActive", "root"),
            ("applicationWillResignActive", "delegate"),
        ]
        assert [e.seq for e in events] == [1, 2, 3]
        assert {(e.state, e.cause) for e in events} == {("active", "signal:SIGUSR1")}
    finally:
        sandbox.remove(f"/etc/systemd/system/{TRACE_UNIT}", TRACE_SCRIPT)
        sandbox.daemon_reload()


def test_stopping_a_sandbox_leaves_no_process_or_cgroup(sandbox: Sandbox) -> None:
    second = Sandbox.start()
    try:
        cgroup_lines = Path(f"/proc/{second.pid}/cgroup").read_text().splitlines()
        assert second.is_running()
    finally:
        second.stop()
    assert not Path(f"/proc/{second.pid}").exists()
    # name=systemd hierarchy: .../lifecycle-e2e.<nonce>/init.scope while it ran; the nonce directory is gone.
    systemd_path = next(line.split(":", 2)[2] for line in cgroup_lines if ":name=systemd:" in line)
    sandbox_cgroup = systemd_path.split("/init.scope")[0]
    assert "lifecycle-e2e." in sandbox_cgroup
    assert not Path(f"/sys/fs/cgroup/systemd{sandbox_cgroup}").exists()
    # The session's sandbox is untouched.
    assert sandbox.is_running()


@pytest.mark.parametrize("machine_directory", ["/tmp", "/var/tmp"])
def test_a_sandbox_whose_state_its_own_mounts_hide_runs_and_stops(sandbox: Sandbox, machine_directory: str) -> None:
    # A checkout under /tmp or /var/tmp puts the sandbox's state where the sandbox mounts a tmpfs; a space in the
    # path as well, for the quoting.
    with tempfile.TemporaryDirectory(dir=machine_directory, prefix="lifecycle-e2e state ") as parent:
        state_root = Path(parent) / "sandbox dir"
        marker = Path(parent) / "machine file"
        marker.write_text("the machine's\n")
        second = Sandbox.start(state_root)
        try:
            assert sandbox_script("list", state_root=state_root, capture_output=True, text=True).stdout.split() == [
                str(second.pid)
            ]
            assert (state_root / str(second.pid)).is_symlink()
            assert second.run("cat", "/proc/1/comm").stdout.strip() == "systemd"
            for path in ("/tmp", "/var/tmp"):
                assert second.run("findmnt", "-n", "-o", "FSTYPE", "--mountpoint", path).stdout.strip() == "tmpfs"
            for path in ("/var", "/etc"):
                assert second.run("findmnt", "-n", "-o", "FSTYPE", "--mountpoint", path).stdout.strip() == "overlay"
            # Its state directory is out of sight inside, yet copy-in and writes work.
            assert second.run("test", "-e", parent, check=False).returncode != 0
            second.copy_in(marker, "/run/copied in")
            assert second.run("cat", "/run/copied in").stdout == "the machine's\n"
            inside = f"{machine_directory}/lifecycle-e2e-inside-{os.getpid()}"
            second.run("touch", inside, "/var/lib/lifecycle-e2e-inside")
        finally:
            second.stop()
        assert not Path(f"/proc/{second.pid}").exists()
        assert marker.read_text() == "the machine's\n"
        assert not Path(inside).exists()
        assert not Path("/var/lib/lifecycle-e2e-inside").exists()
        # Stopped and cleaned up: no boot directory or PID link left, only the last console log.
        assert sorted(p.name for p in state_root.iterdir()) == ["console.last.log"]
        assert sandbox_script("list", state_root=state_root, capture_output=True, text=True).stdout == ""
    assert sandbox.is_running()
