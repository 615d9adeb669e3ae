"""Every ``RFC9309_*`` setting, read once and handed down as frozen objects.

``Rfc9309Settings.from_settings(crawler.settings)`` validates everything at
start-up (a bad value stops the crawl before the first request, with one line
naming the setting and what it allows) and resolves the per-origin overrides
of ``RFC9309_ORIGINS`` into :class:`OriginPolicy` objects.  Per-spider values
come for free: Scrapy builds one settings object per crawler, so a spider's
``custom_settings`` are already merged in.

Sixteen settings (:data:`DEFAULTS`): a mode of one thing is a form of its
setting (``"wait:60"``, a Redis URL's ``?prefix=``, the dicts of
``RFC9309_AUDIT`` and ``RFC9309_USAGE``), and what no crawl tunes is a
constant below, read when the settings are read (a test may change one).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .addresses import parse_networks
from .masking import Secret, mask_text
from .origins import origin_of
from .robots.access import UNREACHABLE_POLICIES
from .robots.text import shorten
from .storage.base import RETRY_AFTER
from .storage.factory import DEFAULT_REDIS_PREFIX, REDIS_SCHEMES, check_storage, split_prefix
from .useragent import derive_tokens

#: RFC 9309 section 2.4: a cached robots.txt should not be used for more than 24 hours.
MAX_CACHE_SECONDS = 86_400
#: RFC 9309 section 2.5: at least 500 KiB must be parsed.
MIN_MAX_BYTES = 512_000
#: the environment variable that gives the audit trail's HMAC key when RFC9309_AUDIT does not
AUDIT_KEY = "RFC9309_AUDIT_KEY"
#: a shorter key could be guessed from the trail (every record is an HMAC of known text)
MIN_AUDIT_KEY_BYTES = 16

# -- constants (were settings; docs/middleware.md lists them) ---------------------------------
#: redirects followed for one robots.txt: RFC 9309 section 2.2.2's minimum of five
MAX_REDIRECTS = 5
#: seconds before an unreachable robots.txt is fetched again (at most RFC9309_CACHE_SECONDS)
RETRY_UNREACHABLE_SECONDS = 300.0
#: the shortest a fetched file is kept, whatever its Cache-Control says (at most
#: RFC9309_CACHE_SECONDS): a ``no-cache`` robots.txt must not cost one fetch per page
CACHE_MIN_SECONDS = 60.0
#: seconds between attempts to use a store again after it failed mid-crawl
STORAGE_RETRY_SECONDS = RETRY_AFTER
#: a stored copy younger than 30 days stands in for an unreachable re-fetch (RFC 9309 section 2.4)
STALE_IF_UNREACHABLE = True
#: RFC9309_UNREACHABLE = "wait": seconds a crawl retries an unreachable robots.txt before denying
UNREACHABLE_WAIT_SECONDS = 300.0
#: RFC9309_CRAWL_DELAY = True: the longest Crawl-delay (or Request-rate interval) obeyed
MAX_CRAWL_DELAY_SECONDS = 60.0

DEFAULTS: dict[str, Any] = {
    "RFC9309_ENABLED": True,
    # per-origin overrides: {"https://host": {"obey", "user_agent", "unreachable", "usage"}}
    "RFC9309_ORIGINS": {},
    # the project's own scheduler, wrapped by the gate (scrapy_rfc9309.gate); the add-on
    # moves SCHEDULER here; None: Scrapy's
    "RFC9309_SCHEDULER": None,
    # requests the gate holds at most (origin not resolved yet, Crawl-delay turn to come)
    "RFC9309_MAX_HELD": 100_000,
    # None: scrapy-redis's server when scrapy-redis is the scheduler, else a SQLite
    # file inside JOBDIR when JOBDIR is set, else "memory"; a Redis URL may end in
    # ?prefix=<key prefix> (default "rfc9309:")
    "RFC9309_STORAGE": None,
    # "deny", "allow", "wait" (300 s) or "wait:<seconds>"
    "RFC9309_UNREACHABLE": "deny",
    "RFC9309_CACHE_SECONDS": 86_400.0,
    "RFC9309_CACHE_MAX_ORIGINS": 10_000,
    "RFC9309_FETCH_TIMEOUT": 30.0,
    # robots.txt fetches at once, outside CONCURRENT_REQUESTS; None: max(64, 4 x CONCURRENT_REQUESTS)
    "RFC9309_FETCH_CONCURRENCY": None,
    "RFC9309_MAX_BYTES": 512_000,
    # True: Crawl-delay floors, capped at 60 s; False: none; a number: floors capped at it
    "RFC9309_CRAWL_DELAY": True,
    # None: every address that is not globally routable is internal; else a list of
    # networks ([]: none, so a public robots.txt may redirect anywhere)
    "RFC9309_INTERNAL_NETWORKS": None,
    # the audit trail (scrapy_rfc9309.audit, docs/audit.md): a JSON Lines file, or
    # {"path", "allowed", "sync", "key"}; off by default
    "RFC9309_AUDIT": None,
    # AI usage preferences (docs/usage_preferences.md): the declared purposes, or
    # {"purposes", "header", "unknown", "report", "nofollow"}
    "RFC9309_USAGE": (),
    # fetch a new origin's robots.txt when its first request is scheduled, not when the
    # gate takes it out of the scheduler: for crawls whose requests wait long in the scheduler
    "RFC9309_EARLY_FETCH": False,
}

#: the longest a refused setting's message may be (a value in it is shortened first)
MESSAGE_CHARS = 1_000

_ORIGIN_KEYS = ("obey", "user_agent", "unreachable", "usage")
USAGE_HEADER_CHOICES = ("drop", "mark")
USAGE_UNKNOWN_CHOICES = ("allow", "deny")
#: the keys of RFC9309_USAGE's dict form
USAGE_KEYS = ("purposes", "header", "unknown", "report", "nofollow")
#: the keys of RFC9309_AUDIT's dict form
AUDIT_KEYS = ("path", "allowed", "sync", "key")


class InvalidSetting(ValueError):
    """A setting the plugin cannot run with.  Its message is one line: the
    setting, its value (secrets masked, a long value shortened) and what is
    allowed; the crawl (or ``scrapy robots``) stops on it."""


def one_line(text: str) -> str:
    """``text`` on one line, secrets masked, at most :data:`MESSAGE_CHARS` long."""
    return shorten(mask_text(" ".join(text.splitlines())), MESSAGE_CHARS)


def _shown(value: Any) -> str:
    """A setting's value as a message shows it: its repr, secrets masked,
    shortened when long (a JSON document given with ``-s``)."""
    return shorten(mask_text(repr(value)))


@dataclass(frozen=True)
class OriginPolicy:
    """What applies to one origin once every override is resolved."""

    obey: bool
    #: the product token robots.txt groups are selected with
    user_agent: str
    #: "deny", "wait" or "allow"
    unreachable: str
    #: every product token a request must be allowed by (``user_agent`` first);
    #: ``(user_agent,)`` when not given
    user_agents: tuple[str, ...] = ()
    #: the tokens come from ``USER_AGENT`` (neither ``ROBOTSTXT_USER_AGENT`` nor a
    #: per-origin ``user_agent``): a request's own ``User-Agent`` header comes first,
    #: Scrapy's order
    from_user_agent: bool = False
    #: the declared purposes (usage categories, e.g. ``("train-ai",)``); none: nothing enforced
    usage: tuple[str, ...] = ()
    #: with ``unreachable == "wait"``: seconds an unreachable robots.txt is retried before denying
    unreachable_wait: float = UNREACHABLE_WAIT_SECONDS

    def __post_init__(self) -> None:
        if not self.user_agents:
            object.__setattr__(self, "user_agents", (self.user_agent,))


@dataclass(frozen=True)
class Rfc9309Settings:
    enabled: bool = True
    max_bytes: int = 512_000
    #: :data:`MAX_REDIRECTS`
    max_redirects: int = MAX_REDIRECTS
    fetch_timeout: float = 30.0
    #: robots.txt fetches running at once (the lane, outside CONCURRENT_REQUESTS)
    fetch_concurrency: int = 64
    #: RFC9309_UNREACHABLE's mode: "deny", "wait" or "allow"
    unreachable: str = "deny"
    #: RFC9309_UNREACHABLE's seconds of "wait" (per origin: OriginPolicy.unreachable_wait)
    unreachable_wait: float = UNREACHABLE_WAIT_SECONDS
    #: :data:`RETRY_UNREACHABLE_SECONDS`, at most ``cache_seconds``
    retry_unreachable_seconds: float = RETRY_UNREACHABLE_SECONDS
    cache_seconds: float = 86_400.0
    #: :data:`CACHE_MIN_SECONDS`, at most ``cache_seconds``
    cache_min_seconds: float = CACHE_MIN_SECONDS
    cache_max_origins: int = 10_000
    #: start a new origin's fetch when its first request is scheduled, not when the gate takes it out
    early_fetch: bool = False
    #: requests the gate holds at most
    max_held: int = 100_000
    #: the store URL, resolved (see scrapy_rfc9309.storage.factory); a Redis URL without
    #: its ``prefix`` parameter (that is ``redis_prefix``), as redis-py reads it
    storage: str = "memory"
    #: :data:`STORAGE_RETRY_SECONDS`
    storage_retry_seconds: float = STORAGE_RETRY_SECONDS
    #: :data:`STALE_IF_UNREACHABLE`
    stale_if_unreachable: bool = STALE_IF_UNREACHABLE
    #: the prefix of every Redis key: the storage URL's ``?prefix=``, else ``rfc9309:``
    redis_prefix: str = DEFAULT_REDIS_PREFIX
    #: the crawl's product token, and where it came from (for the start-up log line)
    user_agent: str = "Scrapy"
    user_agent_source: str = "USER_AGENT"
    #: every product token of the crawl (ROBOTSTXT_USER_AGENT may be a list); user_agent is the first
    user_agents: tuple[str, ...] = ()
    #: canonical origin -> its resolved policy (only origins named in RFC9309_ORIGINS)
    origins: Mapping[str, OriginPolicy] = field(default_factory=lambda: MappingProxyType({}))
    # -- RFC9309_CRAWL_DELAY --
    #: Crawl-delay floors are kept
    crawl_delay: bool = True
    #: the longest floor kept (a longer Crawl-delay is cut to it)
    max_crawl_delay: float = MAX_CRAWL_DELAY_SECONDS
    # -- RFC9309_AUDIT (scrapy_rfc9309.audit) --
    #: the JSON Lines file (feed-style %(name)s / %(time)s placeholders unexpanded), or None
    audit: str | None = None
    #: write a record for every allowed request too (always with audit_sync)
    audit_allowed: bool = False
    #: the HMAC key of the trail's chain (RFC9309_AUDIT's "key", or the environment), masked when printed
    audit_key: Secret | None = field(default=None, repr=False)
    #: write (and flush) each record before the request it decides goes on
    audit_sync: bool = False
    # -- RFC9309_INTERNAL_NETWORKS (scrapy_rfc9309.fetch, scrapy_rfc9309.addresses) --
    #: no network is internal (``[]``): a public origin's robots.txt may redirect anywhere
    allow_private_redirects: bool = False
    #: the networks that count as internal, or None for every address not globally routable
    internal_networks: tuple[Any, ...] | None = None
    # -- RFC9309_USAGE: AI usage preferences (scrapy_rfc9309.robots.usage) --
    #: the crawl's declared purposes (usage categories); per origin in OriginPolicy.usage
    usage: tuple[str, ...] = ()
    #: "drop" or "mark" a response whose Content-Usage header disallows a declared purpose
    usage_header: str = "drop"
    #: an unknown preference for a declared purpose counts as disallowed
    usage_unknown_denies: bool = False
    #: read and report every source of usage statements, purposes declared or not (enforce nothing new)
    usage_report: bool = False
    #: drop the requests yielded from a page whose directives say nofollow (scrapy_rfc9309.nofollow)
    nofollow: bool = True

    @classmethod
    def from_settings(cls, settings: Any) -> Rfc9309Settings:
        """Read and validate; ``settings`` is a Scrapy ``BaseSettings`` (or a
        plain mapping, for tests of the pure parts).  :class:`InvalidSetting`
        (a ``ValueError``) for the first bad value, naming it in one line."""
        try:
            return cls._read(settings)
        except ValueError as exc:
            raise InvalidSetting(one_line(str(exc))) from None

    @classmethod
    def _read(cls, settings: Any) -> Rfc9309Settings:
        problem = unreadable_scrapy_setting(settings)
        if problem is not None:
            raise ValueError(problem)
        _refuse_unknown(settings)
        get = _getter(settings)
        enabled = _bool(get("RFC9309_ENABLED"), "RFC9309_ENABLED")
        max_bytes = _number(get("RFC9309_MAX_BYTES"), "RFC9309_MAX_BYTES", int)
        if max_bytes < MIN_MAX_BYTES:
            raise ValueError(
                f"RFC9309_MAX_BYTES={max_bytes} is below {MIN_MAX_BYTES:,}: RFC 9309 section 2.5 "
                "requires parsing at least 500 KiB"
            )
        cache_seconds = _number(get("RFC9309_CACHE_SECONDS"), "RFC9309_CACHE_SECONDS", float)
        if cache_seconds > MAX_CACHE_SECONDS:
            cache_seconds = float(MAX_CACHE_SECONDS)  # the RFC's 24 hours is a cap, not a default
        unreachable, unreachable_wait = unreachable_mode(get("RFC9309_UNREACHABLE"), "RFC9309_UNREACHABLE")
        ua_setting = get("ROBOTSTXT_USER_AGENT")
        source = "ROBOTSTXT_USER_AGENT" if ua_setting else "USER_AGENT"
        try:
            tokens = derive_tokens(_listish(ua_setting or get("USER_AGENT")))
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
        token = tokens[0]
        usage = _usage(get("RFC9309_USAGE"))
        origins = _origins(
            get("RFC9309_ORIGINS") or {},
            tokens,
            (unreachable, unreachable_wait),
            source == "USER_AGENT",
            usage["usage"],
        )
        audit = _audit(get("RFC9309_AUDIT"))
        storage, redis_prefix = _storage(get("RFC9309_STORAGE"), get("JOBDIR"), settings)
        crawl_delay, max_crawl_delay = _crawl_delay(get("RFC9309_CRAWL_DELAY"))
        internal_networks = _internal_networks(get("RFC9309_INTERNAL_NETWORKS"))
        return cls(
            enabled=enabled,
            max_bytes=max_bytes,
            max_redirects=MAX_REDIRECTS,
            fetch_timeout=_number(get("RFC9309_FETCH_TIMEOUT"), "RFC9309_FETCH_TIMEOUT", float, positive=True),
            fetch_concurrency=_fetch_concurrency(get("RFC9309_FETCH_CONCURRENCY"), get("CONCURRENT_REQUESTS")),
            unreachable=unreachable,
            unreachable_wait=unreachable_wait,
            retry_unreachable_seconds=min(RETRY_UNREACHABLE_SECONDS, cache_seconds),
            cache_seconds=cache_seconds,
            cache_min_seconds=min(CACHE_MIN_SECONDS, cache_seconds),
            cache_max_origins=_number(
                get("RFC9309_CACHE_MAX_ORIGINS"), "RFC9309_CACHE_MAX_ORIGINS", int, positive=True
            ),
            early_fetch=_bool(get("RFC9309_EARLY_FETCH"), "RFC9309_EARLY_FETCH"),
            max_held=_max_held(get("RFC9309_MAX_HELD")),
            storage=storage,
            storage_retry_seconds=STORAGE_RETRY_SECONDS,
            stale_if_unreachable=STALE_IF_UNREACHABLE,
            redis_prefix=redis_prefix,
            user_agent=token,
            user_agents=tokens,
            user_agent_source=source,
            origins=MappingProxyType(origins),
            crawl_delay=crawl_delay,
            max_crawl_delay=max_crawl_delay,
            **audit,
            allow_private_redirects=internal_networks == (),
            internal_networks=internal_networks,
            **usage,
        )

    def __post_init__(self) -> None:
        if not self.user_agents:
            object.__setattr__(self, "user_agents", (self.user_agent,))
        # built once: for_origin runs for every request
        from_user_agent = self.user_agent_source == "USER_AGENT"
        policy = OriginPolicy(
            True,
            self.user_agent,
            self.unreachable,
            self.user_agents,
            from_user_agent=from_user_agent,
            usage=self.usage,
            unreachable_wait=self.unreachable_wait,
        )
        object.__setattr__(self, "_default_policy", policy)

    @property
    def declares_purposes(self) -> bool:
        """Whether a purpose is declared for the crawl or for an origin (RFC9309_USAGE, RFC9309_ORIGINS)."""
        return bool(self.usage) or any(p.usage for p in self.origins.values())

    @property
    def reads_pages(self) -> bool:
        """Whether any response of the crawl may have its other usage sources read
        (tdmrep.json, page directives, the HTML head) without a request's own
        ``rfc9309_usage``: a purpose declared for the crawl or an origin, or the report asked."""
        return self.usage_report or self.declares_purposes

    @property
    def follows_nofollow(self) -> bool:
        """Whether the nofollow spider middleware runs: RFC9309_USAGE's "nofollow", and a
        purpose declared for the crawl or an origin (a crawl that declares none pays nothing)."""
        return self.nofollow and self.declares_purposes

    def for_origin(self, origin: str) -> OriginPolicy:
        """The policy of ``origin`` (a canonical origin string): its
        ``RFC9309_ORIGINS`` entry, else the crawl's defaults."""
        return self.origins.get(origin) or self._default_policy  # type: ignore[attr-defined]


