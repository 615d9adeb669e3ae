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
from .diagnostics import Diagnostic, DiagnosticLog
from .parser import Group, Parsed, read
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
_PREFIX, _EXACT, _SUB, _SUB_END, _WILD_END = (
    patterns.PREFIX,
    patterns.EXACT,
    patterns.SUB,
    patterns.SUB_END,
    patterns.WILD_END,
)
SUB_END = patterns.SUB_END
_BATCH = 6  # see _batched()
_BATCH_MIN = 4
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
    """The compiled rules of one crawler token.

    Built on the first question for a token, and then per path bucket on the
    first path of that bucket: a crawl of one site asks about a handful of
    buckets, so most of a large file is never compiled into buckets at all.
    """

    __slots__ = ("buckets", "by_char", "generic", "crawl_delay", "request_rate", "specific")

    def __init__(self, groups: list[Group], specific: bool, texts: list[str], marks) -> None:
        self.specific = specific
        compiled: list[tuple] = []
        add = compiled.append
        seen: set[str] = set()
        compile_pattern = patterns.compile_pattern
        for group in groups:
            for i in range(group.start, group.end):
                raw, mark = texts[i], marks[i]
                allow = mark & 1
                key = raw if allow else "\n" + raw  # one set for both kinds: "\n" is in no pattern
                if key in seen:
                    continue
                seen.add(key)
                decision = Decision(
                    bool(allow),
                    Verdict.ALLOWED_EXPLICIT if allow else Verdict.DISALLOWED_EXPLICIT,
                    Rule(bool(allow), raw, mark >> 1),
                )
                if raw.isascii() and "*" not in raw and "%" not in raw and raw[-1] != "$":
                    entry, priority = (_PREFIX, raw, "", 0, decision), len(raw)  # the common rule
                else:
                    kind, a, b, n, priority = compile_pattern(raw)
                    entry = (kind, a, b, n, decision)
                # Longest first; Allow before Disallow on equal length; then file order.
                add((-priority, 1 - allow, len(compiled), entry))
                if allow:
                    extra = _index_htm(raw)
                    if extra is not None:
                        kind, a, b, n, priority = compile_pattern(extra)
                        add((-priority, 0, len(compiled), (kind, a, b, n, decision)))
        compiled.sort()
        # Bucket by the character after the leading '/': a path can only match
        # the rules of its own bucket, plus the rules whose literal prefix is
        # shorter than two characters (those are in every bucket, in order).
        generic: list[tuple] = []
        by_char: dict[str, list[tuple]] = {}
        for order, (_, _, _, entry) in enumerate(compiled):
            lead = entry[1] if entry[0] <= SUB_END else entry[1][0]
            if len(lead) >= 2 and lead[0] == "/":
                by_char.setdefault(lead[1], []).append((order, entry))
            else:
                generic.append((order, entry))
        self.by_char = by_char
        self.generic = generic
        self.buckets: dict[str, tuple] = {"": _bucket([e for _, e in generic])}
        delays = [g.crawl_delay for g in groups if g.crawl_delay is not None]
        self.crawl_delay = max(delays) if delays else None
        rates = [g.request_rate for g in groups if g.request_rate is not None]
        self.request_rate = max(rates, key=lambda r: r[1] / r[0]) if rates else None

    def _bucket_of(self, char: str) -> tuple:
        """The rules a path whose second character is ``char`` may match."""
        own = self.by_char.get(char)
        if own is None:
            bucket = self.buckets[""]
        else:
            bucket = _bucket([e for _, e in sorted(own + self.generic, key=_first)])
        if len(self.buckets) < 512:  # bounded: characters are many, paths use few
            self.buckets[char] = bucket
        return bucket

    def decide(self, path: str) -> Decision:
        bucket = self.buckets.get(path[1:2])
        if bucket is None:
            bucket = self._bucket_of(path[1:2])
        prefixes, others, entries = bucket
        # Plain prefix rules are ruled out all at once; when none matches,
        # only the (few) wildcard and exact rules are left to try.
        if not prefixes or not path.startswith(prefixes):
            entries = others
        for kind, a, b, n, decision in entries:
            if kind == _PREFIX:
                if path.startswith(a):
                    return decision
            elif kind == _SUB:
                if path.startswith(a) and path.find(b, n) >= 0:
                    return decision
            elif kind == _SUB_END:
                if path.endswith(b) and len(path) >= n and path.startswith(a):
                    return decision
            elif kind == _EXACT:
                if path == a:
                    return decision
            elif kind == _BATCH:
                # a: literals, b: their decisions; the literal must occur at or after n
                hay = path[n:] if n else path
                if any(map(hay.__contains__, a)):
                    for literal, found in zip(a, b):
                        if literal in hay:
                            return found
            elif _wild_match(path, a, kind == _WILD_END):
                return decision
        return ALLOW_IMPLICIT


def _first(pair: tuple) -> int:
    return pair[0]


