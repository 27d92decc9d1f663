#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Scenes under the real systemd 252 (issue 32): the test service Tests/SceneService (`scene-service`) connects a
scene per client and per tenant at its first start, under the shipped unit with its ExecStart= replaced.

- lifecyclectl finds a session among the others (`scenes` with filters), drives one scene (`scene background|
  foreground|disconnect|discard ID`: the whole sequence of each, with the cause control), shows one scene's tree and the
  scenes in `status`; an unknown or invalid identifier is a clear error with its exit status.
- SIGUSR1, SIGUSR2 and a memory warning reach every scene in the contract's order (docs/lifecycle.md, "What a
  process-level event does to every scene"); every record of a scene's event has LIFECYCLE_SCENE=, and
  `lifecyclectl trace` shows the scenes.
- `systemctl restart` and `lifecyclectl upgrade`: the sessions come back, the connected ones reconnected into the state
  each wanted, their trees restored with their values; a disconnected session stays disconnected with its saved state,
  a discarded one stays gone.
- A scene callback that blocks the main loop is named by the stall detector with its scene (LIFECYCLE_SCENE=).
- A storyboard given to a service that uses scenes fails the unit once, exit 78, naming the option.

Every ordering is the whole sequence of the contract's callbacks (controllers and delegates; the views' own events are
left out), derived from the one tree each scene has: TREE below.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Iterable, NamedTuple

import pytest

from harness import MEMORY_WARNING_SIGNAL, SANDBOX_CTL, Sandbox, resolve_binary, wait_for
from peers import CONFIG_PATH, daemon_messages, kill_main, start

# The service inside the sandbox, and the name it logs under (SYSLOG_IDENTIFIER).
SERVICE_BIN = "/usr/local/bin/scene-service"
IDENTIFIER = "scene-service"
# What its first start connects, in this order: two clients and a tenant.
ARGUMENTS = "--trace --clients 2 --tenant acme"
CLIENT_1, CLIENT_2, TENANT = "client-1", "client-2", "tenant-acme"
# The shipped unit's StateDirectory=.
STATE_DIRECTORY = "/var/lib/lifecycled"

# Each scene's controllers in pre-order: its root, which counts its activations, and the root's one child.
TREE = ["root", "root/feed"]

# The contract's callbacks the orderings compare: the application delegate's, the scene delegates', and the
# controllers' application, appearance, memory, restoration and release events.
CONTRACT_EVENTS = {
    "willFinishLaunching", "didFinishLaunching", "application(_:configurationForConnecting:options:)",
    "application(_:didDiscardSceneSessions:)", "applicationDidReceiveMemoryWarning",
    "application(_:shouldSaveApplicationState:)", "application(_:willEncodeRestorableStateWith:)",
    "application(_:shouldRestoreApplicationState:)", "application(_:viewControllerWithRestorationIdentifierPath:coder:)",
    "application(_:didDecodeRestorableStateWith:)", "scene(_:willConnectTo:options:)", "sceneDidDisconnect",
    "sceneWillEnterForeground", "sceneDidBecomeActive", "sceneWillResignActive", "sceneDidEnterBackground",
    "applicationWillEnterForeground", "applicationDidBecomeActive", "applicationWillResignActive",
    "applicationDidEnterBackground", "applicationWillTerminate", "didReceiveMemoryWarning", "viewDidLoad",
    "viewWillAppear", "viewDidAppear", "viewWillDisappear", "viewDidDisappear", "encodeRestorableState(with:)",
    "decodeRestorableState(with:)", "init(coder:)", "awakeFromArchive", "applicationFinishedRestoringState", "deinit",
}


class SceneEvent(NamedTuple):
    """One trace record of the journal: its LIFECYCLE_* fields, LIFECYCLE_SCENE among them."""

    event: str
    target: str
    scene: str
    cause: str
    seq: int
    pid: str


# MARK: The expected sequences, from TREE


def paths(scene: str) -> list[str]:
    return [f"scene:{scene}/{path}" for path in TREE]


def entering(scene: str, scene_event: str, tree_event: str) -> list[tuple[str, str]]:
    """An entering event of one scene: its delegate, then its tree in pre-order."""
    return [(scene_event, f"scene:{scene}")] + [(tree_event, path) for path in paths(scene)]


