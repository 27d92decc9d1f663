#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Issue 31's targets with the example's shipped hello.socket and hello.service under systemd 252 and their own start
limit (test_example's `hello_unit` with `shipped_start_limit=True`: no StartLimitBurst= drop-in), measured with a client
that opens a new connection per request (http_load):

- A poisoned saved state (a controller whose decodeRestorableState crashes: LIFECYCLE_CRASH_IN=decodeRestorableState
  (with:)=SIGSEGV): after a SIGKILL the restart restores it and crashes in its launch; the next launch sets it aside
  and serves, within 2 restarts, without a start-limit hit, the state kept to inspect.
- An operator's 10 `systemctl restart`s in 10 s refuse nothing (the default start limit, 5 in 10 s, closed the socket).
- A binary that crashes at every start (LIFECYCLE_CRASH_IN=willFinishLaunching) is given up after 6 tries, with the
  backoff between them; hello.socket never hits the start limit and keeps listening.

Figures: .build-e2e/safe-launch-figures.json.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Callable

from harness import CHECKOUT, Sandbox, wait_for
from http_load import ConnectionPerRequestLoad
from peers import kill_main
from test_example import (  # noqa: F401 (fixtures)
    IDENTIFIER,
    SOCKET_UNIT,
    UNIT,
    answers,
    get,
    hello_bin,
    hello_unit,
)

STATE = "/var/lib/private/hello-service"
FIGURES = CHECKOUT / ".build-e2e" / "safe-launch-figures.json"


def record_figures(name: str, figures: dict) -> None:
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    existing[name] = figures
    FIGURES.write_text(json.dumps(existing, indent=2) + "\n")


def status(sandbox: Sandbox) -> dict:
    return json.loads(sandbox.run("lifecyclectl", "status", "-u", "hello", "--json").stdout)


def launch_lines(sandbox: Sandbox, cursor: str) -> list[dict]:
    return [r for r in sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER]) if "LIFECYCLE_LAST_RUN" in r]


def test_a_poisoned_saved_state_is_set_aside_after_one_crash_and_the_service_serves_again(
    sandbox: Sandbox, hello_unit: Callable[..., int]
) -> None:
    port = hello_unit('Environment="LIFECYCLE_CRASH_IN=decodeRestorableState(with:)=SIGSEGV"', shipped_start_limit=True)
    sandbox.systemctl("start", UNIT)
    assert wait_for(lambda: answers(port), timeout=15, message="the first answer") == (200, "hello")
    for _ in range(5):
        assert get(port) == (200, "hello")
    # A save (the background), as the service had made before it was killed.
    kill_main(sandbox, UNIT, "SIGUSR1")
    wait_for(lambda: status(sandbox)["state"] == "background", timeout=10, message="the background")
    kill_main(sandbox, UNIT, "SIGUSR2")
    wait_for(lambda: answers(port), timeout=10, message="an answer in the foreground")
    cursor = sandbox.cursor()
    with ConnectionPerRequestLoad(port, threads=4, limit=120) as load:
        load.wait_for_requests(50)
        killed = time.monotonic()
        kill_main(sandbox, UNIT, "SIGKILL")
        # Serving again: a process that answers, with the unit active.
        def serving() -> bool:
            shown = sandbox.show(UNIT, "ActiveState", "SubState")
            return shown["ActiveState"] == "active" and shown["SubState"] == "running" and answers(port) == (200, "hello")

        wait_for(serving, timeout=60, interval=0.05, message="the service serving again")
        served_after = time.monotonic() - killed
        load.wait_for_requests(50)
        result = load.stop()
    shown = sandbox.show(UNIT, "NRestarts", "ActiveState", "Result")
    socket_unit = sandbox.show(SOCKET_UNIT, "ActiveState", "Result")
    lines = launch_lines(sandbox, cursor)
    messages = [str(r.get("MESSAGE")) for r in lines]
    figures = {
        "restarts": int(shown["NRestarts"]),
        "seconds from SIGKILL to serving": round(served_after, 2),
        "requests": result.requests,
        "failures": dict(result.kinds),
        "launch lines": messages,
    }
    record_figures("poisoned state", figures)
    print(f"\npoisoned state: {figures}")
    assert int(shown["NRestarts"]) <= 2, figures
    assert socket_unit == {"ActiveState": "active", "Result": "success"}, socket_unit
    assert result.kinds["refused"] == 0, result.summary()
    # The restart after the SIGKILL restored the state and crashed in its launch; the next one set it aside.
    assert [r["LIFECYCLE_LAST_RUN"] for r in lines] == ["kill", "crash"], messages
    assert "LIFECYCLE_SET_ASIDE" in lines[-1], messages
    generation = lines[-1]["LIFECYCLE_SET_ASIDE"]
    assert f"safe launch: generation {generation} set aside" in messages[-1], messages
    assert "a crash (SIGSEGV) during its launch" in messages[-1], messages
    # Kept to inspect, named in the status (and systemd's STATUS=).
    listing = sandbox.run("ls", STATE).stdout.split()
    assert f"state.archive.set-aside-{generation}" in listing, listing
    reply = status(sandbox)
    assert reply["lastRun"]["setAsideGeneration"] == int(generation), reply["lastRun"]
    assert f"saved state generation {generation} set aside" in sandbox.show(UNIT, "StatusText")["StatusText"]
    text = sandbox.run("lifecyclectl", "status", "-u", "hello").stdout
    assert f"safe launch: generation {generation} set aside" in text, text


