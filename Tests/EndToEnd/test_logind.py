#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""logind's sleep and shutdown announcements, against python3-dbusmock's logind template on the sandbox's real
system bus (the sandbox's systemd-logind masked for the test): the delay inhibitors, the background sequence, the
inhibitors held while a background task runs, the resume, and signals from other senders ignored. One test runs the
shipped unit against the sandbox's own systemd-logind and polkit, which decide whether its user may hold the locks.

The daemon runs as the shipped static user `lifecycled`: dbus-daemon drops DynamicUser= clients under systemd 252.
"""

from __future__ import annotations

import time
from typing import Callable, Iterator

import pytest

from harness import Sandbox, messages, pairs, wait_for
from peers import (
    BACKGROUND,
    BOTH_DELAY_LOCKS,
    FOREGROUND,
    STATIC_USER,
    LogindMock,
    daemon_messages,
    ensure_real_logind,
    events_after,
    list_inhibitors,
    logind_absent,
    logind_mock,
    monotonic_seconds,
    records_with,
    start,
    wait_events,
)

SLEEP = "logind:PrepareForSleep"
SHUTDOWN = "logind:PrepareForShutdown"


@pytest.fixture
def mock(sandbox: Sandbox) -> Iterator[LogindMock]:
    with logind_mock(sandbox) as logind:
        yield logind


def held(mock: LogindMock) -> bool:
    return mock.lifecycled_locks() == BOTH_DELAY_LOCKS


def released(mock: LogindMock) -> bool:
    return not mock.lifecycled_inhibitors()


def released_and_logged(sandbox: Sandbox, unit: str, cursor: str, mock: LogindMock) -> list[dict]:
    """Waits until logind no longer lists the daemon's inhibitors and the daemon's line about the release is in the
    journal (it closes the inhibitors first and logs afterwards, so logind may see them go before the line is
    written); returns the journal after the cursor, read once both hold."""

    def both() -> list[dict]:
        if not released(mock):
            return []
        records = sandbox.journal(unit, cursor)
        return records if any("released the delay inhibitor" in str(r.get("MESSAGE", "")) for r in records) else []

    return wait_for(both, timeout=5, message="the inhibitors released, and the daemon's line about it")


def test_the_daemon_takes_a_delay_inhibitor_for_sleep_and_one_for_shutdown_at_launch(
    sandbox: Sandbox, daemon_unit: Callable[..., str], mock: LogindMock
) -> None:
    unit = daemon_unit(*STATIC_USER)
    _, shown = start(sandbox, unit)
    wait_for(lambda: held(mock), timeout=5, message="lifecycled's two inhibitors in ListInhibitors")
    rows = sorted(mock.lifecycled_inhibitors(), key=lambda row: str(row[0]))
    assert [(row[0], row[1], row[3]) for row in rows] == [
        ("shutdown", "lifecycled", "delay"),
        ("sleep", "lifecycled", "delay"),
    ]
    assert all("background" in str(row[2]) for row in rows)


def test_sleep_backgrounds_then_releases_and_resume_foregrounds_with_a_new_inhibitor(
    sandbox: Sandbox, daemon_unit: Callable[..., str], mock: LogindMock
) -> None:
    unit = daemon_unit(*STATIC_USER)
    start(sandbox, unit)
    wait_for(lambda: held(mock), timeout=5, message="the inhibitor at launch")

    cursor = sandbox.cursor()
    mock.emit("PrepareForSleep", True)
    events = wait_events(sandbox, unit, cursor, len(BACKGROUND), SLEEP)
    assert pairs(events) == BACKGROUND
    assert events[-1].state == "background"
    # The release follows the whole background sequence.
    records = released_and_logged(sandbox, unit, cursor, mock)
    last_event = max(i for i, r in enumerate(records) if r.get("LIFECYCLE_EVENT") == "applicationDidEnterBackground")
    release = [i for i, r in enumerate(records) if "released the delay inhibitor" in str(r.get("MESSAGE", ""))]
    assert release and release[0] > last_event, messages(records)
    assert "background" in sandbox.show(unit)["StatusText"].lower()

    cursor = sandbox.cursor()
    mock.emit("PrepareForSleep", False)
    events = wait_events(sandbox, unit, cursor, len(FOREGROUND), SLEEP)
    assert pairs(events) == FOREGROUND
    assert events[-1].state == "active"
    wait_for(lambda: held(mock), timeout=5, message="a new inhibitor after the resume")
    after = sandbox.show(unit)
    assert (after["ActiveState"], after["SubState"]) == ("active", "running")


def test_a_background_task_holds_the_inhibitor_until_it_ends(
    sandbox: Sandbox, daemon_unit: Callable[..., str], mock: LogindMock, config: Callable[[str], list[str]]
) -> None:
    unit = daemon_unit(*STATIC_USER, *config("[Demo]\nBackgroundTaskSec=3\n"))
    start(sandbox, unit)
    wait_for(lambda: held(mock), timeout=5, message="the inhibitor at launch")

    cursor = sandbox.cursor()
    announced = time.monotonic()
    mock.emit("PrepareForSleep", True)
    events = wait_events(sandbox, unit, cursor, len(BACKGROUND), SLEEP)
    assert pairs(events) == BACKGROUND
    # The task began in applicationDidEnterBackground, after `announced`, and runs 3 s: the lock is still held well
    # into it. (A ListInhibitors answered 3 s after the announcement or later proves nothing either way.)
    while time.monotonic() - announced < 2.0:
        assert held(mock) or time.monotonic() - announced >= 3.0, "the inhibitor was released while the task ran"
        time.sleep(0.25)
    records = released_and_logged(sandbox, unit, cursor, mock)
    finished = [r for r in records if "background work finished" in str(r.get("MESSAGE", ""))]
    release = [r for r in records if "released the delay inhibitor" in str(r.get("MESSAGE", ""))]
    assert finished and release
    assert monotonic_seconds(release[0]) >= monotonic_seconds(finished[0])
    held_ms = int(release[0]["LIFECYCLE_INHIBIT_HELD_MS"])
    assert 2900 <= held_ms <= 4500, held_ms
    assert not records_with(sandbox, unit, cursor, "expired")


def test_a_task_outliving_inhibit_delay_max_is_expired_before_logind_gives_up(
    sandbox: Sandbox, daemon_unit: Callable[..., str], config: Callable[[str], list[str]]
) -> None:
    with logind_mock(sandbox, inhibit_delay_max_usec=2_000_000) as mock:
        unit = daemon_unit(*STATIC_USER, *config("[Demo]\nBackgroundTaskSec=30\n"))
        start(sandbox, unit)
        wait_for(lambda: held(mock), timeout=5, message="the inhibitor at launch")
        cursor = sandbox.cursor()
        mock.emit("PrepareForSleep", True)
        released_and_logged(sandbox, unit, cursor, mock)
        lines = daemon_messages(sandbox, unit, cursor)
        expired = lines.index("background work expired before it finished")
        released_at = next(i for i, m in enumerate(lines) if m.startswith("logind: released the delay inhibitor"))
        assert expired < released_at, lines
        assert any("up to 1.8 seconds (InhibitDelayMaxSec 2.0 seconds)" in m for m in lines), lines
        [release] = records_with(sandbox, unit, cursor, "released the delay inhibitor")
        assert 1700 <= int(release["LIFECYCLE_INHIBIT_HELD_MS"]) <= 2500


def test_prepare_for_shutdown_backgrounds_and_releases_and_a_cancellation_foregrounds(
    sandbox: Sandbox, daemon_unit: Callable[..., str], mock: LogindMock
) -> None:
    unit = daemon_unit(*STATIC_USER)
    _, shown = start(sandbox, unit)
    wait_for(lambda: held(mock), timeout=5, message="the inhibitor at launch")
    cursor = sandbox.cursor()
    mock.emit("PrepareForShutdown", True)
    events = wait_events(sandbox, unit, cursor, len(BACKGROUND), SHUTDOWN)
    assert pairs(events) == BACKGROUND
    wait_for(lambda: released(mock), timeout=5, message="the inhibitor released for the shutdown")
    # Only the announcement: systemd's SIGTERM would follow a real shutdown; the daemon keeps running.
    after = sandbox.show(unit)
    assert (after["ActiveState"], after["MainPID"]) == ("active", shown["MainPID"])

    cursor = sandbox.cursor()
    mock.emit("PrepareForShutdown", False)
    events = wait_events(sandbox, unit, cursor, len(FOREGROUND), SHUTDOWN)
    assert pairs(events) == FOREGROUND
    wait_for(lambda: held(mock), timeout=5, message="a new inhibitor after the cancellation")


def test_announcements_from_other_senders_are_ignored(
    sandbox: Sandbox, daemon_unit: Callable[..., str], mock: LogindMock
) -> None:
    unit = daemon_unit(*STATIC_USER)
    _, shown = start(sandbox, unit)
    wait_for(lambda: held(mock), timeout=5, message="the inhibitor at launch")
    connection = mock.unique_name_of(shown["MainPID"])
    cursor = sandbox.cursor()
    # A broadcast: the bus does not even deliver it (the daemon's match names the sender).
    mock.emit_from_stranger("PrepareForSleep", True)
    # Addressed to the daemon's connection: delivered whatever the match rules say; the daemon drops it because
    # the sender does not own org.freedesktop.login1.
    mock.emit_from_stranger("PrepareForSleep", True, destination=connection)
    wait_for(
        lambda: records_with(sandbox, unit, cursor, "ignored PrepareForSleep(true) from :1."),
        timeout=5,
        message="the daemon's note that it ignored the stranger's signal",
    )
    time.sleep(1)
    # Real memory pressure on a loaded machine may send a warning meanwhile (cause "psi"); it is not the stranger's.
    assert [e for e in events_after(sandbox, unit, cursor) if e.cause != "psi"] == []
    assert held(mock)
    assert len(records_with(sandbox, unit, cursor, "ignored PrepareForSleep(true)")) == 1
    assert "active" in sandbox.show(unit)["StatusText"].lower()


def test_without_logind_one_warning_and_everything_else_works(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    with logind_absent(sandbox):
        unit = daemon_unit(*STATIC_USER)
        cursor, shown = start(sandbox, unit)
        assert (shown["ActiveState"], shown["SubState"]) == ("active", "running")
        wait_for(
            lambda: records_with(sandbox, unit, cursor, "logind is not available"),
            timeout=10,
            message="the warning about logind",
        )
        sandbox.systemctl("kill", "--kill-whom=main", "-s", "SIGUSR1", unit)
        events = wait_events(sandbox, unit, cursor, len(BACKGROUND), "signal:SIGUSR1")
        assert pairs(events) == BACKGROUND
        warnings = [r for r in sandbox.journal(unit, cursor) if r.get("PRIORITY") == "4" and r.get("_PID") != "1"]
        assert len(warnings) == 1, messages(warnings)


def test_without_a_system_bus_one_warning_and_everything_else_works(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    unit = daemon_unit(*STATIC_USER, "Environment=DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/lifecycle-e2e-no-bus")
    cursor, shown = start(sandbox, unit)
    assert (shown["ActiveState"], shown["SubState"]) == ("active", "running")
    warnings = [r for r in sandbox.journal(unit, cursor) if r.get("PRIORITY") == "4" and r.get("_PID") != "1"]
    assert len(warnings) == 1, messages(warnings)
    assert str(warnings[0]["MESSAGE"]).startswith("logind is not watched: there is no system bus")
    sandbox.systemctl("kill", "--kill-whom=main", "-s", "SIGUSR1", unit)
    assert pairs(wait_events(sandbox, unit, cursor, len(BACKGROUND), "signal:SIGUSR1")) == BACKGROUND


def test_a_dynamic_user_is_refused_by_the_bus_with_one_warning(
    sandbox: Sandbox, daemon_unit: Callable[..., str], mock: LogindMock
) -> None:
    # A DynamicUser= variant of the unit: dbus-daemon closes the connection after authentication.
    # (A fresh name: DynamicUser= reuses a static account of the same name, and `lifecycled` is one.)
    unit = daemon_unit("DynamicUser=yes", "User=lifecycled-dynamic", "Group=lifecycled-dynamic")
    cursor, shown = start(sandbox, unit)
    assert shown["ActiveState"] == "active"
    wait_for(
        lambda: records_with(sandbox, unit, cursor, "logind is not watched"),
        timeout=10,
        message="the warning about the bus",
    )
    time.sleep(0.5)
    warnings = [r for r in sandbox.journal(unit, cursor) if r.get("PRIORITY") == "4" and r.get("_PID") != "1"]
    assert len(warnings) == 1, messages(warnings)
    assert "closed the connection" in str(warnings[0]["MESSAGE"])
    assert released(mock)


def test_the_shipped_unit_holds_a_sleep_and_a_shutdown_delay_lock_from_the_real_logind(
    sandbox: Sandbox, daemon_unit: Callable[..., str]
) -> None:
    # No mock: the sandbox's systemd-logind and polkit decide, as on a real machine, whether the unprivileged
    # `lifecycled` user may delay sleep and shutdown (inhibit-delay-sleep / inhibit-delay-shutdown: anyone may).
    ensure_real_logind(sandbox)
    unit = daemon_unit(*STATIC_USER)
    cursor, shown = start(sandbox, unit)
    pid = shown["MainPID"]
    uid = sandbox.run("id", "-u", "lifecycled").stdout.strip()

    def daemon_locks() -> list[tuple[str, str]]:
        rows = [row for row in list_inhibitors(sandbox) if row[1] == "lifecycled" and str(row[5]) == pid]
        assert all(str(row[4]) == uid for row in rows), rows
        return sorted((str(row[0]), str(row[3])) for row in rows)

    try:
        wait_for(lambda: daemon_locks() == BOTH_DELAY_LOCKS, timeout=5, message="lifecycled's two delay locks")
    except AssertionError as failure:
        said = [m for m in daemon_messages(sandbox, unit, cursor) if "logind" in m or "login1" in m]
        raise AssertionError(f"{failure}; the daemon said {said}") from None
    # What an administrator sees.
    listed = sandbox.run("systemd-inhibit", "--list", "--no-pager", "--no-legend").stdout
    mine = [line.split() for line in listed.splitlines() if " lifecycled " in f" {line} "]
    assert sorted((fields[5], fields[-1]) for fields in mine if len(fields) >= 6) == [
        ("shutdown", "delay"),
        ("sleep", "delay"),
    ], listed
    # Granted, so nothing to warn about.
    warnings = [r for r in sandbox.journal(unit, cursor) if r.get("PRIORITY") == "4" and r.get("_PID") != "1"]
    assert warnings == [], messages(warnings)

    # The locks end with the process: logind sees the descriptors close.
    sandbox.systemctl("stop", unit)
    wait_for(lambda: daemon_locks() == [], timeout=5, message="the locks gone after the stop")


# A polkit rule (JavaScript, polkitd 122) that denies the daemon's user the shutdown delay lock only. Not the sleep
# one: logind's policy says inhibit-delay-shutdown implies inhibit-delay-sleep, and polkit grants an action that an
# allowed one implies, whatever the rules say about it.
DENY_SHUTDOWN_RULE_PATH = "/etc/polkit-1/rules.d/10-lifecycle-e2e-deny-shutdown.rules"
DENY_SHUTDOWN_RULE = """\
polkit.addRule(function(action, subject) {
    if (action.id == "org.freedesktop.login1.inhibit-delay-shutdown" && subject.user == "lifecycled") {
        return polkit.Result.NO;
    }
});
"""


def delay_lock_allowed(sandbox: Sandbox, what: str) -> bool:
    """Whether the `lifecycled` user may take a delay lock of this type now (asks the real logind)."""
    probe = sandbox.run(
        "setpriv", "--reuid=lifecycled", "--regid=lifecycled", "--clear-groups",
        "systemd-inhibit", f"--what={what}", "--mode=delay", "--who=lifecycle-e2e-probe", "--why=probe", "true",
        check=False,
    )
    return probe.returncode == 0


@pytest.fixture
def shutdown_lock_denied(sandbox: Sandbox) -> Iterator[None]:
    """The real logind, with polkit denying `lifecycled` the shutdown delay lock (the sandbox's /etc is in memory)."""
    ensure_real_logind(sandbox)
    sandbox.write_file(DENY_SHUTDOWN_RULE_PATH, DENY_SHUTDOWN_RULE)
    try:
        # polkitd reloads its rules when the directory changes.
        wait_for(
            lambda: not delay_lock_allowed(sandbox, "shutdown"), timeout=10, message="polkit denying the shutdown lock"
        )
        yield
    finally:
        sandbox.remove(DENY_SHUTDOWN_RULE_PATH)
        wait_for(
            lambda: delay_lock_allowed(sandbox, "shutdown"), timeout=10, message="polkit allowing the shutdown lock"
        )


def test_a_lock_type_the_real_logind_refuses_is_one_warning_and_the_other_lock_is_still_held(
    sandbox: Sandbox, daemon_unit: Callable[..., str], shutdown_lock_denied: None
) -> None:
    assert delay_lock_allowed(sandbox, "sleep")
    unit = daemon_unit(*STATIC_USER)
    cursor, shown = start(sandbox, unit)
    pid = shown["MainPID"]

    def daemon_locks() -> list[tuple[str, str]]:
        rows = [row for row in list_inhibitors(sandbox) if row[1] == "lifecycled" and str(row[5]) == pid]
        return sorted((str(row[0]), str(row[3])) for row in rows)

    wait_for(
        lambda: records_with(sandbox, unit, cursor, "logind refused"), timeout=10, message="the refusal warning"
    )
    wait_for(lambda: daemon_locks() == [("sleep", "delay")], timeout=5, message="the sleep lock alone")
    time.sleep(0.5)
    warnings = [r for r in sandbox.journal(unit, cursor) if r.get("PRIORITY") == "4" and r.get("_PID") != "1"]
    assert len(warnings) == 1, messages(warnings)
    warning = str(warnings[0]["MESSAGE"])
    # Says who refused, which lock, the error, and where to look; not that logind is missing.
    assert warning.startswith(
        'logind refused the delay inhibitor for "shutdown" (org.freedesktop.DBus.Error.AccessDenied'
    ), warning
    assert "PrepareForShutdown still reaches the application" in warning, warning
    assert "org.freedesktop.login1.inhibit-delay-shutdown" in warning, warning
    assert warnings[0].get("LIFECYCLE_INHIBIT_WHAT") == "shutdown", warnings[0]
    assert not records_with(sandbox, unit, cursor, "not available"), daemon_messages(sandbox, unit, cursor)
    # Everything else works.
    sandbox.systemctl("kill", "--kill-whom=main", "-s", "SIGUSR1", unit)
    assert pairs(wait_events(sandbox, unit, cursor, len(BACKGROUND), "signal:SIGUSR1")) == BACKGROUND
