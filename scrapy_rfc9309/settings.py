"""Every ``RFC9309_*`` setting, validated once at start-up (a bad value stops the crawl before its
first request, in one line naming the setting) into frozen objects.  A mode of one thing is a form
of its setting; what no crawl tunes is a module constant, read with the settings (a test may change one)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from functools import partial
from types import MappingProxyType
from typing import Any, NamedTuple

from scrapy.settings import Settings

from .addresses import parse_networks
from .masking import Secret, mask_text
from .origins import origin_of
from .robots.access import UNREACHABLE_POLICIES
from .robots.text import shorten
from .robots.usage import PURPOSES
from .storage import factory
from .storage.base import RETRY_AFTER
from .useragent import derive_tokens

MAX_CACHE_SECONDS = 86_400  # RFC 9309 section 2.4's 24 hours: a cap on RFC9309_CACHE_SECONDS, not a default
MIN_MAX_BYTES = 512_000  # RFC 9309 section 2.5: at least 500 KiB must be parsed
AUDIT_KEY = "RFC9309_AUDIT_KEY"  # the environment variable giving the trail's key when RFC9309_AUDIT does not
MIN_AUDIT_KEY_BYTES = 16  # a shorter key could be guessed from the trail (each record is an HMAC of known text)
# -- constants (were settings; docs/middleware.md lists them) ---------------------------------
MAX_REDIRECTS = 5  # redirects followed for one robots.txt: RFC 9309 section 2.2.2's minimum
RETRY_UNREACHABLE_SECONDS = 300.0  # before an unreachable robots.txt is fetched again (<= CACHE_SECONDS)
CACHE_MIN_SECONDS = 60.0  # the shortest a file is kept, whatever its Cache-Control says (<= CACHE_SECONDS)
STORAGE_RETRY_SECONDS = RETRY_AFTER  # between attempts to use a store again after it failed mid-crawl
STALE_IF_UNREACHABLE = True  # a copy younger than 30 days stands in for an unreachable re-fetch (RFC 9309 2.4)
UNREACHABLE_WAIT_SECONDS = 300.0  # RFC9309_UNREACHABLE = "wait": retried so long before denying
MAX_CRAWL_DELAY_SECONDS = 60.0  # RFC9309_CRAWL_DELAY = True: the longest Crawl-delay (or Request-rate) obeyed
FETCH_LANE_MIN, FETCH_LANE_PER_CONCURRENT = 64, 4  # the default lane: max(64, 4 x CONCURRENT_REQUESTS)
DEFAULTS: dict[str, Any] = {
    "RFC9309_ENABLED": True,
    "RFC9309_ORIGINS": {},  # {"https://host": {"obey", "user_agent", "unreachable", "usage"}}
    "RFC9309_SCHEDULER": None,  # the project's scheduler, wrapped by the gate; None: Scrapy's
    "RFC9309_MAX_HELD": 100_000,
    "RFC9309_STORAGE": None,  # None: scrapy-redis's server, else SQLite in JOBDIR, else "memory"
    "RFC9309_UNREACHABLE": "deny",  # "deny", "allow", "wait" (300 s) or "wait:<seconds>"
    "RFC9309_CACHE_SECONDS": 86_400.0,
    "RFC9309_CACHE_MAX_ORIGINS": 10_000,
    "RFC9309_FETCH_TIMEOUT": 30.0,
    "RFC9309_FETCH_CONCURRENCY": None,  # None: max(64, 4 x CONCURRENT_REQUESTS)
    "RFC9309_MAX_BYTES": 512_000,
    "RFC9309_CRAWL_DELAY": True,  # True: floors capped at 60 s; False: none; a number: the cap
    "RFC9309_INTERNAL_NETWORKS": None,  # None: every address not globally routable; []: none
    "RFC9309_AUDIT": None,  # a JSON Lines file, or {"path", "allowed", "sync", "key"}
    "RFC9309_USAGE": (),  # the purposes, or {"purposes", "header", "unknown", "report", "nofollow", "licenses"}
    "RFC9309_EARLY_FETCH": False,
}
_FALLBACKS = {**DEFAULTS, "USER_AGENT": "Scrapy"}  # Scrapy's default USER_AGENT: only a plain mapping lacks it
MESSAGE_CHARS = 1_000  # the longest a refused setting's message may be (a value in it is shortened first)
_PER = ("CONCURRENT_REQUESTS", "CONCURRENT_REQUESTS_PER_DOMAIN", "CONCURRENT_REQUESTS_PER_IP")
#: Scrapy settings the plugin reads, with how Scrapy reads them: one Scrapy cannot read is refused as a bad RFC9309_*
SCRAPY_SETTINGS = {"ROBOTSTXT_OBEY": "getbool", **dict.fromkeys(_PER, "getint")}
GATE = "scrapy_rfc9309.gate.GateScheduler"  # the add-on sets SCHEDULER to it
SCRAPY_SCHEDULER = "scrapy.core.scheduler.Scheduler"
Reader = Callable[[Any, str], Any]  # (value, the name a message gives it) -> what it reads as


class InvalidSetting(ValueError):
    """A setting the plugin cannot run with, said in one line; the crawl (or ``scrapy robots``) stops."""


def one_line(text: str) -> str:
    """``text`` on one line, secrets masked, at most :data:`MESSAGE_CHARS` long."""
    return shorten(mask_text(" ".join(text.splitlines())), MESSAGE_CHARS)


def _shown(value: Any) -> str:
    return shorten(mask_text(repr(value)))


def _frozen(self: Any, name: str, *value: Any) -> None:
    """``__setattr__`` and ``__delattr__`` of the immutable class below."""
    raise FrozenInstanceError(f"cannot assign to or delete field {name!r}")


class OriginPolicy(NamedTuple):
    """What applies to one origin once every override is resolved: immutable, compared and hashed by value.  A
    NamedTuple: a dataclass's generated methods are compiled at import, in every crawl's start-up."""

    obey: bool
    user_agent: str  # the product token robots.txt groups are selected with
    unreachable: str  # "deny", "wait" or "allow"
    user_agents: tuple[str, ...]  # every product token a request must be allowed by (user_agent first)
    from_user_agent: bool = False  # from USER_AGENT: a request's own User-Agent header comes first
    usage: tuple[str, ...] = ()  # the declared purposes; none: nothing enforced
    unreachable_wait: float = UNREACHABLE_WAIT_SECONDS


@dataclass(init=False, repr=False, eq=False)
class Rfc9309Settings:
    """Every ``RFC9309_*`` setting of a crawl, read and checked (:meth:`from_settings`); immutable, one per
    crawl.  A dataclass (``fields``, ``replace``) with no generated method: those are compiled at import."""

    enabled: bool = True
    obey: bool = True  # False: ROBOTSTXT_OBEY = False kept the plugin on for a declared purpose (lifecycle)
    max_bytes: int = 512_000
    max_redirects: int = field(default_factory=lambda: MAX_REDIRECTS)  # (constants read when built)
    fetch_timeout: float = 30.0
    fetch_concurrency: int = 64
    unreachable: str = "deny"
    unreachable_wait: float = UNREACHABLE_WAIT_SECONDS
    retry_unreachable_seconds: float = RETRY_UNREACHABLE_SECONDS
    cache_seconds: float = 86_400.0
    cache_min_seconds: float = CACHE_MIN_SECONDS
    cache_max_origins: int = 10_000
    early_fetch: bool = False
    max_held: int = 100_000
    storage: str = "memory"  # the store URL, resolved; a Redis URL without its ?prefix= (redis_prefix)
    storage_retry_seconds: float = field(default_factory=lambda: STORAGE_RETRY_SECONDS)
    stale_if_unreachable: bool = field(default_factory=lambda: STALE_IF_UNREACHABLE)
    redis_prefix: str = factory.DEFAULT_REDIS_PREFIX
    user_agent: str = "Scrapy"
    user_agent_source: str = "USER_AGENT"
    user_agents: tuple[str, ...] = ()
    origins: Mapping[str, OriginPolicy] = field(default_factory=lambda: MappingProxyType({}))
    crawl_delay: bool = True
    max_crawl_delay: float = MAX_CRAWL_DELAY_SECONDS
    audit: str | None = None  # the trail's file (%(name)s / %(time)s unexpanded)
    audit_allowed: bool = False
    audit_key: Secret | None = None
    audit_sync: bool = False
    allow_private_redirects: bool = False
    internal_networks: tuple[Any, ...] | None = None
    usage: tuple[str, ...] = ()
    usage_header: str = "drop"
    usage_unknown_denies: bool = False
    usage_report: bool = False
    nofollow: bool = True
    usage_licenses: tuple[str, ...] = ()  # RSL licenses the crawl holds: their URLs or hosts

    @classmethod
    def from_settings(cls, settings: Any) -> Rfc9309Settings:
        """Read and validate a Scrapy ``BaseSettings`` (or a plain mapping); :class:`InvalidSetting` for the first bad value."""

        def get(name: str) -> Any:
            value = settings.get(name)
            return _FALLBACKS.get(name) if value is None else value

        try:
            if (problem := unreadable_scrapy_setting(settings)) is not None:
                raise ValueError(problem)
            for name in sorted(n for n in settings if str(n).startswith("RFC9309_") and n not in DEFAULTS):
                if settings.get(name) is not None:  # a typo or an old name would change nothing, silently
                    raise ValueError(
                        f"{name} is not a setting of scrapy-rfc9309 (docs/middleware.md lists them): {', '.join(DEFAULTS)}"
                    )
            values = {field: value for name, read in _READERS.items() for field, value in read(get(name), name).items()}
            given = get("ROBOTSTXT_USER_AGENT")
            source = "ROBOTSTXT_USER_AGENT" if given else "USER_AGENT"
            tokens = _tokens(given or get("USER_AGENT"), source)
            mode, wait, usage = values["unreachable"], values["unreachable_wait"], values["usage"]
            crawl = OriginPolicy(True, tokens[0], mode, tokens, source == "USER_AGENT", usage, wait)
            cache = values["cache_seconds"]
            return cls(
                **values,
                **_storage(get("RFC9309_STORAGE"), get("JOBDIR"), settings),
                retry_unreachable_seconds=min(RETRY_UNREACHABLE_SECONDS, cache),
                cache_min_seconds=min(CACHE_MIN_SECONDS, cache),
                allow_private_redirects=values["internal_networks"] == (),
                fetch_concurrency=_fetch_concurrency(get("RFC9309_FETCH_CONCURRENCY"), get("CONCURRENT_REQUESTS")),
                user_agent=tokens[0],
                user_agents=tokens,
                user_agent_source=source,
                origins=MappingProxyType(_origins(get("RFC9309_ORIGINS") or {}, crawl)),
            )
        except ValueError as exc:
            raise InvalidSetting(one_line(str(exc))) from None

    def __init__(self, **values: Any) -> None:
        """Each field from ``values``, else its default; the crawl's own policy built once (for_origin runs per request)."""
        for spec in fields(self):
            default = spec.default if spec.default_factory is MISSING else spec.default_factory()
            object.__setattr__(self, spec.name, values.pop(spec.name, default))
        if values:
            raise TypeError(f"Rfc9309Settings() got unexpected keyword arguments: {', '.join(sorted(values))}")
        from_ua, wait = self.user_agent_source == "USER_AGENT", self.unreachable_wait
        policy = OriginPolicy(self.obey, self.user_agent, self.unreachable, self.user_agents, from_ua, self.usage, wait)
        object.__setattr__(self, "user_agents", policy.user_agents)
        object.__setattr__(self, "_default_policy", policy)
        if not self.obey:  # no origin's access rules, whatever RFC9309_ORIGINS says
            off = {o: OriginPolicy(False, *p[1:]) for o, p in self.origins.items()}
            object.__setattr__(self, "origins", MappingProxyType(off))

    __setattr__ = __delattr__ = _frozen

    @property
    def declares_purposes(self) -> bool:
        """A purpose is declared for the crawl or for an origin (RFC9309_USAGE, RFC9309_ORIGINS)."""
        return bool(self.usage) or any(p.usage for p in self.origins.values())

    @property
    def reads_pages(self) -> bool:
        """Pages' other usage sources may be read without a request's ``rfc9309_usage`` (a purpose, or the report)."""
        return self.usage_report or self.declares_purposes

    @property
    def follows_nofollow(self) -> bool:
        """The nofollow middleware runs: RFC9309_USAGE's "nofollow" and a declared purpose (else it costs nothing)."""
        return self.nofollow and self.declares_purposes

    def for_origin(self, origin: str) -> OriginPolicy:
        """The policy of ``origin`` (canonical): its ``RFC9309_ORIGINS`` entry, else the crawl's."""
        return self.origins.get(origin) or self._default_policy  # type: ignore[attr-defined]


