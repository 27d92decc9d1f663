#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Versioned state across upgrades (issue 31), with the example's shipped units under systemd 252:

- /count across upgrades under a connection-per-request load: the requests the old process answers after it handed its
  state over (while both accept, and while it drains) reach the new process through the state it saves as it exits,
  which the example's delegate merges (application(_:didReceiveFinalStateOf:)); the count equals the answers.
- v1 → v2 with a schema change → rollback to v1: HelloController's count is `served` in version 1 and `requests` in
  version 2 (HELLO_SERVICE_SCHEMA=2, the example's stand-in for its next build, whose --version is 1.2.0); v2 migrates
  v1's value, and the rollback restores the generation v1 wrote, which the upgrade kept (state.archive.written-by-1.1.0).

Figures: .build-e2e/versioned-state-figures.json.
"""

from __future__ import annotations

import json
import time
from typing import Callable

from harness import CHECKOUT, Sandbox, wait_for
from http_load import ConnectionPerRequestLoad
from test_example import IDENTIFIER, UNIT, get  # noqa: F401
from test_example import hello_bin, hello_unit  # noqa: F401 (fixtures)
from peers import main_pid
from test_zero_gap import REAL_BIN, hello_service, replace_binary, restore_binary, status, upgrade  # noqa: F401

FIGURES = CHECKOUT / ".build-e2e" / "versioned-state-figures.json"
STATE = "/var/lib/private/hello-service"


def record_figures(name: str, figures: dict) -> None:
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    existing[name] = figures
    FIGURES.write_text(json.dumps(existing, indent=2) + "\n")


def count(port: int) -> int:
    code, body = get(port, "/count")
    assert code == 200, body
    return int(body)


def test_the_count_across_upgrades_under_load_misses_no_request_the_old_process_answered(
    sandbox: Sandbox, hello_service: Callable[..., int]
) -> None:
    port = hello_service()
    before = count(port)
    with ConnectionPerRequestLoad(port, threads=8, limit=120) as load:
        load.wait_for_requests(200)
        for _ in range(5):
            code, output = upgrade(sandbox)
            assert code == 0, output
            load.wait_for_requests(200)
        result = load.stop()
    expected = before + result.succeeded
    # The last predecessor's final state is merged once it has drained and exited.
    try:
        wait_for(lambda: count(port) == expected, timeout=15, interval=0.2, message="/count equal to the answers")
    finally:
        final = count(port)
        record_figures("count across 5 upgrades", {"answered": result.succeeded, "expected": expected, "/count": final})
        print(f"\n5 upgrades under load: {result.summary()}; /count {final}, expected {expected}")
    assert result.failures == [], result.summary()
    records = sandbox.journal(UNIT, None, identifiers=[IDENTIFIER])
    merged = [r for r in records if r.get("LIFECYCLE_UPGRADE") == "final-state"]
    assert len(merged) == 5, [r.get("MESSAGE") for r in merged]


def test_an_upgrade_with_a_schema_change_and_a_rollback_keep_every_value_each_version_wrote(
    sandbox: Sandbox, hello_service: Callable[..., int]
) -> None:
    port = hello_service()
    for _ in range(20):
        assert get(port) == (200, "hello")
    v1 = count(port)
    assert status(sandbox)["version"] == "1.1.0"

    # v2: the count is migrated from `served` to `requests`.
    replace_binary(sandbox, f"#!/bin/sh\nHELLO_SERVICE_SCHEMA=2 exec {REAL_BIN} \"$@\"\n")
    cursor = sandbox.cursor()
    code, output = upgrade(sandbox)
    restore_binary(sandbox)
    assert code == 0, output
    assert status(sandbox)["version"] == "1.2.0"
    assert count(port) == v1
    events = [r for r in sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER]) if r.get("LIFECYCLE_EVENT") == "migrateRestorableState(with:fromVersion:)"]
    assert [(e.get("LIFECYCLE_TARGET"), e.get("LIFECYCLE_DETAIL")) for e in events] == [("http", "1 → 2")], events
    assert "state.archive.written-by-1.1.0" in sandbox.run("ls", STATE).stdout.split()
    for _ in range(10):
        assert get(port) == (200, "hello")
    v2 = count(port)
    assert v2 == v1 + 10

    # Rollback, by a restart with v1 at ExecStart= (an upgrade would start v2's own path with v2's environment, which
    # names the schema): v1 does not understand v2's values and restores the generation it wrote.
    cursor = sandbox.cursor()
    sandbox.systemctl("restart", UNIT)
    wait_for(lambda: get(port) == (200, "hello"), timeout=15, message="an answer after the rollback")
    assert status(sandbox)["version"] == "1.1.0"
    rolled_back = count(port) - 1
    lines = [str(r.get("MESSAGE")) for r in sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER])]
    rollback = [line for line in lines if "a rollback; restoring generation" in line]
    record_figures("v1 → v2 → v1", {"v1 count": v1, "v2 count": v2, "after the rollback": rolled_back, "line": rollback})
    print(f"\nv1 {v1} → v2 {v2} → rollback {rolled_back}: {rollback}")
    assert rolled_back == v1, lines
    assert len(rollback) == 1 and "http (HelloController) version 2, this build's 1" in rollback[0], rollback
    # And forward again: v2 restores what v1 wrote (and the one request answered since), migrated.
    replace_binary(sandbox, f"#!/bin/sh\nHELLO_SERVICE_SCHEMA=2 exec {REAL_BIN} \"$@\"\n")
    code, output = upgrade(sandbox)
    restore_binary(sandbox)
    assert code == 0, output
    assert count(port) == v1 + 1
