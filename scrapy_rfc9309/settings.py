"""Every ``RFC9309_*`` setting, read once and handed down as frozen objects.

``Rfc9309Settings.from_settings(crawler.settings)`` validates everything at
start-up (a bad value stops the crawl before the first request, with a message
naming the setting) and resolves the per-origin overrides of
``RFC9309_ORIGINS`` into :class:`OriginPolicy` objects.  Per-spider values
come for free: Scrapy builds one settings object per crawler, so a spider's
``custom_settings`` are already merged in.
"""

from __future__ import annotations

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
from .storage.factory import check_storage
from .useragent import derive_tokens

#: RFC 9309 section 2.4: a cached robots.txt should not be used for more than 24 hours.
MAX_CACHE_SECONDS = 86_400
#: RFC 9309 section 2.5: at least 500 KiB must be parsed.
MIN_MAX_BYTES = 512_000
#: the audit trail's HMAC key: the setting, else the environment variable of that name
AUDIT_KEY = "RFC9309_AUDIT_KEY"
#: a shorter key could be guessed from the trail (every record is an HMAC of known text)
MIN_AUDIT_KEY_BYTES = 16

DEFAULTS: dict[str, Any] = {
    "RFC9309_ENABLED": True,
    "RFC9309_MAX_BYTES": 512_000,
    "RFC9309_MAX_REDIRECTS": 5,
    "RFC9309_FETCH_TIMEOUT": 30.0,
    # robots.txt fetches at once, outside CONCURRENT_REQUESTS; None: max(64, 4 x CONCURRENT_REQUESTS)
    "RFC9309_FETCH_CONCURRENCY": None,
    "RFC9309_UNREACHABLE": "deny",
    "RFC9309_UNREACHABLE_WAIT": 300.0,
    "RFC9309_RETRY_UNREACHABLE_SECONDS": 300.0,
    "RFC9309_CACHE_SECONDS": 86_400.0,
    "RFC9309_CACHE_MIN_SECONDS": 60.0,
    "RFC9309_CACHE_MAX_ORIGINS": 10_000,
    # fetch a new origin's robots.txt when its first request is scheduled, not when the
    # gate takes it out of the scheduler: for crawls whose requests wait long in the scheduler
    "RFC9309_EARLY_FETCH": False,
    # the project's own scheduler, wrapped by the gate (scrapy_rfc9309.gate); the add-on
    # moves SCHEDULER here; None: Scrapy's
    "RFC9309_SCHEDULER": None,
    # requests the gate holds at most (origin not resolved yet, Crawl-delay turn to come)
    "RFC9309_MAX_HELD": 100_000,
    # None: scrapy-redis's server when scrapy-redis is the scheduler, else a SQLite
    # file inside JOBDIR when JOBDIR is set, else "memory"
    "RFC9309_STORAGE": None,
    "RFC9309_STORAGE_RETRY_SECONDS": 30.0,
    "RFC9309_STALE_IF_UNREACHABLE": True,
    "RFC9309_REDIS_PREFIX": "rfc9309:",
    "RFC9309_ORIGINS": {},
    "RFC9309_CRAWL_DELAY": True,
    "RFC9309_MAX_CRAWL_DELAY": 60.0,
    # the audit trail (scrapy_rfc9309.audit, docs/audit.md): a JSON Lines file, off by default
    "RFC9309_AUDIT": None,
    "RFC9309_AUDIT_ALLOWED": False,
    # the HMAC key of the trail's chain (a secret; else the environment variable of the same
    # name), and writing each record before its request goes on (allowed requests recorded)
    "RFC9309_AUDIT_KEY": None,
    "RFC9309_AUDIT_SYNC": False,
    # a public origin's robots.txt may not lead to an internal address (scrapy_rfc9309.addresses)
    "RFC9309_ALLOW_PRIVATE_REDIRECTS": False,
    # None: every address that is not globally routable is internal; else a list of networks
    "RFC9309_INTERNAL_NETWORKS": None,
    # AI usage preferences (docs/usage_preferences.md): the crawl's declared purposes
    # (none: preferences are only reported), a Content-Usage header that disallows one
    # ("drop" or "mark"), and whether an unknown preference counts as a "no"
    "RFC9309_USAGE": (),
    "RFC9309_USAGE_HEADER": "drop",
    "RFC9309_USAGE_UNKNOWN": "allow",
    # read every source of usage statements (tdmrep.json, tdm-* and X-Robots-Tag headers, the
    # HTML head's meta tags) and report them even where no purpose is declared; enforce nothing new
    "RFC9309_USAGE_REPORT": False,
    # drop the requests a callback yields from a page whose robots directives say nofollow
    # (where page directives are read: a declared purpose)
    "RFC9309_NOFOLLOW": True,
}