def _max_held(value: Any) -> int:
    """RFC9309_MAX_HELD, a whole number of at least 1 (100,000 by default, in every
    crawl): a bound on the gate's memory, not on politeness, so requests waiting
    for a Crawl-delay turn never keep other origins' pages out."""
    return 100_000 if value is None else int(_number(value, "RFC9309_MAX_HELD", int, positive=True))


#: Scrapy settings the plugin reads, with how Scrapy reads them: a value Scrapy cannot read
#: (``-s CONCURRENT_REQUESTS=abc``) is refused as a bad RFC9309_* one is, in one line naming it
SCRAPY_SETTINGS = {
    "ROBOTSTXT_OBEY": "getbool",
    "CONCURRENT_REQUESTS": "getint",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "getint",
    "CONCURRENT_REQUESTS_PER_IP": "getint",
}


def unreadable_scrapy_setting(settings: Any, fix: bool = False) -> str | None:
    """The first of :data:`SCRAPY_SETTINGS` that Scrapy cannot read, said in one
    line (None when all can be read, or for a plain mapping).  ``fix``: put
    Scrapy's default in place of every such value, at its priority (the
    add-on does, so that Scrapy starts and the crawl is refused in order)."""
    if not hasattr(settings, "getint"):
        return None
    problem = None
    for name, getter in SCRAPY_SETTINGS.items():
        try:
            getattr(settings, getter)(name)
        except (TypeError, ValueError):
            from scrapy.settings import Settings

            default = Settings().get(name) or (0 if getter == "getint" else False)  # (PER_IP: deprecated, unset)
            wanted = "a boolean: use True or False" if getter == "getbool" else "a whole number: give one"
            problem = problem or f"{name}={_shown(settings.get(name))} is not {wanted} (Scrapy's default is {default})"
            if fix:
                settings.set(name, default, settings.getpriority(name))
    return problem


