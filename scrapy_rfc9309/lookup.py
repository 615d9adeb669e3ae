"""The robots.txt result of an origin, for code outside the middleware.

Spiders and extensions sometimes need the file itself (its sitemaps, its
Crawl-delay) and should not download it a second time.  The middleware keeps
one result per origin and fetches each origin once; :func:`governing_robots`
asks it through public surfaces only:

* the middleware's own ``process_request`` with a ``/robots.txt`` request of
  the origin: it waits for the in-flight fetch, or starts one, or answers from
  the cache, exactly as for a page (and counts as one checked request, with
  verdict ``allowed_robots_txt``; nothing is downloaded twice);
* its ``storage`` backend, which holds what was fetched (``RobotsEntry``),
  turned into the governing :class:`~scrapy_rfc9309.RobotsTxt` by the same
  table the middleware uses (:func:`~scrapy_rfc9309.robots.access.policy_for`).

This is the one place that reaches into the middleware from outside; a
public ``RobotsTxtMiddleware`` method could replace it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK

from .middleware import RobotsTxtMiddleware
from .origins import origin_of, robots_url
from .robots import parse
from .robots.access import Access, policy_for

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from .robots import RobotsTxt

__all__ = ["find_middleware", "governing_robots"]


def find_middleware(crawler: Crawler) -> RobotsTxtMiddleware:
    """The crawl's :class:`RobotsTxtMiddleware`; ``RuntimeError`` when the
    crawl is not running yet or the plugin is not enabled."""
    engine = crawler.engine
    if engine is None or engine.downloader is None:
        raise RuntimeError("the crawl is not running yet: ask from start() or a callback, not from __init__")
    for component in engine.downloader.middleware.middlewares:
        if isinstance(component, RobotsTxtMiddleware):
            return component
    raise RuntimeError(
        "scrapy-rfc9309's RobotsTxtMiddleware is not enabled in this crawl "
        "(ADDONS = {'scrapy_rfc9309.Addon': 0}, and RFC9309_ENABLED not False)"
    )


async def governing_robots(crawler: Crawler, url: str) -> RobotsTxt | None:
    """The :class:`~scrapy_rfc9309.RobotsTxt` that governs ``url``'s origin:
    the parsed file, or the allow-all / deny-all policy of an unavailable or
    unreachable one.  Fetched once through the middleware when not known yet.

    None when robots.txt is not consulted for that origin
    (``RFC9309_ORIGINS = {origin: {"obey": False}}``) or when the storage
    backend no longer holds the result.  ``ValueError`` for a non-http(s) URL.
    """
    origin = origin_of(url)
    if origin is None:
        raise ValueError(f"{url!r} is not an http(s) URL")
    middleware = find_middleware(crawler)
    policy = middleware.settings.for_origin(origin)
    if not policy.obey:
        return None
    probe = Request(robots_url(origin), callback=NO_CALLBACK, dont_filter=True)
    try:
        await middleware.process_request(probe)
    except IgnoreRequest:
        pass  # unreachable: the stored entry says so
    entry = await middleware.storage.get(origin)
    if entry is None:
        return None
    access = Access(entry.access)
    parsed = parse(entry.body, entry.content_type, middleware.settings.max_bytes) if access is Access.SUCCESS else None
    return policy_for(access, policy.unreachable, parsed)