def leaving(scene: str, tree_event: str, scene_event: str | None = None) -> list[tuple[str, str]]:
    """A leaving event of one scene: its tree in reverse pre-order, then its delegate (when it has the event)."""
    tree = [(tree_event, path) for path in reversed(paths(scene))]
    return tree + ([(scene_event, f"scene:{scene}")] if scene_event else [])


def to_background(scene: str) -> list[tuple[str, str]]:
    return leaving(scene, "applicationWillResignActive", "sceneWillResignActive") + leaving(
        scene, "applicationDidEnterBackground", "sceneDidEnterBackground"
    )


def to_foreground(scene: str) -> list[tuple[str, str]]:
    return entering(scene, "sceneWillEnterForeground", "applicationWillEnterForeground") + entering(
        scene, "sceneDidBecomeActive", "applicationDidBecomeActive"
    )


def save(*connected: str) -> list[tuple[str, str]]:
    """The application's save (the service always saves): the delegate's two callbacks, then every connected scene's
    tree, in the order the sessions were made (not the order the scenes connected: a reconnected scene keeps its
    session's place)."""
    return [
        ("application(_:shouldSaveApplicationState:)", "delegate"),
        ("application(_:willEncodeRestorableStateWith:)", "delegate"),
    ] + [("encodeRestorableState(with:)", path) for scene in connected for path in paths(scene)]


def teardown(scene: str) -> list[tuple[str, str]]:
    """After sceneDidDisconnect: the tree disappears, then is released (root first, as §3 releases a tree)."""
    return (
        [("viewWillDisappear", path) for path in paths(scene)]
        + [("viewDidDisappear", path) for path in reversed(paths(scene))]
        + [("deinit", path) for path in paths(scene)]
    )


def connect_new(scene: str) -> list[tuple[str, str]]:
    """A new session's scene connected into the foreground: the tree is built in willConnectTo, its child embedded
    when the root's view loads, and it appears between sceneWillEnterForeground and sceneDidBecomeActive."""
    root, feed = paths(scene)
    return [
        ("application(_:configurationForConnecting:options:)", "delegate"),
        ("scene(_:willConnectTo:options:)", f"scene:{scene}"),
        ("sceneWillEnterForeground", f"scene:{scene}"),
        ("applicationWillEnterForeground", root),
        # The root's viewDidLoad embeds the child, whose view loads then.
        ("viewDidLoad", root),
        ("viewDidLoad", feed),
        ("viewWillAppear", root),
        ("viewWillAppear", feed),
        ("viewDidAppear", feed),
        ("viewDidAppear", root),
    ] + entering(scene, "sceneDidBecomeActive", "applicationDidBecomeActive")


def restore(scene: str) -> list[tuple[str, str]]:
    """A session's saved tree restored right after willConnectTo (docs/restoration.md, "Scene sessions")."""
    root, feed = paths(scene)
    return [
        ("application(_:configurationForConnecting:options:)", "delegate"),
        ("scene(_:willConnectTo:options:)", f"scene:{scene}"),
        ("application(_:viewControllerWithRestorationIdentifierPath:coder:)", "delegate"),
        ("init(coder:)", root),
        ("application(_:viewControllerWithRestorationIdentifierPath:coder:)", "delegate"),
        ("init(coder:)", feed),
        ("awakeFromArchive", root),
        ("awakeFromArchive", feed),
        ("decodeRestorableState(with:)", root),
        ("decodeRestorableState(with:)", feed),
        ("applicationFinishedRestoringState", root),
        ("applicationFinishedRestoringState", feed),
    ]


def reconnect_to_foreground(scene: str) -> list[tuple[str, str]]:
    """A disconnected session's scene connected again into the foreground: restored, then as any connection (the
    restored child's view loads as the root's does, before the root's viewDidLoad)."""
    root, feed = paths(scene)
    return (
        restore(scene)
        + entering(scene, "sceneWillEnterForeground", "applicationWillEnterForeground")
        + [("viewDidLoad", feed), ("viewDidLoad", root)]
        + [("viewWillAppear", root), ("viewWillAppear", feed), ("viewDidAppear", feed), ("viewDidAppear", root)]
        + entering(scene, "sceneDidBecomeActive", "applicationDidBecomeActive")
    )


