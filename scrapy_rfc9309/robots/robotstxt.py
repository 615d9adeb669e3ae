"""The parsed file and the questions a crawler asks of it.

Groups are selected per crawler token (RFC 9309 section 2.2.1): every group
that names the token, merged; else every ``*`` group, merged.  The selected
rules are compiled once per token, sorted by priority (longest pattern first,
Allow before Disallow on a tie), and bucketed by the second character of their
literal prefix, so a check walks only the rules that could match.
"""

from __future__ import annotations

import re
from typing import Iterable

from . import patterns
from .decode import DEFAULT_PARSE_BYTES
from .diagnostics import Diagnostic
from .parser import Group, read
from .verdicts import (
    ALLOW_IMPLICIT,
    ALLOW_ROBOTS_TXT,
    ALLOW_UNAVAILABLE,
    DENY_UNREACHABLE,
    Decision,
    Rule,
    Verdict,
)

_TOKEN = re.compile(r"[A-Za-z_-]+\Z")
_PREFIX, _EXACT, _WILD, _WILD_END = patterns.PREFIX, patterns.EXACT, patterns.WILD, patterns.WILD_END
_path_of = patterns.path_of
_wild_match = patterns.wild_match


def check_token(user_agent: str) -> str:
    """The lower-cased product token, or ``ValueError`` saying what is wrong."""
    if not isinstance(user_agent, str) or not _TOKEN.match(user_agent):
        raise ValueError(
            f"invalid robots.txt product token {user_agent!r}: RFC 9309 tokens use only "
            "letters, '_' and '-' (e.g. 'ExampleBot', not 'ExampleBot/1.0')"
        )
    return user_agent.lower()


class _Matcher:
    """The compiled rules of one crawler token."""

    __slots__ = ("buckets", "generic", "by_char", "crawl_delay", "request_rate", "specific")

    def __init__(self, groups: list[Group], specific: bool) -> None:
        self.specific = specific
        compiled = []
        seen = set()
        for group in groups:
            for allow, raw, line in group.rules:
                if (allow, raw) in seen:
                    continue
                seen.add((allow, raw))
                kind, data, priority = patterns.compile_pattern(raw)
                decision = Decision(
                    allow,
                    Verdict.ALLOWED_EXPLICIT if allow else Verdict.DISALLOWED_EXPLICIT,
                    Rule(allow, raw, line),
                )
                compiled.append((priority, allow, kind, data, decision))
                if allow:
                    extra = _index_htm(raw)
                    if extra is not None:
                        kind, data, priority = patterns.compile_pattern(extra)
                        compiled.append((priority, allow, kind, data, decision))
        # Longest first; Allow before Disallow on equal length; then file order.
        compiled.sort(key=lambda r: (-r[0], not r[1], r[4].rule.line))
        entries = [(kind, data, decision) for _, _, kind, data, decision in compiled]
        # Bucket by the character after the leading '/': a path can only match
        # rules of its own bucket, plus the rules whose literal prefix is
        # shorter than two characters (kept in every bucket, in order).
        self.generic = []
        self.by_char: dict[str, list] = {}
        for entry in entries:
            lead = entry[1] if entry[0] <= _EXACT else entry[1][0]
            if len(lead) >= 2 and lead[0] == "/":
                self.by_char.setdefault(lead[1], []).append(entry)
            else:
                self.generic.append(entry)
        self.buckets: dict[str, tuple] = {}
        self._finish_buckets(entries)
        delays = [g.crawl_delay for g in groups if g.crawl_delay is not None]
        self.crawl_delay = max(delays) if delays else None
        rates = [g.request_rate for g in groups if g.request_rate is not None]
        self.request_rate = max(rates, key=lambda r: r[1] / r[0]) if rates else None

    def _finish_buckets(self, entries: list) -> None:
        order = {id(e): i for i, e in enumerate(entries)}
        generic = self.generic
        for char, own in self.by_char.items():
            merged = sorted(own + generic, key=lambda e: order[id(e)])
            self.buckets[char] = _bucket(merged)
        self.buckets[""] = _bucket(generic)

    def decide(self, path: str) -> Decision:
        bucket = self.buckets.get(path[1:2])
        if bucket is None:
            bucket = self.buckets[""]
        prefixes, entries = bucket
        if prefixes is not None and not path.startswith(prefixes):
            return ALLOW_IMPLICIT
        for kind, data, decision in entries:
            if kind == _PREFIX:
                if path.startswith(data):
                    return decision
            elif kind == _EXACT:
                if path == data:
                    return decision
            elif _wild_match(path, data, kind == _WILD_END):
                return decision
        return ALLOW_IMPLICIT


def _bucket(entries: list) -> tuple:
    """``(prefixes, entries)``: when every entry is a plain prefix rule, one
    ``str.startswith(tuple)`` call rules out the common no-match case."""
    if entries and all(kind == _PREFIX for kind, _, _ in entries):
        return tuple(data for _, data, _ in entries), entries
    if not entries:
        return (), entries
    return None, entries


def _index_htm(raw: str) -> str | None:
    """Google's rule: ``Allow: /d/index.htm...`` also allows exactly ``/d/``."""
    slash = raw.rfind("/")
    if slash >= 0 and raw.startswith("/index.htm", slash):
        return raw[: slash + 1] + "$"
    return None


