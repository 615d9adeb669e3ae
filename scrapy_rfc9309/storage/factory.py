"""``RFC9309_STORAGE`` -> a backend.

=================================  ============================================
value                              backend
=================================  ============================================
``"memory"`` (default)             :class:`~.memory.MemoryStorage`, this process only
``"sqlite:///abs/robots.sqlite"``  :class:`~.sqlite.SqliteStorage`; everything after
``"sqlite://rel/robots.sqlite"``   ``sqlite://`` is the file's path (``~`` expanded)
``"redis://host:6379/0"``,         :class:`~.redis.RedisStorage` (``pip install
``"rediss://..."``, ``"unix://..."`` 'scrapy-rfc9309[redis]'``)
``"package.module.Class"``         a class of your own, built with its
                                   ``from_rfc9309_settings(settings)`` when it has one
=================================  ============================================

When ``RFC9309_STORAGE`` is not set and ``JOBDIR`` is, the settings resolve it
to ``sqlite://<JOBDIR>/rfc9309-robots.sqlite`` (see
:mod:`scrapy_rfc9309.settings`), so a paused and resumed crawl keeps its files.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import RobotsStorage
from .memory import MemoryStorage

#: the file name used inside JOBDIR
JOBDIR_FILE = "rfc9309-robots.sqlite"
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def build_storage(settings: Any) -> RobotsStorage:
    """The backend ``settings.storage`` names (``settings`` is a
    :class:`~scrapy_rfc9309.settings.Rfc9309Settings`).  ``ValueError`` for a
    value it cannot read, ``ImportError`` when the Redis client is missing."""
    url = str(settings.storage).strip()
    lowered = url.lower()
    if lowered == "memory":
        return MemoryStorage(settings.cache_max_origins)
    if lowered.startswith("sqlite://"):
        from .sqlite import SqliteStorage

        path = url[len("sqlite://") :]
        if not path:
            raise ValueError(f"RFC9309_STORAGE={url!r}: give a file, e.g. 'sqlite:///var/cache/robots.sqlite'")
        return SqliteStorage(path)
    if lowered.startswith(REDIS_SCHEMES):
        from .redis import RedisStorage

        return RedisStorage(url, prefix=settings.redis_prefix)
    if "://" not in url and "." in url:
        cls = _load(url)
        factory = getattr(cls, "from_rfc9309_settings", None)
        return factory(settings) if factory is not None else cls()
    raise ValueError(
        f"RFC9309_STORAGE={url!r}: use 'memory', 'sqlite:///path/robots.sqlite', "
        "'redis://host:port/db' or the import path of a storage class"
    )


def _load(path: str) -> Any:
    module, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"RFC9309_STORAGE={path!r}: cannot import it ({exc})") from None