def reconnect_to_background(scene: str) -> list[tuple[str, str]]:
    """A session's scene connected again into the background: restored, its tree told of the background; nothing
    appears until its first foreground."""
    return restore(scene) + leaving(scene, "applicationDidEnterBackground", "sceneDidEnterBackground")


# MARK: Reading the trace back


def scene_events(sandbox: Sandbox, unit: str, cursor: str) -> list[SceneEvent]:
    """The contract's events after the cursor, ordered by LIFECYCLE_SEQ within each process (in the order the processes
    first appear), each with its LIFECYCLE_SCENE."""
    by_pid: dict[str, list[SceneEvent]] = {}
    for record in sandbox.journal(unit, cursor, identifiers=[IDENTIFIER]):
        if "LIFECYCLE_EVENT" not in record:
            continue
        event = SceneEvent(
            event=str(record["LIFECYCLE_EVENT"]),
            target=str(record.get("LIFECYCLE_TARGET", "")),
            scene=str(record.get("LIFECYCLE_SCENE", "")),
            cause=str(record.get("LIFECYCLE_CAUSE", "")),
            seq=int(str(record.get("LIFECYCLE_SEQ", "0"))),
            pid=str(record.get("_PID", "")),
        )
        by_pid.setdefault(event.pid, []).append(event)
    ordered: list[SceneEvent] = []
    for events in by_pid.values():
        ordered.extend(sorted(events, key=lambda e: e.seq))
    return ordered


def contract(events: Iterable[SceneEvent]) -> list[tuple[str, str]]:
    """(event, target) of the contract's callbacks: no view's own events."""
    return [(e.event, e.target) for e in events if e.event in CONTRACT_EVENTS and ".view" not in e.target]


def wait_sequence(
    sandbox: Sandbox,
    unit: str,
    cursor: str,
    expected: list[tuple[str, str]],
    cause: str | None = None,
    pid: int | str | None = None,
) -> list[SceneEvent]:
    """Waits until the journal has as many of the contract's events (with `cause`, of process `pid`) as `expected`,
    reads once more after a pause so that extra events show up, and asserts the whole sequence. Returns the events
    read."""

    def matching() -> list[SceneEvent]:
        return [
            e
            for e in scene_events(sandbox, unit, cursor)
            if (cause is None or e.cause == cause) and (pid is None or e.pid == str(pid))
        ]

    wait_for(lambda: len(contract(matching())) >= len(expected), timeout=15, message=f"{len(expected)} events")
    time.sleep(0.4)
    events = matching()
    assert contract(events) == expected
    return events


def assert_every_scene_event_names_its_scene(events: Iterable[SceneEvent]) -> None:
    """LIFECYCLE_SCENE= on every event of a scene: its delegate's and its tree's (by their paths), and the application
    delegate's configurationForConnecting about it."""
    for event in events:
        if event.target.startswith("scene:"):
            expected = event.target[len("scene:") :].split("/", 1)[0]
            assert event.scene == expected, event
        elif event.event == "application(_:configurationForConnecting:options:)":
            assert event.scene, event


# MARK: Fixtures


@pytest.fixture
def scene_unit(sandbox: Sandbox, daemon_unit: Callable[..., str]) -> Callable[..., str]:
    """The shipped unit running scene-service (copied into the sandbox once per test) with `arguments` and more
    [Service] lines; keep_state to start from the state the previous run saved."""
    source = resolve_binary("scene-service", "SCENE_SERVICE_BIN")
    if not (source.is_file() and os.access(source, os.X_OK)):
        pytest.fail(
            f"the scene-service binary is missing: {source} does not exist or is not executable. Build it "
            "(`swift build --product scene-service`; make e2e-test does) or point SCENE_SERVICE_BIN at it.",
            pytrace=False,
        )
    sandbox.copy_in(source, SERVICE_BIN)

    def install(arguments: str = ARGUMENTS, *service_lines: str, keep_state: bool = False) -> str:
        return daemon_unit("ExecStart=", f"ExecStart={SERVICE_BIN} {arguments}", *service_lines, keep_state=keep_state)

    return install


