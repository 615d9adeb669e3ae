"""What a response states about its own use, read where it arrives.

The middleware's ``process_response`` calls :func:`read_response` for a
response whose request declares purposes (or under ``RFC9309_USAGE_REPORT``):
every usage source a response can carry, as one statement (docs/usage_preferences.md,
"Every source of usage statements"):

* the ``Content-Usage`` header (:func:`.robots.usage.from_header`);
* TDMRep (:func:`.robots.tdmrep.declare`): the origin's tdmrep.json rule for
  the URL, superseded by the ``tdm-reservation`` / ``tdm-policy`` headers,
  superseded by the HTML head's ``tdm-*`` meta tags (the report's priority);
* the page's robots directives (:func:`.robots.directives.page_directives`):
  ``X-Robots-Tag`` lines and ``<meta name="robots">`` / ``<meta name="<token>">``
  tags (``noai``, ``noimageai``, ``noindex``, ``none``; ``nofollow`` apart).

The sources combine most restrictive first, as every usage statement does.
The HTML head is read only for an HTML response, only its first bytes
(:func:`.robots.html_head.read_head` bounds them in bytes and steps), and
only the meta names that state something here.  Nothing here raises on any
input, and none of it runs for a crawl that declares no purpose.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from .robots.directives import GENERIC_NAMES, NOTHING, page_directives
from .robots.html_head import MetaTag, is_html, read_head
from .robots.tdmrep import POLICY, RESERVATION, declare
from .robots.usage import UNKNOWN, Source, Usage, combine, from_header

if TYPE_CHECKING:
    from scrapy.http import Response

    from .robots.tdmrep import TdmRep

__all__ = ["PageReading", "read_response"]


class PageReading(NamedTuple):
    """What one response states: ``usage`` (its own statements, with their
    sources; robots.txt's are not in it), the ``nofollow`` directives that
    address the crawler, and whether its HTML head was read."""

    usage: Usage
    nofollow: tuple[Source, ...]
    head_read: bool


@lru_cache(maxsize=64)
def meta_names(tokens: tuple[str, ...]) -> frozenset[str]:
    """The meta tag names read: ``robots``, each product token, ``tdm-reservation``, ``tdm-policy``."""
    return frozenset({*GENERIC_NAMES, *(t.lower() for t in tokens), RESERVATION, POLICY})


def read_response(response: Response, url: str, tokens: Sequence[str], tdmrep: TdmRep | None) -> PageReading:
    """Every usage statement ``response`` makes about itself, for a crawler
    named by ``tokens``, with ``tdmrep`` the origin's tdmrep.json (None or
    :data:`~.robots.tdmrep.EMPTY` when it has none)."""
    headers = response.headers
    content_usage = headers.getlist(b"Content-Usage")
    robots_tag = headers.getlist(b"X-Robots-Tag")
    reservation = headers.getlist(RESERVATION)
    policy = headers.getlist(POLICY)
    content_type = headers.get(b"Content-Type")
    tokens = tuple(tokens)
    metas: tuple[MetaTag, ...] = ()
    head_read = False
    if is_html(content_type):
        metas = read_head(response.body, content_type, meta_names(tokens)).metas
        head_read = True
    declaration, _ = declare(tdmrep, url, reservation, policy, metas)
    page = page_directives(robots_tag, metas, tokens) if robots_tag or metas else NOTHING
    parts = [
        p for p in (from_header(content_usage) if content_usage else UNKNOWN, declaration.usage(), page.usage) if p
    ]
    usage = UNKNOWN if not parts else parts[0] if len(parts) == 1 else combine(parts)
    return PageReading(usage, page.nofollow_sources, head_read)
