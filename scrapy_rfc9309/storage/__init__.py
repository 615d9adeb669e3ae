"""Robots.txt result storage: one async interface, pluggable backends.

``RFC9309_STORAGE`` selects the backend (see :mod:`.factory`): ``"memory"``
(default), ``"sqlite:///path/robots.sqlite"`` (chosen automatically inside
``JOBDIR``), ``"redis://host:port/db"`` (clusters of workers),
``"redis+cluster://host:port"`` (the same on a Redis Cluster), or a class path.  The
SQLite and Redis modules are imported only when named.
"""

from .base import (
    STALE_MAX_SECONDS,
    Lease,
    RobotsEntry,
    RobotsStorage,
    StorageBusy,
    StorageNeedsAsyncio,
    StorageUnavailable,
    display_url,
)
from .factory import build_storage
from .fallback import FallbackStorage
from .memory import LruDict, MemoryStorage

__all__ = [
    "STALE_MAX_SECONDS",
    "FallbackStorage",
    "Lease",
    "LruDict",
    "MemoryStorage",
    "RobotsEntry",
    "RobotsStorage",
    "StorageBusy",
    "StorageNeedsAsyncio",
    "StorageUnavailable",
    "build_storage",
    "display_url",
]