def unreadable_scrapy_setting(settings: Any, fix: bool = False) -> str | None:
    """The first of :data:`SCRAPY_SETTINGS` Scrapy cannot read, in one line; ``fix``: put Scrapy's default
    in place of each, at its priority (the add-on does, so Scrapy starts and the crawl is refused in order)."""
    if not hasattr(settings, "getint"):
        return None
    problem = None
    for name, getter in SCRAPY_SETTINGS.items():
        try:
            getattr(settings, getter)(name)
        except (TypeError, ValueError):
            default = Settings().get(name) or (0 if getter == "getint" else False)  # (PER_IP: deprecated, unset)
            wanted = "a boolean: use True or False" if getter == "getbool" else "a whole number: give one"
            problem = problem or f"{name}={_shown(settings.get(name))} is not {wanted} (Scrapy's default is {default})"
            if fix:
                settings.set(name, default, settings.getpriority(name))
    return problem


def project_scheduler(settings: Any) -> Any:
    """The scheduler the project chose: ``SCHEDULER``, or ``RFC9309_SCHEDULER`` where the gate took its place."""
    if not (scheduler := settings.get("SCHEDULER")):
        return scheduler
    name = scheduler if isinstance(scheduler, str) else f"{scheduler.__module__}.{scheduler.__qualname__}"
    return settings.get("RFC9309_SCHEDULER") or SCRAPY_SCHEDULER if name == GATE else scheduler


