#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""A storyboard change applied by `systemctl reload` under the real systemd 252 (issue 18's first example): a child
that declares a presentation, with another presentation deeper in it, is added to the live tree. The reload stopped
the daemon (the new child was refused by addChild: "it presents …"); now the child joins, then what it declares is
presented, in tree order, and the daemon keeps running (docs/lifecycle.md, "Re-entrancy"; docs/storyboard.md).
"""

from __future__ import annotations

from typing import Callable

from harness import Sandbox, lifecycle_events, wait_for
from peers import daemon_messages, start
from test_restoration import DEMO_STORYBOARD, STORYBOARD_PATH, config, reload, storyboard_unit  # noqa: F401

ADDED = """\
    ViewController extra {
        ViewController inner {
            present ViewController deep
        }
        present ViewController sheet
    }
"""

NEW = ["root/extra", "root/extra/inner", "root/extra/inner/deep", "root/extra/sheet"]


def test_a_reload_adding_a_child_that_presents_shows_its_presentations_and_keeps_running(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    unit = storyboard_unit(sandbox, daemon_unit, DEMO_STORYBOARD)
    _, shown = start(sandbox, unit)

    changed = DEMO_STORYBOARD.replace("    CacheController cache\n", "    CacheController cache\n" + ADDED)
    assert changed != DEMO_STORYBOARD
    sandbox.write_file(STORYBOARD_PATH, changed)
    cursor = reload(sandbox, unit)

    def appeared() -> list | None:
        events = lifecycle_events(sandbox.journal(unit, cursor))
        done = {x.target for x in events if x.event == "viewDidAppear"}
        return events if all(target in done for target in NEW) else None

    events = wait_for(appeared, message=f"the new controllers' viewDidAppear; the daemon said {daemon_messages(sandbox, unit, cursor)}")
    appearance = [
        (e.event, e.target)
        for e in events
        if e.target in NEW and e.event in ("viewWillAppear", "viewDidAppear", "viewWillDisappear", "viewDidDisappear")
    ]
    assert appearance == [
        ("viewWillAppear", "root/extra"),
        ("viewWillAppear", "root/extra/inner"),
        ("viewWillAppear", "root/extra/inner/deep"),
        ("viewWillAppear", "root/extra/sheet"),
        ("viewDidAppear", "root/extra/inner"),
        ("viewDidAppear", "root/extra"),
        ("viewDidAppear", "root/extra/inner/deep"),
        ("viewDidAppear", "root/extra/sheet"),
    ], appearance
    # The new part is made while the reload is offered (before anybody is asked: a storyboard that cannot be made
    # refuses the reload), joins between the reload's two application events, and hears the second.
    order = [(e.event, e.target) for e in events]
    assert order.index(("init(coder:)", "root/extra")) < order.index(("application(_:validateReload:)", "delegate"))
    assert order.index(("applicationWillReload", "delegate")) < order.index(("viewWillAppear", "root/extra"))
    assert order.index(("applicationDidReload", "root/extra/sheet")) > order.index(("viewWillAppear", "root/extra/sheet"))
    lines = daemon_messages(sandbox, unit, cursor)
    assert f"storyboard {STORYBOARD_PATH} applied: added root/extra (ViewController)" in lines, lines
    after = sandbox.show(unit)
    assert (after["ActiveState"], after["MainPID"]) == ("active", shown["MainPID"]), after
