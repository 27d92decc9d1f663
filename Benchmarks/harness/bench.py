#!/usr/bin/env python3
#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""The benchmark harness behind scripts/bench: runs every measurement against its same-run baseline and writes the
table (results.md) and the latency plot (latency.png).

It expects the release binaries of the Benchmarks package (scripts/bench builds them) and uses only the standard
library, plus matplotlib for the plot. Every process it starts is ended by its PID.
"""

# The harness is the package beside this file, lifecyclebench: one module per benchmark and the parts they share
# (lifecyclebench/__init__.py says which is where, and how to add a benchmark).
from lifecyclebench.cli import main

if __name__ == "__main__":
    main(__doc__)
