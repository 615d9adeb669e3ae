"""The robots.txt result of an origin, for code outside the middleware.

Spiders and extensions sometimes need the file itself (its sitemaps, its
Crawl-delay) and should not download it a second time.  The middleware keeps
one result per origin and fetches each origin once;
:func:`governing_robots` asks it through
:meth:`RobotsTxtMiddleware.robots_txt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .middleware import RobotsTxtMiddleware
from .origins import origin_of

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
    (``RFC9309_ORIGINS = {origin: {"obey": False}}``).  ``ValueError`` for a
    non-http(s) URL.
    """
    if origin_of(url) is None:  # a usage error comes first, whatever the crawl
        raise ValueError(f"{url!r} is not an http(s) URL")
    return await find_middleware(crawler).robots_txt(url)
