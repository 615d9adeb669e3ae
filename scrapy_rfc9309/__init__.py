"""scrapy-rfc9309: robots.txt exactly as RFC 9309 says, for Scrapy.

The core (``parse``, ``RobotsTxt`` ...) imports no Scrapy; the Scrapy layer's names are imported on first use.
"""

import importlib
from typing import Any

from .robots import Decision, Diagnostic, RobotsTxt, Rule, Verdict, parse

__version__ = "0.1.0"

_SCRAPY_LAYER = {"RobotsTxtMiddleware": "middleware", "NofollowMiddleware": "nofollow", "Addon": "addon",
                 "robots_service": "lifecycle", "governing_robots": "lifecycle"}  # fmt: skip
__all__ = ["Addon", "Decision", "Diagnostic", "NofollowMiddleware", "RobotsTxt", "RobotsTxtMiddleware", "Rule",
           "Verdict", "governing_robots", "parse", "robots_service"]  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _SCRAPY_LAYER:
        raise AttributeError(f"module 'scrapy_rfc9309' has no attribute {name!r}")
    return getattr(importlib.import_module(f"scrapy_rfc9309.{_SCRAPY_LAYER[name]}"), name)
