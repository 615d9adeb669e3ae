"""Robots.txt result storage: one async interface, pluggable backends.

``RFC9309_STORAGE`` names the backend class (default
``scrapy_rfc9309.storage.memory.MemoryStorage``).  A backend is built with its
``from_rfc9309_settings(settings)`` class method when it has one (it receives
the frozen :class:`~scrapy_rfc9309.settings.Rfc9309Settings`), else with no
arguments.
"""

from .base import RobotsEntry, RobotsStorage
from .memory import LruDict, MemoryStorage

__all__ = ["LruDict", "MemoryStorage", "RobotsEntry", "RobotsStorage"]
