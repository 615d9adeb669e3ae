"""The crawl benchmark (benchmarks/crawl_bench.py) still runs end to end.

A tiny configuration, one round: 2 origins x 12 pages (2 of them disallowed
per origin), every configuration in its own worker process against the
benchmark's own server.  Not a timing test: it checks that the counts in
the tables, which come from the server and the spider, not from the
middlewares' stats, say what each configuration must have done, and that the
ratios and the goal verdict follow from the measurements in them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.main_run_only  # not again on the oldest Scrapy, nor without a reactor (setup.cfg)

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
ORIGINS, PAGES, DENIED = 2, 12, 2  # pages 1 and 11 of each origin are disallowed


def _rows(lines: list[str]) -> dict[tuple[str, str], list[str]]:
    """(first cell, second cell) -> the row's cells, for every table row
    (header rows, those followed by a ``|---`` line, left out)."""
    rows = {}
    for line, following in zip(lines, [*lines[1:], ""]):
        if line.startswith("| ") and not following.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[(cells[0], cells[1])] = cells
    return rows


@pytest.fixture(scope="module")
def report() -> list[str]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import crawl_bench
    finally:
        sys.path.remove(str(BENCHMARKS))
    return crawl_bench.run(1, origins=ORIGINS, pages=PAGES, slow_delay=0.05)


def test_main_table_has_every_configuration_and_pass(report):
    rows = _rows(report)
    for label in ("no robots handling", "Scrapy built-in (Protego)", "scrapy-rfc9309 (add-on)"):
        for cache in ("1, cold", "2, warm"):
            assert (label, cache) in rows, (label, cache, list(rows))


def test_counts_in_the_table_match_what_each_configuration_must_do(report):
    rows = _rows(report)
    # columns: handling, pass, wall, requests/s, CPU, robots.txt fetches, downloaded / dropped, ratio
    none_cold = rows[("no robots handling", "1, cold")]
    assert none_cold[5] == "0" and none_cold[6] == f"{ORIGINS * PAGES} / 0"
    plugin_cold = rows[("scrapy-rfc9309 (add-on)", "1, cold")]
    assert plugin_cold[5] == str(ORIGINS), "one robots.txt fetch per origin"
    assert plugin_cold[6] == f"{ORIGINS * (PAGES - DENIED)} / {ORIGINS * DENIED}"
    builtin_cold = rows[("Scrapy built-in (Protego)", "1, cold")]
    assert builtin_cold[5] == str(ORIGINS)
    allowed = ORIGINS * (PAGES - DENIED)
    for label in ("no robots handling", "Scrapy built-in (Protego)", "scrapy-rfc9309 (add-on)"):
        warm = rows[(label, "2, warm")]
        assert warm[5] == "0", f"{label}: a warm cache fetches no robots.txt"
        assert warm[6] == f"{allowed} / 0", f"{label}: pass 2 requests the allowed pages only"


def test_goal_line_and_latency_table_follow_from_the_main_table(report):
    """The goal line states the plugin's warm requests/s over the no-robots
    crawl's (the main table's last column) and says "met" exactly when it is
    95% or more; the latency table starts from the main table's pass 1 wall
    times, and its counts are those of the file."""
    rows = _rows(report)
    warm = {label: rows[(label, "2, warm")] for label in ("no robots handling", "scrapy-rfc9309 (add-on)")}
    share = float(warm["scrapy-rfc9309 (add-on)"][7].rstrip("%"))
    rate, base = (
        float(cells[3].replace(",", "")) for cells in (warm["scrapy-rfc9309 (add-on)"], warm["no robots handling"])
    )
    # requests/s are shown as whole numbers: their ratio is within that rounding of the share
    assert abs(share - rate / base * 100) <= 0.06 + 50 * (rate + base) / base**2
    goal = next(line.strip() for line in report if "Goal, a warm-cache crawl" in line)
    stated = float(goal.split("throughput: ")[1].split("%")[0])
    assert stated == share, (goal, share)
    assert ("(met)" in goal) == (stated >= 95.0) or abs(stated - 95.0) < 0.1, goal  # (rounded at the edge)
    latency = {cells[0]: cells for cells in rows.values() if len(cells) == 7 and not cells[0].isdigit()}
    assert set(latency) == {"no robots handling", "Scrapy built-in (Protego)", "scrapy-rfc9309 (add-on)"}
    for label in latency:
        assert latency[label][1] == rows[(label, "1, cold")][2], f"{label}: the same pass 1 wall time"
    # last column: requests dropped on the slow ports; the plugin drops every disallowed page
    assert latency["scrapy-rfc9309 (add-on)"][6] == str(ORIGINS * DENIED)
    assert latency["no robots handling"][6] == "0"
