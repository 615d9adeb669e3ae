"""Scrapy's ``RobotParser`` over a :class:`~scrapy_rfc9309.RobotsTxt`: the ``robotparser`` of the
``robots_parsed`` signal (for extensions written for the built-in middleware), or a ``ROBOTSTXT_PARSER``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.robotstxt import RobotParser

from .robots import RobotsTxt, parse
from .useragent import lenient_token

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class RobotParserAdapter(RobotParser):
    """``allowed`` and ``crawl_delay`` for any ``user_agent`` an extension holds (a token, a User-Agent, bytes)."""

    def __init__(self, robots: RobotsTxt, default_token: str) -> None:
        self.robots = robots  # the governing file or policy, for code that knows this plugin
        self.default_token = default_token

    @classmethod
    def from_crawler(cls, crawler: Crawler | None, robotstxt_body: bytes) -> RobotParserAdapter:
        """Parse ``robotstxt_body`` with the crawl's settings, or the defaults without a crawler (as Scrapy's tests)."""
        from scrapy.settings import Settings

        from .settings import Rfc9309Settings

        settings = Rfc9309Settings.from_settings(crawler.settings if crawler is not None else Settings())
        return cls(parse(robotstxt_body, max_bytes=settings.max_bytes), settings.user_agent)

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        url = url.decode("utf-8", "replace") if isinstance(url, bytes) else url
        return self.robots.can_fetch(url, lenient_token(user_agent) or self.default_token)

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        return self.robots.crawl_delay(lenient_token(user_agent) or self.default_token)

    def __repr__(self) -> str:
        return f"<RobotParserAdapter {self.robots!r}>"
