"""``RFC9309_STORAGE`` -> a backend.

=================================  ============================================
value                              backend
=================================  ============================================
``"memory"`` (default)             :class:`~.memory.MemoryStorage`, this process only
``"sqlite:///abs/robots.sqlite"``  :class:`~.sqlite.SqliteStorage`; everything after
``"sqlite://rel/robots.sqlite"``   ``sqlite://`` is the file's path (``~`` expanded)
``"redis://host:6379/0"``,         :class:`~.redis.RedisStorage` (``pip install
``"rediss://..."``, ``"unix://..."`` 'scrapy-rfc9309[redis]'``); ``?prefix=myjob:``
                                   sets the prefix of its keys (default ``rfc9309:``)
``"redis+cluster://host:6379"``    the same on a Redis Cluster (any node of it;
``"rediss+cluster://..."``         ``rediss`` with TLS)
``"package.module.Class"``         a class of your own, built with its
                                   ``from_rfc9309_settings(settings)`` when it has one
=================================  ============================================

When ``RFC9309_STORAGE`` is not set, the settings resolve it (see
:mod:`scrapy_rfc9309.settings`):

* when scrapy-redis schedules the crawl (``SCHEDULER`` is
  ``scrapy_redis.scheduler.Scheduler`` or a subclass), to the Redis server
  scrapy-redis uses (:func:`scrapy_redis_url`): the workers sharing its queue
  share robots.txt and Crawl-delay too;
* else, when ``JOBDIR`` is set, to ``sqlite://<JOBDIR>/rfc9309-robots.sqlite``,
  so a paused and resumed crawl keeps its files;
* else to ``"memory"``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from ..masking import mask_url
from ..robots.text import shorten
from .base import RETRY_AFTER, RobotsStorage
from .memory import MemoryStorage

#: the file name used inside JOBDIR
JOBDIR_FILE = "rfc9309-robots.sqlite"
REDIS_SCHEMES = ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")
#: the query parameter of a Redis URL that names the prefix of the store's keys
PREFIX_PARAMETER = "prefix"
#: the prefix of every key of a Redis store whose URL names none
DEFAULT_REDIS_PREFIX = "rfc9309:"
#: the package whose scheduler makes a crawl a cluster sharing one Redis server
SCRAPY_REDIS = "scrapy_redis"
#: scrapy-redis's own defaults (scrapy_redis.defaults, redis.Redis())
SCRAPY_REDIS_HOST = "localhost"
SCRAPY_REDIS_PORT = 6379


def build_storage(settings: Any) -> RobotsStorage:
    """The backend ``settings.storage`` names (``settings`` is a
    :class:`~scrapy_rfc9309.settings.Rfc9309Settings`), with its
    ``retry_after`` set from ``settings.storage_retry_seconds``.  ``ValueError``
    for a value it cannot read, ``ImportError`` when the Redis client is
    missing."""
    store = _build(settings)
    store.retry_after = float(getattr(settings, "storage_retry_seconds", RETRY_AFTER))
    return store


def _build(settings: Any) -> RobotsStorage:
    url = str(settings.storage).strip()
    kind = check_storage(url, settings.redis_prefix)
    if kind == "memory":
        return MemoryStorage(settings.cache_max_origins)
    if kind == "sqlite":
        from .sqlite import SqliteStorage

        return SqliteStorage(url[len("sqlite://") :])
    if kind == "redis":
        from .redis import RedisStorage

        return RedisStorage(url, prefix=settings.redis_prefix)
    cls = _load(url)
    factory = getattr(cls, "from_rfc9309_settings", None)
    return factory(settings) if factory is not None else cls()


def check_storage(url: str, prefix: str = DEFAULT_REDIS_PREFIX) -> str:
    """Which kind of store ``url`` (a resolved ``RFC9309_STORAGE``) names:
    ``"memory"``, ``"sqlite"``, ``"redis"`` or ``"class"``.  ``ValueError``, a
    message naming the setting with its value masked, for a value no store
    can be built from (an unknown scheme, a SQLite URL without a file, a Redis
    URL without the redis package or with a database on a Redis Cluster, an
    import path that does not import).  Nothing connects: run at start-up,
    before the crawl opens."""
    url = url.strip()
    lowered = url.lower()
    if lowered == "memory":
        return "memory"
    if lowered.startswith("sqlite://"):
        if not url[len("sqlite://") :]:
            raise ValueError(
                f"RFC9309_STORAGE={mask_url(url)!r}: give a file, e.g. 'sqlite:///var/cache/robots.sqlite'"
            )
        return "sqlite"
    if lowered.startswith(REDIS_SCHEMES):
        from .redis import check_url

        check_url(url, prefix)
        return "redis"
    if "://" not in url and "." in url:
        _load(url)
        return "class"
    raise ValueError(
        f"RFC9309_STORAGE={shorten(mask_url(url))!r}: use 'memory', 'sqlite:///path/robots.sqlite', "
        "'redis://host:port/db', 'redis+cluster://host:port' or the import path of a storage class"
    )


def split_prefix(url: str) -> tuple[str, str | None]:
    """A Redis URL without its ``prefix`` query parameter (``redis://host:6379/0?prefix=myjob:``),
    and that parameter percent-decoded, or None when it has none.  The rest of
    the URL is kept as written: redis-py reads its own parameters
    (``socket_timeout``, ``max_connections``) and would pass an unknown one to
    its connections, which refuse it.  ``ValueError`` naming ``RFC9309_STORAGE``
    for an empty or repeated prefix."""
    head, hash_, fragment = url.partition("#")
    base, question, query = head.partition("?")
    if not question:
        return url, None
    kept: list[str] = []
    prefixes: list[str] = []
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if unquote(name) == PREFIX_PARAMETER:
            prefixes.append(unquote(value))
        elif pair:
            kept.append(pair)
    if not prefixes:
        return url, None
    if len(prefixes) > 1 or not prefixes[0]:
        raise ValueError(
            f"RFC9309_STORAGE={shorten(mask_url(url))!r}: give one non-empty prefix, e.g. "
            "'redis://host:6379/0?prefix=myjob:'"
        )
    rest = f"?{'&'.join(kept)}" if kept else ""
    return f"{base}{rest}{hash_}{fragment}", prefixes[0]


def _load(path: str) -> Any:
    module, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(f"RFC9309_STORAGE={shorten(path)!r}: cannot import it ({exc})") from None


def scrapy_redis_url(settings: Any) -> str | None:
    """The Redis server scrapy-redis schedules this crawl on, as a URL; None
    when scrapy-redis is not the scheduler.

    ``settings`` is a Scrapy ``Settings`` (or a plain mapping).  The URL is the
    one ``scrapy_redis.connection.get_redis_from_settings`` connects to:
    ``REDIS_URL``; else ``REDIS_HOST``, ``REDIS_PORT`` and ``REDIS_DB``; each
    also read from ``REDIS_PARAMS`` (``url``, ``host``, ``port``, ``db``,
    ``username``, ``password``), the ``REDIS_*`` setting winning, as in
    scrapy-redis; else ``localhost:6379``, database 0.  Other client options of
    ``REDIS_PARAMS`` (TLS, socket options) are not carried over: set
    ``RFC9309_STORAGE`` to a URL that has them."""
    from ..settings import project_scheduler

    if not uses_scrapy_redis(project_scheduler(settings)):
        return None
    params = dict(_dict_setting(settings, "REDIS_PARAMS"))
    for setting, param in (("REDIS_URL", "url"), ("REDIS_HOST", "host"), ("REDIS_PORT", "port"), ("REDIS_DB", "db")):
        value = settings.get(setting)
        if value:
            params[param] = value
    if params.get("url"):
        return str(params["url"])
    auth = ""
    if params.get("password"):
        auth = f"{quote(str(params.get('username') or ''), safe='')}:{quote(str(params['password']), safe='')}@"
    elif params.get("username"):
        auth = f"{quote(str(params['username']), safe='')}@"
    host = str(params.get("host") or SCRAPY_REDIS_HOST)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    port = int(params.get("port") or SCRAPY_REDIS_PORT)
    db = int(params.get("db") or 0)
    return f"redis://{auth}{host}:{port}/{db}"


def uses_scrapy_redis(scheduler: Any) -> bool:
    """Whether ``SCHEDULER`` (an import path or a class) is scrapy-redis's
    scheduler or a subclass of it.  A path that does not import is not (the
    crawl fails on it anyway, with Scrapy's own message)."""
    if not scheduler:
        return False
    if isinstance(scheduler, str):
        if scheduler.split(".", 1)[0] == SCRAPY_REDIS:
            return True
        module, _, name = scheduler.rpartition(".")
        try:
            scheduler = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError):
            return False
    classes = inspect.getmro(scheduler) if inspect.isclass(scheduler) else (type(scheduler),)
    return any(getattr(cls, "__module__", "").split(".", 1)[0] == SCRAPY_REDIS for cls in classes)


def _dict_setting(settings: Any, name: str) -> Mapping[str, Any]:
    getdict = getattr(settings, "getdict", None)
    if getdict is not None:
        return getdict(name)  # a Scrapy Settings: also reads a JSON string given with -s
    value = settings.get(name)
    return value if isinstance(value, Mapping) else {}
