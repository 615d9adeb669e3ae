"""Stat increments batched in a dict and added to Scrapy's stats about once a second (and at close):
one ``StatsCollector.inc_value`` costs about as much as a whole robots.txt check."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

STATS = "rfc9309/"
STATS_FLUSH_SECONDS = 1.0


class Counts:
    """Keys under ``rfc9309/``; :meth:`inc_scrapy`: Scrapy's middleware's ``robotstxt/*`` (docs/middleware.md)."""

    def __init__(self, stats: Any) -> None:
        self._stats = stats
        self._counts: defaultdict[str, int] = defaultdict(int)
        self._scrapy: defaultdict[str, int] = defaultdict(int)
        self._flushed_at = time.monotonic()

    def inc(self, key: str, count: int = 1) -> None:
        self._counts[key] += count

    def inc_scrapy(self, key: str, count: int = 1) -> None:
        """Count ``key`` as written (``robotstxt/forbidden``), without the prefix."""
        self._scrapy[key] += count

    def tick(self) -> None:
        """Flush when the last flush is more than a second old (cheap to call often)."""
        if time.monotonic() - self._flushed_at > STATS_FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        batches = ((STATS, self._counts), ("", self._scrapy))
        self._counts, self._scrapy, self._flushed_at = defaultdict(int), defaultdict(int), time.monotonic()
        for prefix, counts in batches:
            for key, count in counts.items():
                self._stats.inc_value(prefix + key, count)