#: the gate's import path: the add-on sets SCHEDULER to it
GATE = "scrapy_rfc9309.gate.GateScheduler"
SCRAPY_SCHEDULER = "scrapy.core.scheduler.Scheduler"


def project_scheduler(settings: Any) -> Any:
    """The scheduler the project chose (a class or an import path): ``SCHEDULER``,
    or ``RFC9309_SCHEDULER`` where the gate took its place."""
    scheduler = settings.get("SCHEDULER")
    if not scheduler:
        return scheduler
    name = scheduler if isinstance(scheduler, str) else f"{scheduler.__module__}.{scheduler.__qualname__}"
    if name == GATE:
        return settings.get("RFC9309_SCHEDULER") or SCRAPY_SCHEDULER
    return scheduler


def audit_key(value: Any = None, where: str = "RFC9309_AUDIT['key']") -> Secret | None:
    """The audit trail's HMAC key: ``value`` (a str, UTF-8, or bytes; at least
    :data:`MIN_AUDIT_KEY_BYTES`; ``where`` names it in a message), else the
    environment variable :data:`AUDIT_KEY`, else None.  No message names the value."""
    if value is None or value == "":
        value, where = os.environ.get(AUDIT_KEY) or None, f"the environment variable {AUDIT_KEY}"
    if value is None:
        return None
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, bytes):
        raise ValueError(f"{where} must be a string (or bytes), not {type(value).__name__}")
    if len(value) < MIN_AUDIT_KEY_BYTES:
        raise ValueError(
            f"{where} is too short ({len(value)} bytes): at least {MIN_AUDIT_KEY_BYTES}, e.g. "
            "python -c 'import secrets; print(secrets.token_hex(32))'"
        )
    return Secret(value)