def _bucket(entries: list) -> tuple:
    """``(prefixes, others, entries)``: the literals of the plain prefix rules
    (for one ``str.startswith(tuple)`` test), the other rules, and all rules,
    each list in priority order."""
    prefixes = tuple(a for kind, a, _, _, _ in entries if kind == _PREFIX)
    others = [e for e in entries if e[0] != _PREFIX]
    return prefixes, _batched(others), _batched(entries)


def _batched(entries: list) -> list:
    """Fold runs of "contains" rules (``/*literal`` and ``*literal``, common in
    real files by the hundred) into one entry tested at C speed."""
    out: list = []
    run: list = []

    def flush() -> None:
        if len(run) >= _BATCH_MIN:
            n = run[0][3]
            out.append((_BATCH, tuple(e[2] for e in run), tuple(e[4] for e in run), n, None))
        else:
            out.extend(run)
        run.clear()

    for entry in entries:
        kind, a, b, n, _ = entry
        if kind == _SUB and a in ("", "/") and b and (not run or run[0][1] == a):
            run.append(entry)
            continue
        flush()
        if kind == _SUB and a in ("", "/") and b:
            run.append(entry)
        else:
            out.append(entry)
    flush()
    return out


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
    safe to share between all requests of an origin.  Kept compact (see
    :mod:`.parser`): a crawl may hold many thousands of these.
    """

    __slots__ = ("_patterns", "_marks", "_groups", "sitemaps", "_diagnostics", "_matchers", "_fixed")

    def __init__(self, parsed: Parsed | None = None, fixed: Decision | None = None) -> None:
        if parsed is None:
            self._patterns, self._marks, self._groups = "", (), []
            self.sitemaps: list[str] = []
            self._diagnostics: DiagnosticLog | None = None
        else:
            self._patterns, self._marks, self._groups = parsed.patterns, parsed.marks, parsed.groups
            #: Sitemap URLs in file order, duplicates removed.
            self.sitemaps = parsed.sitemaps
            self._diagnostics = parsed.diagnostics
        self._matchers: dict[str, _Matcher] | None = None
        self._fixed = fixed

    # -- constructors -------------------------------------------------------
    @classmethod
    def parse(
        cls,
        body: bytes | str,
        content_type: str | bytes | None = None,
        max_bytes: int = DEFAULT_PARSE_BYTES,
    ) -> RobotsTxt:
        return cls(read(body, content_type, max_bytes))

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

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Problems found while parsing, with their line numbers, in file order."""
        if self._diagnostics is None:
            return []
        return self._diagnostics.to_list()

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
        matchers = self._matchers
        if matchers is not None and self._fixed is None:
            matcher = matchers.get(user_agent)
            if matcher is not None:
                path = _path_of(url)
                if path == "/robots.txt":
                    return ALLOW_ROBOTS_TXT
                return matcher.decide(path)
        return self._check_first(url, user_agent)

    def _check_first(self, url: str, user_agent: str) -> Decision:
        self._matcher(user_agent)  # validates the token, compiles once
        if self._fixed is not None:
            return self._fixed
        return self.check(url, user_agent)  # the token is known now: the fast path

    def can_fetch(self, url: str, user_agent: str) -> bool:
        return self.check(url, user_agent).allowed

    def crawl_delay(self, user_agent: str) -> float | None:
        """Seconds between requests asked by the crawler's group, or None."""
        matcher = self._matcher(user_agent)
        return matcher.crawl_delay

    def request_rate(self, user_agent: str) -> tuple[int, float] | None:
        """``(requests, seconds)`` asked by the crawler's group, or None."""
        matcher = self._matcher(user_agent)
        return matcher.request_rate

    def min_delay(self, user_agent: str) -> float | None:
        """The larger of Crawl-delay and the gap implied by Request-rate."""
        matcher = self._matcher(user_agent)
        delay, rate = matcher.crawl_delay, matcher.request_rate
        gap = rate[1] / rate[0] if rate is not None else None
        if delay is None or gap is None:
            return delay if gap is None else gap
        return max(delay, gap)

    def applies_specifically(self, user_agent: str) -> bool:
        """True when a group names this crawler (so ``*`` groups are ignored)."""
        matcher = self._matcher(user_agent)
        return matcher.specific

    def groups_for(self, user_agent: str) -> list[Group]:
        token = check_token(user_agent)
        return _select(self._groups, token)[0]

    def _matcher(self, user_agent: str) -> _Matcher:
        matchers = self._matchers
        if matchers is None:
            matchers = self._matchers = {}
        matcher = matchers.get(user_agent)
        if matcher is not None:
            return matcher
        token = check_token(user_agent)
        matcher = matchers.get(token)
        if matcher is None:
            groups, specific = _select(self._groups, token)
            patterns = self._patterns.split("\n") if groups else []
            matcher = _Matcher(groups, specific, patterns, self._marks)
            matchers[token] = matcher
        matchers[user_agent] = matcher
        return matcher

    def __repr__(self) -> str:
        if self._fixed is not None:
            return f"<RobotsTxt {self._fixed.verdict.value}>"
        rules = len(self._marks)
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
