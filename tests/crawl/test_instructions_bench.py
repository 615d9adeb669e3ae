"""benchmarks/instructions_bench.py's arithmetic, and its crawl without valgrind.

The counts themselves take valgrind and about 45 minutes
(docs/benchmarks_crawl.md); here the table is made from counts given, so each
column can be checked against a number worked out by hand, and one tiny crawl
runs the way the benchmark runs each of its crawls (``bare``), to show that
mode still crawls and counts nothing of its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.main_run_only  # not again on the oldest Scrapy, nor without a reactor (setup.cfg)

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

#: Ir at 100 and 300 origins: per added origin 30 M, 32 M, 32.5 M, 33 M and 34 M;
#: fixed 3,000 M, 3,010 M, 3,090 M, 3,100 M and 3,200 M
COUNTS = {
    "none": {"100": 6_000_000_000, "300": 12_000_000_000},
    "builtin": {"100": 6_210_000_000, "300": 12_610_000_000},
    "memory": {"100": 6_340_000_000, "300": 12_840_000_000},
    "sqlite": {"100": 6_400_000_000, "300": 13_000_000_000},
    "redis": {"100": 6_600_000_000, "300": 13_400_000_000},
}


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import instructions_bench
    finally:
        sys.path.remove(str(BENCHMARKS))
    return instructions_bench


def _rows(lines: list[str]) -> dict[str, list[str]]:
    return {cells[0]: cells for line in lines if line.startswith("| ") for cells in [line.strip("| ").split(" | ")]}


def test_the_table_follows_from_the_counts(bench):
    lines = bench.table({"counts": COUNTS, "sizes": [100, 300], "pages": 3, "robots": "a file", "latency": 0.05})
    rows = _rows(lines)
    memory = rows["scrapy-rfc9309, memory store"]
    # Ir 100, Ir 300, per added origin, vs built-in, own, own vs built-in's, - memory, fixed, fixed over
    assert memory[1:] == ["6.340 G", "12.840 G", "32.50 M", "1.016", "2.50 M", "1.25", "-", "3,090 M", "+80 M"]
    assert rows["scrapy-rfc9309, SQLite store"][7] == "+0.016"  # (33 - 32.5) / 32
    assert rows["scrapy-rfc9309, Redis store"][7] == "+0.047"  # (34 - 32.5) / 32
    assert rows["no robots handling"][5] == "-"
    assert "Own handling, memory store: 1.25x the built-in's (goal <= 1.00): missed." in lines
    assert "scrapy-rfc9309, SQLite store: +0.016 over the memory store (goal +0.03): met." in lines
    assert "scrapy-rfc9309, Redis store: +0.047 over the memory store (goal +0.03): missed." in lines
    assert "Fixed cost, memory store: +80 M instructions over the built-in's (goal <= 100 M): met." in lines


def test_the_fixed_cost_comes_from_the_one_origin_crawl_when_counted(bench):
    """With ``fixed_at`` (a crawl of 1 origin), the fixed cost is that count less one origin's cost: a
    per-origin count's noise then moves it once, not 100 times as at the smaller size."""
    at_one = {"none": 3_030_000_000, "builtin": 3_042_000_000, "memory": 3_102_500_000}  # fixed 3,000 / 3,010 / 3,070 M
    counts = {config: {**COUNTS[config], "1": ir} for config, ir in at_one.items()}
    m = {"counts": counts, "sizes": [100, 300], "fixed_at": 1, "pages": 3, "robots": "a file", "latency": 0.05}
    lines = bench.table(m)
    rows = _rows(lines)
    assert rows["scrapy-rfc9309, memory store"][8:] == ["3,070 M", "+60 M"]  # not 3,090 M and +80 M (at 100)
    assert rows["Scrapy built-in (Protego)"][8:] == ["3,010 M", "+0 M"]
    assert "Fixed cost, memory store: +60 M instructions over the built-in's (goal <= 100 M): met." in lines
    assert any("Fixed: Ir at 1 less 1 x the per-origin cost" in line for line in lines)


def test_a_bare_crawl_runs_and_counts_nothing_of_its_own(bench):
    """The worker as the benchmark runs it under valgrind: no collector callback, no
    counting wrapper (an instruction count is of the crawl alone)."""
    import crawl_bench  # (on the path: the fixture put it there and the import kept it)

    body, _ = crawl_bench.robots_body(None)
    with crawl_bench.web(0, body, 0.0, 2, 0.0, 0) as ports:
        urls = bench.broad_urls(ports["hosts"][:2], 3)
        worker = {
            "mode": "plugin", "store": "memory", "passes": [urls], "control": ports["control"],
            "concurrency": 16, "per_domain": 2, "first_page": True, "settings": {}, "bare": True,
        }  # fmt: skip
        result = crawl_bench.run_worker(worker)
    numbers = result["passes"][0]
    assert numbers["robots_fetches"] == 2 and numbers["downloaded"] + numbers["dropped"] == 6
    assert "gc" not in result  # no collector callback
    assert numbers["signal_calls_total"] == 0 and numbers["store_calls"] == {}  # no counting wrapper


def test_a_verdict_of_one_crawl_per_count_says_so_and_medians_say_how_many(bench):
    """One crawl per count: the goals' lines end with a warning (a garbage collection more or less moves a
    per-origin count by about 0.25 M); counts that are medians of rounds say of how many, and need none."""
    one = bench.table({"counts": COUNTS, "sizes": [100, 300], "pages": 3, "robots": "a file"})
    assert any("one crawl per configuration and size" in line for line in one)
    assert one[-1].startswith("One crawl per count: a full garbage collection more or less")
    samples = {config: {size: [ir, ir + 1, ir - 1] for size, ir in sizes.items()} for config, sizes in COUNTS.items()}
    three = bench.table({"counts": COUNTS, "samples": samples, "sizes": [100, 300], "pages": 3, "robots": "a file"})
    assert any("the median of up to 3 crawls per configuration and size" in line for line in three)
    assert not any(line.startswith("One crawl per count") for line in three)
    assert three[-1].startswith("Fixed cost, memory store:")
