"""The broad-crawl benchmark (benchmarks/broad_bench.py) still runs end to end.

One round of a tiny configuration: 4 origins (each a loopback host of its
own) x 3 pages (1 disallowed), 20 ms per response, every configuration in a
worker process of its own, Redis included when ``redis-server`` is here.
Not a timing test: it checks that the table's counts, which come from the
server and the spider, not from the middlewares' stats, say what each
configuration must have done, and that its ratios and goal verdicts follow
from the measurements in it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .test_bench_smoke import _rows

pytestmark = pytest.mark.main_run_only  # not again on the oldest Scrapy, nor without a reactor (setup.cfg)

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
ORIGINS, PAGES = 4, 3  # page 1 of each origin is disallowed


@pytest.fixture(scope="module")
def report() -> list[str]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import broad_bench
    finally:
        sys.path.remove(str(BENCHMARKS))
    return broad_bench.run(1, origins=ORIGINS, pages=PAGES, latency=0.02)


def _main(report: list[str]) -> dict[str, list[str]]:
    """The main table's rows (13 cells), by label."""
    return {cells[0]: cells for cells in _rows(report).values() if len(cells) == 13}


def test_every_configuration_fetches_and_drops_what_it_must(report):
    rows = _main(report)
    # columns: handling, CPU, CPU vs built-in, wall, first page, robots.txt fetches, downloaded / dropped, Redis
    assert rows["no robots handling"][5] == "0"
    assert rows["no robots handling"][6] == f"{ORIGINS * PAGES} / 0"
    obeying = ["Scrapy built-in (Protego)", "scrapy-rfc9309, memory store", "scrapy-rfc9309, SQLite store"]
    if "scrapy-rfc9309, Redis store" in rows:
        obeying.append("scrapy-rfc9309, Redis store")
        assert rows["scrapy-rfc9309, Redis store"][7] != "-"
    for label in obeying:
        assert rows[label][5] == str(ORIGINS), f"{label}: one robots.txt fetch per origin"
        assert rows[label][6] == f"{ORIGINS * (PAGES - 1)} / {ORIGINS}", label
        first_page = float(rows[label][4].split()[0])
        assert first_page >= 20, f"{label}: a page takes 20 ms"


def _ratio(cell: str) -> tuple[float, float, float]:
    """``"1.02 [0.98 - 1.05]"`` -> (median, lowest, highest)."""
    median, _, span = cell.partition(" [")
    low, _, high = span.rstrip("]").partition(" - ")
    return float(median), float(low), float(high)


def test_cpu_ratios_and_goal_verdicts_follow_from_the_measurements(report):
    """The table's "CPU vs built-in" of each configuration is its CPU over the
    built-in's (one round: the median is that round's ratio), and each goal
    line states the table's ratios and says "met" exactly when both are within
    their goals."""
    rows = _main(report)
    builtin_cpu = float(rows["Scrapy built-in (Protego)"][1])
    for label, cells in rows.items():
        median, low, high = _ratio(cells[2])
        assert low == median == high, f"{label}: one round, one ratio"
        # the CPU column has 2 decimals: the ratio of the rounded values is within their rounding
        cpu = float(cells[1])
        assert abs(median - cpu / builtin_cpu) <= 0.006 + 0.006 * (cpu + builtin_cpu) / builtin_cpu**2, label
    memory_first = float(rows["scrapy-rfc9309, memory store"][4].split()[0])
    memory_cpu = _ratio(rows["scrapy-rfc9309, memory store"][2])[0]
    memory_goal = next(line for line in report if "(goal 1.00)" in line)
    assert memory_goal.startswith("scrapy-rfc9309, memory store: CPU ")
    assert float(memory_goal.split("CPU ")[1].split("x")[0]) == memory_cpu, memory_goal
    assert abs(memory_cpu - 1.00) < 0.006 or memory_goal.endswith("met.") == (memory_cpu <= 1.00), memory_goal
    goals = [line for line in report if "(goal +0.03)" in line]
    stores = [label for label in ("scrapy-rfc9309, SQLite store", "scrapy-rfc9309, Redis store") if label in rows]
    assert [line.split(": CPU")[0] for line in goals] == stores
    for line in goals:
        label = line.split(": CPU")[0]
        cpu = float(line.split("CPU ")[1].split("x")[0])
        over = float(line.split("the built-in's, ")[1].split(" over")[0])
        first = float(line.split("first page ")[1].split("x")[0])
        assert cpu == _ratio(rows[label][2])[0], line
        # one round: the difference over the memory store is the two ratios' difference (each rounded)
        assert abs(over - (cpu - memory_cpu)) <= 0.011, line
        assert _ratio(rows[label][11])[0] == over, (line, rows[label][11])
        store_first = float(rows[label][4].split()[0])
        # (the table's first page is in whole ms)
        assert abs(first - store_first / memory_first) <= 0.006 + 0.5 * (store_first + memory_first) / memory_first**2
        at_the_edge = abs(over - 0.03) < 0.006  # (the line rounds to 2 decimals)
        assert at_the_edge or (": met;" in line) == (over <= 0.03), line


def test_counts_table_has_what_each_configuration_did(report):
    """The load-independent counts: one robots.txt fetch per origin where robots.txt is read, none
    without; a connection or more per origin (counted by the server); the plugin's store looked
    up and written once per origin; Redis round trips counted for the Redis store only."""
    counts = {}
    for line, following in zip(report, [*report[1:], ""]):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and not following.startswith("|---") and len(cells) == 10:
            counts[cells[0]] = cells
    assert counts["no robots handling"][1] == "0.00"
    for label, cells in counts.items():
        assert float(cells[2]) >= 1.0, f"{label}: every origin takes a connection"
        assert float(cells[3]) >= 2.0, f"{label}: request_scheduled and response_received for every request"
        if label.startswith("scrapy-rfc9309"):
            assert cells[1] == "1.00", label
            assert cells[4] == "1.00, 1.00", f"{label}: one look-up and one store per origin"
        if label == "scrapy-rfc9309, Redis store":
            assert float(cells[5]) >= 1.0, "a round trip to Redis per origin at least"
        else:
            assert cells[5] == "-", label
