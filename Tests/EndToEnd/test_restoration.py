#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""State restoration and storyboards under the real systemd 252.

- Push two modes (a reload with a changed Mode= and ModeChange=push), background (the state is saved), SIGKILL with
  `systemctl kill`: Restart= brings the daemon back and the stack is restored, between willFinishLaunching and
  didFinishLaunching.
- The same with the state directory read-only (ReadOnlyPaths=) and an older archive in it: the copy in systemd's
  file descriptor store (FileDescriptorStoreMax= in the shipped unit) is newer and wins.
- A storyboard with an error: exit 78, no restart, the journal names file:line:column and what is registered.
- A storyboard loaded at start; a change handed over on reload (the incoming part prepares before the outgoing one
  stops); an invalid change keeps the tree and logs why.
"""

from __future__ import annotations

import re
from typing import Callable, Iterator

import pytest

from harness import (
    DEMO_PRESERVED_PREORDER,
    SANDBOX_BIN,
    LifecycleEvent,
    Sandbox,
    lifecycle_events,
    pairs,
    wait_for,
)
from peers import CONFIG_PATH, daemon_messages, kill_main, start

STORYBOARD_PATH = "/run/lifecycled-e2e.storyboard"


@pytest.fixture
def config(config: Callable[[str], list[str]], sandbox: Sandbox) -> Iterator[Callable[[str], list[str]]]:
    """conftest's `config`, and afterwards the storyboard these tests write goes too."""
    yield config
    sandbox.remove(STORYBOARD_PATH)


def reload(sandbox: Sandbox, unit: str) -> str:
    cursor = sandbox.cursor()
    sandbox.systemctl("reload", unit, timeout=30)
    return cursor


def push_modes(sandbox: Sandbox, unit: str, *modes: str) -> None:
    """Each mode in turn through a reload with ModeChange=push: the stack grows by one each time."""
    for mode in modes:
        sandbox.write_file(CONFIG_PATH, f"[Demo]\nMode={mode}\nModeChange=push\n")
        reload(sandbox, unit)
    stack = "stack " + "/".join(["serving", *modes])
    wait_for(lambda: stack in sandbox.show(unit)["StatusText"], message=f"'{stack}' in the status")


def background_and_wait_for_the_save(sandbox: Sandbox, unit: str) -> str:
    """SIGUSR1; returns the daemon's "saved state" line."""
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    return wait_for(
        lambda: next((m for m in daemon_messages(sandbox, unit, cursor) if m.startswith("saved state generation")), None),
        message="the daemon's saved-state line",
    )


def sigkill_and_wait_for_the_restart(sandbox: Sandbox, unit: str, before: dict[str, str]) -> tuple[str, dict[str, str]]:
    """`systemctl kill -s SIGKILL`; Restart=on-failure starts the daemon again. Returns the cursor and properties."""
    cursor = sandbox.cursor()
    sandbox.systemctl("kill", "-s", "SIGKILL", unit)
    restarted = wait_for(
        lambda: (p := sandbox.show(unit))["ActiveState"] == "active"
        and p["MainPID"] not in ("0", before["MainPID"])
        and p,
        timeout=30,
        message="the restarted daemon",
    )
    assert int(restarted["NRestarts"]) == int(before["NRestarts"]) + 1
    return cursor, restarted


def launch_events(sandbox: Sandbox, unit: str, cursor: str, pid: str) -> list[LifecycleEvent]:
    return wait_for(
        lambda: (e := lifecycle_events(sandbox.journal(unit, cursor), pid=pid))
        and any(x.event == "applicationDidBecomeActive" and x.target == "delegate" for x in e)
        and e,
        message="the restarted daemon's launch",
    )


def assert_restored_between_the_launch_callbacks(events: list[LifecycleEvent], stack: list[str], built: str) -> None:
    """`built` is the mode the demo's willFinishLaunching builds the stack with (Mode= at the restart)."""
    order = pairs(events)
    will, did = order.index(("willFinishLaunching", "delegate")), order.index(("didFinishLaunching", "delegate"))
    # The demo builds its tree in willFinishLaunching (its init events); restoration follows.
    should = order.index(("application(_:shouldRestoreApplicationState:)", "delegate"))
    assert will < should < did
    assert all(event in ("init", "willMove(toParent:)", "didMove(toParent:)") for event, _ in order[will + 1 : should]), order[will + 1 : should]
    restoration = order[should:did]
    decoded = [target for event, target in restoration if event == "decodeRestorableState(with:)"]
    # Pre-order over the restored tree: root, worker, modes, then the stack bottom first.
    assert decoded == DEMO_PRESERVED_PREORDER[:-1] + [f"root/modes/{mode}" for mode in stack], decoded
    finished = [target for event, target in restoration if event == "applicationFinishedRestoringState"]
    assert finished == decoded
    assert restoration[-1] == ("application(_:didDecodeRestorableStateWith:)", "delegate")
    # The modes the tree built in willFinishLaunching lacks are made for the saved state; the stack is set to the
    # saved one.
    made = [target for event, target in restoration if event == "init(coder:)"]
    assert made == [f"root/modes/{mode}" for mode in stack if mode != built], made
    assert {e.cause for e in events[will : did + 1]} == {"launch"}


