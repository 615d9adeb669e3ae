"""The one function that keeps secrets out of what the plugin writes: every URL it logs, counts, records
or prints goes through :func:`mask_url` (docs/audit.md).  Masking a harmless value (``keyword=``) costs
nothing; printing a secret cannot be undone."""

from __future__ import annotations

import re
from functools import cache, lru_cache

#: what a masked part is replaced with
MASK = "***"
#: a query parameter whose lower-cased name contains one of these has its value masked
SECRET_NAMES = ("pass", "pwd", "token", "secret", "key", "auth", "sig", "session", "credential", "cookie")


@cache  # (the two regexes are compiled when first needed: most crawls log no URL with a query)
def _secret_name() -> re.Pattern[str]:
    return re.compile("|".join(SECRET_NAMES))


def mask_url(url: str) -> str:
    """``url`` with its password (``user:***@``; no password: ``***@``) and secret-named parameters masked."""
    return url if "@" not in url and "?" not in url and "#" not in url else _mask(url)


@lru_cache(maxsize=1024)
def _mask(url: str) -> str:
    head, hash_, fragment = url.partition("#")
    head, question, query = head.partition("?")
    scheme, sep, rest = head.partition("://")
    if sep:
        authority, slash, path = rest.partition("/")
        userinfo, at, host = authority.rpartition("@")
        if at:
            user, colon, _ = userinfo.partition(":")
            userinfo = f"{user}:{MASK}" if colon else MASK
            head = f"{scheme}{sep}{userinfo}@{host}{slash}{path}"
    if question:
        query = "&".join(_mask_pair(pair) for pair in query.split("&"))
    if hash_ and "=" in fragment:  # OAuth puts tokens there: #access_token=...
        fragment = "&".join(_mask_pair(pair) for pair in fragment.split("&"))
    return f"{head}{question}{query}{hash_}{fragment}"


@cache
def _url_in_text() -> re.Pattern[str]:
    return re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def mask_text(text: str) -> str:
    """``text`` (an error message, say) with every URL in it masked."""
    return text if "://" not in text else _url_in_text().sub(lambda found: mask_url(found.group(0)), text)


def _mask_pair(pair: str) -> str:
    name, equals, value = pair.partition("=")
    if equals and value and _secret_name().search(name.lower()):
        return f"{name}={MASK}"
    return pair


class Secret:
    """A secret (the audit key) whose ``repr``/``str`` are a mask; :meth:`reveal` gives the bytes to its one caller."""

    __slots__ = ("_value",)

    def __init__(self, value: bytes) -> None:
        self._value = value

    def reveal(self) -> bytes:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    __str__ = __repr__
