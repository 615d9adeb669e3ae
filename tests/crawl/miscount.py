"""A downloader middleware that counts one checked request more than the plugin
did, for each response: a crawl whose stats do not add up, to show that the
accounting check fails it (tests/crawl/test_accounting_check.py).  No relative
import: a ``scrapy crawl`` subprocess imports it as ``miscount``."""

from __future__ import annotations

from typing import Any


class Miscount:
    def __init__(self, crawler: Any) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Any) -> Miscount:
        return cls(crawler)

    def process_response(self, request: Any, response: Any, spider: Any = None) -> Any:
        self.stats.inc_value("rfc9309/requests/checked")
        return response