def test_push_two_modes_background_sigkill_restores_the_stack(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    unit = daemon_unit(*config("[Demo]\nMode=serving\nModeChange=push\n"))
    _, shown = start(sandbox, unit)
    push_modes(sandbox, unit, "alpha", "beta")
    saved = background_and_wait_for_the_save(sandbox, unit)
    assert saved.startswith("saved state generation 1 (") and "/var/lib/lifecycled/state.archive" in saved, saved
    assert "the file descriptor store (lifecycle-state-1)" in saved, saved
    # A second save replaces the stored memfd (FDSTORE=1 for the new one, then FDSTOREREMOVE=1 for the old one).
    kill_main(sandbox, unit, "SIGUSR2")
    wait_for(lambda: sandbox.show(unit)["StatusText"].startswith("active"), message="active again")
    saved = background_and_wait_for_the_save(sandbox, unit)
    assert saved.startswith("saved state generation 2 (") and "(lifecycle-state-2)" in saved, saved
    # The saved state's one memfd, and the memory pressure trigger the daemon keeps there (docs/benchmarks.md, "Terminate").
    assert sandbox.show(unit, "NFileDescriptorStore")["NFileDescriptorStore"] == "2"

    cursor, restarted = sigkill_and_wait_for_the_restart(sandbox, unit, sandbox.show(unit))
    events = launch_events(sandbox, unit, cursor, restarted["MainPID"])
    assert_restored_between_the_launch_callbacks(events, ["serving", "alpha", "beta"], built="beta")
    lines = daemon_messages(sandbox, unit, cursor)
    # Both copies have generation 2: the file descriptor store's wins the tie.
    assert any(
        m.startswith("restoring saved state generation 2 from the file descriptor store's lifecycle-state-2")
        and "/var/lib/lifecycled/state.archive has generation 2" in m
        for m in lines
    ), lines
    assert "restored the saved state: generation 2, 6 controllers (2 made for it)" in lines
    status = wait_for(lambda: (s := sandbox.show(unit)["StatusText"]) and "mode beta" in s and s, message="beta on top")
    assert "stack serving/alpha/beta" in status, status
    assert status.startswith("active"), status
    assert shown["MainPID"] != restarted["MainPID"]


def test_a_read_only_state_directory_with_an_older_archive_restores_from_the_fd_store(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    lines = config("[Demo]\nMode=serving\nModeChange=push\n")
    unit = daemon_unit(*lines)
    start(sandbox, unit)
    # Generation 1 on disk: the stack as launched.
    background_and_wait_for_the_save(sandbox, unit)
    sandbox.systemctl("stop", unit, timeout=60)
    # The stop flushed the file descriptor store (and saved generation 2 on disk); now the directory is read-only.
    unit = daemon_unit(*lines, "ReadOnlyPaths=/var/lib/lifecycled", keep_state=True)
    cursor, _ = start(sandbox, unit)
    restored = daemon_messages(sandbox, unit, cursor)
    assert any(m.startswith("restoring saved state generation 2 from /var/lib/lifecycled/state.archive") for m in restored)
    push_modes(sandbox, unit, "alpha", "beta")
    cursor = sandbox.cursor()
    saved = background_and_wait_for_the_save(sandbox, unit)
    assert saved.startswith("saved state generation 3 (") and saved.endswith("to the file descriptor store (lifecycle-state-3)"), saved
    warnings = [m for m in daemon_messages(sandbox, unit, cursor) if m.startswith("cannot save the state to")]
    assert len(warnings) == 1 and "Read-only file system" in warnings[0], warnings
    assert warnings[0].endswith("the previous save stays there, and the file descriptor store keeps this one"), warnings

    cursor, restarted = sigkill_and_wait_for_the_restart(sandbox, unit, sandbox.show(unit))
    events = launch_events(sandbox, unit, cursor, restarted["MainPID"])
    assert_restored_between_the_launch_callbacks(events, ["serving", "alpha", "beta"], built="beta")
    lines_after = daemon_messages(sandbox, unit, cursor)
    assert any(
        m.startswith("restoring saved state generation 3 from the file descriptor store's lifecycle-state-3")
        and "/var/lib/lifecycled/state.archive has generation 2" in m
        for m in lines_after
    ), lines_after
    wait_for(lambda: "stack serving/alpha/beta" in sandbox.show(unit)["StatusText"], message="the restored stack")


DEMO_STORYBOARD = """\
# lifecycled's tree, declared (docs/storyboard.md).
DemoRootController root {
    restorationIdentifier = root
    view LabelView banner { text = "from a storyboard" }
    WorkerController worker { restorationIdentifier = worker }
    CacheController cache
    ModesController modes {
        restorationIdentifier = modes
        ModeController serving
    }
}
"""


def storyboard_unit(sandbox: Sandbox, daemon_unit: Callable[..., str], text: str) -> str:
    sandbox.write_file(STORYBOARD_PATH, text)
    return daemon_unit("ExecStart=", f"ExecStart={SANDBOX_BIN} --trace --storyboard {STORYBOARD_PATH}")


def test_a_storyboard_with_an_error_exits_78_and_the_journal_names_file_line_column(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    unit = storyboard_unit(sandbox, daemon_unit, DEMO_STORYBOARD.replace("WorkerController worker", "WorkerControler worker"))
    cursor = sandbox.cursor()
    done = sandbox.systemctl("start", unit, check=False)
    assert done.returncode != 0
    shown = wait_for(lambda: (p := sandbox.show(unit))["ActiveState"] == "failed" and p, message="the failed unit")
    assert shown["ExecMainStatus"] == "78", shown
    assert shown["NRestarts"] == "0", "a configuration error is not restarted"
    lines = daemon_messages(sandbox, unit, cursor)
    expected = (
        f'storyboard: {STORYBOARD_PATH}:5:5: root/worker names class "WorkerControler", which is not registered; '
        "registered: CacheController, DemoRootController, ModeController, ModesController, NavigationController, "
        "ViewController, WorkerController."
    )
    assert expected in lines, lines


def test_a_storyboard_change_is_handed_over_on_reload_and_an_invalid_one_keeps_the_tree(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    unit = storyboard_unit(sandbox, daemon_unit, DEMO_STORYBOARD)
    cursor, shown = start(sandbox, unit)
    assert "from a storyboard" in shown["StatusText"], shown["StatusText"]
    launch = lifecycle_events(sandbox.journal(unit, cursor))
    assert [e.target for e in launch if e.event == "init(coder:)"] == [
        "root", "root/worker", "root/cache", "root/modes", "root/modes/serving"
    ]
    assert {e.cause for e in launch if e.event in ("init(coder:)", "awakeFromArchive")} == {"launch"}

    # The serving mode is replaced by maintenance: a hand-over on the modes stack.
    sandbox.write_file(STORYBOARD_PATH, DEMO_STORYBOARD.replace("ModeController serving", "ModeController maintenance"))
    cursor = reload(sandbox, unit)
    events = wait_for(
        lambda: (e := lifecycle_events(sandbox.journal(unit, cursor)))
        and any((x.event, x.target) == ("viewDidAppear", "root/modes/maintenance") for x in e)
        and e,
        message=f"the new mode's viewDidAppear; the daemon said {daemon_messages(sandbox, unit, cursor)}",
    )
    new, old = "root/modes/maintenance", "root/modes/serving"
    handover = [(e.event, e.target) for e in events if e.target in (new, old) and e.event.startswith("view")]
    assert handover.index(("viewDidLoad", new)) < handover.index(("viewWillDisappear", old))
    assert handover.index(("viewDidDisappear", old)) < handover.index(("viewDidAppear", new))
    order = pairs(events)
    # A transaction: the new storyboard's controllers are made while the reload is offered (before anybody is asked,
    # so a storyboard that cannot be instantiated refuses it), and the tree moves only once everybody accepted,
    # between applicationWillReload and applicationDidReload.
    assert order.index(("init(coder:)", new)) < order.index(("application(_:validateReload:)", "delegate"))
    assert order.index(("applicationWillReload", "delegate")) < order.index(("viewDidLoad", new)) < order.index(
        ("applicationDidReload", "delegate")
    )
    lines = daemon_messages(sandbox, unit, cursor)
    assert f"storyboard {STORYBOARD_PATH} applied: root/modes: stack maintenance" in lines, lines
    wait_for(lambda: "mode maintenance" in sandbox.show(unit)["StatusText"], message="maintenance in the status")

    # An invalid storyboard refuses the reload (`systemctl reload` fails), keeps the tree and says why, with
    # file:line:column.
    sandbox.write_file(STORYBOARD_PATH, DEMO_STORYBOARD.replace("CacheController cache", "CacheController cache {"))
    cursor = sandbox.cursor()
    refused = sandbox.systemctl("reload", unit, check=False, timeout=30)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    lines = daemon_messages(sandbox, unit, cursor)
    errors = [m for m in lines if m.startswith("reload refused by the configuration: storyboard:")]
    assert len(errors) == 1 and re.match(
        rf"reload refused by the configuration: storyboard: {re.escape(STORYBOARD_PATH)}:12:1: ", errors[0]
    ), lines
    assert "is not closed" in errors[0] and errors[0].endswith("keeping the previous configuration")
    after = sandbox.show(unit)
    assert (after["ActiveState"], after["MainPID"]) == ("active", shown["MainPID"])
    assert "mode maintenance" in after["StatusText"]
