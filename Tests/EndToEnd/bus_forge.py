#!/usr/bin/python3
#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""A hostile peer on a D-Bus bus: sends the signals a local user would forge to move a daemon that follows logind.

    bus_forge.py [--address ADDRESS] [--repeat N] STEP...

Each STEP is one signal, sent from this script's own connection, in order:

    owner,DEST,NEW        org.freedesktop.DBus.NameOwnerChanged("org.freedesktop.login1", "", NEW) as if from the bus
                          driver; NEW is `self` (this connection's unique name), `none` (logind left) or a name
    sleep,DEST,BOOL       org.freedesktop.login1.Manager.PrepareForSleep(BOOL)
    shutdown,DEST,BOOL    org.freedesktop.login1.Manager.PrepareForShutdown(BOOL)

DEST is a unique name (the signal is addressed to that connection: the bus delivers it whatever its match rules say)
or `all` (broadcast). `--repeat` sends the whole list that many times. Before it exits the script makes one call to
the bus driver and waits for its answer: the bus handles one connection's messages in order, so by then it has routed
every signal above, and anything the caller does next reaches the daemon after them. Prints this connection's unique
name. The system bus unless --address. python3-dbus only: it runs inside the test sandbox as another user.
"""

from __future__ import annotations

import argparse
import sys

import dbus
import dbus.lowlevel

LOGIND = "org.freedesktop.login1"


def signal(path: str, interface: str, member: str, signature: str, *arguments: object) -> dbus.lowlevel.SignalMessage:
    message = dbus.lowlevel.SignalMessage(path, interface, member)
    message.append(*arguments, signature=signature)
    return message


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("steps", nargs="+")
    args = parser.parse_args()
    bus = dbus.bus.BusConnection(args.address or dbus.bus.BusConnection.TYPE_SYSTEM)
    me = bus.get_unique_name()
    def build(step: str) -> dbus.lowlevel.SignalMessage:
        kind, destination, value = step.split(",", 2)
        if kind == "owner":
            owner = {"self": me, "none": ""}.get(value, value)
            message = signal(
                "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged", "sss", LOGIND, "", owner
            )
        elif kind in ("sleep", "shutdown"):
            member = "PrepareForSleep" if kind == "sleep" else "PrepareForShutdown"
            message = signal("/org/freedesktop/login1", "org.freedesktop.login1.Manager", member, "b", value == "true")
        else:
            parser.error(f"unknown step {step}")
        if destination != "all":
            message.set_destination(destination)
        return message

    # A message is locked once sent: a fresh one for every send.
    for _ in range(args.repeat):
        for step in args.steps:
            bus.send_message(build(step))
    bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", [])
    print(me)
    return 0


if __name__ == "__main__":
    sys.exit(main())
