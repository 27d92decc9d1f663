#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""What every plot shares: matplotlib without a display, the machine and command under the figure, the size."""


def pyplot():
    """matplotlib.pyplot on the Agg backend (files, no display); ImportError when matplotlib is not installed (a
    smoke run then goes without its plots)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(plt, figure, path, machine, command, top):
    """Writes the figure with the machine, the command and the commit under it; `top` is where the plots end under
    the title (a fraction of the height)."""
    figure.text(0.5, 0.005, f"{machine['short']} · {command} · commit {machine['commit']}", ha="center", fontsize=7)
    figure.tight_layout(rect=(0, 0.03, 1, top))
    figure.savefig(path, dpi=110)
    plt.close(figure)
