"""The broad-crawl benchmark (benchmarks/broad_bench.py) still runs end to end.

One round of a tiny configuration: 4 origins (each a loopback host of its
own) x 3 pages (1 disallowed), 20 ms per response, every configuration in a
worker process of its own, Redis included when ``redis-server`` is here.
Not a timing test: it checks the table is there and that its counts, which
come from the server and the spider, not from the middlewares' stats, say
what each configuration must have done.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .test_bench_smoke import _rows

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


def test_every_configuration_fetches_and_drops_what_it_must(report):
    rows = {cells[0]: cells for cells in _rows(report).values()}
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
    assert rows["Scrapy built-in (Protego)"][2].startswith("1.00")


def test_goal_lines(report):
    text = "\n".join(report)
    assert "(goal 1.05)" in text and "(goal 1.10)" in text
