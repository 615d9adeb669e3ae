"""``scrapy crawl demo``: every RFC 9309 case in one crawl, then one table.

The spider starts the embedded demo site (:mod:`demo_project.demo_site`),
asks each origin for a few pages and records what became of each request:

* an allowed page reaches ``page()``, the callback;
* a page the plugin drops reaches ``dropped()``, the errback, as an
  ``IgnoreRequest`` whose message names the verdict and the deciding line,
  ``Forbidden by robots.txt: disallowed_explicit (line 2: Disallow: /shop/)``.

When the crawl is over it prints the table to stdout (see :mod:`.base` and
:mod:`demo_project.report`).
"""

from __future__ import annotations

from typing import Any

import scrapy

from scrapy_rfc9309 import RobotsTxt, Verdict, robots_service
from scrapy_rfc9309.lifecycle import rfc9309_settings
from scrapy_rfc9309.origins import origin_of
from scrapy_rfc9309.robots.usage import Source
from scrapy_rfc9309.service import Known
from scrapy_rfc9309.signals import robots_txt_ready

from ..demo_site import ONE_HOST
from ..report import demo_table
from ..table import PageRow
from .base import DemoSiteSpider, dropped_row


class DemoSpider(DemoSiteSpider):
    name = "demo"

    # Spider-level overrides: custom_settings beat settings.py, for this spider only.
    custom_settings = {
        # Match robots.txt groups as "DemoBot", whatever USER_AGENT says.
        "ROBOTSTXT_USER_AGENT": "DemoBot",
        # The site is local: give up on a robots.txt after 5 s, not the default 30 s.
        "RFC9309_FETCH_TIMEOUT": 5,
        # What the pages are for: a page whose usage preferences say no to AI training is
        # skipped: robots.txt's Content-Usage and Content-Signal lines, and, read on the page
        # itself, its Content-Usage header, TDMRep (tdmrep.json, tdm-reservation header and meta
        # tag), X-Robots-Tag and robots meta tags (noai); a nofollow page's links are not followed.
        # Without it they are not read (robots.txt's are still reported).
        "RFC9309_USAGE": ["train-ai"],
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: origin -> (governing RobotsTxt, product token), from the plugin's signal
        self.robots: dict[str, tuple[RobotsTxt, str]] = {}
        #: origin name -> one row per page
        self.rows: dict[str, list[PageRow]] = {}
        #: origin name -> the nofollow directives of its page whose links the spider yielded
        self.nofollow: dict[str, str] = {}

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> DemoSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.robots_ready, signal=robots_txt_ready)
        return spider

    async def start(self):
        for origin in self.site.origins:
            if origin.spider not in (None, self.name):
                continue
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

    def page(self, response: scrapy.http.Response) -> Any:
        request = response.request
        known = self.robots.get(origin_of(request.url))
        if known is None:
            reason = Verdict.ALLOWED_NOT_OBEYED.value  # robots.txt never consulted
        else:
            robots, token = known
            reason = robots.check(request.url, token).reason  # the same object the plugin decided with
        provenance = response.meta.get("rfc9309") or {}
        reason += _stated(provenance)
        self._add(request, PageRow(request.meta["demo_path"], "allowed", reason))
        # the nofollow case: follow the page's links (the plugin drops them when the page says nofollow)
        name = request.meta["demo_origin"]
        origin = self.site.by_name(name)
        if origin.links:
            said = (provenance.get("nofollow") or {}).get("sources") or ()
            self.nofollow[name] = "; ".join(str(Source.from_dict(s)) for s in said)
            for path in origin.links:
                meta = {**{k: v for k, v in request.meta.items() if k.startswith("demo_")}, "demo_path": path}
                yield response.follow(path, callback=self.page, errback=self.dropped, meta=meta, dont_filter=True)

    def dropped(self, failure: Any) -> None:
        self._add(failure.request, dropped_row(failure))

    def _add(self, request: scrapy.Request, row: PageRow) -> None:
        self.rows.setdefault(request.meta["demo_origin"], []).append(row)

    # -- the table -------------------------------------------------------------------
    def report(self) -> str:
        service = robots_service(self.crawler)
        floors = {origin.origin: _floor(service.known(origin.origin)) for origin in self.site.origins}
        rows = {name: list(pages) for name, pages in self.rows.items()}
        for name, directive in self.nofollow.items():  # links yielded, never scheduled: the plugin dropped them
            done = {row.path for row in rows.get(name, ())}
            for path in self.site.by_name(name).links:
                if path not in done:
                    rows.setdefault(name, []).append(PageRow(path, "NOFOLLOW", f"{directive} (never requested)"))
        return demo_table(self.site, rfc9309_settings(self.crawler), self.robots, floors, rows)


def _stated(provenance: dict[str, Any]) -> str:
    """``; train-ai=y (line 4)``: the usage preferences stated for the page, if any, each
    with where: a robots.txt line, ``header``, ``tdmrep.json rule 2``, ``html line 4``."""
    said = []
    for label, item in (provenance.get("usage") or {}).items():
        if item["value"] is not None:
            where = ", ".join(_where(s) for s in item["sources"])
            said.append(f"{label}={'y' if item['value'] else 'n'} ({where})")
    return "; " + ", ".join(said) if said else ""


def _where(source: dict[str, Any]) -> str:
    origin, line = source["origin"], source["line"]
    if origin == "robots.txt":
        return f"line {line}"
    if origin == "tdmrep.json":
        return f"tdmrep.json rule {line}"
    if origin == "html":
        return f"html line {line}"
    return str(origin)


def _floor(known: Known | None) -> float | None:
    """The Crawl-delay floor the crawl kept for an origin, or None."""
    return known.floor if known is not None and known.floor else None
