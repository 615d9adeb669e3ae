"""Dot segments: a path is decided as sent and as most servers serve it.

``/x/../private`` does not start with ``/private``, so ``Disallow: /private``
does not match it; but most servers remove dot segments (RFC 3986 5.2.4)
and serve ``/private``.  So a path that holds a dot segment is decided twice,
as sent and with its dot segments removed, and it is allowed only if both
are (docs/deviations.md, class l).

The path here is the matching form (:func:`~.patterns.path_of`), where
``%2E``/``%2e`` is already decoded to ``.`` (an unreserved character), so
``/x/%2E%2E/private`` is caught too.  Only the part before ``?`` is
resolved; the query stays as it is.  The cost for a path without ``/.`` is
the one substring test the caller makes.
"""

from __future__ import annotations

from collections.abc import Callable

from .verdicts import ALLOW_ROBOTS_TXT, Decision


def has_dot_segment(path: str) -> bool:
    """The cheap test the caller makes first (a superset: ``/.well-known`` too)."""
    return "/." in path


def remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for an absolute path (``/a/b/../c`` -> ``/a/c``,
    ``/a/.`` -> ``/a/``, ``/../x`` -> ``/x``), its query kept."""
    head, question, query = path.partition("?")
    segments = head[1:].split("/")
    out: list[str] = []
    last = len(segments) - 1
    for i, segment in enumerate(segments):
        if segment == "..":
            if out:
                out.pop()
            if i == last:
                out.append("")
        elif segment == ".":
            if i == last:
                out.append("")
        else:
            out.append(segment)
    return "/" + "/".join(out) + question + query


def decide_both(decide: Callable[[str], Decision], path: str) -> Decision:
    """``decide(path)``, unless the path with its dot segments removed is
    denied: then that decision (its rule names what the server would serve)."""
    first = decide(path)
    if not first.allowed:
        return first
    resolved = remove_dot_segments(path)
    if resolved == path:
        return first
    if resolved == "/robots.txt":
        second = ALLOW_ROBOTS_TXT
    else:
        second = decide(resolved)
    return first if second.allowed else second