def _refuse_unknown(settings: Any) -> None:
    """``ValueError`` for an ``RFC9309_*`` setting the plugin does not read (a typo,
    or a name of a development version before the settings were merged): left
    alone, it would change nothing, silently."""
    try:
        names = [name for name in settings if isinstance(name, str) and name.startswith("RFC9309_")]
    except TypeError:
        return  # not a mapping: nothing to check
    for name in sorted(names):
        if name in DEFAULTS or settings.get(name) is None:
            continue
        raise ValueError(
            f"{name} is not a setting of scrapy-rfc9309 (docs/middleware.md lists them): {', '.join(DEFAULTS)}"
        )


def _getter(settings: Any):
    def get(name: str) -> Any:
        value = settings.get(name) if hasattr(settings, "get") else None
        if value is None and name in DEFAULTS:
            return DEFAULTS[name]
        if value is None and name == "USER_AGENT":
            return "Scrapy"  # Scrapy's default names its product so; only a plain mapping lacks it
        return value

    return get


def _bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise ValueError(f"{name}={_shown(value)} is not a boolean: use True or False")


def _number(value: Any, name: str, kind: type, positive: bool = False):
    """A finite number of ``kind`` (int or float), zero or more (or above zero).

    nan and inf are refused: every comparison with nan is False (a timeout of
    nan denies every origin, a cache lifetime of nan re-fetches for every
    request), and inf turns a bound into none.  An int setting refuses a
    fraction (``2.7`` would silently become 2)."""
    wanted = f"give {'a whole number' if kind is int else 'a number'} {'above zero' if positive else 'of zero or more'}"
    if isinstance(value, bool):
        raise ValueError(f"{name}={_shown(value)} is not a number: {wanted}")
    number: float | int
    if isinstance(value, int):
        number = value
    else:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name}={_shown(value)} is not a number: {wanted}") from None
        if not math.isfinite(number):
            raise ValueError(f"{name}={_shown(value)} is not a finite number: {wanted}")
    if kind is int:
        if not float(number).is_integer():
            raise ValueError(f"{name}={_shown(value)} is not a whole number: {wanted}")
        number = int(number)
    else:
        number = float(number)
    if number < 0 or (positive and number == 0):
        raise ValueError(f"{name}={_shown(value)} is out of range: {wanted}")
    return number


