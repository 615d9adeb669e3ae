"""``scrapy crawl demo``: every RFC 9309 case in one crawl, then one table.

The spider starts the embedded demo site (:mod:`demo_project.demo_site`),
asks each origin for a few pages and records what became of each request:

* an allowed page reaches ``page()``, the callback;
* a page the plugin drops reaches ``dropped()``, the errback, as an
  ``IgnoreRequest`` whose message names the verdict and the deciding line,
  ``Forbidden by robots.txt: disallowed_explicit (line 2: Disallow: /shop/)``.

When the crawl is over it prints the table to stdout (see :mod:`.base`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.exceptions import IgnoreRequest

from scrapy_rfc9309 import RobotsTxt, Verdict, robots_service
from scrapy_rfc9309.origins import origin_of
from scrapy_rfc9309.service import Known
from scrapy_rfc9309.settings import Rfc9309Settings
from scrapy_rfc9309.signals import robots_txt_ready
from scrapy_rfc9309.wiring import rfc9309_settings

from ..demo_site import ONE_HOST, DemoOrigin
from ..table import OriginBlock, PageRow, render
from .base import DemoSiteSpider

FORBIDDEN = "Forbidden by robots.txt: "

#: how the plugin's reading of a robots.txt that is not a file is shown in the table
READING = {
    Verdict.ALLOWED_UNAVAILABLE: "allow all",
    Verdict.UNKNOWN_UNREACHABLE: "deny all",
    Verdict.ALLOWED_UNREACHABLE_OPT_IN: "allow all (opt-in)",
}


class DemoSpider(DemoSiteSpider):
    name = "demo"

    # Spider-level overrides: custom_settings beat settings.py, for this spider only.
    custom_settings = {
        # Match robots.txt groups as "DemoBot", whatever USER_AGENT says.
        "ROBOTSTXT_USER_AGENT": "DemoBot",
        # The site is local: give up on a robots.txt after 5 s, not the default 30 s.
        "RFC9309_FETCH_TIMEOUT": 5,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: origin -> (governing RobotsTxt, product token), from the plugin's signal
        self.robots: dict[str, tuple[RobotsTxt, str]] = {}
        #: origin name -> one row per page
        self.rows: dict[str, list[PageRow]] = {}

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> DemoSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.robots_ready, signal=robots_txt_ready)
        return spider

    async def start(self):
        for origin in self.site.origins:
            for path in origin.pages:
                meta: dict[str, Any] = {"demo_origin": origin.name, "demo_path": path}
                if ONE_HOST:
                    # All origins share 127.0.0.1 here, and Scrapy's default download
                    # slot is the host: give each origin its own slot (and floor).
                    meta["download_slot"] = origin.origin
                yield scrapy.Request(
                    origin.url(path), callback=self.page, errback=self.dropped, meta=meta, dont_filter=True
                )

    # -- what became of each request ----------------------------------------------
    def robots_ready(self, origin: str, robots: RobotsTxt, user_agent: str, **kwargs: Any) -> None:
        self.robots[origin] = (robots, user_agent)

    def page(self, response: scrapy.http.Response) -> None:
        request = response.request
        known = self.robots.get(origin_of(request.url))
        if known is None:
            reason = Verdict.ALLOWED_NOT_OBEYED.value  # robots.txt never consulted
        else:
            robots, token = known
            reason = robots.check(request.url, token).reason  # the same object the plugin decided with
        self._add(request, PageRow(request.meta["demo_path"], "allowed", reason))

    def dropped(self, failure: Any) -> None:
        request = failure.request
        message = str(failure.value)
        if failure.check(IgnoreRequest) and message.startswith(FORBIDDEN):
            row = PageRow(request.meta["demo_path"], "DENIED", message[len(FORBIDDEN) :])
        else:
            row = PageRow(request.meta["demo_path"], "ERROR", f"{type(failure.value).__name__}: {message}")
        self._add(request, row)

    def _add(self, request: scrapy.Request, row: PageRow) -> None:
        self.rows.setdefault(request.meta["demo_origin"], []).append(row)

    # -- the table -------------------------------------------------------------------
    def report(self) -> str:
        config = rfc9309_settings(self.crawler)
        service = robots_service(self.crawler)
        blocks = []
        for origin in self.site.origins:
            if not origin.pages:
                continue
            order = {path: i for i, path in enumerate(origin.pages)}
            rows = sorted(self.rows.get(origin.name, []), key=lambda row: order[row.path])
            blocks.append(
                OriginBlock(
                    address=origin.origin.split("://", 1)[1],
                    case=origin.case,
                    robots=self._robots_lines(origin, config),
                    crawl_delay=_floor(service.known(origin.origin)),
                    min_gap=self.site.min_gap(origin.name),
                    pages=rows,
                )
            )
        return render(self._title(config, blocks), blocks, self._footer(blocks))

    def _robots_lines(self, origin: DemoOrigin, config: Rfc9309Settings) -> list[str]:
        chain = self.site.robots_chain(origin.name)
        known = self.robots.get(origin.origin)
        if not chain:
            why = "obey: False" if not config.for_origin(origin.origin).obey else "no answer"
            return ["not requested", f"({why})"]
        statuses = " -> ".join(str(status) for _, status in chain)
        reading = _reading(*known) if known else "?"
        lines = [f"{statuses} -> {reading}"]
        final = chain[-1][0]
        if origin_of(final) != origin.origin:
            lines.append(f"(file at {urlsplit(final).netloc})")
        if known:
            for diagnostic in known[0].diagnostics[:2]:
                lines.append(f"line {diagnostic.line}: {diagnostic.code}")
        return lines

    def _title(self, config: Rfc9309Settings, blocks: list[OriginBlock]) -> str:
        pages = sum(len(block.pages) for block in blocks)
        return (
            f"scrapy-rfc9309 demo: {len(blocks)} origins, {pages} pages, "
            f"product token {config.user_agent!r} (from {config.user_agent_source})"
        )

    def _footer(self, blocks: list[OriginBlock]) -> list[str]:
        rows = [row for block in blocks for row in block.pages]
        count = {word: sum(row.outcome == word for row in rows) for word in ("allowed", "DENIED", "ERROR")}
        leaked = sum(
            row.path in self.site.pages_seen(origin.name)
            for origin in self.site.origins
            for row in self.rows.get(origin.name, [])
            if row.outcome == "DENIED"
        )
        fetches = [
            sum(hit.path == "/robots.txt" for hit in self.site.hits(origin.name))
            for origin in self.site.origins
            if origin.pages and self.site.robots_chain(origin.name)
        ]
        return [
            f"{count['allowed']} pages allowed, {count['DENIED']} denied, {count['ERROR']} errors; "
            f"denied pages that reached a server: {leaked}; "
            f"robots.txt requests per origin: {', '.join(map(str, sorted(set(fetches))))}",
            "MIN GAP: the shortest time between two page requests to the origin, measured by its server.",
        ]


def _floor(known: Known | None) -> float | None:
    """The Crawl-delay floor the crawl kept for an origin, or None."""
    return known.floor if known is not None and known.floor else None


def _reading(robots: RobotsTxt, token: str) -> str:
    """``2 rules`` (for the agent's groups), ``allow all``, ``deny all``."""
    fixed = robots.fixed_verdict
    if fixed is not None:
        return READING.get(fixed, fixed.value)
    rules = sum(group.end - group.start for group in robots.groups_for(token))
    return f"{rules} rule{'s' if rules != 1 else ''}"
