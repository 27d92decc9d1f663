#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Fixtures: one systemd sandbox per session, the daemon binary, the daemon's unit with an e2e drop-in."""

from __future__ import annotations

import atexit
import signal
from typing import Callable, Iterator

import pytest

from peers import remove_config, with_config
from harness import DROPIN, DROPIN_DIR, SANDBOX_BIN, SHIPPED_SYSUSERS, SHIPPED_UNIT, UNIT, CtlBinary, DaemonBinary, Sandbox

# StateDirectory=lifecycled: /var/lib/lifecycled (under private/, reached by a symlink, when a test sets DynamicUser=yes).
STATE_DIRECTORIES = ("/var/lib/private/lifecycled", "/var/lib/lifecycled")


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    """systemd booted once per session; always SIGKILLed at the end, whatever happened."""
    box = Sandbox.start()
    # Belt and braces: if the session dies before fixture teardown runs, still end the sandbox.
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            box.stop()

    atexit.register(stop)
    # The shipped unit runs as the static user of systemd/lifecycled.sysusers; make it as `make install` does,
    # inside the sandbox (its /etc is an in-memory overlay).
    box.write_file("/etc/sysusers.d/lifecycled.conf", SHIPPED_SYSUSERS.read_text())
    box.run("systemd-sysusers", "/etc/sysusers.d/lifecycled.conf")
    # A SIGTERM to pytest (a CI timeout) interrupts the session like Ctrl-C, so this fixture's teardown runs.
    # (Not SystemExit: pytest reports that as one failed test and carries on.)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield box
    finally:
        stop()


@pytest.fixture(scope="session")
def lifecycled_bin() -> DaemonBinary:
    return DaemonBinary()


@pytest.fixture(scope="session")
def lifecyclectl_bin() -> CtlBinary:
    return CtlBinary()


def e2e_dropin(extra_service_lines: list[str]) -> str:
    """The drop-in the tests install: the daemon with --trace (controller and view events at info)."""
    lines = [
        "[Service]",
        "ExecStart=",
        f"ExecStart={SANDBOX_BIN} --trace",
        "Environment=LIFECYCLE_TRACE=all",
        # A watchdog kill is SIGABRT; no core file from the tests.
        "LimitCORE=0",
        *extra_service_lines,
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def config(sandbox: Sandbox) -> Iterator[Callable[[str], list[str]]]:
    """Writes the daemon's configuration file: call it with the file's text, and pass the lines it returns to
    `daemon_unit` (they make the daemon read it). Afterwards the file is removed."""
    yield lambda text: with_config(sandbox, text)
    remove_config(sandbox)


@pytest.fixture
def daemon_unit(
    sandbox: Sandbox, lifecycled_bin: DaemonBinary, lifecyclectl_bin: CtlBinary
) -> Iterator[Callable[..., str]]:
    """Installs lifecycled.service (the shipped file) plus the e2e drop-in; call it with extra [Service]
    lines (e.g. "WatchdogSec=2"), and keep_state=True to keep the state directory. Returns the unit name. Afterwards
    the unit is stopped and removed, with its state directory."""
    installed = False

    def install(*extra_service_lines: str, keep_state: bool = False) -> str:
        nonlocal installed
        lifecycled_bin.install(sandbox)
        # The unit's ExecReload= is lifecyclectl, which waits for the reload's outcome.
        lifecyclectl_bin.install(sandbox)
        # Every test starts without the previous one's saved state (unless it installs the unit again to restart
        # from the state it saved).
        if not keep_state:
            sandbox.remove(*STATE_DIRECTORIES)
        sandbox.write_file(f"/etc/systemd/system/{UNIT}", SHIPPED_UNIT.read_text())
        sandbox.write_file(DROPIN, e2e_dropin(list(extra_service_lines)))
        installed = True
        sandbox.daemon_reload()
        # Tests start the unit often; forget earlier failures and the start rate limit.
        sandbox.systemctl("reset-failed", UNIT, check=False)
        return UNIT

    yield install
    if installed:
        # SIGKILL first: a daemon told to hang (or a broken one) would otherwise take TimeoutStopSec to stop.
        sandbox.systemctl("kill", "--signal=SIGKILL", UNIT, check=False)
        sandbox.systemctl("stop", UNIT, check=False)
        sandbox.systemctl("reset-failed", UNIT, check=False)
        sandbox.remove(DROPIN_DIR, f"/etc/systemd/system/{UNIT}", *STATE_DIRECTORIES)
        sandbox.daemon_reload()