@pytest.fixture
def ctl(sandbox: Sandbox, lifecyclectl_bin) -> Callable[..., object]:
    """lifecyclectl inside the sandbox; `check=False` returns a failed run instead of raising."""
    lifecyclectl_bin.install(sandbox)

    def run(*arguments: str, check: bool = True, timeout: float = 60):
        return sandbox.run(SANDBOX_CTL, *arguments, check=check, timeout=timeout)

    return run


def sessions(ctl: Callable[..., object], *filters: str) -> dict[str, dict]:
    """`lifecyclectl scenes --json` (with filters): the sessions listed, by identifier, in their order."""
    reply = json.loads(ctl("scenes", "--json", *filters).stdout)
    return {session["id"]: session for session in reply["sessions"]}


def states(ctl: Callable[..., object]) -> dict[str, str]:
    return {identifier: session["state"] for identifier, session in sessions(ctl).items()}


def activations(ctl: Callable[..., object], scene: str) -> str:
    """What a scene's root shows in its status line: how often it became active (a preserved value)."""
    nodes = json.loads(ctl("tree", "--scene", scene, "--json").stdout)["nodes"]
    return nodes[0]["status"]


def restored_launch() -> list[tuple[str, str]]:
    """A launch with a saved state: the delegate's callbacks, the restoration's between willFinishLaunching and
    didFinishLaunching (the sessions come back disconnected; their reconnections follow)."""
    return [
        ("willFinishLaunching", "delegate"),
        ("application(_:shouldRestoreApplicationState:)", "delegate"),
        ("application(_:didDecodeRestorableStateWith:)", "delegate"),
        ("didFinishLaunching", "delegate"),
    ]


def first_launch() -> list[tuple[str, str]]:
    """The first start: launch (nothing saved), then the service's connections, in the order it asked for them."""
    return (
        [("willFinishLaunching", "delegate"), ("didFinishLaunching", "delegate")]
        + connect_new(CLIENT_1)
        + connect_new(CLIENT_2)
        + connect_new(TENANT)
    )


# MARK: The tests