def _bool(value: Any, name: str) -> bool:
    text = str(value).strip().lower() if isinstance(value, (int, str)) else None  # (a bool is an int)
    if text in ("true", "false", "1", "0"):
        return text in ("true", "1")
    raise ValueError(f"{name}={_shown(value)} is not a boolean: use True or False")


def _positive(value: Any) -> float | None:
    with suppress(TypeError, ValueError):
        return number if math.isfinite(number := float(value)) and number > 0 else None
    return None


def _number(value: Any, name: str, kind: type, positive: bool = False) -> Any:
    """A finite number of ``kind``, zero or more (or above zero): nan compares False with everything, inf
    removes a bound, and an int setting refuses a fraction (no silent 2 for ``2.7``)."""
    wanted = f"give {'a whole number' if kind is int else 'a number'} {'above zero' if positive else 'of zero or more'}"
    number = value
    if not isinstance(value, int) or isinstance(value, bool):
        try:
            number = float("bool" if isinstance(value, bool) else value)
        except (TypeError, ValueError):
            raise ValueError(f"{name}={_shown(value)} is not a number: {wanted}") from None
        if not math.isfinite(number):
            raise ValueError(f"{name}={_shown(value)} is not a finite number: {wanted}")
    if kind is int and not float(number).is_integer():
        raise ValueError(f"{name}={_shown(value)} is not a whole number: {wanted}")
    number = kind(number)
    if number < 0 or (positive and number == 0):
        raise ValueError(f"{name}={_shown(value)} is out of range: {wanted}")
    return number


