#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Launch into the background under systemd ([Launch] Into=background): the whole tree hears
applicationDidEnterBackground with cause `launch`, nothing appears, READY=1 follows; the first return to the
foreground shows the root between applicationWillEnterForeground and applicationDidBecomeActive; terminating
without ever appearing is applicationWillTerminate down the tree and every controller released."""

from __future__ import annotations

import time
from typing import Callable

from harness import (
    DEMO_TREE_PREORDER,
    Sandbox,
    entering,
    is_application_event,
    leaving,
    lifecycle_events,
    pairs,
    signal_cause,
    wait_for,
)
from peers import start, wait_events

UNIT_STARTED_MESSAGE_ID = "39f53479d3a045ac8e11786248231fbf"


def launched_in_background(sandbox: Sandbox, daemon_unit: Callable[..., str], config) -> tuple[str, list]:
    unit = daemon_unit(*config("[Launch]\nInto=background\n\n[MemoryPressure]\nWatch=no\n"))
    cursor, shown = start(sandbox, unit)
    assert (shown["ActiveState"], shown["SubState"]) == ("active", "running"), shown
    assert shown["StatusText"].startswith("background"), shown["StatusText"]
    records = wait_for(
        lambda: (r := sandbox.journal(unit, cursor))
        and any(x.get("MESSAGE_ID") == UNIT_STARTED_MESSAGE_ID for x in r)
        and r,
        message="systemd's Started message",
    )
    return unit, records


def test_a_background_launch_tells_the_whole_tree_and_shows_nothing_before_ready(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config
) -> None:
    unit, records = launched_in_background(sandbox, daemon_unit, config)
    events = lifecycle_events(records)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    application = [(e.event, e.target) for e in events if is_application_event(e.event)]
    assert application == leaving("applicationDidEnterBackground"), application
    assert {e.cause for e in events if is_application_event(e.event)} == {"launch"}
    assert not [e for e in events if e.event in ("viewWillAppear", "viewDidAppear", "loadView")], "nothing appears"
    # READY=1 (systemd's "Started") comes after the delegate's applicationDidEnterBackground.
    position = {int(str(r["LIFECYCLE_SEQ"])): i for i, r in enumerate(records) if "LIFECYCLE_SEQ" in r}
    delegate = next(e for e in events if (e.event, e.target) == ("applicationDidEnterBackground", "delegate"))
    started = next(i for i, r in enumerate(records) if r.get("MESSAGE_ID") == UNIT_STARTED_MESSAGE_ID)
    assert started > position[delegate.seq]

    cursor = sandbox.cursor()
    sandbox.systemctl("kill", "--kill-whom=main", "-s", "SIGUSR2", unit)
    cause = signal_cause("SIGUSR2")
    events = wait_events(sandbox, unit, cursor, 2 * (len(DEMO_TREE_PREORDER) + 1), cause)
    order = pairs(events)
    application = [p for p in order if is_application_event(p[0])]
    assert application == entering("applicationWillEnterForeground") + entering("applicationDidBecomeActive")
    # The root appears (loads, will, did) between the two.
    assert order.index(("applicationWillEnterForeground", "root/modes/serving")) < order.index(("loadView", "root"))
    assert order.index(("viewDidAppear", "root")) < order.index(("applicationDidBecomeActive", "delegate"))
    assert sandbox.show(unit)["StatusText"].startswith("active")


def test_terminating_after_a_background_launch_releases_what_never_appeared(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config
) -> None:
    unit, _ = launched_in_background(sandbox, daemon_unit, config)
    cursor = sandbox.cursor()
    sandbox.systemctl("stop", unit)
    events = wait_for(
        lambda: (e := lifecycle_events(sandbox.journal(unit, cursor)))
        and any((x.event, x.target) == ("deinit", "root") for x in e)
        and (time.sleep(0.3) or lifecycle_events(sandbox.journal(unit, cursor))),
        message="the teardown",
    )
    application = [(e.event, e.target) for e in events if is_application_event(e.event)]
    assert application == leaving("applicationWillTerminate"), application
    assert not [e for e in events if e.event.startswith("viewWill") or e.event.startswith("viewDid")]
    released = {e.target for e in events if e.event == "deinit"}
    assert set(DEMO_TREE_PREORDER) <= released, released