def test_the_operator_and_the_signals_drive_every_scene_in_the_contracts_order(
    sandbox: Sandbox, scene_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    began = time.monotonic()
    unit = scene_unit()
    cursor, shown = start(sandbox, unit)
    first_cursor = cursor
    launched = wait_sequence(sandbox, unit, cursor, first_launch())
    assert_every_scene_event_names_its_scene(launched)
    assert shown["StatusText"].startswith("active: 3 scenes: 3 active"), shown["StatusText"]

    # Finding one unit among the others.
    listed = sessions(ctl)
    assert list(listed) == [CLIENT_1, CLIENT_2, TENANT]
    assert listed[CLIENT_2] == {
        "id": CLIENT_2, "role": "client", "state": "foregroundActive", "userInfo": {"seat": "2"}, "savedState": False,
        "configuration": "Client",
    }
    assert list(sessions(ctl, "--role", "tenant")) == [TENANT]
    assert list(sessions(ctl, "--user-info", "seat=2")) == [CLIENT_2]
    assert list(sessions(ctl, "--prefix", "client-", "--state", "foregroundActive")) == [CLIENT_1, CLIENT_2]
    table = ctl("scenes", "--role", "client").stdout.splitlines()
    assert table[0].split() == ["ID", "ROLE", "STATE", "SAVED", "CONFIGURATION", "USER", "INFO"], table
    assert table[1].split() == [CLIENT_1, "client", "foregroundActive", "no", "Client", "seat=1"], table
    assert table[-1] == "2 of 3 sessions match", table
    assert ctl("scenes", "--state", "background").stdout == "no session matches (of 3 sessions)\n"

    # One scene to the background, by the operator: the whole sequence, with the cause control, then the save.
    cursor = sandbox.cursor()
    printed = ctl("scene", "background", CLIENT_2).stdout
    wait_sequence(sandbox, unit, cursor, to_background(CLIENT_2) + save(CLIENT_1, CLIENT_2, TENANT), cause="control")
    assert printed.splitlines()[-1].startswith(f"background {CLIENT_2}: done ("), printed
    assert printed.splitlines()[-1].endswith("scene background, application active"), printed
    assert f"scene:{CLIENT_2}/root/feed applicationWillResignActive" in printed, printed
    again = ctl("scene", "background", CLIENT_2).stdout
    assert again == f"scene {CLIENT_2} is background already: background changed nothing; application active\n"
    assert list(sessions(ctl, "--state", "background")) == [CLIENT_2]

    # SIGUSR1: every foreground scene to the background, the last connected first, each step over every scene before
    # the next; then one save. SIGUSR2 brings back exactly the scenes that want the foreground, in connection order.
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR1")
    wait_sequence(
        sandbox,
        unit,
        cursor,
        leaving(TENANT, "applicationWillResignActive", "sceneWillResignActive")
        + leaving(CLIENT_1, "applicationWillResignActive", "sceneWillResignActive")
        + leaving(TENANT, "applicationDidEnterBackground", "sceneDidEnterBackground")
        + leaving(CLIENT_1, "applicationDidEnterBackground", "sceneDidEnterBackground")
        + save(CLIENT_1, CLIENT_2, TENANT),
        cause="signal:SIGUSR1",
    )
    wait_for(lambda: sandbox.show(unit)["StatusText"].startswith("background: 3 scenes: 3 background"), message="status")
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, "SIGUSR2")
    wait_sequence(
        sandbox,
        unit,
        cursor,
        entering(CLIENT_1, "sceneWillEnterForeground", "applicationWillEnterForeground")
        + entering(TENANT, "sceneWillEnterForeground", "applicationWillEnterForeground")
        + entering(CLIENT_1, "sceneDidBecomeActive", "applicationDidBecomeActive")
        + entering(TENANT, "sceneDidBecomeActive", "applicationDidBecomeActive"),
        cause="signal:SIGUSR2",
    )
    assert states(ctl) == {CLIENT_1: "foregroundActive", CLIENT_2: "background", TENANT: "foregroundActive"}

    # A memory warning reaches every tree, the last connected first, then the application delegate.
    cursor = sandbox.cursor()
    kill_main(sandbox, unit, MEMORY_WARNING_SIGNAL)
    wait_sequence(
        sandbox,
        unit,
        cursor,
        leaving(TENANT, "didReceiveMemoryWarning")
        + leaving(CLIENT_2, "didReceiveMemoryWarning")
        + leaving(CLIENT_1, "didReceiveMemoryWarning")
        + [("applicationDidReceiveMemoryWarning", "delegate")],
        cause=f"signal:{MEMORY_WARNING_SIGNAL}",
    )

    # Disconnect keeps the session and its tree's state; foreground connects it again, restored.
    assert activations(ctl, CLIENT_1) == "activations 2"
    cursor = sandbox.cursor()
    ctl("scene", "disconnect", CLIENT_1)
    wait_sequence(
        sandbox,
        unit,
        cursor,
        to_background(CLIENT_1)
        + [("encodeRestorableState(with:)", path) for path in paths(CLIENT_1)]
        + [("sceneDidDisconnect", f"scene:{CLIENT_1}")]
        + teardown(CLIENT_1)
        + save(CLIENT_2, TENANT),
        cause="control",
    )
    assert sessions(ctl)[CLIENT_1]["state"] == "unattached" and sessions(ctl)[CLIENT_1]["savedState"] is True
    assert ctl("tree", "--scene", CLIENT_1).stdout.startswith(f"scene {CLIENT_1} is not connected: no tree")
    cursor = sandbox.cursor()
    ctl("scene", "foreground", CLIENT_1)
    reconnected = wait_sequence(sandbox, unit, cursor, reconnect_to_foreground(CLIENT_1), cause="control")
    assert_every_scene_event_names_its_scene(reconnected)
    assert activations(ctl, CLIENT_1) == "activations 3"

    # Discard: the scene disconnects, the application delegate hears it, the session is gone.
    cursor = sandbox.cursor()
    ctl("scene", "discard", TENANT)
    wait_sequence(
        sandbox,
        unit,
        cursor,
        to_background(TENANT)
        + [("sceneDidDisconnect", f"scene:{TENANT}")]
        + teardown(TENANT)
        + [("application(_:didDiscardSceneSessions:)", "delegate")]
        + save(CLIENT_1, CLIENT_2),
        cause="control",
    )
    assert list(sessions(ctl)) == [CLIENT_1, CLIENT_2]

    # Mistakes: named, with their exit status.
    unknown = ctl("scene", "foreground", TENANT, check=False)
    assert unknown.returncode == 65, unknown
    assert unknown.stderr == (
        f'lifecyclectl: No scene session is named "{TENANT}". (lifecyclectl scenes lists the sessions)\n'
    )
    invalid = ctl("scene", "discard", "a b", check=False)
    assert invalid.returncode == 64 and "is not a scene identifier" in invalid.stderr, invalid
    assert ctl("tree", "--scene", "nobody", check=False).returncode == 65

    # What the operator sees: the trees, the status, the trace.
    tree = ctl("tree").stdout.splitlines()
    assert [line.split(":", 1)[1].split(">")[0].strip() for line in tree] == paths(CLIENT_2) + paths(CLIENT_1), tree
    status = ctl("status").stdout
    assert "Scenes: 2 sessions; 2 connected: 1 foregroundActive, 1 background" in status, status
    assert "State: active — 2 scenes: 1 active, 1 background" in status, status
    trace = ctl("trace", "-n", "40").stdout
    assert f"scene:{CLIENT_1} sceneDidBecomeActive" in trace, trace
    records = [json.loads(line) for line in ctl("trace", "-n", "40", "--json").stdout.splitlines()]
    assert {r.get("scene") for r in records if r["target"].startswith(f"scene:{CLIENT_1}")} == {CLIENT_1}, records

    # The journal: every record of a scene's event names it; one session's life is one query, the operator's requests
    # about it included.
    everything = scene_events(sandbox, unit, first_cursor)
    assert_every_scene_event_names_its_scene(everything)
    one = [
        json.loads(line)
        for line in sandbox.run(
            "journalctl", f"LIFECYCLE_SCENE={CLIENT_2}", f"--after-cursor={first_cursor}", "-o", "json", "--no-pager"
        ).stdout.splitlines()
    ]
    targets = {record["LIFECYCLE_TARGET"] for record in one if "LIFECYCLE_TARGET" in record}
    assert targets >= {f"scene:{CLIENT_2}", *paths(CLIENT_2)}, targets
    assert all(CLIENT_2 in target or target == "delegate" for target in targets), targets
    assert f"control: scene background {CLIENT_2} requested by" in " ".join(str(r.get("MESSAGE")) for r in one)
    print(f"\nscenes driven by lifecyclectl and signals in {time.monotonic() - began:.1f} s")


