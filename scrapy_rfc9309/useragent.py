"""From a User-Agent string to the RFC 9309 product token a robots.txt names.

A robots.txt group names crawlers by product token (``User-agent: ExampleBot``),
not by the full User-Agent header (``ExampleBot/1.0 (+https://example.com)``).
The token is the first product of the string; in a Mozilla-style string
(``Mozilla/5.0 (compatible; ExampleBot/1.0; +https://...)``) it is the product
after ``compatible;``, which is where crawlers put their name.

Pure standard library: the middleware, the robots_parsed adapter and the tests
share it.
"""

from __future__ import annotations

import re

from .robots import check_token

_COMPATIBLE = re.compile(r"compatible\s*;\s*([^;)]*)", re.IGNORECASE)
_TOKEN_RUN = re.compile(r"[A-Za-z_-]+")


def _first_product(text: str) -> str:
    """``ExampleBot`` from ``ExampleBot/1.0 (+https://...)``."""
    text = text.strip()
    for stop in (" ", "\t", "/", "(", ";"):
        cut = text.find(stop)
        if cut >= 0:
            text = text[:cut]
    return text


def product_of(user_agent: str | bytes) -> str:
    """The product a User-Agent string names, before validation."""
    if isinstance(user_agent, bytes):
        user_agent = user_agent.decode("latin-1")
    compatible = _COMPATIBLE.search(user_agent)
    if compatible and _first_product(compatible.group(1)):
        return _first_product(compatible.group(1))
    return _first_product(user_agent)


def derive_token(user_agent: str | bytes | None) -> str:
    """The product token of ``user_agent`` as written (case kept).

    A bare token is returned as is.  Raises ``ValueError`` when the string
    names no valid token (letters, ``_`` and ``-`` only, RFC 9309 section
    2.2.1): a crawler that cannot name itself must not guess.
    """
    if user_agent is None or not (user_agent.strip() if isinstance(user_agent, str) else user_agent.strip()):
        raise ValueError("no user agent to derive a robots.txt product token from")
    product = product_of(user_agent)
    try:
        check_token(product)
    except ValueError:
        raise ValueError(
            f"cannot derive a robots.txt product token from {user_agent!r}: its product "
            f"{product!r} is not made of letters, '_' and '-' only; set ROBOTSTXT_USER_AGENT "
            "to your crawler's name, e.g. 'ExampleBot'"
        ) from None
    return product


def lenient_token(user_agent: str | bytes | None) -> str | None:
    """Like :func:`derive_token`, but for strings written by others (the
    ``robots_parsed`` adapter): fall back to the leading letters of the
    product, as Google's parser does (``Bot2/1.0`` -> ``Bot``); None when
    there are none."""
    try:
        return derive_token(user_agent)
    except ValueError:
        if not user_agent:
            return None
        run = _TOKEN_RUN.match(product_of(user_agent))
        return run.group() if run else None
