#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Reload through `systemctl reload` (the unit's ExecReload=lifecyclectl reload) and SIGHUP: RELOADING=1, the file read
and validated, offered to the delegate and the tree, then applicationWillReload down the tree, the configuration
applied, applicationDidReload, READY=1. A valid change takes effect (the demo hands its serving mode over to a new
controller, the memory pressure and logind settings are re-applied); an invalid one is refused before anybody is
offered it: the old configuration stays, the journal names the file and line, `systemctl reload` fails, and the unit
stays active with the same process."""

from __future__ import annotations

from typing import Callable

from harness import DEMO_TREE_PREORDER, Sandbox, entering, leaving, lifecycle_events, messages, offering, pairs, wait_for
from peers import CONFIG_PATH, daemon_messages, start

# `systemctl reload` runs the unit's ExecReload=lifecyclectl reload: a control request.
RELOAD_CAUSE = "control"
INITIAL = """\
[Demo]
Mode=serving

[MemoryPressure]
MinimumIntervalSec=10
"""


def reload(sandbox: Sandbox, unit: str) -> str:
    """`systemctl reload`, which returns once the daemon sent READY=1 after RELOADING=1; the cursor before it."""
    cursor = sandbox.cursor()
    sandbox.systemctl("reload", unit, timeout=30)
    wait_for(
        lambda: any(m.startswith("Reloaded") for m in messages(sandbox.journal(unit, cursor))),
        message="systemd's Reloaded line",
    )
    return cursor


def test_a_valid_change_is_applied_between_will_reload_and_did_reload(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    unit = daemon_unit(*config(INITIAL))
    _, shown = start(sandbox, unit)
    sandbox.write_file(
        CONFIG_PATH,
        "[Demo]\nMode=maintenance\n\n[MemoryPressure]\nMinimumIntervalSec=30\n\n[Logind]\nWatch=no\n",
    )
    cursor = reload(sandbox, unit)
    events = wait_for(
        lambda: (e := lifecycle_events(sandbox.journal(unit, cursor)))
        and any(x.event == "viewDidAppear" and x.target == "root/modes/maintenance" for x in e)
        and e,
        message="the new mode's viewDidAppear",
    )
    # Real memory pressure on a loaded machine (the daemon watches it machine-wide here) may deliver a warning in
    # the same window, as its own transition with its own cause: set it aside, and nothing else.
    unrelated = {e.event for e in events if e.cause == "psi"}
    assert unrelated <= {"applicationDidReceiveMemoryWarning", "didReceiveMemoryWarning"}, unrelated
    events = [e for e in events if e.cause != "psi"]
    # The demo's views redraw on their own (the worker's progress, the cache's usage; cause api): one may land
    # between the cursor and the signal. The reload's sequence starts at its first event.
    first = next(i for i, e in enumerate(events) if e.cause == RELOAD_CAUSE)
    assert all(e.event == "draw" for e in events[:first]), events[:first]
    events = events[first:]
    # Every callback of the reload transition has the signal as its cause (the appearance completions that run at
    # the end of the loop turn, after the transition, are the application's own).
    assert {e.cause for e in events if e.event.startswith("application")} == {RELOAD_CAUSE}
    order = pairs(events)
    # The configuration is offered first (the delegate, then the tree in pre-order); then the tree lets go of the
    # old one before it is applied, in the leaving order.
    assert order[: len(DEMO_TREE_PREORDER) + 1] == offering()
    order = order[len(DEMO_TREE_PREORDER) + 1 :]
    assert order[: len(DEMO_TREE_PREORDER) + 1] == leaving("applicationWillReload")
    # Then the delegate and the tree hear applicationDidReload in the entering order; the modes controller
    # hands over to the new mode there.
    did_reload = [(event, target) for event, target in order if event == "applicationDidReload"]
    assert did_reload[: len(DEMO_TREE_PREORDER)] == entering("applicationDidReload")[: len(DEMO_TREE_PREORDER)]
    new, old = "root/modes/maintenance", "root/modes/serving"
    handover = [(e, t) for e, t in order if t in (new, old) and e.startswith("view")]
    assert handover.index(("viewDidLoad", new)) < handover.index(("viewWillDisappear", old))
    assert handover.index(("viewDidDisappear", old)) < handover.index(("viewDidAppear", new))
    assert {e.state for e in events if e.event.startswith("application")} == {"active"}

    lines = daemon_messages(sandbox, unit, cursor)
    reread = lines.index("configuration reloaded")
    assert lines.index("mode changes to maintenance: handing over") > reread
    assert "memory warnings from pressure: at most one per 30.0 seconds" in lines
    assert "logind is no longer watched (Logind Watch=no)" in lines

    after = sandbox.show(unit)
    assert (after["ActiveState"], after["SubState"], after["MainPID"]) == ("active", "running", shown["MainPID"])
    assert "maintenance" in after["StatusText"], after["StatusText"]


def test_an_invalid_change_keeps_the_old_configuration_and_names_the_file_and_line(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    unit = daemon_unit(*config(INITIAL))
    _, shown = start(sandbox, unit)
    sandbox.write_file(CONFIG_PATH, "[Demo]\nMode=maintenance\n\n[MemoryPressure]\nMinimumIntervalSec=soon\n")
    cursor = sandbox.cursor()
    refused = sandbox.systemctl("reload", unit, check=False, timeout=30)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    records = sandbox.journal(unit, cursor)
    errors = [r for r in records if r.get("PRIORITY") == "3" and r.get("_PID") != "1"]
    assert len(errors) == 1, messages(errors)
    text = str(errors[0]["MESSAGE"])
    assert text.startswith(
        f"reload refused by the configuration: {CONFIG_PATH}:5: MinimumIntervalSec=soon is not a non-negative number"
    ), text
    assert text.endswith("keeping the previous configuration"), text

    # Refused before anybody was offered it: nobody let go of anything or applied anything, READY=1 followed.
    events = lifecycle_events(records)
    assert [(e.event, e.target) for e in events if e.event != "draw"] == [("reloadRefused", "configuration")]
    assert not [e for e in events if e.target.startswith("root/modes/maintenance")]
    lines = daemon_messages(sandbox, unit, cursor)
    assert "configuration reloaded" not in lines
    assert not [m for m in lines if "handing over" in m or "at most one per" in m]
    after = sandbox.show(unit)
    assert (after["ActiveState"], after["SubState"], after["MainPID"]) == ("active", "running", shown["MainPID"])
    assert "serving" in after["StatusText"], after["StatusText"]

    # A valid file afterwards is taken as usual.
    sandbox.write_file(CONFIG_PATH, "[Demo]\nMode=maintenance\n")
    cursor = reload(sandbox, unit)
    assert "configuration reloaded" in daemon_messages(sandbox, unit, cursor)
    wait_for(lambda: "maintenance" in sandbox.show(unit)["StatusText"], message="the new mode in the status")
