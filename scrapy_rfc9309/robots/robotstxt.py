"""The parsed file and the questions a crawler asks of it.

Groups are selected per crawler token (RFC 9309 section 2.2.1): every group
that names the token, merged; else every ``*`` group, merged.  The selected
rules are compiled once per token, sorted by priority (longest pattern first,
Allow before Disallow on a tie), and bucketed by the second character of their
literal prefix, so a check walks only the rules that could match.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left
from collections.abc import Generator, Iterable, Sequence
from itertools import islice
from operator import itemgetter
from typing import Any

from . import dots, patterns
from . import usage as _usage
from . import usage_match as _usage_match
from .decode import DEFAULT_PARSE_BYTES
from .diagnostics import Diagnostic, DiagnosticLog
from .parser import Group, Parsed, reading
from .steps import finish
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
_PREFIX, _EXACT, _SUB, _SUB_END, _WILD, _WILD_END = (
    patterns.PREFIX,
    patterns.EXACT,
    patterns.SUB,
    patterns.SUB_END,
    patterns.WILD,
    patterns.WILD_END,
)
_RUN = 6  # a run of wildcard rules, see _folding()
_MANY = 7  # a run with many distinct literals, looked up in the matcher's _LiteralIndex
_PREFIXES = 8  # a run of plain prefix rules, see _folding()
_ALLOWED, _DISALLOWED = Verdict.ALLOWED_EXPLICIT, Verdict.DISALLOWED_EXPLICIT
_NOTHING: dict[Any, Any] = {}  # (never written)
# Tuning: what each constant trades, and its measurements, are in docs/benchmarks_parser.md.
#: characters of patterns compiled or filed in one step: a step's length against the number of steps
_STEP_CHARS = 4096
#: compiled rules sorted, placed or folded in one step, and the most rules in one run
_STEP_ITEMS = 1024
#: more generic rules than this: their run triples are made once for every bucket (a faster
#: preparation of many buckets against a slower first check of a small file)
_SHARE_GENERIC = 256
#: distinct literals from which a run's are looked up by key: one pass over the path's
#: substrings against one ``in`` per literal
_MANY_LITERALS = 512
#: the longest key of a literal (see _LiteralIndex): fewer literals per key against more
#: substrings of the path to look up
_KEY_CHARS = 4
#: compiled buckets kept per matcher: a bound on memory (characters are many, paths use few)
_MAX_BUCKETS = 512
#: RobotsTxt.prepare compiles the buckets of at least this many rules (a smaller one compiles on
#: its first check): the time and memory of a preparation against the cost of a first check
PREPARE_LEAST = 64
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
    """The rules of one crawler token, compiled one path bucket at a time.

    Rules are bucketed by the character after their leading ``/``: a path
    can only match the rules of its own bucket, plus the "generic" rules
    whose literal prefix is shorter than two characters (``/*.pdf``,
    ``*foo``), which are in every bucket.  Building the matcher only sorts
    rule numbers into buckets; a bucket is compiled (patterns normalised,
    rules ordered by priority) on the first path that needs it.  A crawl of
    one site asks about a handful of buckets, so most rules of a large file
    are never compiled at all, and the first answer for an origin is cheap.
    """

    __slots__ = (
        "_texts", "_marks", "_groups", "_shared", "_order", "_keys", "_moved", "_generic", "_decisions", "_outside",
        "_literals",
        "buckets", "crawl_delay", "request_rate", "specific",
    )  # fmt: skip

    def __init__(
        self,
        groups: list[Group],
        specific: bool,
        texts: list[str],
        marks: Sequence[int],
        outside: bool,
    ) -> None:
        self.specific = specific
        self._texts, self._marks = texts, marks
        self._groups = groups
        # Whether some pattern holds a character outside the URI grammar
        # (patterns.OUTSIDE_URI): it counts 3 octets, so only then can a
        # rule's priority differ from its length as written.
        self._outside = outside
        self._decisions: dict[int, Decision] = {}  # rule number -> Decision, made on its first win
        self.buckets: dict[str, tuple[Any, ...]] = {}
        self._shared: dict[Any, Any] = _NOTHING
        #: the literals of the _MANY runs of every bucket, filed once for the whole matcher
        self._literals = _LiteralIndex()
        delays = [g.crawl_delay for g in groups if g.crawl_delay is not None]
        self.crawl_delay = max(delays) if delays else None
        rates = [g.request_rate for g in groups if g.request_rate is not None]
        self.request_rate = max(rates, key=lambda r: r[1] / r[0]) if rates else None
        self._moved: dict[str, list[tuple[Any, ...]]] = {}

    # Every building method is a generator of bounded steps (see :mod:`.steps`):
    # RobotsTxt.preparing runs them between event-loop turns, a check drains them.
    def setting_up(self) -> Generator[None, None, None]:
        """Sort the rules into buckets and compile those every path needs;
        run to its end before any other use."""
        self._sort_rules()
        yield
        early: list[tuple[Any, ...]] = []
        unsure = self._unsure()
        if unsure:  # (each generator costs a little: none for nothing to do)
            yield from self._compiling(unsure, early)
        index = self._index_rules()
        if index:
            compiled: list[tuple[Any, ...]] = []
            yield from self._compiling(index, compiled)
            early += [item for item in compiled if item[3][1] == "/"]
        generic: list[tuple[Any, ...]] = []
        for start in range(0, len(early), _STEP_ITEMS):
            if start:
                yield
            self._place(early[start : start + _STEP_ITEMS], generic)
        if generic:
            generic = yield from _sorting(generic)
        self._generic = generic
        if len(generic) > _SHARE_GENERIC:
            shared: dict[Any, Any] = {}
            for start in range(0, len(generic), _STEP_ITEMS):
                yield
                shared.update(_triples(generic[start : start + _STEP_ITEMS]))
            self._shared = shared
            yield
        self.buckets[""] = (
            (yield from _bucketing(list(map(_entry, generic)), self._shared, self._literals))
            if generic
            else ((), [], [])
        )

    def _sort_rules(self) -> None:
        # Rule numbers sorted by pattern as written: the rules of bucket "a"
        # (patterns "/a...") are then one slice, found by bisection.
        # Normalisation changes only escapes and non-ASCII characters, so
        # any other second character is final.
        groups, texts = self._groups, self._texts
        numbers = range(groups[0].start, groups[0].end) if len(groups) == 1 else _numbers(groups)
        order = sorted(numbers, key=texts.__getitem__)
        self._order, self._keys = order, list(map(texts.__getitem__, order))

    def _unsure(self) -> list[int]:
        """The generic rules, and those whose bucket only compiling can tell
        ("/%61" is in bucket "a", "/$" matches only "/"), compiled first:
        everything outside "/" + an ASCII character other than "$%*"."""
        order, keys = self._order, self._keys
        spans = [("", "/\x00"), ("/$", "/&"), ("/*", "/+"), ("/\x80", None)]
        return sorted(
            i for lo, hi in spans for i in order[bisect_left(keys, lo) : bisect_left(keys, hi) if hi else None]
        )

    def _index_rules(self) -> list[int]:
        """Google's "Allow: /index.htm..." also allows exactly "/", a generic entry."""
        marks = self._marks
        return [i for i in self._own("index.htm") if marks[i] & 1]

    def _place(self, items: list[tuple[Any, ...]], generic: list[tuple[Any, ...]]) -> None:
        """Sort compiled ``items`` into the generic ones and those moved to a bucket."""
        moved = self._moved
        for item in items:
            lead = _lead(item[3])
            if len(lead) >= 2 and lead[0] == "/":
                moved.setdefault(lead[1], []).append(item)
            else:
                generic.append(item)

    def _own(self, prefix: str) -> list[int]:
        """The rules written as ``/`` + ``prefix`` + ..., in file order."""
        keys, lo = self._keys, "/" + prefix
        hi = lo[:-1] + chr(ord(lo[-1]) + 1)
        return sorted(self._order[bisect_left(keys, lo) : bisect_left(keys, hi)])

    def _compiling(self, numbers: list[int], out: list[tuple[Any, ...]]) -> Generator[None, None, None]:
        """Add the items of the rules ``numbers`` to ``out``, in steps of
        about ``_STEP_CHARS`` characters of patterns (a duplicate rule adds nothing)."""
        seen: set[str] = set()
        texts = self._texts
        start, end = 0, len(numbers)
        while start < end:
            if start:
                yield
            stop, chars = start, 0
            while stop < end and chars < _STEP_CHARS:
                chars += len(texts[numbers[stop]])
                stop += 1
            self._compile(numbers[start:stop], out, seen)
            start = stop

    def _compile(self, numbers: list[int], out: list[tuple[Any, ...]], seen: set[str]) -> None:
        """One step of :meth:`_compiling`; ``seen`` holds the patterns added before."""
        texts, marks = self._texts, self._marks
        add = out.append
        compile_pattern = patterns.compile_pattern
        outside = self._outside
        entry: tuple[Any, ...]
        for i in numbers:
            raw, mark = texts[i], marks[i]
            allow = mark & 1
            key = raw if allow else "\n" + raw  # one set for both kinds: "\n" is in no pattern
            if key in seen:
                continue
            seen.add(key)
            if raw.isascii() and "*" not in raw and "%" not in raw and raw[-1] != "$" and not outside:
                entry, priority = (_PREFIX, raw, "", 0, i), len(raw)  # the common rule
            else:
                kind, a, b, n, priority = compile_pattern(raw, outside)
                entry = (kind, a, b, n, i)
            # Longest first; Allow before Disallow on equal length; then file order.
            add((-priority, 1 - allow, i, entry))
            if allow:
                extra = _index_htm(raw)
                if extra is not None:
                    kind, a, b, n, priority = compile_pattern(extra, outside)
                    add((-priority, 0, i + 0.5, (kind, a, b, n, i)))

    def preparing(self, least: int) -> Generator[None, None, None]:
        """Compile every bucket of at least ``least`` rules (its own, the
        moved and the generic ones) that no path has asked for yet, so that
        the first check of such a bucket only looks it up; in steps.  The
        buckets are those a check builds (:meth:`_building`)."""
        keys = self._keys
        sizes = {char: len(items) for char, items in self._moved.items()}
        # the own rules of each bucket: one slice of the sorted patterns each
        at, end = bisect_left(keys, "/\x00"), bisect_left(keys, "/\x80")
        while at < end:
            char = keys[at][1]
            stop = bisect_left(keys, "/" + chr(ord(char) + 1), at, end)
            if char not in "$%*":  # their rules are all in _moved (as in _building)
                sizes[char] = sizes.get(char, 0) + stop - at
            at = stop
        generic = len(self._generic)
        for char in sorted(sizes):
            if char in self.buckets or len(self.buckets) >= _MAX_BUCKETS:
                continue
            if sizes[char] + generic >= least:
                yield
                yield from self._building(char)

    def _building(self, char: str) -> Generator[None, None, tuple[Any, ...]]:
        """The bucket of the rules a path whose second character is ``char``
        may match, kept (up to ``_MAX_BUCKETS``); in steps."""
        items: list[tuple[Any, ...]] = []
        own = self._own(char) if char not in "$%*" else None
        if own:
            yield from self._compiling(own, items)
        items += self._moved.get(char, ())
        if items:
            items += self._generic
            if len(items) > 1:
                items = yield from _sorting(items)
            bucket = yield from _bucketing(list(map(_entry, items)), self._shared, self._literals)
        else:
            bucket = self.buckets[""]
        if len(self.buckets) < _MAX_BUCKETS:  # bounded: characters are many, paths use few
            self.buckets[char] = bucket
        return bucket

    def decide(self, path: str) -> Decision:
        bucket = self.buckets.get(path[1:2])
        if bucket is None:
            bucket = finish(self._building(path[1:2]))
        prefixes, others, entries = bucket
        # Plain prefix rules are ruled out all at once; when none matches,
        # only the (few) wildcard and exact rules are left to try.
        if not prefixes or not path.startswith(prefixes):
            entries = others
        present: set[str] | None = None  # the _MANY runs' literals in the path, found once
        for kind, a, b, n, i in entries:
            if kind == _SUB:
                if path.startswith(a) and path.find(b, n) >= 0:
                    break
            elif kind == _RUN:
                # a: the literal each rule needs, b: the rules; most paths hold none
                for needle in a:
                    if needle in path:
                        i = _first_in_run(path, b)
                        break
                else:
                    continue
                if i is not None:
                    break
            elif kind == _PREFIX:
                if path.startswith(a):
                    break
            elif kind == _PREFIXES:
                # a: the run's prefixes, b: their rule numbers; one C-speed test for all
                if path.startswith(a):
                    i = b[_first_prefix(path, a)]
                    break
            elif kind == _MANY:
                if present is None:
                    present = self._literals.present(path)
                if present and not present.isdisjoint(a):
                    i = _first_in_run(path, b)
                    if i is not None:
                        break
            elif kind == _EXACT:
                if path == a:
                    break
            elif b in path and _matches(path, kind, a, b, n):
                break
        else:
            return ALLOW_IMPLICIT
        # the winning rule's decision, made once, on its first win
        decision = self._decisions.get(i)
        if decision is None:
            decision = self._decisions[i] = self._decision(i)
        return decision

    def _decision(self, i: int) -> Decision:
        mark = self._marks[i]
        if mark & 1:
            return Decision(True, _ALLOWED, Rule(True, self._texts[i], mark >> 1))
        return Decision(False, _DISALLOWED, Rule(False, self._texts[i], mark >> 1))


def _first_prefix(path: str, prefixes: tuple[str, ...]) -> int:
    """The index of the first of ``prefixes`` that ``path`` starts with (one does)."""
    return next(k for k, prefix in enumerate(prefixes) if path.startswith(prefix))


def _first_in_run(path: str, rules: tuple[tuple[str, str, tuple[Any, Any, Any, Any, int]], ...]) -> int | None:
    """The rule number of the first rule of a run that matches ``path``;
    ``rules`` holds ``(literal, prefix, rule)`` triples."""
    for needle, prefix, rule in rules:
        if needle in path and path.startswith(prefix) and _matches(path, *rule[:4]):
            return rule[4]
    return None


def _matches(path: str, kind: int, a: Any, b: str, n: int) -> bool:
    """Whether a wildcard rule (SUB, SUB_END, WILD, WILD_END) matches ``path``."""
    if kind == _SUB:
        return path.startswith(a) and path.find(b, n) >= 0
    if kind == _SUB_END:
        return path.endswith(b) and len(path) >= n and path.startswith(a)
    return _wild_match(path, a, kind == _WILD_END)


def _numbers(groups: list[Group]) -> list[int]:
    return [i for g in groups for i in range(g.start, g.end)]


#: an item's sort key: ``(-priority, 1 - allow, rule number)``; and its entry
_order = itemgetter(0, 1, 2)
_entry = itemgetter(3)


def _sorting(items: list[tuple[Any, ...]]) -> Generator[None, None, list[tuple[Any, ...]]]:
    """``items`` sorted by priority, in steps: slices sorted one by one, then
    merged a slice at a time."""
    if len(items) <= _STEP_ITEMS:
        items.sort(key=_order)
        return items
    parts = []
    for start in range(0, len(items), _STEP_ITEMS):
        yield
        parts.append(sorted(items[start : start + _STEP_ITEMS], key=_order))
    merged = heapq.merge(*parts, key=_order)
    out: list[tuple[Any, ...]] = []
    while len(out) < len(items):
        yield
        out.extend(islice(merged, _STEP_ITEMS // 2))  # merging costs more per item
    return out


def _bucketing(
    entries: list[Any], shared: dict[Any, Any], index: _LiteralIndex
) -> Generator[None, None, tuple[Any, ...]]:
    """``(prefixes, others, entries)``: the literals of the plain prefix rules
    (for one ``str.startswith(tuple)`` test), the other rules, and all rules,
    each list in priority order, runs of wildcard rules folded (``_folding``);
    in steps of ``_STEP_ITEMS`` rules."""
    plain: list[str] = []
    others: list[Any] = []
    for start in range(0, len(entries), _STEP_ITEMS):
        if start:
            yield
        part = entries[start : start + _STEP_ITEMS]
        plain += [a for kind, a, _, _, _ in part if kind == _PREFIX]
        others += [e for e in part if e[0] != _PREFIX]
    if others:
        others = yield from _folding(others, shared, index)
    if others or len(plain) > 1:  # (else there is nothing to fold)
        entries = yield from _folding(entries, shared, index)
    return tuple(plain), others, entries


def _needle(rule: tuple[Any, ...]) -> str:
    """A literal every path the rule matches contains ("" when there is none)."""
    kind = rule[0]
    return rule[2] if kind == _SUB or kind == _SUB_END or kind >= _WILD else ""


def _lead(rule: tuple[Any, ...]) -> str:
    """The literal a path matching the rule starts with."""
    return str(rule[1] if rule[0] <= _SUB_END else rule[1][0])


def _triples(items: list[tuple[Any, ...]]) -> dict[Any, Any]:
    """``{rule: (literal, lead, rule)}`` for the wildcard rules of compiled ``items``."""
    return {e: (_needle(e), _lead(e), e) for e in map(_entry, items) if _needle(e)}


def _folding(entries: list[Any], shared: dict[Any, Any], index: _LiteralIndex) -> Generator[None, None, list[Any]]:
    """Fold runs of wildcard rules (real files have them by the hundred, such
    as ``/*?*sessionid=``) into one entry that is skipped at C speed when the
    path holds none of their literals, and runs of plain prefix rules into
    one entry tested with one ``str.startswith(tuple)``; in steps of
    ``_STEP_ITEMS`` rules.  A run holds at most ``_STEP_ITEMS`` rules
    (consecutive runs answer as one would).  ``shared`` holds ready
    ``(literal, lead, rule)`` triples of the rules that are in every bucket."""
    out: list[Any] = []
    run: list[Any] = []  # wildcard rules
    plain: list[Any] = []  # plain prefix rules
    for start in range(0, len(entries), _STEP_ITEMS):
        if start:
            yield
        for entry in entries[start : start + _STEP_ITEMS]:
            wild = _needle(entry)
            prefix = not wild and entry[0] == _PREFIX
            if plain and (not prefix or len(plain) == _STEP_ITEMS):
                _flush_prefixes(plain, out)
            if run and (not wild or len(run) == _STEP_ITEMS):
                many = _flush(run, shared, out)
                if many:
                    yield from index.adding(many)
            if wild:
                run.append(entry)
            elif prefix:
                plain.append(entry)
            else:
                out.append(entry)
    _flush_prefixes(plain, out)
    many = _flush(run, shared, out)
    if many:
        yield from index.adding(many)
    return out


def _flush_prefixes(plain: list[Any], out: list[Any]) -> None:
    """Add the waiting plain prefix rules to ``out``: as one run entry, or one."""
    if len(plain) > 1:
        out.append((_PREFIXES, tuple([e[1] for e in plain]), tuple([e[4] for e in plain]), 0, None))
    else:
        out.extend(plain)
    plain.clear()


def _flush(run: list[Any], shared: dict[Any, Any], out: list[Any]) -> tuple[str, ...]:
    """Add the waiting wildcard rules to ``out``: as one run entry, or one by
    one; the literals of a run with many of them, to file in the matcher's
    :class:`_LiteralIndex` (else none)."""
    many: tuple[str, ...] = ()
    if len(run) > 1:
        if shared:  # the generic rules' triples, made once for every bucket
            rules = tuple([shared.get(rule) or (_needle(rule), _lead(rule), rule) for rule in run])
            needles: Sequence[str] = [rule[0] for rule in rules]
        else:
            needles = tuple(map(_needle, run))
            rules = tuple(zip(needles, map(_lead, run), run))
        # each literal once: a run of "/a/*/page$", "/b/*/page$"... looks for "/page" once
        distinct = tuple(dict.fromkeys(needles))
        if len(distinct) >= _MANY_LITERALS:
            many = distinct
            out.append((_MANY, distinct, rules, 0, None))
        else:
            out.append((_RUN, distinct, rules, 0, None))
    else:
        out.extend(run)
    run.clear()
    return many


class _LiteralIndex:
    """The literals of a matcher's runs with many of them, each filed under one
    short key: its rarest substring of :data:`_KEY_CHARS` characters (of its
    own length when shorter) among the literals filed in the same step.

    Asking ``literal in path`` of each literal costs (literals x path): tens
    of milliseconds for one check of a 2 KB path against 10,000 literals.  A
    literal can only be in the path if its key is, so the path's own
    substrings of each key length are looked up instead (a few times the
    path's length, once per check), and only the literals filed under them
    are searched for.  The rarest substring keeps a literal's key apart from
    the others' even when they share a part (``a1/page``, ``a2/page``...).

    One index per matcher: the rules that belong to every bucket are filed
    once, not once per bucket, and a bucket built later adds only its new
    literals.  Strings only (``str`` to ``str``): nothing for the garbage
    collector to walk."""

    __slots__ = ("keys", "known", "lengths")

    def __init__(self) -> None:
        #: key -> its literals, joined by "\n" (which no pattern holds)
        self.keys: dict[str, str] = {}
        self.known: set[str] = set()
        self.lengths: list[int] = []

    def adding(self, literals: Sequence[str]) -> Generator[None, None, None]:
        """File the ``literals`` not filed yet, in steps of about ``_STEP_CHARS``
        characters: each step counts the substrings of its literals and files
        each under its rarest one among them.  Checks between the steps find
        the literals filed before."""
        known, keys, lengths = self.known, self.keys, self.lengths
        new = [literal for literal in literals if literal not in known]
        start = 0
        while start < len(new):
            if start:
                yield
            stop, chars = start, 0
            while stop < len(new) and chars < _STEP_CHARS:
                chars += len(new[stop])
                stop += 1
            batch = new[start:stop]
            grams = [_grams(literal) for literal in batch]
            counts: dict[str, int] = {}
            for some in grams:
                for gram in some:
                    counts[gram] = counts.get(gram, 0) + 1
            for literal, some in zip(batch, grams):
                key = min(some, key=counts.__getitem__)
                filed = keys.get(key)
                keys[key] = literal if filed is None else filed + "\n" + literal
                if len(key) not in lengths:
                    lengths.append(len(key))
            known.update(batch)
            start = stop

    def present(self, path: str) -> set[str]:
        """The literals that ``path`` holds."""
        found: set[str] = set()
        keys = self.keys
        for length in self.lengths:
            for gram in {path[i : i + length] for i in range(len(path) - length + 1)}:
                filed = keys.get(gram)
                if filed is None:
                    continue
                for literal in filed.split("\n") if "\n" in filed else (filed,):
                    if literal in path:
                        found.add(literal)
        return found


def _grams(literal: str) -> list[str]:
    """The substrings of ``literal`` that may be its key (see :class:`_LiteralIndex`),
    each once, in order (so that ties go the same way in every process)."""
    size = min(_KEY_CHARS, len(literal))
    return list(dict.fromkeys(literal[i : i + size] for i in range(len(literal) - size + 1)))


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

    __slots__ = (
        "_patterns", "_marks", "_groups", "sitemaps", "_diagnostics", "_matchers", "_fixed", "_origin", "_usage",
        "file_usage",
    )  # fmt: skip
    _marks: Sequence[int]

    def __init__(self, parsed: Parsed | None = None, fixed: Decision | None = None) -> None:
        if parsed is None:
            self._patterns, self._marks, self._groups = "", (), []
            self.sitemaps: list[str] = []
            self._diagnostics: DiagnosticLog | None = None
            #: the Content-Signal rules written before the first group: for the whole file (None: none)
            self.file_usage: list[Any] | None = None
        else:
            self._patterns, self._marks, self._groups = parsed.patterns, parsed.marks, parsed.groups
            #: Sitemap URLs in file order, duplicates removed.
            self.sitemaps = parsed.sitemaps
            self._diagnostics = parsed.diagnostics
            self.file_usage = parsed.usage
        self._matchers: dict[str, _Matcher] | None = None
        self._fixed = fixed
        self._origin = "\n"  # the origin of the URLs asked about; "\n" starts no URL
        self._usage: dict[Any, Any] | None = None  # token -> its usage matcher (see usage())

    # -- constructors -------------------------------------------------------
    @classmethod
    def parse(
        cls,
        body: bytes | str,
        content_type: str | bytes | None = None,
        max_bytes: int = DEFAULT_PARSE_BYTES,
    ) -> RobotsTxt:
        return cls(finish(reading(body, content_type, max_bytes)))

    @classmethod
    def parsing(
        cls,
        body: bytes | str,
        content_type: str | bytes | None = None,
        max_bytes: int = DEFAULT_PARSE_BYTES,
        prepare_for: str | None = None,
    ) -> Generator[None, None, RobotsTxt]:
        """:meth:`parse` in steps (see :mod:`.steps`), then, when
        ``prepare_for`` names a crawler, :meth:`preparing` for it; the parsed
        file is the return value.  Every step takes a few milliseconds at
        most, whatever the file."""
        robots = cls((yield from reading(body, content_type, max_bytes)))
        if prepare_for is not None:
            yield
            yield from robots.preparing(prepare_for)
        return robots

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
                # The URLs asked about one file share its origin: once seen,
                # "scheme://host[:port]" is cut off with one startswith()
                # instead of parsing every URL again.
                origin = self._origin
                if url.startswith(origin):
                    path = url[len(origin) :]
                    if path[:1] != "/" or "#" in path or "%" in path or not path.isascii():
                        path = self._learn_path(url)
                else:
                    path = self._learn_path(url)
                if path == "/robots.txt":
                    return ALLOW_ROBOTS_TXT
                if "/." in path:  # as sent and with dot segments removed: both must allow
                    return dots.decide_both(matcher.decide, path)
                return matcher.decide(path)
        return self._check_first(url, user_agent)

    def _learn_path(self, url: str) -> str:
        """The path of ``url``; remembers its origin when the path is plain
        (no fragment, nothing to normalise), so that :meth:`check` can cut it."""
        path = _path_of(url)
        origin = patterns.plain_origin(url, path)
        if origin is not None:
            self._origin = origin
        return path

    def _check_first(self, url: str, user_agent: str) -> Decision:
        self._matcher(user_agent)  # validates the token, compiles once
        if self._fixed is not None:
            return self._fixed
        return self.check(url, user_agent)  # the token is known now: the fast path

    def prepare(self, user_agent: str, least: int = PREPARE_LEAST) -> RobotsTxt:
        """Do now the work that the first checks for ``user_agent`` would do
        lazily: select its groups and compile every bucket of at least
        ``least`` rules.  Answers do not change; only when the work is done.
        Returns ``self``; ``ValueError`` for an invalid token, as :meth:`check`."""
        finish(self.preparing(user_agent, least))
        return self

    def preparing(self, user_agent: str, least: int = PREPARE_LEAST) -> Generator[None, None, None]:
        """:meth:`prepare` in steps: each ``next()`` does a bounded piece of
        the work (a few milliseconds at most, whatever the file).

        For a large file the whole takes tens of milliseconds, so a caller
        with an event loop gives the loop a turn between steps, and the first
        checks then only look buckets up (a smaller bucket still compiles on
        its first check, in about a millisecond at most).  Until the steps
        are done, checks work as without them.  ``ValueError`` at once for an
        invalid token.
        """
        token = check_token(user_agent)
        return self._preparing(user_agent, token, least)

    def _preparing(self, user_agent: str, token: str, least: int) -> Generator[None, None, None]:
        if self._fixed is None:
            matcher = yield from self._selecting(user_agent, token)
            yield from matcher.preparing(least)
            yield from _usage_match.matcher_of(self, user_agent, self._usage_cache())

    def _selecting(self, user_agent: str, token: str) -> Generator[None, None, _Matcher]:
        """The matcher of ``token`` (made and set up in steps the first time),
        kept under ``token`` and ``user_agent``."""
        matchers = self._matchers
        if matchers is None:
            matchers = self._matchers = {}
        matcher = matchers.get(token)
        if matcher is None:
            groups, specific = _select(self._groups, token)
            yield
            if groups:
                texts, outside = self._patterns.split("\n"), patterns.any_outside(self._patterns)
            else:
                texts, outside = [], False
            matcher = _Matcher(groups, specific, texts, self._marks, outside)
            yield
            yield from matcher.setting_up()
            matcher = matchers.setdefault(token, matcher)  # usable from now on
        matchers.setdefault(user_agent, matcher)
        return matcher

    def can_fetch(self, url: str, user_agent: str) -> bool:
        return self.check(url, user_agent).allowed

    def usage(self, url: str, user_agent: str, allowed: bool = False) -> _usage.Usage:
        """The AI usage preferences (``Content-Usage``, ``Content-Signal``)
        this file states for ``url`` and the crawler: category -> True /
        False / None, with the lines behind each (see :mod:`.usage`).  A URL
        the crawler may not fetch has none (``allowed``: the caller has
        checked that it may)."""
        return _usage_match.usage_of(self, url, user_agent, self._usage_cache(), allowed)

    def _usage_cache(self) -> dict[Any, Any]:
        cache = self._usage
        if cache is None:
            cache = self._usage = {}
        return cache

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

    def rules_for(self, user_agent: str) -> list[Rule]:
        """The Allow/Disallow rules of the groups that apply to ``user_agent``,
        in file order (empty rules included, as written); none for an
        allow-all or deny-all policy."""
        groups = self.groups_for(user_agent)
        if not groups:
            return []
        texts = self._patterns.split("\n")
        marks = self._marks
        return [Rule(bool(marks[i] & 1), texts[i], marks[i] >> 1) for i in _numbers(groups)]

    def _matcher(self, user_agent: str) -> _Matcher:
        matchers = self._matchers
        if matchers is None:
            matchers = self._matchers = {}
        matcher = matchers.get(user_agent)
        if matcher is not None:
            return matcher
        return finish(self._selecting(user_agent, check_token(user_agent)))

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