#: the longest a refused setting's message may be (a value in it is shortened first)
MESSAGE_CHARS = 1_000

_ORIGIN_KEYS = ("obey", "user_agent", "unreachable", "usage")
USAGE_HEADER_CHOICES = ("drop", "mark")
USAGE_UNKNOWN_CHOICES = ("allow", "deny")


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

    def __post_init__(self) -> None:
        if not self.user_agents:
            object.__setattr__(self, "user_agents", (self.user_agent,))


@dataclass(frozen=True)
class Rfc9309Settings:
    enabled: bool = True
    max_bytes: int = 512_000
    max_redirects: int = 5
    fetch_timeout: float = 30.0
    #: robots.txt fetches running at once (the lane, outside CONCURRENT_REQUESTS)
    fetch_concurrency: int = 64
    unreachable: str = "deny"
    unreachable_wait: float = 300.0
    retry_unreachable_seconds: float = 300.0
    cache_seconds: float = 86_400.0
    cache_min_seconds: float = 60.0
    cache_max_origins: int = 10_000
    #: start a new origin's fetch when its first request is scheduled, not when the gate takes it out
    early_fetch: bool = False
    #: requests the gate holds at most
    max_held: int = 100_000
    #: the store URL, resolved (see scrapy_rfc9309.storage.factory)
    storage: str = "memory"
    #: seconds between attempts to use a store again after it failed mid-crawl
    storage_retry_seconds: float = 30.0
    #: use a stored file younger than 30 days when a re-fetch is unreachable
    stale_if_unreachable: bool = True
    redis_prefix: str = "rfc9309:"
    #: the crawl's product token, and where it came from (for the start-up log line)
    user_agent: str = "Scrapy"
    user_agent_source: str = "USER_AGENT"
    #: every product token of the crawl (ROBOTSTXT_USER_AGENT may be a list); user_agent is the first
    user_agents: tuple[str, ...] = ()
    #: canonical origin -> its resolved policy (only origins named in RFC9309_ORIGINS)
    origins: Mapping[str, OriginPolicy] = field(default_factory=lambda: MappingProxyType({}))
    # -- read by the Crawl-delay extension (scrapy_rfc9309.throttle) --
    crawl_delay: bool = True
    max_crawl_delay: float = 60.0
    # -- read by the audit trail (scrapy_rfc9309.audit) --
    #: the JSON Lines file (feed-style %(name)s / %(time)s placeholders unexpanded), or None
    audit: str | None = None
    #: write a record for every allowed request too (always with audit_sync)
    audit_allowed: bool = False
    #: the HMAC key of the trail's chain (RFC9309_AUDIT_KEY, or the environment), masked when printed
    audit_key: Secret | None = field(default=None, repr=False)
    #: write (and flush) each record before the request it decides goes on
    audit_sync: bool = False
    # -- read by the robots.txt fetcher (scrapy_rfc9309.fetch, scrapy_rfc9309.addresses) --
    #: a public origin's robots.txt may redirect to an internal address
    allow_private_redirects: bool = False
    #: the networks that count as internal, or None for every address not globally routable
    internal_networks: tuple[Any, ...] | None = None
    # -- AI usage preferences (scrapy_rfc9309.robots.usage) --
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
        unreachable = _policy(get("RFC9309_UNREACHABLE"), "RFC9309_UNREACHABLE")
        ua_setting = get("ROBOTSTXT_USER_AGENT")
        source = "ROBOTSTXT_USER_AGENT" if ua_setting else "USER_AGENT"
        try:
            tokens = derive_tokens(_listish(ua_setting or get("USER_AGENT")))
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
        token = tokens[0]
        usage = usage_purposes(get("RFC9309_USAGE"), "RFC9309_USAGE")
        origins = _origins(get("RFC9309_ORIGINS") or {}, tokens, unreachable, source == "USER_AGENT", usage)
        audit = get("RFC9309_AUDIT")
        if audit is not None and not isinstance(audit, str):
            raise ValueError(
                f"RFC9309_AUDIT={_shown(audit)} must be a file path (str), e.g. 'audit/%(name)s-%(time)s.jsonl'"
            )
        redis_prefix = str(get("RFC9309_REDIS_PREFIX"))
        storage = _storage(get("RFC9309_STORAGE"), get("JOBDIR"), settings)
        check_storage(storage, redis_prefix)  # its form, before anything connects
        audit_sync = _bool(get("RFC9309_AUDIT_SYNC"), "RFC9309_AUDIT_SYNC")
        return cls(
            enabled=enabled,
            max_bytes=max_bytes,
            max_redirects=_number(get("RFC9309_MAX_REDIRECTS"), "RFC9309_MAX_REDIRECTS", int),
            fetch_timeout=_number(get("RFC9309_FETCH_TIMEOUT"), "RFC9309_FETCH_TIMEOUT", float, positive=True),
            fetch_concurrency=_fetch_concurrency(get("RFC9309_FETCH_CONCURRENCY"), get("CONCURRENT_REQUESTS")),
            unreachable=unreachable,
            unreachable_wait=_number(get("RFC9309_UNREACHABLE_WAIT"), "RFC9309_UNREACHABLE_WAIT", float),
            retry_unreachable_seconds=_number(
                get("RFC9309_RETRY_UNREACHABLE_SECONDS"), "RFC9309_RETRY_UNREACHABLE_SECONDS", float
            ),
            cache_seconds=cache_seconds,
            cache_min_seconds=_number(get("RFC9309_CACHE_MIN_SECONDS"), "RFC9309_CACHE_MIN_SECONDS", float),
            cache_max_origins=_number(
                get("RFC9309_CACHE_MAX_ORIGINS"), "RFC9309_CACHE_MAX_ORIGINS", int, positive=True
            ),
            early_fetch=_bool(get("RFC9309_EARLY_FETCH"), "RFC9309_EARLY_FETCH"),
            max_held=_max_held(get("RFC9309_MAX_HELD")),
            storage=storage,
            storage_retry_seconds=_number(
                get("RFC9309_STORAGE_RETRY_SECONDS"), "RFC9309_STORAGE_RETRY_SECONDS", float, positive=True
            ),
            stale_if_unreachable=_bool(get("RFC9309_STALE_IF_UNREACHABLE"), "RFC9309_STALE_IF_UNREACHABLE"),
            redis_prefix=redis_prefix,
            user_agent=token,
            user_agents=tokens,
            user_agent_source=source,
            origins=MappingProxyType(origins),
            crawl_delay=_bool(get("RFC9309_CRAWL_DELAY"), "RFC9309_CRAWL_DELAY"),
            max_crawl_delay=_number(get("RFC9309_MAX_CRAWL_DELAY"), "RFC9309_MAX_CRAWL_DELAY", float),
            audit=audit or None,
            audit_allowed=_bool(get("RFC9309_AUDIT_ALLOWED"), "RFC9309_AUDIT_ALLOWED") or audit_sync,
            audit_key=audit_key(settings),
            audit_sync=audit_sync,
            allow_private_redirects=_bool(get("RFC9309_ALLOW_PRIVATE_REDIRECTS"), "RFC9309_ALLOW_PRIVATE_REDIRECTS"),
            internal_networks=parse_networks(get("RFC9309_INTERNAL_NETWORKS"), "RFC9309_INTERNAL_NETWORKS"),
            usage=usage,
            usage_header=_choice(get("RFC9309_USAGE_HEADER"), "RFC9309_USAGE_HEADER", USAGE_HEADER_CHOICES),
            usage_unknown_denies=_choice(get("RFC9309_USAGE_UNKNOWN"), "RFC9309_USAGE_UNKNOWN", USAGE_UNKNOWN_CHOICES)
            == "deny",
            usage_report=_bool(get("RFC9309_USAGE_REPORT"), "RFC9309_USAGE_REPORT"),
            nofollow=_bool(get("RFC9309_NOFOLLOW"), "RFC9309_NOFOLLOW"),
        )

    def __post_init__(self) -> None:
        if not self.user_agents:
            object.__setattr__(self, "user_agents", (self.user_agent,))
        # built once: for_origin runs for every request
        from_user_agent = self.user_agent_source == "USER_AGENT"
        policy = OriginPolicy(
            True, self.user_agent, self.unreachable, self.user_agents, from_user_agent=from_user_agent, usage=self.usage
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
        """Whether the nofollow spider middleware runs: RFC9309_NOFOLLOW, and a purpose
        declared for the crawl or an origin (a crawl that declares none pays nothing)."""
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


def audit_key(settings: Any) -> Secret | None:
    """``RFC9309_AUDIT_KEY`` (a str, UTF-8, or bytes; at least
    :data:`MIN_AUDIT_KEY_BYTES`), else the environment variable of the same
    name, else None.  No message names the value."""
    value = settings.get(AUDIT_KEY) if hasattr(settings, "get") else None
    where = AUDIT_KEY
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


def _policy(value: Any, name: str) -> str:
    if not isinstance(value, str) or value.lower() not in UNREACHABLE_POLICIES:
        raise ValueError(f"{name}={_shown(value)}: choose one of {', '.join(UNREACHABLE_POLICIES)}")
    return value.lower()


def _storage(value: Any, jobdir: Any, settings: Any) -> str:
    """RFC9309_STORAGE, or when it is not set: the Redis server of scrapy-redis when
    it is the scheduler (the workers sharing its queue share robots.txt and
    Crawl-delay), else a SQLite file in JOBDIR, else memory."""
    if value:
        return str(value)
    from .storage.factory import scrapy_redis_url

    cluster = scrapy_redis_url(settings) if hasattr(settings, "get") else None
    if cluster:
        return cluster
    if jobdir:
        import os

        from .storage.factory import JOBDIR_FILE

        return "sqlite://" + os.path.join(str(jobdir), JOBDIR_FILE)
    return "memory"


def _listish(value: Any) -> Any:
    """A list of user agents given on the command line as JSON
    (``-s 'ROBOTSTXT_USER_AGENT=["ExampleBot", "CCBot"]'``) becomes a list;
    anything else is returned as is (a comma is not a separator: User-Agent
    strings hold commas)."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        import json

        try:
            return json.loads(value)
        except ValueError:
            raise ValueError(f"{_shown(value)} looks like a JSON list of user agents but is not valid JSON") from None
    return value


def _origins(
    raw: Any, tokens: tuple[str, ...], unreachable: str, from_user_agent: bool, usage: tuple[str, ...] = ()
) -> dict[str, OriginPolicy]:
    if isinstance(raw, str):
        import json

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
        unknown = set(overrides) - set(_ORIGIN_KEYS)
        if unknown:
            raise ValueError(
                f"RFC9309_ORIGINS[{_shown(key)}]: unknown key(s) {sorted(unknown)}; known: {', '.join(_ORIGIN_KEYS)}"
            )
        obey = _bool(overrides.get("obey", True), f"RFC9309_ORIGINS[{_shown(key)}]['obey']")
        user_agent = overrides.get("user_agent")
        try:
            origin_tokens = derive_tokens(_listish(user_agent)) if user_agent else tokens
        except ValueError as exc:
            raise ValueError(f"RFC9309_ORIGINS[{_shown(key)}]['user_agent']: {exc}") from None
        policy = overrides.get("unreachable")
        origin_unreachable = (
            _policy(policy, f"RFC9309_ORIGINS[{_shown(key)}]['unreachable']") if policy else unreachable
        )
        origin_usage = (
            usage_purposes(overrides["usage"], f"RFC9309_ORIGINS[{_shown(key)}]['usage']")
            if "usage" in overrides
            else usage
        )
        resolved[origin] = OriginPolicy(
            obey,
            origin_tokens[0],
            origin_unreachable,
            origin_tokens,
            from_user_agent=from_user_agent and not user_agent,
            usage=origin_usage,
        )
    return resolved
