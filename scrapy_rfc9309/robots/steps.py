"""Long work in bounded steps, for callers with an event loop.

Parsing a 500 KiB robots.txt and compiling its rules takes tens of
milliseconds of pure Python; a crawler's event loop must not stop that long.
So the long parts of the core are written as generators: each ``next()``
does a bounded piece of the work (a few thousand lines, a few hundred rules:
a few milliseconds at most) and the generator *returns* the result.  A caller
with a loop runs a few steps, lets the loop turn, runs a few more;
:func:`finish` runs them all at once, which is what the plain functions
(``parse``, ``RobotsTxt.check``) do.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

T = TypeVar("T")


def finish(steps: Generator[None, None, T]) -> T:
    """Run ``steps`` to their end, at once; what they return."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            value: T = done.value
            return value