class RobotsTxt:
    """A parsed robots.txt, or the policy that stands in for one (allow all
    when the file is unavailable, deny all when it is unreachable).

    Immutable after construction apart from the per-token compile cache;
    safe to share between all requests of an origin.
    """

    __slots__ = ("_groups", "sitemaps", "diagnostics", "_matchers", "_fixed")

    def __init__(
        self,
        groups: list[Group] | None = None,
        sitemaps: list[str] | None = None,
        diagnostics: list[Diagnostic] | None = None,
        fixed: Decision | None = None,
    ) -> None:
        self._groups = groups or []
        #: Sitemap URLs in file order, duplicates removed.
        self.sitemaps: list[str] = sitemaps or []
        #: Problems found while parsing, with their line numbers.
        self.diagnostics: list[Diagnostic] = diagnostics or []
        self._matchers: dict[str, _Matcher] = {}
        self._fixed = fixed

    # -- constructors -------------------------------------------------------
    @classmethod
    def parse(
        cls,
        body: bytes | str,
        content_type: str | bytes | None = None,
        max_bytes: int = DEFAULT_PARSE_BYTES,
    ) -> RobotsTxt:
        result = read(body, content_type, max_bytes)
        return cls(result.groups, result.sitemaps, result.diagnostics)

    @classmethod
    def allow_all(cls, verdict: Verdict = Verdict.ALLOWED_UNAVAILABLE) -> RobotsTxt:
        """The policy for an unavailable robots.txt (4xx): everything allowed."""
        decision = ALLOW_UNAVAILABLE if verdict is Verdict.ALLOWED_UNAVAILABLE else Decision(True, verdict)
        return cls(fixed=decision)

    @classmethod
    def deny_all(cls, verdict: Verdict = Verdict.UNKNOWN_UNREACHABLE) -> RobotsTxt:
        """The policy for an unreachable robots.txt (5xx, 429, network error)."""
        decision = DENY_UNREACHABLE if verdict is Verdict.UNKNOWN_UNREACHABLE else Decision(False, verdict)
        return cls(fixed=decision)

    # -- questions ----------------------------------------------------------
    @property
    def fixed_verdict(self) -> Verdict | None:
        """The verdict of an allow-all or deny-all policy; None for a parsed file."""
        return self._fixed.verdict if self._fixed is not None else None

    def check(self, url: str, user_agent: str) -> Decision:
        """Decide ``url`` (absolute, or a path) for the crawler ``user_agent``.

        ``user_agent`` is a product token (``[A-Za-z_-]+``); anything else
        raises ``ValueError``.
        """
        matcher = self._matchers.get(user_agent)
        if matcher is None:
            matcher = self._matcher(user_agent)
        if self._fixed is not None:
            return self._fixed
        path = _path_of(url)
        if path == "/robots.txt":
            return ALLOW_ROBOTS_TXT
        return matcher.decide(path)

    def can_fetch(self, url: str, user_agent: str) -> bool:
        return self.check(url, user_agent).allowed

    def crawl_delay(self, user_agent: str) -> float | None:
        """Seconds between requests asked by the crawler's group, or None."""
        matcher = self._matchers.get(user_agent) or self._matcher(user_agent)
        return matcher.crawl_delay

    def request_rate(self, user_agent: str) -> tuple[int, float] | None:
        """``(requests, seconds)`` asked by the crawler's group, or None."""
        matcher = self._matchers.get(user_agent) or self._matcher(user_agent)
        return matcher.request_rate

    def min_delay(self, user_agent: str) -> float | None:
        """The larger of Crawl-delay and the gap implied by Request-rate."""
        matcher = self._matchers.get(user_agent) or self._matcher(user_agent)
        delays = [d for d in (matcher.crawl_delay,) if d is not None]
        if matcher.request_rate is not None:
            delays.append(matcher.request_rate[1] / matcher.request_rate[0])
        return max(delays) if delays else None

    def applies_specifically(self, user_agent: str) -> bool:
        """True when a group names this crawler (so ``*`` groups are ignored)."""
        matcher = self._matchers.get(user_agent) or self._matcher(user_agent)
        return matcher.specific

    def groups_for(self, user_agent: str) -> list[Group]:
        token = check_token(user_agent)
        return _select(self._groups, token)[0]

    @property
    def user_agents(self) -> list[str]:
        """Every product token the file names (lower-case), in file order."""
        seen: dict[str, None] = {}
        for group in self._groups:
            for agent in group.agents:
                if agent:
                    seen[agent] = None
        return list(seen)

    def _matcher(self, user_agent: str) -> _Matcher:
        token = check_token(user_agent)
        matcher = self._matchers.get(token)
        if matcher is None:
            groups, specific = _select(self._groups, token)
            matcher = _Matcher(groups, specific)
            self._matchers[token] = matcher
        self._matchers[user_agent] = matcher
        return matcher

    def __repr__(self) -> str:
        if self._fixed is not None:
            return f"<RobotsTxt {self._fixed.verdict.value}>"
        rules = sum(len(g.rules) for g in self._groups)
        return f"<RobotsTxt {len(self._groups)} groups, {rules} rules, {len(self.sitemaps)} sitemaps>"


def _select(groups: Iterable[Group], token: str) -> tuple[list[Group], bool]:
    own = [g for g in groups if token in g.agents]
    if own:
        return own, True
    return [g for g in groups if "*" in g.agents], False


def parse(
    body: bytes | str,
    content_type: str | bytes | None = None,
    max_bytes: int = DEFAULT_PARSE_BYTES,
) -> RobotsTxt:
    """Parse a robots.txt body (bytes or str).  Never raises: every problem
    becomes a :class:`Diagnostic` in ``robots.diagnostics``.

    ``content_type`` (the response's header) names the charset to fall back
    on when the body is not UTF-8; ``max_bytes`` (at least 512,000) is how
    much of the body is read.
    """
    return RobotsTxt.parse(body, content_type, max_bytes)
