#
# This source file is part of LifecycleKit
# Copyright (c) 2026 the LifecycleKit authors
#
# See LICENSE.txt for license information
# SPDX-License-Identifier: Apache-2.0
#

"""Statistics of the samples (nearest-rank percentiles) and how a figure is written in results.md."""


def percentile(sorted_values, p):
    """Nearest-rank percentile of already sorted values."""
    if not sorted_values:
        return float("nan")
    rank = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(rank) - 1]


def summary(values):
    values = sorted(values)
    return {"n": len(values), "p50": percentile(values, 50), "p99": percentile(values, 99), "max": values[-1]}


def percentiles(rows, key, digits=1, maximum=False, labelled=False):
    """`p50 / p99` (and `/ max`), or `p50 …, p99 …`, of rows[key] where it was measured (not NaN); n/a for none."""
    values = [row[key] for row in rows if row[key] == row[key]]
    if not values:
        return "n/a"
    stats = summary(values)
    if labelled:
        return f"p50 {fmt(stats['p50'], digits)}, p99 {fmt(stats['p99'], digits)}"
    text = f"{fmt(stats['p50'], digits)} / {fmt(stats['p99'], digits)}"
    return text + (f" / {fmt(stats['max'], digits)}" if maximum else "")


def ratio(value, base):
    return value / base if base else float("inf")


def fmt(value, digits=1):
    if value != value:  # NaN
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def verdict(ok):
    return "yes" if ok else "**no**"