def _choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise ValueError(f"{name}={_shown(value)}: choose one of {', '.join(choices)}")
    return value.strip().lower()


def _json(value: Any, start: str, name: str, hint: str = "") -> Any:
    """``value``, or the JSON document starting with ``start`` it holds (``-s 'NAME={...}'``)."""
    if isinstance(value, str) and value.lstrip().startswith(start):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{name} is not valid JSON ({exc}){hint and ': ' + hint}") from None
    return value


def _dict_form(value: Any) -> Mapping[Any, Any] | None:
    """The dict form of ``value`` (a dict, or a JSON object), None for any other value or bad JSON."""
    try:
        value = _json(value, "{", "")
    except ValueError:
        return None
    return value if isinstance(value, Mapping) else None


def _unknown_keys(value: Mapping[Any, Any], name: str, known: Iterable[str]) -> None:
    if unknown := sorted(str(key) for key in value if key not in known):
        raise ValueError(f"{name}: unknown key(s) {unknown}; known: {', '.join(known)}")


def _form(value: Mapping[Any, Any], name: str, keys: Mapping[str, tuple[str, Any, Reader]]) -> dict[str, Any]:
    """A setting's dict form as fields: each key (``{key: (field, default, reader)}``) read, an unknown one refused."""
    _unknown_keys(value, name, keys)
    return {field: read(value.get(key, default), f"{name}[{key!r}]") for key, (field, default, read) in keys.items()}