def _choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise ValueError(f"{name}={_shown(value)}: choose one of {', '.join(choices)}")
    return value.strip().lower()


def _json_dict(value: Any, name: str, example: str) -> Any:
    """``value``, or the dict a JSON object given on the command line
    (``-s 'NAME={...}'``) holds; ``ValueError`` naming ``name`` for bad JSON."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{name} is not valid JSON ({exc}): give e.g. {example}") from None
    return value


def _unknown_keys(value: Mapping[Any, Any], name: str, known: tuple[str, ...]) -> None:
    unknown = sorted(str(key) for key in value if key not in known)
    if unknown:
        raise ValueError(f"{name}: unknown key(s) {unknown}; known: {', '.join(known)}")


def unreachable_mode(value: Any, name: str) -> tuple[str, float]:
    """``RFC9309_UNREACHABLE`` (or an origin's ``unreachable``): ``"deny"``,
    ``"allow"``, ``"wait"`` (:data:`UNREACHABLE_WAIT_SECONDS`) or
    ``"wait:<seconds>"``, as ``(mode, seconds of wait)``."""
    allowed = f"choose one of {', '.join(UNREACHABLE_POLICIES)}, or 'wait:<seconds>' (e.g. 'wait:60')"
    text = value.strip().lower() if isinstance(value, str) else None
    if text is None:
        raise ValueError(f"{name}={_shown(value)}: {allowed}")
    mode, colon, seconds = text.partition(":")
    mode = mode.strip()
    if mode not in UNREACHABLE_POLICIES or (colon and mode != "wait"):
        raise ValueError(f"{name}={_shown(value)}: {allowed}")
    if not colon:
        return mode, UNREACHABLE_WAIT_SECONDS
    try:
        wait = float(seconds)
    except ValueError:
        wait = math.nan
    if not math.isfinite(wait) or wait <= 0:
        raise ValueError(f"{name}={_shown(value)}: the seconds of 'wait:<seconds>' must be a number above zero")
    return mode, wait


def _crawl_delay(value: Any) -> tuple[bool, float]:
    """``RFC9309_CRAWL_DELAY``: True (floors, capped at :data:`MAX_CRAWL_DELAY_SECONDS`),
    False (none) or a number of seconds (floors, capped at it), as ``(on, cap)``."""
    name = "RFC9309_CRAWL_DELAY"
    allowed = "use True (floors, capped at 60 s), False (no floors) or the longest floor in seconds, e.g. 30"
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        value = value.strip().lower() == "true"
    if isinstance(value, bool):
        return value, MAX_CRAWL_DELAY_SECONDS
    try:
        cap = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={_shown(value)}: {allowed}") from None
    if not math.isfinite(cap) or cap <= 0:
        raise ValueError(f"{name}={_shown(value)}: {allowed}")
    return True, cap


def _internal_networks(value: Any) -> tuple[Any, ...] | None:
    """``RFC9309_INTERNAL_NETWORKS``: None (every address not globally routable),
    or a list of networks; ``[]`` makes none internal."""
    if isinstance(value, str) and not value.strip():
        return None  # -s RFC9309_INTERNAL_NETWORKS= : the default, not "nothing is internal"
    return parse_networks(value, "RFC9309_INTERNAL_NETWORKS")


def _audit(value: Any) -> dict[str, Any]:
    """``RFC9309_AUDIT``: None, a path, or ``{"path", "allowed", "sync", "key"}``
    (a JSON object from the command line), as the ``audit*`` fields.  The key,
    given or from the environment, is checked even without a path: a bad key
    is a bad setting."""
    name = "RFC9309_AUDIT"
    example = '{"path": "audit/%(name)s.jsonl", "allowed": true}'
    value = _json_dict(value, name, example)
    if value is None or value == "" or isinstance(value, str):
        return {"audit": value or None, "audit_key": audit_key(None)}
    if not isinstance(value, Mapping):
        raise ValueError(
            f"RFC9309_AUDIT must be a file path (str), e.g. 'audit/%(name)s-%(time)s.jsonl', or a dict such as "
            f"{example}, not {type(value).__name__}"
        )
    _unknown_keys(value, name, AUDIT_KEYS)
    path = value.get("path")
    if not isinstance(path, str) or not path:
        raise ValueError(
            f"RFC9309_AUDIT['path']={_shown(path)} must be the trail's file path (str), e.g. 'audit/%(name)s.jsonl'"
        )
    sync = _bool(value.get("sync", False), "RFC9309_AUDIT['sync']")
    return {
        "audit": path,
        "audit_allowed": _bool(value.get("allowed", False), "RFC9309_AUDIT['allowed']") or sync,
        "audit_sync": sync,
        "audit_key": audit_key(value.get("key")),
    }


def audit_setting_key(value: Any) -> Any:
    """The key an ``RFC9309_AUDIT`` value gives (its dict's ``"key"``), or None;
    for ``scrapy robots --audit``, which checks a trail with the crawl's key."""
    try:
        value = _json_dict(value, "RFC9309_AUDIT", "{}")
    except ValueError:
        return None
    return value.get("key") if isinstance(value, Mapping) else None


def _usage(value: Any) -> dict[str, Any]:
    """``RFC9309_USAGE``: the declared purposes (a list, a comma-separated or JSON
    list string), or ``{"purposes", "header", "unknown", "report", "nofollow"}``
    (a JSON object from the command line), as the ``usage*`` and ``nofollow`` fields."""
    name = "RFC9309_USAGE"
    value = _json_dict(value, name, '{"purposes": ["train-ai"], "unknown": "deny"}')
    if not isinstance(value, Mapping):
        return {"usage": usage_purposes(value, name)}
    _unknown_keys(value, name, USAGE_KEYS)
    unknown = _choice(value.get("unknown", "allow"), "RFC9309_USAGE['unknown']", USAGE_UNKNOWN_CHOICES)
    return {
        "usage": usage_purposes(value.get("purposes"), "RFC9309_USAGE['purposes']"),
        "usage_header": _choice(value.get("header", "drop"), "RFC9309_USAGE['header']", USAGE_HEADER_CHOICES),
        "usage_unknown_denies": unknown == "deny",
        "usage_report": _bool(value.get("report", False), "RFC9309_USAGE['report']"),
        "nofollow": _bool(value.get("nofollow", True), "RFC9309_USAGE['nofollow']"),
    }


def usage_with_purposes(value: Any, purposes: list[str]) -> Any:
    """``RFC9309_USAGE`` with its purposes replaced by ``purposes``, its other
    keys kept (``scrapy robots --usage`` over a project's dict form)."""
    try:
        value = _json_dict(value, "RFC9309_USAGE", "{}")
    except ValueError:
        return purposes  # the project's value is refused anyway, with its own message
    if isinstance(value, Mapping):
        return {**value, "purposes": purposes}
    return purposes


def usage_purposes(value: Any, name: str) -> tuple[str, ...]:
    """Declared purposes (``["train-ai"]``, ``"train-ai,search"``, a JSON list
    from the command line) as usage categories; ``ValueError`` naming the
    setting for an unknown one."""
    from .robots.usage import PURPOSES

    if value is None or value == "":
        return ()
    if isinstance(value, str):
        value = _listish(value)
        if isinstance(value, str):
            value = [part for part in (p.strip() for p in value.split(",")) if part]
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise ValueError(f"{name}={_shown(value)} must be a list of usage categories such as ['train-ai']")
    purposes: list[str] = []
    for item in value:
        label = PURPOSES.get(str(item).strip().lower()) if isinstance(item, str) else None
        if label is None:
            raise ValueError(f"{name}: {_shown(item)} is not a usage category; known: {', '.join(sorted(PURPOSES))}")
        if label not in purposes:
            purposes.append(label)
    return tuple(purposes)


#: the default lane: max(FETCH_LANE_MIN, FETCH_LANE_PER_CONCURRENT x CONCURRENT_REQUESTS)
FETCH_LANE_MIN = 64
FETCH_LANE_PER_CONCURRENT = 4


def _fetch_concurrency(value: Any, concurrent: Any) -> int:
    """RFC9309_FETCH_CONCURRENCY, a whole number of at least 1; by default as
    many as the early fetches may start (the service's prefetch cap is this bound)."""
    name = "RFC9309_FETCH_CONCURRENCY"
    if value is None or value == "":
        try:
            pages = int(concurrent or 0)
        except (TypeError, ValueError):
            pages = 0  # Scrapy itself refuses it
        return max(FETCH_LANE_MIN, FETCH_LANE_PER_CONCURRENT * pages)
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"{name}={_shown(value)} must be a whole number of fetches, e.g. 64")
    number = _number(value, name, int, positive=True)
    return int(number)


def _storage(value: Any, jobdir: Any, settings: Any) -> tuple[str, str]:
    """RFC9309_STORAGE, or when it is not set: the Redis server of scrapy-redis when
    it is the scheduler (the workers sharing its queue share robots.txt and
    Crawl-delay), else a SQLite file in JOBDIR, else memory.  As ``(url, Redis
    key prefix)``: a Redis URL's ``?prefix=`` is taken out of it (redis-py
    would pass it to its connections), else the prefix is ``rfc9309:``."""
    if value:
        url = str(value).strip()
    else:
        from .storage.factory import scrapy_redis_url

        cluster = scrapy_redis_url(settings) if hasattr(settings, "get") else None
        if cluster:
            url = cluster
        elif jobdir:
            from .storage.factory import JOBDIR_FILE

            url = "sqlite://" + os.path.join(str(jobdir), JOBDIR_FILE)
        else:
            url = "memory"
    prefix = DEFAULT_REDIS_PREFIX
    if url.lower().startswith(REDIS_SCHEMES):
        url, given = split_prefix(url)
        if given is not None:
            prefix = given
    check_storage(url, prefix)  # its form, before anything connects
    return url, prefix


def _listish(value: Any) -> Any:
    """A list of user agents given on the command line as JSON
    (``-s 'ROBOTSTXT_USER_AGENT=["ExampleBot", "CCBot"]'``) becomes a list;
    anything else is returned as is (a comma is not a separator: User-Agent
    strings hold commas)."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            return json.loads(value)
        except ValueError:
            raise ValueError(f"{_shown(value)} looks like a JSON list of user agents but is not valid JSON") from None
    return value


def _origins(
    raw: Any,
    tokens: tuple[str, ...],
    unreachable: tuple[str, float],
    from_user_agent: bool,
    usage: tuple[str, ...] = (),
) -> dict[str, OriginPolicy]:
    if isinstance(raw, str):
        try:  # a setting given on the command line (-s RFC9309_ORIGINS='{...}')
            raw = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"RFC9309_ORIGINS is not valid JSON ({exc}): {_shown(raw)}") from None
    if not isinstance(raw, Mapping):
        raise ValueError(f"RFC9309_ORIGINS must be a dict of origin -> overrides, not {type(raw).__name__}")
    resolved: dict[str, OriginPolicy] = {}
    for key, overrides in raw.items():
        origin = origin_of(str(key))
        if origin is None:
            raise ValueError(f"RFC9309_ORIGINS: {_shown(key)} is not an http(s) origin such as 'https://example.com'")
        if not isinstance(overrides, Mapping):
            raise ValueError(f"RFC9309_ORIGINS[{_shown(key)}] must be a dict such as {{'obey': False}}")
        _unknown_keys(overrides, f"RFC9309_ORIGINS[{_shown(key)}]", _ORIGIN_KEYS)
        obey = _bool(overrides.get("obey", True), f"RFC9309_ORIGINS[{_shown(key)}]['obey']")
        user_agent = overrides.get("user_agent")
        try:
            origin_tokens = derive_tokens(_listish(user_agent)) if user_agent else tokens
        except ValueError as exc:
            raise ValueError(f"RFC9309_ORIGINS[{_shown(key)}]['user_agent']: {exc}") from None
        policy = overrides.get("unreachable")
        mode, wait = (
            unreachable_mode(policy, f"RFC9309_ORIGINS[{_shown(key)}]['unreachable']") if policy else unreachable
        )
        origin_usage = (
            usage_purposes(overrides["usage"], f"RFC9309_ORIGINS[{_shown(key)}]['usage']")
            if "usage" in overrides
            else usage
        )
        resolved[origin] = OriginPolicy(
            obey,
            origin_tokens[0],
            mode,
            origin_tokens,
            from_user_agent=from_user_agent and not user_agent,
            usage=origin_usage,
            unreachable_wait=wait,
        )
    return resolved
