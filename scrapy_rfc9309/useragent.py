"""From a User-Agent string to the RFC 9309 product token a robots.txt names.

A robots.txt group names crawlers by product token (``User-agent: ExampleBot``),
not by the full User-Agent header (``ExampleBot/1.0 (+https://example.com)``).

The one rule, for ``ROBOTSTXT_USER_AGENT``/``USER_AGENT``, the per-origin
``user_agent``, the ``robotstxt_user_agent`` meta key and ``scrapy robots
--agent``: the token is the first product of the string (``Name`` of
``Name/1.0 (...)``, or a bare ``Name``); in a Mozilla-style string
(``Mozilla/5.0 (compatible; ExampleBot/1.0; +https://...)``) it is the product
after ``compatible;``, which is where crawlers put their name.  The token is
letters, ``_`` and ``-`` only (RFC 9309 2.2.1), and a name followed by a space
and more words (``my bot/1.0``, or ``Foo Bar/1.0`` after ``compatible;``) is
ambiguous: both are refused, never cut.  The same rule holds for a request's
own ``User-Agent`` header, which the middleware reads in Scrapy's order.

Several tokens at once (a list in ``ROBOTSTXT_USER_AGENT``, the per-origin
``user_agent`` or the meta key): :func:`derive_tokens`, the same rule for each.

Pure standard library: the middleware, the robots_parsed adapter and the tests
share it.
"""

from __future__ import annotations

import re
from typing import Any

from .robots import check_token

_COMPATIBLE = re.compile(r"compatible\s*;\s*([^;)]*)", re.IGNORECASE)
_TOKEN_RUN = re.compile(r"[A-Za-z_-]+")


_PRODUCT_END = re.compile(r"[\s/(;]")


def _first_product(text: str) -> str:
    """``ExampleBot`` from ``ExampleBot/1.0 (+https://...)``."""
    text = text.strip()
    end = _PRODUCT_END.search(text)
    return text[: end.start()] if end else text


def _ambiguous(text: str) -> bool:
    """Whether the first product is followed by a space and another word
    (``my bot/1.0``): which of them is the name cannot be told."""
    text = text.strip()
    end = _PRODUCT_END.search(text)
    if end is None or not end.group().isspace():
        return False
    rest = text[end.start() :].lstrip()
    return bool(rest) and rest[0] != "("


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
    text = user_agent.decode("latin-1") if isinstance(user_agent, bytes) else user_agent
    product = product_of(text)
    compatible = _COMPATIBLE.search(text)
    named = compatible.group(1) if compatible and _first_product(compatible.group(1)) else text
    if _ambiguous(named):
        raise ValueError(
            f"{text!r} is ambiguous: a robots.txt product token has no spaces (RFC 9309 section 2.2.1); "
            f"write the name as one word, e.g. {named.strip().replace(' ', '-', 1)!r}, or set "
            "ROBOTSTXT_USER_AGENT to your crawler's name, e.g. 'ExampleBot'"
        )
    try:
        check_token(product)
    except ValueError:
        raise ValueError(
            f"cannot derive a robots.txt product token from {user_agent!r}: its product "
            f"{product!r} is not made of letters, '_' and '-' only; set ROBOTSTXT_USER_AGENT "
            "to your crawler's name, e.g. 'ExampleBot'"
        ) from None
    return product


def derive_tokens(value: str | bytes | list[Any] | tuple[Any, ...] | None) -> tuple[str, ...]:
    """The product tokens of ``value``: one string (the rule of
    :func:`derive_token`), or a list/tuple of such strings, each held to the
    same rule.  A request must be allowed by every token's group.

    Order is kept and repeats (compared case-insensitively, as robots.txt
    compares them) are dropped.  Raises ``ValueError`` for an empty list or
    when any item names no valid token: one bad item is never skipped.
    """
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("an empty list of user agents names no robots.txt product token")
        tokens: list[str] = []
        seen: set[str] = set()
        for item in value:
            if not isinstance(item, (str, bytes)):
                raise ValueError(f"{item!r} is not a string: a list of user agents holds strings only")
            token = derive_token(item)
            if token.lower() not in seen:
                seen.add(token.lower())
                tokens.append(token)
        return tuple(tokens)
    return (derive_token(value),)


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