def _tokens(value: Any, name: str) -> tuple[str, ...]:
    value = _json(value, "[", name)  # -s 'ROBOTSTXT_USER_AGENT=["A", "B"]' (no comma splits: User-Agents hold some)
    try:
        return derive_tokens(value)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def unreachable_mode(value: Any, name: str) -> tuple[str, float]:
    """``"deny"``, ``"allow"``, ``"wait"`` or ``"wait:<seconds>"``, as ``(mode, seconds of wait)``."""
    allowed = f"choose one of {', '.join(UNREACHABLE_POLICIES)}, or 'wait:<seconds>' (e.g. 'wait:60')"
    mode, colon, seconds = value.strip().lower().partition(":") if isinstance(value, str) else ("", "", "")
    mode = mode.strip()
    if mode not in UNREACHABLE_POLICIES or (colon and mode != "wait"):
        raise ValueError(f"{name}={_shown(value)}: {allowed}")
    if (wait := _positive(seconds) if colon else UNREACHABLE_WAIT_SECONDS) is None:
        raise ValueError(f"{name}={_shown(value)}: the seconds of 'wait:<seconds>' must be a number above zero")
    return mode, wait


def _crawl_delay(value: Any, name: str) -> dict[str, Any]:
    """True (floors capped at :data:`MAX_CRAWL_DELAY_SECONDS`), False (none) or the cap in seconds."""
    if isinstance(value, (bool, str)) and str(value).strip().lower() in ("true", "false"):
        return {"crawl_delay": str(value).strip().lower() == "true", "max_crawl_delay": MAX_CRAWL_DELAY_SECONDS}
    if (cap := _positive(value)) is None:
        raise ValueError(
            f"{name}={_shown(value)}: use True (floors, capped at 60 s), False (no floors) or the longest floor in seconds, e.g. 30"
        )
    return {"crawl_delay": True, "max_crawl_delay": cap}


def audit_key(value: Any = None, where: str = "RFC9309_AUDIT['key']") -> Secret | None:
    """The trail's HMAC key: ``value`` (``where`` names it), else :data:`AUDIT_KEY` in the environment, else None."""
    if value is None or value == "":
        value, where = os.environ.get(AUDIT_KEY) or None, f"the environment variable {AUDIT_KEY}"
    if value is None:
        return None
    value = value.encode("utf-8") if isinstance(value, str) else value
    if not isinstance(value, bytes):
        raise ValueError(f"{where} must be a string (or bytes), not {type(value).__name__}")
    if len(value) < MIN_AUDIT_KEY_BYTES:
        raise ValueError(
            f"{where} is too short ({len(value)} bytes): at least {MIN_AUDIT_KEY_BYTES}, e.g. python -c 'import secrets; print(secrets.token_hex(32))'"
        )
    return Secret(value)


def _trail_path(path: Any, name: str) -> str:
    if not isinstance(path, str) or not path:
        raise ValueError(f"{name}={_shown(path)} must be the trail's file path (str), e.g. 'audit/%(name)s.jsonl'")
    return path


def _audit(value: Any, name: str) -> dict[str, Any]:
    """``RFC9309_AUDIT`` as the ``audit*`` fields; the key is checked even without a path (a bad key is a bad setting)."""
    example = '{"path": "audit/%(name)s.jsonl", "allowed": true}'
    value = _json(value, "{", name, f"give e.g. {example}")
    if value is None or isinstance(value, str):
        return {"audit": value or None, "audit_key": audit_key(None)}
    if not isinstance(value, Mapping):
        raise ValueError(
            f"{name} must be a file path (str), e.g. 'audit/%(name)s-%(time)s.jsonl', or a dict such as {example}, not {type(value).__name__}"
        )
    audit = _form(value, name, _AUDIT_KEYS)
    return {**audit, "audit_allowed": audit["audit_allowed"] or audit["audit_sync"]}  # sync records every request


