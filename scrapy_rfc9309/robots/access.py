"""What a robots.txt fetch means: RFC 9309 section 2.3.1 and 2.4, in one table.

The one place that maps an HTTP status (or a network error) to an access
result, an access result to the policy that governs the origin, and response
headers to how long that policy may be cached.  Pure: it knows statuses and
header strings, not Scrapy.

=========================  ===========  ============================================
fetch outcome              access       policy
=========================  ===========  ============================================
2xx                        success      the parsed file
3xx                        redirect     follow it (up to the redirect limit)
3xx beyond the limit,      unavailable  allow all (``allowed_unavailable``)
3xx without a Location
4xx other than 429         unavailable  allow all; the body is never parsed
429, 5xx, other statuses,  unreachable  deny all (``unknown_unreachable``), or allow
timeout, DNS, connection,               all (``allowed_unreachable_opt_in``) when the
TLS and decoding errors                 operator opted in
=========================  ===========  ============================================
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime
from urllib.parse import urljoin, urlsplit

from .robotstxt import RobotsTxt
from .verdicts import ValueEnum, Verdict


class Access(ValueEnum):
    """The result of trying to fetch a robots.txt (RFC 9309 section 2.3.1)."""

    #: 2xx: the file was fetched and is parsed
    SUCCESS = "success"
    #: 4xx other than 429, too many redirects: there are no rules, allow all
    UNAVAILABLE = "unavailable"
    #: 429, 5xx, network errors: the rules are unknown, complete disallow
    UNREACHABLE = "unreachable"
    #: 3xx: not final, follow the Location
    REDIRECT = "redirect"


# (first status, last status, access, stats class); first matching row wins.
STATUS_TABLE: tuple[tuple[int, int, Access, str], ...] = (
    (200, 299, Access.SUCCESS, "2xx"),
    (300, 399, Access.REDIRECT, "3xx"),
    (429, 429, Access.UNREACHABLE, "429"),
    (400, 499, Access.UNAVAILABLE, "4xx"),
    (500, 599, Access.UNREACHABLE, "5xx"),
)
#: statuses outside every row (1xx, 600+): the server said nothing usable
OTHER_STATUS = (Access.UNREACHABLE, "other")


def classify_status(status: int) -> tuple[Access, str]:
    """``(access, stats class)`` of an HTTP status, e.g. ``(UNAVAILABLE, "4xx")``."""
    for first, last, access, name in STATUS_TABLE:
        if first <= status <= last:
            return access, name
    return OTHER_STATUS


def classify_error(error: BaseException) -> tuple[Access, str]:
    """``(UNREACHABLE, "error/<class name>")``: any failure to get an answer
    (timeout, DNS, refused or reset connection, TLS, undecodable body)."""
    return Access.UNREACHABLE, f"error/{type(error).__name__}"


UNREACHABLE_POLICIES = ("deny", "wait", "allow")


def policy_for(access: Access, unreachable: str = "deny", parsed: RobotsTxt | None = None) -> RobotsTxt:
    """The :class:`RobotsTxt` that governs an origin after a final access result.

    ``unreachable`` is the operator's choice for unreachable files: ``"deny"``
    and ``"wait"`` (once the wait is over) deny all; ``"allow"`` is the
    documented, non-compliant opt-in to allow all.
    """
    if access is Access.SUCCESS:
        if parsed is None:
            raise ValueError("a successful fetch needs its parsed file")
        return parsed
    if access is Access.UNAVAILABLE:
        return RobotsTxt.allow_all()
    if access is Access.UNREACHABLE:
        if unreachable == "allow":
            return RobotsTxt.allow_all(Verdict.ALLOWED_UNREACHABLE_OPT_IN)
        if unreachable in ("deny", "wait"):
            return RobotsTxt.deny_all()
        raise ValueError(f"unknown unreachable policy {unreachable!r}")
    raise ValueError(f"{access} is not a final access result")


def freshness(
    cache_control: str | None = None,
    expires: str | None = None,
    date: str | None = None,
    age: str | None = None,
    *,
    now: float,
) -> float | None:
    """Seconds the response says it stays fresh (RFC 9111 section 4.2.1), or
    None when it says nothing.  ``no-store``/``no-cache`` and an invalid
    ``Expires`` count as 0 (already stale)."""
    lifetime: float | None = None
    if cache_control:
        for directive in cache_control.split(","):
            name, _, value = directive.strip().partition("=")
            name = name.strip().lower()
            if name in ("no-store", "no-cache"):
                lifetime = 0.0
                break
            if name == "max-age":
                try:
                    seconds = float(int(value.strip().strip('"')))
                except ValueError:
                    continue
                lifetime = seconds if lifetime is None else min(lifetime, seconds)
    if lifetime is None and expires is not None:
        expires_at = _http_date(expires)
        if expires_at is None:
            lifetime = 0.0
        else:
            base = _http_date(date) if date else None
            lifetime = expires_at - (base if base is not None else now)
    if lifetime is None:
        return None
    if age:
        try:
            lifetime -= max(0, int(age.strip()))
        except ValueError:
            pass
    return max(0.0, lifetime)


def cache_seconds(
    access: Access,
    fresh_for: float | None,
    *,
    cap: float,
    floor: float,
    unreachable_retry: float,
) -> float:
    """How long a final access result is used before robots.txt is fetched
    again.

    A file or an unavailable result lives ``cap`` seconds (at most 24 hours,
    RFC 9309 section 2.4), shorter when the response's own freshness says so,
    but never under ``floor`` (a ``no-cache`` robots.txt must not cost one
    fetch per page).  An unreachable result is retried after
    ``unreachable_retry`` seconds.
    """
    if access is Access.UNREACHABLE:
        return unreachable_retry
    if fresh_for is None:
        return cap
    return min(cap, max(floor, fresh_for))


def _http_date(text: str | None) -> float | None:
    if not text:
        return None
    try:
        moment = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment is None or moment.tzinfo is None:
        return None
    return moment.timestamp()


def redirect_target(url: str, location: bytes | None) -> str | None:
    """The URL a robots.txt redirect from ``url`` may be followed to, or None
    when its ``Location`` header gives none that is usable."""
    if not location:
        return None
    try:
        target = urljoin(url, location.decode("latin-1").strip())
        parts = urlsplit(target)
        parts.port  # noqa: B018 - raises ValueError past 65535
    except ValueError:  # "http://[broken", "http://host:99999/": the server's mistake
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None  # never follow robots.txt to file:, data:, ftp: ..., nor to no host
    if "@" in parts.netloc:
        return None  # credentials chosen by the server: Scrapy cannot send them, and they must not be logged
    return target
