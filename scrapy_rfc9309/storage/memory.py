"""The default backend: a bounded in-process LRU dict."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from .base import Lease, RobotsEntry, RobotsStorage

#: the lease of a store of one process: it holds nothing, and is shared
_LEASE = Lease()

K = TypeVar("K")
V = TypeVar("V")


class LruDict(Generic[K, V]):
    """A dict that keeps at most ``max_size`` keys, forgetting the least
    recently used; ``on_evict(key)`` is called for each key it forgets."""

    __slots__ = ("_data", "max_size", "on_evict")

    def __init__(self, max_size: int, on_evict: Callable[[K], None] | None = None) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self._data: OrderedDict[K, V] = OrderedDict()
        self.max_size = max_size
        self.on_evict = on_evict

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def peek(self, key: K) -> V | None:
        """``get`` without making the key recently used."""
        return self._data.get(key)

    def put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.max_size:
            old, _ = self._data.popitem(last=False)
            if self.on_evict is not None:
                self.on_evict(old)

    def pop(self, key: K) -> V | None:
        return self._data.pop(key, None)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data


class MemoryStorage(RobotsStorage):
    """Entries in process memory, at most ``max_origins`` of them (LRU)."""

    def __init__(self, max_origins: int = 10_000) -> None:
        self._entries: LruDict[str, RobotsEntry] = LruDict(max_origins)

    @classmethod
    def from_rfc9309_settings(cls, settings) -> MemoryStorage:
        return cls(settings.cache_max_origins)

    async def get(self, origin: str) -> RobotsEntry | None:
        return self._entries.get(origin)

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        self._entries.put(origin, entry)

    # The two steps of a resolution, each in one call (what the base class does through
    # get, claim, put and the lease's release: four coroutines more per origin).  A
    # subclass keeps the base class's steps: its own get or put are called.
    async def lookup(self, origin: str, now: float) -> tuple[RobotsEntry | None, Lease | None]:
        if type(self) is not MemoryStorage:
            return await super().lookup(origin, now)
        entry = self._entries.get(origin)
        if entry is not None and entry.is_fresh(now):
            return entry, None
        return entry, _LEASE

    async def store(self, origin: str, entry: RobotsEntry, lease: Lease | None, floor: float = 0.0) -> None:
        if type(self) is not MemoryStorage:
            await super().store(origin, entry, lease, floor)
            return
        self._entries.put(origin, entry)  # (one process: no start to note for others)
        if lease is not None and lease is not _LEASE:
            await lease.release()

    def __len__(self) -> int:
        return len(self._entries)
