"""Long work in bounded steps, for callers with an event loop.

Parsing a 500 KiB robots.txt and compiling its rules takes tens of
milliseconds of pure Python; a crawler's event loop must not stop that long.
So every long part of the core is written once, as a generator: each
``next()`` does a bounded piece of the work (a few milliseconds at most,
whatever the file) and the generator *returns* the result.

:func:`run` is the one loop that drives such steps: to their end, or for
a budget of seconds after which the caller's loop should turn.  The plain calls
(``parse``, ``RobotsTxt.check``, ``RobotsTxt.prepare``) drain the same
generators with :func:`finish`, so a direct call and a crawl run the same
code.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Generator
from typing import Any, Final, TypeVar

T = TypeVar("T")


class Paused(enum.Enum):
    """What :func:`run` returns when it stopped before the end."""

    PAUSED = "paused"


PAUSED: Final = Paused.PAUSED


def run(steps: Generator[Any, None, T], budget: float | None = None) -> T | Paused:
    """Run ``steps`` to their end (what they return), or, given a ``budget``,
    until the first step that ends ``budget`` seconds or more after the
    start (:data:`PAUSED`; call again to go on)."""
    deadline = None if budget is None else time.perf_counter() + budget
    while True:
        try:
            next(steps)
        except StopIteration as done:
            value: T = done.value
            return value
        if deadline is not None and time.perf_counter() >= deadline:
            return PAUSED


def finish(steps: Generator[Any, None, T]) -> T:
    """Run ``steps`` to their end, at once; what they return."""
    value = run(steps)
    assert not isinstance(value, Paused)
    return value