def test_ten_operator_restarts_in_ten_seconds_refuse_no_connection_under_the_shipped_start_limit(
    sandbox: Sandbox, hello_unit: Callable[..., int]
) -> None:
    port = hello_unit(shipped_start_limit=True)
    sandbox.systemctl("start", UNIT)
    assert wait_for(lambda: answers(port), timeout=15, message="the first answer") == (200, "hello")
    with ConnectionPerRequestLoad(port, threads=8, limit=120) as load:
        load.wait_for_requests(100)
        began = time.monotonic()
        for index in range(10):
            sandbox.systemctl("restart", UNIT)
            # 10 in 10 s: one a second, whatever a restart took.
            time.sleep(max(0.0, began + index + 1 - time.monotonic()))
        burst = time.monotonic() - began
        load.wait_for_requests(100)
        result = load.stop()
    socket_unit = sandbox.show(SOCKET_UNIT, "ActiveState", "Result")
    shown = sandbox.show(UNIT, "ActiveState", "Result")
    figures = {
        "restarts": 10,
        "seconds": round(burst, 2),
        "requests": result.requests,
        "failures": dict(result.kinds),
        "socket unit": socket_unit,
    }
    record_figures("10 restarts in 10 s", figures)
    print(f"\n10 restarts in {burst:.1f} s: {result.summary()}; {socket_unit}")
    assert burst <= 10.5, figures
    assert socket_unit == {"ActiveState": "active", "Result": "success"}, figures
    assert shown == {"ActiveState": "active", "Result": "success"}, shown
    assert result.kinds["refused"] == 0, result.summary()
    assert result.failures == [], result.summary()


def test_a_binary_that_crashes_at_every_start_is_given_up_and_the_socket_keeps_listening(
    sandbox: Sandbox, hello_unit: Callable[..., int]
) -> None:
    port = hello_unit('Environment="LIFECYCLE_CRASH_IN=willFinishLaunching=SIGSEGV"', shipped_start_limit=True)
    cursor = sandbox.cursor()
    began = time.monotonic()
    sandbox.systemctl("start", UNIT, check=False)
    failed = wait_for(
        lambda: (s := sandbox.show(UNIT, "ActiveState", "Result", "ExecMainStatus", "NRestarts"))["ActiveState"]
        == "failed"
        and s,
        timeout=90,
        interval=0.2,
        message="the unit given up",
    )
    given_up_after = time.monotonic() - began
    socket_unit = sandbox.show(SOCKET_UNIT, "ActiveState", "Result")
    records = sandbox.journal(UNIT, cursor, identifiers=[IDENTIFIER])
    waits = [str(r.get("MESSAGE")) for r in records if str(r.get("MESSAGE", "")).startswith("waiting ")]
    gave_up = [str(r.get("MESSAGE")) for r in records if str(r.get("MESSAGE", "")).startswith("giving up")]
    # The socket still listens: a connection is taken into its backlog (and starts one more try, after 30 s).
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    sandbox.systemctl("stop", UNIT, check=False)
    figures = {
        "tries": int(failed["NRestarts"]) + 1,
        "seconds to give up": round(given_up_after, 1),
        "waits": waits,
        "unit": {k: failed[k] for k in ("Result", "ExecMainStatus")},
        "socket unit": socket_unit,
    }
    record_figures("crash loop", figures)
    print(f"\ncrash loop: {figures}")
    assert failed["Result"] == "exit-code" and failed["ExecMainStatus"] == "69", figures
    assert int(failed["NRestarts"]) == 6, figures
    assert socket_unit == {"ActiveState": "active", "Result": "success"}, figures
    assert [w.split(" before")[0] for w in waits] == [
        "waiting 1 s", "waiting 2 s", "waiting 4 s", "waiting 8 s"
    ], waits
    assert len(gave_up) == 1 and "6 runs in a row ended abnormally" in gave_up[0], gave_up
