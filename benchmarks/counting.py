"""Tables of what a crawl did that the machine's load does not move, and of the load itself.

``crawl_worker.py`` measures, for every pass of every crawl (``Snapshot.since``):
robots.txt fetches, pages and connections as the server counted them, signal
receiver calls (per signal), the store's calls (look-ups, stores, Redis round
trips, hand-offs to SQLite's thread), the garbage collector's runs and
seconds, and beside them the load: the 1-minute load average, the CPU the
rest of the machine used meanwhile (other processes, from ``/proc/stat``),
this process's involuntary context switches (times another process took its
core), sockets in TIME_WAIT.  With ``count_calls`` an extra, untimed run
counts every Python and builtin function call (cProfile).

These helpers turn the rounds into markdown rows; ``broad_bench.py`` and
``crawl_bench.py`` print them under their tables.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterable
from typing import Any

Run = dict[str, Any]


def spread(values: Iterable[float], digits: int = 2) -> str:
    """``"median [lowest - highest]"``."""
    ordered = sorted(values)
    if not ordered:
        return "-"
    form = f"{{:.{digits}f}}"
    median = statistics.median(ordered)
    return f"{form.format(median)} [{form.format(ordered[0])} - {form.format(ordered[-1])}]"


def ratios(series: list[Run], base: list[Run], value: Callable[[Run], float]) -> list[float]:
    """Per-round ratios ``value(run) / value(base run)`` (same round: the same drift)."""
    return [value(r) / value(b) for r, b in zip(series, base) if value(b)]


def cpu_of(run: Run) -> float:
    return float(run["cpu"])


def gc_total(run: Run) -> float:
    return float(sum(run.get("gc_seconds", [0.0])))


def cpu_less_gc(run: Run) -> float:
    """The pass's CPU without the garbage collector's (what is left depends less on what is alive)."""
    return float(run["cpu"]) - gc_total(run)


def count_rows(runs: dict[str, list[Run]], label: Callable[[str], str], calls: dict[str, dict[str, Any]]) -> list[str]:
    """One row per configuration: its counts per origin (median over the rounds; these
    barely move between rounds, so the range is shown where they do)."""
    out = [
        "| robots.txt handling | robots.txt fetches / origin | connections / origin | signal receiver calls "
        "/ request | store look-ups, stores / origin | Redis round trips / origin | SQLite write batches "
        "(+ reads in its thread) | full GCs [range] | GC s [range] | Python calls / request (one counted run) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config, series in runs.items():
        origins = series[0]["origins"]
        requests = series[0]["requests"]

        def med(value: Callable[[Run], float], series: list[Run] = series) -> float:
            return statistics.median(value(r) for r in series)

        def store(key: str, series: list[Run] = series, origins: int = origins) -> float:
            return statistics.median(r.get("store_calls", {}).get(key, 0) for r in series) / origins

        full = [r.get("gc_collections", [0, 0, 0])[2] for r in series]
        counted = calls.get(config)
        python = f"{counted['total'] / requests:,.0f}" if counted else "-"
        lookups = f"{store('lookups'):.2f}, {store('stores'):.2f}" if store("lookups") else "-"
        redis = f"{store('redis_round_trips'):.2f}" if store("redis_round_trips") else "-"
        batches = statistics.median(r.get("store_calls", {}).get("sqlite_write_batches", 0) for r in series)
        reads = statistics.median(r.get("store_calls", {}).get("sqlite_thread_calls", 0) for r in series)
        sqlite = f"{batches:.0f} (+ {reads:.0f})" if batches or reads else "-"
        out.append(
            f"| {label(config)} | {med(lambda r: r['robots_fetches']) / origins:.2f} "
            f"| {med(lambda r: r['connections']) / origins:.2f} "
            f"| {med(lambda r: r['signal_calls_total']) / requests:.2f} | {lookups} | {redis} | {sqlite} "
            f"| {statistics.median(full):.0f} [{min(full)} - {max(full)}] "
            f"| {spread((gc_total(r) for r in series), 2)} | {python} |"
        )
    return out


def signal_rows(runs: dict[str, list[Run]], label: Callable[[str], str]) -> list[str]:
    """Receiver calls per request of each signal that has any, per configuration (median)."""
    names = sorted({name for series in runs.values() for r in series for name in r.get("signal_calls", {})})
    if not names:
        return []
    out = [
        "| robots.txt handling | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for config, series in runs.items():
        requests = series[0]["requests"]
        cells = [
            f"{statistics.median(r.get('signal_calls', {}).get(name, 0) for r in series) / requests:.2f}"
            for name in names
        ]
        out.append(f"| {label(config)} | " + " | ".join(cells) + " |")
    return out


def load_rows(runs: dict[str, list[Run]], order: list[list[str]]) -> list[str]:
    """Per round: the load beside it (range over the round's crawls)."""
    cores = os.cpu_count() or 1
    out = [
        "| round | order of the crawls | load average | other processes' CPU, cores | involuntary switches "
        "/ CPU s | sockets in TIME_WAIT | steal s |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for number, configs in enumerate(order):
        crawls = [runs[c][number] for c in configs if number < len(runs[c])]
        if not crawls:
            continue
        loads = [r["load"] for r in crawls]
        others = [r.get("others_cpu", 0.0) / r["wall"] for r in crawls]
        switches = [r.get("involuntary_switches", 0) / r["cpu"] for r in crawls]
        waits = [r.get("time_wait", 0) for r in crawls]
        steal = sum(r.get("steal", 0.0) for r in crawls)
        out.append(
            f"| {number + 1} | {', '.join(configs)} | {min(loads):.1f} - {max(loads):.1f} "
            f"| {min(others):.2f} - {max(others):.2f} (of {cores}) | {min(switches):,.0f} - {max(switches):,.0f} "
            f"| {min(waits):,} - {max(waits):,} | {steal:.2f} |"
        )
    return out


def calls_rows(calls: dict[str, dict[str, Any]], base: str, label: Callable[[str], str], top: int = 12) -> list[str]:
    """The functions whose call counts differ most from configuration ``base``'s, per
    configuration, per request (one counted run each)."""
    if base not in calls:
        return []
    out = []
    reference = calls[base]["functions"]
    for config, counted in calls.items():
        if config == base:
            continue
        functions = counted["functions"]
        diffs = sorted(
            ((functions.get(f, 0) - reference.get(f, 0), f) for f in set(functions) | set(reference)),
            key=lambda item: -abs(item[0]),
        )[:top]
        packages = ", ".join(
            f"{p} {n - calls[base]['by_package'].get(p, 0):+,}"
            for p, n in sorted(counted["by_package"].items(), key=lambda item: -abs(item[1]))
        )
        out.append(
            f"\n{label(config)}: {counted['total']:,} calls against {calls[base]['total']:,} "
            f"({counted['total'] - calls[base]['total']:+,}); by package: {packages}. Largest differences:\n"
        )
        out += [f"    {d:+8,}  {f}" for d, f in diffs]
    return out