def audit_setting_key(value: Any) -> Any:
    """The key an ``RFC9309_AUDIT`` value gives, or None (``scrapy robots --audit`` checks with it)."""
    return (_dict_form(value) or {}).get("key")


def usage_purposes(value: Any, name: str) -> tuple[str, ...]:
    """Declared purposes (``["train-ai"]``, ``"train-ai,search"``, a JSON list) as usage categories."""
    if value is None or value == "":
        return ()
    value = _json(value, "[", name)
    if isinstance(value, str):
        value = [part for part in (p.strip() for p in value.split(",")) if part]
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise ValueError(f"{name}={_shown(value)} must be a list of usage categories such as ['train-ai']")
    purposes: dict[str, None] = {}  # in order, once each
    for item in value:
        label = PURPOSES.get(str(item).strip().lower()) if isinstance(item, str) else None
        if label is None:
            raise ValueError(f"{name}: {_shown(item)} is not a usage category; known: {', '.join(sorted(PURPOSES))}")
        purposes[label] = None
    return tuple(purposes)


def _usage(value: Any, name: str) -> dict[str, Any]:
    """``RFC9309_USAGE`` (the purposes, or its dict form) as the ``usage*`` and ``nofollow`` fields."""
    value = _json(value, "{", name, 'give e.g. {"purposes": ["train-ai"], "unknown": "deny"}')
    return _form(value, name, _USAGE_KEYS) if isinstance(value, Mapping) else {"usage": usage_purposes(value, name)}


