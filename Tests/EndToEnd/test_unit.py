#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""The shipped unit's restart policy under a real systemd 252: a configuration error (exit 78) or a usage error
(exit 64) fails the unit at once, with no restart (RestartPreventExitStatus=64 78), and the journal says why.

Restart=on-failure still applies to everything else; the watchdog test in test_daemon_systemd.py shows a killed
daemon coming back.
"""

from __future__ import annotations

import time
from typing import Callable

from harness import SANDBOX_BIN, Sandbox, messages, wait_for
from peers import CONFIG_PATH

# systemd's "Scheduled restart job, restart counter is at N." (unit_notify of a restart).
RESTART_MESSAGE = "Scheduled restart job"


def start_and_fail(sandbox: Sandbox, unit: str) -> tuple[str, dict[str, str]]:
    """Starts a unit whose daemon exits before READY=1: the start fails, and the unit must stay failed past
    RestartSec= (1 s), where a restart would have been scheduled. Returns the cursor and the final properties."""
    cursor = sandbox.cursor()
    done = sandbox.systemctl("start", unit, check=False)
    assert done.returncode != 0, "the start succeeded"
    wait_for(
        lambda: sandbox.show(unit)["ActiveState"] == "failed", timeout=10, message=f"{unit} in the failed state"
    )
    # Twice RestartSec=: long enough for systemd to have scheduled a restart if it were going to.
    time.sleep(2.5)
    return cursor, sandbox.show(unit)


def systemd_messages(sandbox: Sandbox, unit: str, cursor: str) -> list[str]:
    """What systemd (PID 1) logged about the unit after the cursor."""
    return messages(r for r in sandbox.journal(unit, cursor) if r.get("_PID") == "1")


def daemon_messages(sandbox: Sandbox, unit: str, cursor: str) -> list[str]:
    return messages(r for r in sandbox.journal(unit, cursor) if r.get("_PID") != "1")


def test_the_shipped_unit_prevents_restarts_on_exit_statuses_64_69_and_78(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit()
    shown = sandbox.show(unit, "Restart", "RestartPreventExitStatus")
    assert shown == {"Restart": "on-failure", "RestartPreventExitStatus": "64 69 78"}


def test_a_bad_configuration_at_start_fails_the_unit_with_78_and_no_restart(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    unit = daemon_unit(*config("[Signals]\nSIGUSR1=background\nSIGKILL=terminate\n"))
    cursor, final = start_and_fail(sandbox, unit)
    assert final["ActiveState"] == "failed", final
    assert final["Result"] == "exit-code", final
    assert final["NRestarts"] == "0", final
    assert final["ExecMainStatus"] == "78", final

    ours = daemon_messages(sandbox, unit, cursor)
    assert any(f"{CONFIG_PATH}:3: SIGKILL cannot be mapped" in m for m in ours), ours
    systemd = systemd_messages(sandbox, unit, cursor)
    assert f"{unit}: Main process exited, code=exited, status=78/CONFIG" in systemd, systemd
    assert not [m for m in systemd if RESTART_MESSAGE in m], systemd
    # One process only: the start, its failure, no second attempt.
    assert len([m for m in systemd if m.startswith("Starting ")]) == 1, systemd


def test_a_usage_error_at_start_fails_the_unit_with_64_and_no_restart(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit("ExecStart=", f"ExecStart={SANDBOX_BIN} --launch-into sideways")
    cursor, final = start_and_fail(sandbox, unit)
    assert final["ActiveState"] == "failed", final
    assert final["Result"] == "exit-code", final
    assert final["NRestarts"] == "0", final
    assert final["ExecMainStatus"] == "64", final

    ours = daemon_messages(sandbox, unit, cursor)
    assert any("--launch-into sideways is not a launch target" in m for m in ours), ours
    systemd = systemd_messages(sandbox, unit, cursor)
    assert f"{unit}: Main process exited, code=exited, status=64/USAGE" in systemd, systemd
    assert not [m for m in systemd if RESTART_MESSAGE in m], systemd
