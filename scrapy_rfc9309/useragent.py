"""From a User-Agent string to the RFC 9309 product token a robots.txt group names, one rule for every place a
User-Agent is given: the first product (``Name`` of ``Name/1.0 (...)``, or the one after ``compatible;``), letters,
``_`` and ``-`` only (RFC 9309 section 2.2.1); ``my bot/1.0`` is ambiguous: refused, never cut."""

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


def _named(text: str) -> str:
    """The part of a User-Agent that names the crawler: after ``compatible;`` in a Mozilla-style string, else all."""
    compatible = _COMPATIBLE.search(text)
    return compatible.group(1) if compatible and _first_product(compatible.group(1)) else text


def derive_token(user_agent: str | bytes | None) -> str:
    """The product token of ``user_agent`` as written (case kept); ValueError if none: a crawler must not guess."""
    if user_agent is None or not user_agent.strip():
        raise ValueError("no user agent to derive a robots.txt product token from")
    text = user_agent.decode("latin-1") if isinstance(user_agent, bytes) else user_agent
    named = _named(text)
    product = _first_product(named)
    rest = named.strip()[len(product) :]  # a space, then another word: which is the name?
    if rest[:1].isspace() and rest.lstrip()[:1] not in ("", "("):
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
    """The product tokens of a string or list (each by :func:`derive_token`'s rule; a request must be allowed by each
    token's group), in order, repeats dropped case-insensitively; ValueError for an empty list or any bad item."""
    if not isinstance(value, (list, tuple)):
        return (derive_token(value),)
    if not value:
        raise ValueError("an empty list of user agents names no robots.txt product token")
    tokens: dict[str, str] = {}
    for item in value:
        if not isinstance(item, (str, bytes)):
            raise ValueError(f"{item!r} is not a string: a list of user agents holds strings only")
        token = derive_token(item)
        tokens.setdefault(token.lower(), token)
    return tuple(tokens.values())


def lenient_token(user_agent: str | bytes | None) -> str | None:
    """:func:`derive_token` for others' strings (robots_parsed): else the leading letters, as Google (Bot2 -> Bot)."""
    try:
        return derive_token(user_agent)
    except ValueError:
        if not user_agent:
            return None
        text = user_agent.decode("latin-1") if isinstance(user_agent, bytes) else user_agent
        run = _TOKEN_RUN.match(_first_product(_named(text)))
        return run.group() if run else None
