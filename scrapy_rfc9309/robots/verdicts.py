"""The answer to "may this crawler fetch this URL?", and why.

A :class:`Decision` is immutable and shared: the matcher builds one per rule
the first time that rule wins, so later answers allocate nothing.
"""

from __future__ import annotations

from enum import Enum

from .text import shorten


class ValueEnum(str, Enum):
    """A str enum that prints as its value on every Python (3.11 changed
    ``format()`` of mixed-in enums)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Verdict(ValueEnum):
    """Why a URL was allowed or not.  The value is the stable string used in
    logs, stats keys and ``IgnoreRequest`` messages."""

    #: an Allow rule was the longest match
    ALLOWED_EXPLICIT = "allowed_explicit"
    #: no rule matched (or no group applies to the crawler)
    ALLOWED_IMPLICIT = "allowed_implicit"
    #: ``/robots.txt`` itself, always allowed (RFC 9309 section 2.2.2)
    ALLOWED_ROBOTS_TXT = "allowed_robots_txt"
    #: robots.txt was unavailable (4xx other than 429, too many redirects): allow all
    ALLOWED_UNAVAILABLE = "allowed_unavailable"
    #: robots.txt was unreachable but the operator opted in to fail open
    ALLOWED_UNREACHABLE_OPT_IN = "allowed_unreachable_opt_in"
    #: robots.txt was not consulted on purpose (per-request or per-origin override)
    ALLOWED_NOT_OBEYED = "allowed_not_obeyed"
    #: a Disallow rule was the longest match
    DISALLOWED_EXPLICIT = "disallowed_explicit"
    #: robots.txt was unreachable (5xx, 429, network error): complete disallow
    UNKNOWN_UNREACHABLE = "unknown_unreachable"


class Rule:
    """One Allow or Disallow line as written in the file."""

    __slots__ = ("allow", "pattern", "line")

    def __init__(self, allow: bool, pattern: str, line: int) -> None:
        self.allow = allow
        self.pattern = pattern
        self.line = line

    def __str__(self) -> str:
        return f"{'Allow' if self.allow else 'Disallow'}: {self.pattern}"

    def __repr__(self) -> str:
        return f"<Rule line {self.line}: {self}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rule):
            return NotImplemented
        return (self.allow, self.pattern, self.line) == (other.allow, other.pattern, other.line)

    def __hash__(self) -> int:
        return hash((self.allow, self.pattern, self.line))


class Decision:
    """``allowed``, the ``verdict`` behind it, and the deciding ``rule`` (or None)."""

    __slots__ = ("allowed", "verdict", "rule")

    def __init__(self, allowed: bool, verdict: Verdict, rule: Rule | None = None) -> None:
        self.allowed = allowed
        self.verdict = verdict
        self.rule = rule

    @property
    def reason(self) -> str:
        """Human-readable reason, e.g. ``disallowed_explicit (line 7: Disallow: /private)``."""
        if self.rule is None:
            return self.verdict.value
        return f"{self.verdict.value} (line {self.rule.line}: {shorten(self.rule)})"

    def __repr__(self) -> str:
        return f"<Decision {'allowed' if self.allowed else 'denied'}: {self.reason}>"


ALLOW_IMPLICIT = Decision(True, Verdict.ALLOWED_IMPLICIT)
ALLOW_ROBOTS_TXT = Decision(True, Verdict.ALLOWED_ROBOTS_TXT)
ALLOW_UNAVAILABLE = Decision(True, Verdict.ALLOWED_UNAVAILABLE)
ALLOW_NOT_OBEYED = Decision(True, Verdict.ALLOWED_NOT_OBEYED)
DENY_UNREACHABLE = Decision(False, Verdict.UNKNOWN_UNREACHABLE)
