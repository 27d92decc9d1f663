#!/usr/bin/python3
#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""The figures of docs/security.md, for one build of the daemon (run it for two builds to compare them):

    LIFECYCLED_BIN=.build/debug/lifecycled LIFECYCLECTL_BIN=.build/debug/lifecyclectl \\
        /usr/bin/python3 Tests/EndToEnd/hostile_figures.py [--unit FILE] [--oneway-mib 64] [--rounds 20]

Boots a sandbox of its own (scripts/systemd-sandbox), installs the unit (--unit, by default the shipped
systemd/lifecycled.service) with WatchdogSec=2, and measures:

- the daemon's RSS (VmRSS before, VmHWM after) around one connection sending --oneway-mib MiB of pipelined oneway
  io.systemd.service.Ping calls without pausing, then one call that wants a reply (the issue's flood: 64 MiB);
- signal latency: kill(2) of SIGUSR1 to the saved state on disk (the daemon's own work, no systemd or journald on the
  path), --rounds times idle and --rounds times while uid 65534 floods the control socket with connections
  (2 processes); and kill(2) to the StatusText systemd holds (which the end of the loop's turn sends);
- `systemd-analyze security` of the unit (its overall exposure line).

Prints one JSON object. Not a test: pytest does not collect it (no test_ prefix).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import e2e_dropin  # noqa: E402
from harness import DROPIN, SHIPPED_SYSUSERS, SHIPPED_UNIT, UNIT, CtlBinary, DaemonBinary, Sandbox  # noqa: E402
from hostile import (  # noqa: E402
    NOBODY,
    SOCKET,
    STATE_FILE,
    Background,
    control_peer,
    install_peers,
    median,
    status_latencies,
    status_value,
)
from peers import save_latencies  # noqa: E402


def milliseconds(values: list[float]) -> dict:
    ordered = sorted(values)
    return {
        "median": round(median(values) * 1000, 2),
        "p90": round(ordered[int(len(ordered) * 0.9) - 1] * 1000, 2),
        "max": round(ordered[-1] * 1000, 2),
    }


def start_daemon(box: Sandbox, unit: Path) -> str:
    box.write_file(f"/etc/systemd/system/{UNIT}", unit.read_text())
    box.write_file(DROPIN, e2e_dropin(["WatchdogSec=2"]))
    box.daemon_reload()
    box.systemctl("start", UNIT)
    return box.show(UNIT, "MainPID")["MainPID"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--unit", type=Path, default=SHIPPED_UNIT)
    parser.add_argument("--oneway-mib", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    figures: dict = {}
    box = Sandbox.start()
    try:
        box.write_file("/etc/sysusers.d/lifecycled.conf", SHIPPED_SYSUSERS.read_text())
        box.run("systemd-sysusers", "/etc/sysusers.d/lifecycled.conf")
        DaemonBinary().install(box)
        CtlBinary().install(box)
        install_peers(box)
        box.write_file(f"/etc/systemd/system/{UNIT}", args.unit.read_text())
        box.daemon_reload()
        figures["exposure"] = box.run("systemd-analyze", "security", "--no-pager", UNIT).stdout.strip().splitlines()[-1]

        # Memory under the oneway flood.
        pid = start_daemon(box, args.unit)
        time.sleep(1)
        before = status_value(box, pid, "VmRSS")
        flood = control_peer(box, "oneway-flood", "--socket", SOCKET, "--bytes", str(args.oneway_mib << 20), timeout=1800)
        alive = box.show(UNIT, "MainPID")["MainPID"] == pid
        figures["oneway_flood"] = {
            "mib": args.oneway_mib,
            "answered": flood["answered"],
            "seconds": flood["seconds"],
            "rss_mib_before": round(before / 1024, 1),
            "rss_mib_high_water": round(status_value(box, pid, "VmHWM") / 1024, 1) if alive else None,
            "rss_mib_after": round(status_value(box, pid, "VmRSS") / 1024, 1) if alive else None,
            "restarts": box.show(UNIT, "NRestarts")["NRestarts"],
        }
        box.systemctl("stop", UNIT)

        # Signal latency, idle and under a connect flood from another uid.
        pid = start_daemon(box, args.unit)
        idle = save_latencies(box, pid, args.rounds, STATE_FILE, patience=10, pause=0.2, timeout=600)
        idle_status = status_latencies(box, UNIT, pid, args.rounds)
        seconds = 20 + args.rounds * 2
        flooding = Background(
            lambda: control_peer(
                box, "connect-flood", "--socket", SOCKET, "--seconds", str(seconds), "--workers", "2", user=NOBODY
            )
        )
        time.sleep(1)
        flooded = save_latencies(box, pid, args.rounds, STATE_FILE, patience=10, pause=0.2, timeout=600)
        flooded_status = status_latencies(box, UNIT, pid, args.rounds)
        connects = flooding.result(timeout=seconds + 120)
        figures["connect_flood"] = {
            "connects_per_s": round(connects["connects"] / seconds),
            "kill_to_saved_state_ms_idle": milliseconds(idle),
            "kill_to_saved_state_ms_flood": milliseconds(flooded),
            "kill_to_status_text_ms_idle": milliseconds(idle_status),
            "kill_to_status_text_ms_flood": milliseconds(flooded_status),
            "restarts": box.show(UNIT, "NRestarts")["NRestarts"],
        }
        box.systemctl("stop", UNIT)
    finally:
        box.stop()
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