def test_sessions_come_back_across_a_restart_and_an_upgrade(
    sandbox: Sandbox, scene_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    began = time.monotonic()
    unit = scene_unit()
    cursor, first = start(sandbox, unit)
    wait_sequence(sandbox, unit, cursor, first_launch())
    # client-1 active, client-2 in the background, the tenant disconnected (its session kept, with its state).
    ctl("scene", "background", CLIENT_2)
    ctl("scene", "disconnect", TENANT)
    before = {CLIENT_1: "foregroundActive", CLIENT_2: "background", TENANT: "unattached"}
    assert states(ctl) == before

    # The restart: termination saves every session (a connected one with what it wanted), the new process restores
    # them and reconnects the connected ones into what each wanted, in the order the sessions were made.
    cursor = sandbox.cursor()
    sandbox.systemctl("restart", unit)
    restarted = sandbox.show(unit)
    assert restarted["MainPID"] != first["MainPID"]
    events = wait_sequence(
        sandbox,
        unit,
        cursor,
        # The old process: to the background, applicationWillTerminate on every tree (the last connected first), the
        # save, then every scene disconnects, the last connected first.
        to_background(CLIENT_1)
        + leaving(CLIENT_2, "applicationWillTerminate")
        + leaving(CLIENT_1, "applicationWillTerminate")
        + [("applicationWillTerminate", "delegate")]
        + save(CLIENT_1, CLIENT_2)
        + [("sceneDidDisconnect", f"scene:{CLIENT_2}")]
        + teardown(CLIENT_2)
        + [("sceneDidDisconnect", f"scene:{CLIENT_1}")]
        + teardown(CLIENT_1)
        # The new one: launch with the saved sessions, then their reconnections.
        + restored_launch()
        + reconnect_to_foreground(CLIENT_1)
        + reconnect_to_background(CLIENT_2)
        # client-2 reached the background in launch's connections: the state is saved once they are over.
        + save(CLIENT_1, CLIENT_2),
    )
    assert [e.pid for e in events][-1] == restarted["MainPID"]
    assert states(ctl) == before
    assert sessions(ctl)[TENANT]["savedState"] is True
    # client-1 became active at the first launch, and at this one: its count came through the restart.
    assert activations(ctl, CLIENT_1) == "activations 2"
    # client-2 came back into the background: nothing appeared, so its root's view (and status line) is not loaded.
    assert activations(ctl, CLIENT_2) == ""

    # The upgrade: the new process gets the state from the old one, reconnects the same scenes into the same states,
    # and becomes the main process; the old one drains.
    cursor = sandbox.cursor()
    upgraded = json.loads(ctl("upgrade", "--json", timeout=120).stdout)
    assert upgraded["previousPid"] == int(restarted["MainPID"])
    wait_for(lambda: sandbox.show(unit)["MainPID"] == str(upgraded["pid"]), message="the new main process")
    new_process = wait_sequence(
        sandbox,
        unit,
        cursor,
        restored_launch()
        + reconnect_to_foreground(CLIENT_1)
        + reconnect_to_background(CLIENT_2)
        + save(CLIENT_1, CLIENT_2),
        pid=upgraded["pid"],
    )
    assert_every_scene_event_names_its_scene(new_process)
    assert states(ctl) == before
    assert activations(ctl, CLIENT_1) == "activations 3"
    # The disconnected session's state came through both, and still restores.
    ctl("scene", "foreground", TENANT)
    assert states(ctl)[TENANT] == "foregroundActive"
    assert sandbox.show(unit)["ActiveState"] == "active"
    print(f"\nsessions through a restart and an upgrade in {time.monotonic() - began:.1f} s")


def test_a_session_discarded_while_the_service_is_stopped_is_reported_at_the_next_launch(
    sandbox: Sandbox, scene_unit: Callable[..., str], ctl: Callable[..., object]
) -> None:
    """`lifecyclectl -u UNIT scene discard ID --state-directory DIR` while the unit is stopped: the saved state's session
    is marked (the file keeps its owner, group and mode), and the next launch reports it to
    application(_:didDiscardSceneSessions:) right after didFinishLaunching and drops it; the others come back. While the
    service runs, the edit is refused (its processes hold the directory's lock) and the socket is used instead."""
    unit = scene_unit()
    cursor, _ = start(sandbox, unit)
    wait_sequence(sandbox, unit, cursor, first_launch())
    state = f"{STATE_DIRECTORY}/state.archive"
    # Running, with a socket that does not answer: the daemon holds the directory, nothing is changed.
    running = ctl("scene", "discard", TENANT, "--socket", "/run/nobody-listens", "--state-directory", STATE_DIRECTORY,
                  check=False)
    assert running.returncode == 75, running
    assert f"a process of the service holds {STATE_DIRECTORY}" in running.stderr, running.stderr
    # Without the unit or a socket, the directory is not enough to say which service it is.
    assert ctl("scene", "discard", TENANT, "--state-directory", STATE_DIRECTORY, check=False).returncode == 64

    sandbox.systemctl("stop", unit)
    owner = sandbox.run("stat", "-c", "%U %G %a", state).stdout
    before = json.loads(sandbox.run("cat", state).stdout.split("\n", 1)[1])
    discarded = ctl("scene", "discard", TENANT, "-u", unit, "--state-directory", STATE_DIRECTORY, "--json")
    reply = json.loads(discarded.stdout)
    assert reply == {"id": TENANT, "path": state, "generation": before["generation"], "written": True}
    after = json.loads(sandbox.run("cat", state).stdout.split("\n", 1)[1])
    assert after["generation"] == before["generation"] + 1
    (marked,) = [s for s in after["sessions"] if s["id"] == TENANT]
    assert marked["discarded"] is True and "tree" not in marked and "connected" not in marked, marked
    assert [s for s in after["sessions"] if s["id"] != TENANT] == [s for s in before["sessions"] if s["id"] != TENANT]
    assert sandbox.run("stat", "-c", "%U %G %a", state).stdout == owner
    # Again: nothing to write. An unknown session, and a directory without a saved state: named, nothing changed.
    again = ctl("scene", "discard", TENANT, "-u", unit, "--state-directory", STATE_DIRECTORY)
    assert "already discarded" in again.stdout, again
    unknown = ctl("scene", "discard", "nobody", "-u", unit, "--state-directory", STATE_DIRECTORY, check=False)
    assert unknown.returncode == 65, unknown
    assert f"{state} has no scene session 'nobody' (it has 3); nothing was changed" in unknown.stderr
    empty = ctl("scene", "discard", TENANT, "-u", unit, "--state-directory", "/run", check=False)
    assert empty.returncode == 66, empty

    cursor, started = start(sandbox, unit)
    wait_sequence(
        sandbox,
        unit,
        cursor,
        restored_launch()
        # The sessions discarded while the service was stopped, right after didFinishLaunching.
        + [("application(_:didDiscardSceneSessions:)", "delegate")]
        + reconnect_to_foreground(CLIENT_1)
        + reconnect_to_foreground(CLIENT_2),
        pid=started["MainPID"],
    )
    assert any(f"discarded {TENANT}" in message for message in daemon_messages(sandbox, unit, cursor))
    assert list(sessions(ctl)) == [CLIENT_1, CLIENT_2]
    # With the service running, the option changes nothing: the request goes through its socket.
    ctl("scene", "discard", CLIENT_2, "-u", unit, "--state-directory", STATE_DIRECTORY)
    assert list(sessions(ctl)) == [CLIENT_1]


def test_the_stall_detector_names_the_scene_of_a_stuck_scene_callback(
    sandbox: Sandbox,
    scene_unit: Callable[..., str],
    ctl: Callable[..., object],
    config: Callable[[str], list[str]],
) -> None:
    # The first sceneWillResignActive blocks the main thread for a second (docs/testing.md, LIFECYCLE_HANG_IN); the
    # detector warns after 0.3 s.
    config("[Stall]\nWarningSec=0.3\n")
    unit = scene_unit(f"{ARGUMENTS} --config {CONFIG_PATH}", "Environment=LIFECYCLE_HANG_IN=sceneWillResignActive=1")
    start(sandbox, unit)
    cursor = sandbox.cursor()
    ctl("scene", "background", CLIENT_2)
    warnings = wait_for(
        lambda: [r for r in sandbox.journal(unit, cursor, identifiers=[IDENTIFIER]) if "LIFECYCLE_STALL_EVENT" in r],
        message="the stall detector's records",
    )
    first = warnings[0]
    assert (first["LIFECYCLE_STALL_EVENT"], first["LIFECYCLE_STALL_TARGET"]) == ("sceneWillResignActive", f"scene:{CLIENT_2}")
    assert first["LIFECYCLE_SCENE"] == CLIENT_2
    assert first["MESSAGE"].startswith(f"sceneWillResignActive scene:{CLIENT_2} has run for "), first["MESSAGE"]


def test_a_storyboard_for_a_service_that_uses_scenes_fails_the_unit_once_naming_the_option(
    sandbox: Sandbox, scene_unit: Callable[..., str]
) -> None:
    unit = scene_unit(f"{ARGUMENTS} --storyboard /run/none.storyboard")
    cursor = sandbox.cursor()
    sandbox.systemctl("start", unit, check=False)
    failed = wait_for(
        lambda: (shown := sandbox.show(unit))["ActiveState"] == "failed" and shown, message="the unit failed"
    )
    assert (failed["ExecMainStatus"], failed["NRestarts"]) == ("78", "0"), failed
    logged = [str(r.get("MESSAGE", "")) for r in sandbox.journal(unit, cursor, identifiers=[IDENTIFIER])]
    assert any(
        m.startswith("--storyboard: /run/none.storyboard cannot be used: the application uses scenes")
        and m.endswith("run without --storyboard")
        for m in logged
    ), logged
