"""scrapy-rfc9309: robots.txt exactly as RFC 9309 says, for Scrapy.

The core (``parse``, ``RobotsTxt`` ...) is pure Python and imports no Scrapy; the Scrapy layer
(``RobotsTxtMiddleware``, ``NofollowMiddleware``, ``Addon``, ``robots_service``, ``governing_robots``)
is imported lazily, on first use of its names.
"""

import importlib
from typing import Any

from .robots import Decision, Diagnostic, RobotsTxt, Rule, Verdict, parse

__version__ = "0.1.0"

_SCRAPY_LAYER = {
    "RobotsTxtMiddleware": "scrapy_rfc9309.middleware",
    "NofollowMiddleware": "scrapy_rfc9309.nofollow",
    "Addon": "scrapy_rfc9309.addon",
    "robots_service": "scrapy_rfc9309.lifecycle",
    "governing_robots": "scrapy_rfc9309.lifecycle",
}

__all__ = ["Addon", "Decision", "Diagnostic", "NofollowMiddleware", "RobotsTxt", "RobotsTxtMiddleware", "Rule",
           "Verdict", "governing_robots", "parse", "robots_service"]  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _SCRAPY_LAYER.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_rfc9309' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