def _held(value: Any, name: str) -> tuple[str, ...]:
    """The RSL licenses the crawl holds (``RFC9309_USAGE['licenses']``): their URLs or hosts."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ValueError(f"{name}={_shown(value)} must be a list of license URLs or hosts")
    return tuple(item.strip() for item in value)


def usage_with_purposes(value: Any, purposes: list[str]) -> Any:
    """``RFC9309_USAGE`` with its purposes replaced, its other keys kept (``scrapy robots --usage``)."""
    return purposes if (form := _dict_form(value)) is None else {**form, "purposes": purposes}


def _fetch_concurrency(value: Any, concurrent: Any) -> int:
    """By default as many as the early fetches may start (the service's prefetch cap is this bound)."""
    if value is not None and value != "":
        return _number(value, "RFC9309_FETCH_CONCURRENCY", int, positive=True)
    return max(FETCH_LANE_MIN, FETCH_LANE_PER_CONCURRENT * int(concurrent or 0))  # (Scrapy's getint checked it)


def _storage(value: Any, jobdir: Any, settings: Any) -> dict[str, str]:
    """RFC9309_STORAGE, else scrapy-redis's server when it schedules (its workers share robots.txt), else a
    SQLite file in JOBDIR, else memory; as ``storage`` and ``redis_prefix``: redis-py would pass ``?prefix=`` on."""
    cluster = None if value else factory.scrapy_redis_url(settings)
    local = "sqlite://" + os.path.join(str(jobdir), factory.JOBDIR_FILE) if jobdir else "memory"
    url = str(value).strip() if value else cluster or local
    url, given = factory.split_prefix(url) if url.lower().startswith(factory.REDIS_SCHEMES) else (url, None)
    prefix = factory.DEFAULT_REDIS_PREFIX if given is None else given
    factory.check_storage(url, prefix)  # its form, before anything connects
    return {"storage": url, "redis_prefix": prefix}


def _origins(raw: Any, crawl: OriginPolicy) -> dict[str, OriginPolicy]:
    """``RFC9309_ORIGINS``: each origin's policy, its overrides over the crawl's."""
    raw = _json(raw, "", "RFC9309_ORIGINS", _shown(raw))
    if not isinstance(raw, Mapping):
        raise ValueError(f"RFC9309_ORIGINS must be a dict of origin -> overrides, not {type(raw).__name__}")
    resolved: dict[str, OriginPolicy] = {}
    for key, overrides in raw.items():
        origin, name = origin_of(str(key)), f"RFC9309_ORIGINS[{_shown(key)}]"
        if origin is None:
            raise ValueError(f"RFC9309_ORIGINS: {_shown(key)} is not an http(s) origin such as 'https://example.com'")
        if not isinstance(overrides, Mapping):
            raise ValueError(f"{name} must be a dict such as {{'obey': False}}")
        _unknown_keys(overrides, name, ("obey", "user_agent", "unreachable", "usage"))
        obey = _bool(overrides.get("obey", True), f"{name}['obey']")
        user_agent, given = overrides.get("user_agent"), overrides.get("unreachable")
        agents = _tokens(user_agent, f"{name}['user_agent']") if user_agent else crawl.user_agents
        mode, wait = (
            unreachable_mode(given, f"{name}['unreachable']") if given else (crawl.unreachable, crawl.unreachable_wait)
        )
        usage = usage_purposes(overrides["usage"], f"{name}['usage']") if "usage" in overrides else crawl.usage
        from_ua = crawl.from_user_agent and not user_agent
        resolved[origin] = OriginPolicy(obey, agents[0], mode, agents, from_ua, usage, wait)
    return resolved


def _max_bytes(value: Any, name: str) -> int:
    number: int = _number(value, name, int)
    if number < MIN_MAX_BYTES:
        raise ValueError(
            f"{name}={number} is below {MIN_MAX_BYTES:,}: RFC 9309 section 2.5 requires parsing at least 500 KiB"
        )
    return number


#: the settings read alone, ``{setting: reader of (value, setting) into fields}``; RFC9309_ORIGINS, _STORAGE and
#: _FETCH_CONCURRENCY need other settings (from_settings), RFC9309_SCHEDULER is the gate's
_READERS: dict[str, Reader] = {
    "RFC9309_ENABLED": lambda v, n: {"enabled": _bool(v, n)},
    "RFC9309_MAX_HELD": lambda v, n: {"max_held": _number(v, n, int, positive=True)},
    "RFC9309_UNREACHABLE": lambda v, n: dict(zip(("unreachable", "unreachable_wait"), unreachable_mode(v, n))),
    "RFC9309_CACHE_SECONDS": lambda v, n: {"cache_seconds": float(min(_number(v, n, float), MAX_CACHE_SECONDS))},
    "RFC9309_CACHE_MAX_ORIGINS": lambda v, n: {"cache_max_origins": _number(v, n, int, positive=True)},
    "RFC9309_FETCH_TIMEOUT": lambda v, n: {"fetch_timeout": _number(v, n, float, positive=True)},
    "RFC9309_MAX_BYTES": lambda v, n: {"max_bytes": _max_bytes(v, n)},
    "RFC9309_CRAWL_DELAY": _crawl_delay,
    "RFC9309_INTERNAL_NETWORKS": lambda v, n: {  # "" (-s NAME=): the default, not "nothing is internal"
        "internal_networks": None if isinstance(v, str) and not v.strip() else parse_networks(v, n)
    },
    "RFC9309_AUDIT": _audit,
    "RFC9309_USAGE": _usage,
    "RFC9309_EARLY_FETCH": lambda v, n: {"early_fetch": _bool(v, n)},
}
#: the dict forms' keys: ``{key: (field, default, reader of (value, "SETTING['key']"))}``
_AUDIT_KEYS: dict[str, tuple[str, Any, Reader]] = {
    "path": ("audit", None, _trail_path),
    "allowed": ("audit_allowed", False, _bool),
    "sync": ("audit_sync", False, _bool),
    "key": ("audit_key", None, audit_key),
}
_USAGE_KEYS: dict[str, tuple[str, Any, Reader]] = {
    "purposes": ("usage", None, usage_purposes),
    "header": ("usage_header", "drop", partial(_choice, choices=("drop", "mark"))),
    "unknown": ("usage_unknown_denies", "allow", lambda value, name: _choice(value, name, ("allow", "deny")) == "deny"),
    "report": ("usage_report", False, _bool),
    "nofollow": ("nofollow", True, _bool),
    "licenses": ("usage_licenses", (), _held),
}
