"""The parsed file and the questions a crawler asks of it.

Groups are selected per crawler token (RFC 9309 section 2.2.1): every group
that names the token, merged; else every ``*`` group, merged.  The selected
rules are compiled once per token, sorted by priority (longest pattern first,
Allow before Disallow on a tie), and bucketed by the second character of their
literal prefix, so a check walks only the rules that could match.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Generator, Iterable, Sequence
from operator import itemgetter
from typing import Any

from . import dots, index, patterns
from . import usage as _usage
from . import usage_match as _usage_match
from .decode import DEFAULT_PARSE_BYTES
from .diagnostics import Diagnostic, DiagnosticLog
from .parser import Group, Parsed, _slower, reading
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
_PREFIXES = 8  # a run of plain prefix rules, see _folding()
_ALLOWED, _DISALLOWED = Verdict.ALLOWED_EXPLICIT, Verdict.DISALLOWED_EXPLICIT
# Tuning: what each constant trades, and its measurements, are in docs/benchmarks_parser.md.
# (The work of a step is index.STEP_WORK, in the same units as _RULE_WORK.)
#: the work of compiling one rule besides its characters (see _rule_work)
_RULE_WORK = 24
#: rule numbers filed under their bucket, or groups looked through, in one step (a few tenths
#: of a microsecond each)
_STEP_NUMBERS = 2048
#: a file of at most this many groups (and _STEP_SPLIT characters of patterns) has its groups
#: selected and its patterns split at once, without steps: far less than a step's work
_SMALL_GROUPS = 256
#: a token's rules, when at most this many, are filed one by one (see _Matcher._file_few),
#: not sorted by pattern
_FILE_LEAST = 32
#: characters of the file's patterns split into rules in one step
_STEP_SPLIT = 65_536
#: a bucket of more rules than this is looked up through an index.Index, and so is every bucket
#: when the rules that belong to every bucket are more than this; a smaller one is walked in
#: priority order: the cost of a check is bounded by this many rules, against an index's cost
_INDEX_LEAST = 64
#: the most work (see index.STEP_WORK) a check may do compiling the own rules of its bucket:
#: RobotsTxt.prepare compiles the costlier buckets, whatever their number of rules
_LAZY_WORK = 2 * index.STEP_WORK
#: compiled buckets kept per matcher: a bound on memory (characters are many, paths use few)
_MAX_BUCKETS = 512
#: RobotsTxt.prepare compiles the buckets of at least this many rules (a smaller one compiles on
#: its first check): the time and memory of a preparation against the cost of a first check
PREPARE_LEAST = 64
#: the characters a rule "/" + character + ... is filed under (the others only compiling can place)
_FILED = frozenset(map(chr, range(128))) - frozenset("$%*")
_LITERAL, _NUMBER = itemgetter(1), itemgetter(4)  # of a rule (kind, a, b, n, number)
_path_of = patterns.path_of
_wild_match = patterns.wild_match


#: valid tokens seen -> their lower case: the first check of every file asks (a crawl has few)
_TOKENS: dict[str, str] = {}


def check_token(user_agent: str) -> str:
    """The lower-cased product token, or ``ValueError`` saying what is wrong."""
    token = _TOKENS.get(user_agent) if user_agent.__class__ is str else None
    if token is not None:
        return token
    if not isinstance(user_agent, str) or not _TOKEN.match(user_agent):
        raise ValueError(
            f"invalid robots.txt product token {user_agent!r}: RFC 9309 tokens use only "
            "letters, '_' and '-' (e.g. 'ExampleBot', not 'ExampleBot/1.0')"
        )
    token = user_agent.lower()
    if len(_TOKENS) < 64:
        _TOKENS[user_agent] = token
    return token


class _Matcher:
    """The rules of one crawler token, compiled one path bucket at a time.

    Rules are bucketed by the character after their leading ``/``: a path
    can only match the rules of its own bucket, plus the "generic" rules
    whose literal prefix is shorter than two characters (``/*.pdf``,
    ``*foo``), which are in every bucket.  Setting the matcher up only files
    rule numbers into buckets; a bucket is compiled (patterns normalised,
    rules ordered by priority) on the first path that needs it.  A crawl of
    one site asks about a handful of buckets, so most rules of a large file
    are never compiled at all, and the first answer for an origin is cheap.

    A bucket of a few rules is walked in priority order (runs of rules
    folded, see :func:`_folding`); a larger one is looked up through an
    :class:`.index.Index`, so that a check costs about the same whatever the number
    of rules.  When the generic rules are many, they are one index of their
    own, consulted beside the bucket's.
    """

    __slots__ = (
        "_texts", "_marks", "groups", "_own", "_sorted", "_moved", "_generic", "_everywhere", "_decisions", "_outside",
        "_plain", "_literals",
        "buckets", "crawl_delay", "request_rate", "specific",
    )  # fmt: skip

    def __init__(
        self,
        groups: list[Group],
        specific: bool,
        texts: list[str],
        marks: Sequence[int],
        outside: bool,
        plain: bool = False,
    ) -> None:
        self.specific = specific
        self._texts, self._marks = texts, marks
        #: the groups selected for the token
        self.groups = groups
        # Whether some pattern holds a character outside the URI grammar
        # (patterns.OUTSIDE_URI): it counts 3 octets, so only then can a
        # rule's priority differ from its length as written.
        self._outside = outside
        # Whether every pattern is ASCII without "%": the work of compiling
        # a rule is then told by its length alone (see _rule_work).
        self._plain = plain
        self._decisions: dict[int, Decision] = {}  # rule number -> Decision, made on its first win
        #: a path's second character -> its bucket: a folded tuple (see _bucketing) or an index.Index
        self.buckets: dict[str, Any] = {}
        #: second character -> the numbers of the rules written "/" + that character..., in file order
        #: bucket character -> its own rule numbers, in file order (made when first asked, see _own_of)
        self._own: dict[str, list[int]] = {}
        #: per step of _filing, its rule numbers sorted by pattern as written, and those patterns
        self._sorted: list[tuple[list[int], list[str]]] = []
        #: the generic rules, in priority order, added to every walked bucket (when they are few)
        self._generic: list[tuple[Any, ...]] = []
        #: the generic rules, when they are many: one index, consulted beside every bucket
        self._everywhere: index.Index | None = None
        #: the literals of every index's crowded wildcard rules, filed once for the whole matcher
        self._literals = index.LiteralIndex()
        # the largest of the groups' (set while filing the rules)
        self.crawl_delay: float | None = None
        self.request_rate: tuple[int, float] | None = None
        self._moved: dict[str, list[tuple[Any, ...]]] = {}

    # Every building method is a generator of bounded steps (see :mod:`.steps`):
    # RobotsTxt.preparing runs them between event-loop turns, a check drains them.
    def setting_up(self) -> Generator[None, None, None]:
        """File the rules into buckets and compile those every path needs;
        run to its end before any other use."""
        unsure, index_htm = yield from self._filing()
        early: list[tuple[Any, ...]] = []
        if unsure:  # (each generator costs a little: none for nothing to do)
            yield from self._compiling(unsure, early)
        if index_htm:
            compiled: list[tuple[Any, ...]] = []
            yield from self._compiling(index_htm, compiled)
            early += [item for item in compiled if item[4] == "/"]
        generic: list[tuple[Any, ...]] = []
        step = index.STEP_ITEMS
        for start in range(0, len(early), step):
            yield
            self._place(early[start : start + step], generic)
        if generic:
            generic = yield from index.sorting(generic)
        if len(generic) > _INDEX_LEAST:
            self._everywhere = yield from index.indexing(generic, self._literals)
            self.buckets[""] = index.NO_RULES
        else:
            self._generic = generic
            self.buckets[""] = _bucketing(list(map(index.entry_of, generic))) if generic else ((), [], [])

    def _filing(self) -> Generator[None, None, tuple[list[int], list[int]]]:
        """File the rule numbers of the pattern written ``/`` + an ASCII
        character other than ``$%*`` under that character, in file order;
        return the others, which only compiling can place ("/%61" is in
        bucket "a", "/$" matches only "/", "/*x" is generic), and the numbers
        of the rules "Allow: /index.htm...": Google's rule also allows exactly
        "/", a generic rule.  In steps of :data:`_STEP_NUMBERS` groups, then
        of as many rules."""
        numbers: list[int] = []
        for count, group in enumerate(self.groups, 1):
            delay, rate = group.crawl_delay, group.request_rate
            if delay is not None and (self.crawl_delay is None or delay > self.crawl_delay):
                self.crawl_delay = delay
            if rate is not None and (self.request_rate is None or _slower(rate, self.request_rate)):
                self.request_rate = rate
            numbers += range(group.start, group.end)
            if count % _STEP_NUMBERS == 0:
                yield
        unsure: list[int] = []
        index_htm: list[int] = []
        if len(numbers) <= _FILE_LEAST:  # a few: each filed at once, no sort (see _own_of)
            self._file_few(numbers, unsure, index_htm)
            return unsure, index_htm
        for start in range(0, len(numbers), _STEP_NUMBERS):
            if start:
                yield
            self._file(numbers[start : start + _STEP_NUMBERS], unsure, index_htm)
        return unsure, index_htm

    def _file(self, numbers: list[int], unsure: list[int], index_htm: list[int]) -> None:
        """One step of :meth:`_filing`: ``numbers`` sorted by pattern as written,
        at C speed, so that the rules of bucket "a" are one slice, found by
        bisection when a path first needs that bucket (:meth:`_own_of`)."""
        texts, marks = self._texts, self._marks
        order = sorted(numbers, key=texts.__getitem__)
        keys = list(map(texts.__getitem__, order))
        self._sorted.append((order, keys))
        other: list[int] = []
        for lo, hi in (("", "/\x00"), ("/$", "/&"), ("/*", "/+"), ("/\x80", None)):
            other += order[bisect_left(keys, lo) : bisect_left(keys, hi) if hi else None]
        if other:
            unsure += sorted(other)
        htm = order[bisect_left(keys, "/index.htm") : bisect_left(keys, "/index.htn")]
        index_htm += sorted(i for i in htm if marks[i] & 1)

    def _file_few(self, numbers: list[int], unsure: list[int], index_htm: list[int]) -> None:
        """:meth:`_file` of a few rules: each filed under its character in
        ``_own`` (then the complete list of a bucket's own rules, not a cache),
        in file order."""
        texts, marks, own = self._texts, self._marks, self._own
        for i in numbers:
            raw = texts[i]
            char = raw[1:2]
            if raw[0] != "/" or char not in _FILED:
                unsure.append(i)
                continue
            own.setdefault(char, []).append(i)
            if char == "i" and marks[i] & 1 and raw.startswith("/index.htm"):
                index_htm.append(i)

    def _own_of(self, char: str) -> list[int]:
        """The numbers of the rules written "/" + ``char`` + ..., in file order
        (none for the characters :meth:`_filing` leaves to compiling)."""
        own = self._own.get(char)
        if own is None:
            own = []
            if char and char < "\x80" and char not in "$%*":
                lo, hi = "/" + char, "/" + chr(ord(char) + 1)
                for order, keys in self._sorted:
                    own += sorted(order[bisect_left(keys, lo) : bisect_left(keys, hi)])
            self._own[char] = own
        return own

    def _own_sizes(self) -> dict[str, int]:
        """Bucket character -> the number of its own rules."""
        if not self._sorted:  # filed at once (or no rules): _own holds them all
            return {char: len(own) for char, own in self._own.items() if own}
        sizes: dict[str, int] = {}
        for _, keys in self._sorted:
            start, end = bisect_left(keys, "/\x00"), bisect_left(keys, "/\x80")
            while start < end:
                char = keys[start][1]
                stop = bisect_left(keys, "/" + chr(ord(char) + 1), start, end)
                if char not in "$%*":
                    sizes[char] = sizes.get(char, 0) + stop - start
                start = stop
        return sizes

    def _place(self, items: list[tuple[Any, ...]], generic: list[tuple[Any, ...]]) -> None:
        """Sort compiled ``items`` into the generic ones and those moved to a bucket."""
        moved = self._moved
        for item in items:
            lead = index.lead(item[3], item[4])
            if len(lead) >= 2 and lead[0] == "/":
                moved.setdefault(lead[1], []).append(item)
            else:
                generic.append(item)

    def _compiling(self, numbers: list[int], out: list[tuple[Any, ...]]) -> Generator[None, None, None]:
        """Add the items of the rules ``numbers`` to ``out``, in steps of
        about ``index.STEP_WORK`` (a duplicate rule adds nothing)."""
        seen: tuple[set[str], set[str]] = (set(), set())  # Disallow, Allow patterns added
        texts = self._texts
        plain = self._plain
        budget = index.STEP_WORK
        start, end = 0, len(numbers)
        if plain and _RULE_WORK * end + (sum(map(len, map(texts.__getitem__, numbers))) >> 1) < budget:
            self._compile(numbers, out, seen)  # (most buckets: one step, no per-rule count of work)
            return
        while start < end:
            if start:
                yield
            stop, work = start, 0
            while stop < end and work < budget:
                raw = texts[numbers[stop]]
                work += _RULE_WORK + (len(raw) >> 1) if plain else _rule_work(raw)
                stop += 1
            self._compile(numbers[start:stop], out, seen)
            start = stop

    def _compile(self, numbers: list[int], out: list[tuple[Any, ...]], seen: tuple[set[str], set[str]]) -> None:
        """One step of :meth:`_compiling`; ``seen`` holds the patterns added before."""
        texts, marks = self._texts, self._marks
        add = out.append
        compile_pattern = patterns.compile_pattern
        outside = self._outside
        for i in numbers:
            raw, mark = texts[i], marks[i]
            allow = mark & 1
            added = seen[allow]
            if raw in added:
                continue
            added.add(raw)
            # Longest first; Allow before Disallow on equal length; then file order (see index).
            if raw.isascii() and "*" not in raw and "%" not in raw and raw[-1] != "$" and not outside:
                add((-len(raw), 1 - allow, i, _PREFIX, raw, "", 0, i))  # the common rule
            else:
                kind, a, b, n, priority = compile_pattern(raw, outside)
                add((-priority, 1 - allow, i, kind, a, b, n, i))
            if allow:
                extra = _index_htm(raw)
                if extra is not None:
                    kind, a, b, n, priority = compile_pattern(extra, outside)
                    add((-priority, 0, i + 0.5, kind, a, b, n, i))

    def preparing(self, least: int) -> Generator[None, None, None]:
        """Compile every bucket of at least ``least`` rules (its own, the
        moved and the generic ones), or whose own rules are costlier to
        compile than :data:`_LAZY_WORK` (a few long rules of escapes), that
        no path has asked for yet, so that the first check of such a bucket
        only looks it up, and that of any other compiles little; in steps.
        The buckets are those a check builds (:meth:`_building`)."""
        sizes = {char: len(items) for char, items in self._moved.items()}
        for char, size in self._own_sizes().items():
            sizes[char] = sizes.get(char, 0) + size
        generic = len(self._generic)
        texts, plain = self._texts, self._plain
        for char in sorted(sizes):
            if char in self.buckets or len(self.buckets) >= _MAX_BUCKETS:
                continue
            yield
            if sizes[char] + generic >= least or _work(texts, self._own_of(char), plain) >= _LAZY_WORK:
                yield from self._building(char)

    def _building(self, char: str) -> Generator[None, None, Any]:
        """The bucket of the rules a path whose second character is ``char``
        may match, kept (up to ``_MAX_BUCKETS``); in steps."""
        items: list[tuple[Any, ...]] = []
        own = self._own_of(char)
        if own:
            yield from self._compiling(own, items)
        items += self._moved.get(char, ())
        bucket: Any
        if items:
            if self._everywhere is None:
                items += self._generic
            if len(items) > 1:
                items = yield from index.sorting(items)
            if self._everywhere is not None or len(items) > _INDEX_LEAST:
                bucket = yield from index.indexing(items, self._literals)
            else:
                bucket = _bucketing(list(map(index.entry_of, items)))
        else:
            bucket = self.buckets[""]
        if len(self.buckets) < _MAX_BUCKETS:  # bounded: characters are many, paths use few
            self.buckets[char] = bucket
        return bucket

    def decide(self, path: str) -> Decision:
        bucket = self.buckets.get(path[1:2])
        if bucket is None:
            bucket = finish(self._building(path[1:2]))
        if bucket.__class__ is not tuple:
            i = self._look_up(bucket, path)
            if i is None:
                return ALLOW_IMPLICIT
            return self._decided(i)
        prefixes, others, entries = bucket
        # Plain prefix rules are ruled out all at once; when none matches,
        # only the (few) wildcard and exact rules are left to try.
        if not prefixes or not path.startswith(prefixes):
            entries = others
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
            elif kind == _EXACT:
                if path == a:
                    break
            elif b in path and index.matches(path, kind, a, b, n):
                break
        else:
            return ALLOW_IMPLICIT
        decision = self._decisions.get(i)  # (inline: most checks end here)
        return decision if decision is not None else self._decided(i)

    def _look_up(self, bucket: index.Index, path: str) -> int | None:
        """The number of the rule that decides ``path``, from ``bucket`` and
        the index of the generic rules; None when no rule matches."""
        everywhere = self._everywhere
        found = None
        if bucket.needles or (everywhere is not None and everywhere.needles):
            found = self._literals.present(path)
        best = bucket.best(path, found)
        if everywhere is not None:
            other = everywhere.best(path, found)
            if other is not None and (best is None or other < best):
                best = other
        return None if best is None else int(best[7])

    def _decided(self, i: int) -> Decision:
        """The winning rule's decision, made once, on its first win."""
        decision = self._decisions.get(i)
        if decision is None:
            mark = self._marks[i]
            if mark & 1:
                decision = Decision(True, _ALLOWED, Rule(True, self._texts[i], mark >> 1))
            else:
                decision = Decision(False, _DISALLOWED, Rule(False, self._texts[i], mark >> 1))
            self._decisions[i] = decision
        return decision


def _work(texts: list[str], numbers: list[int], plain: bool) -> int:
    """The work of compiling the rules ``numbers`` (see :meth:`_Matcher._compiling`)."""
    if plain:
        return _RULE_WORK * len(numbers) + (sum(map(len, map(texts.__getitem__, numbers))) >> 1)
    return sum(_rule_work(texts[i]) for i in numbers)


def _rule_work(raw: str) -> int:
    """The work of compiling the rule ``raw`` (units of ``index.STEP_WORK``): a
    character costs little, an escape or a non-ASCII octet much more (each
    is normalised by a call back into Python)."""
    work = _RULE_WORK + (len(raw) >> 1)
    if "%" in raw:
        work += 8 * raw.count("%")
    if not raw.isascii():
        work += 3 * len(raw.encode("utf-8", "surrogatepass"))
    return work


def _first_prefix(path: str, prefixes: tuple[str, ...]) -> int:
    """The index of the first of ``prefixes`` that ``path`` starts with (one does)."""
    return prefixes.index(next(filter(path.startswith, prefixes)))  # (the first of equal prefixes: the same answer)


def _first_in_run(path: str, rules: tuple[tuple[str, str, tuple[Any, Any, Any, Any, int]], ...]) -> int | None:
    """The rule number of the first rule of a run that matches ``path``;
    ``rules`` holds ``(literal, prefix, rule)`` triples."""
    for needle, prefix, rule in rules:
        if needle in path and path.startswith(prefix) and index.matches(path, *rule[:4]):
            return rule[4]
    return None


def _numbers(groups: list[Group]) -> list[int]:
    return [i for g in groups for i in range(g.start, g.end)]


def _bucketing(entries: list[Any]) -> tuple[Any, ...]:
    """``(prefixes, others, entries)`` of a bucket of at most ``_INDEX_LEAST``
    rules: the literals of the plain prefix rules (for one
    ``str.startswith(tuple)`` test), the other rules, and all rules, each
    list in priority order, runs folded (``_folding``)."""
    plain = [a for kind, a, _, _, _ in entries if kind == _PREFIX]
    others = [e for e in entries if e[0] != _PREFIX]
    if others:
        others = _folding(others)
    if others or len(plain) > 1:  # (else there is nothing to fold)
        entries = _folding(entries)
    return tuple(plain), others, entries


def _needle(rule: tuple[Any, ...]) -> str:
    """A literal every path the rule matches contains ("" when there is none)."""
    kind = rule[0]
    return rule[2] if kind == _SUB or kind == _SUB_END or kind >= _WILD else ""


def _folding(entries: list[Any]) -> list[Any]:
    """Fold runs of wildcard rules (real files have them by the dozen, such
    as ``/*?*sessionid=``) into one entry that is skipped at C speed when the
    path holds none of their literals, and runs of plain prefix rules into
    one entry tested with one ``str.startswith(tuple)``."""
    out: list[Any] = []
    run: list[Any] = []  # wildcard rules
    plain: list[Any] = []  # plain prefix rules
    for entry in entries:
        kind = entry[0]  # (_needle, inline: a call less per rule)
        wild = entry[2] if kind == _SUB or kind == _SUB_END or kind >= _WILD else ""
        prefix = not wild and kind == _PREFIX
        if plain and not prefix:
            _flush_prefixes(plain, out)
        if run and not wild:
            _flush(run, out)
        if wild:
            run.append(entry)
        elif prefix:
            plain.append(entry)
        else:
            out.append(entry)
    _flush_prefixes(plain, out)
    _flush(run, out)
    return out


def _flush_prefixes(plain: list[Any], out: list[Any]) -> None:
    """Add the waiting plain prefix rules to ``out``: as one run entry, or one."""
    if len(plain) > 1:
        out.append((_PREFIXES, tuple(map(_LITERAL, plain)), tuple(map(_NUMBER, plain)), 0, None))
    else:
        out.extend(plain)
    plain.clear()


def _flush(run: list[Any], out: list[Any]) -> None:
    """Add the waiting wildcard rules to ``out``: as one run entry, or one."""
    if len(run) > 1:
        needles = tuple(map(_needle, run))
        rules = tuple([(needle, index.lead(e[0], e[1]), e) for needle, e in zip(needles, run)])
        # each literal once: a run of "/a/*/page$", "/b/*/page$"... looks for "/page" once
        out.append((_RUN, tuple(dict.fromkeys(needles)), rules, 0, None))
    else:
        out.extend(run)
    run.clear()


def _index_htm(raw: str) -> str | None:
    """Google's rule: ``Allow: /d/index.htm...`` also allows exactly ``/d/``."""
    slash = raw.rfind("/")
    if slash >= 0 and raw.startswith("/index.htm", slash):
        return raw[: slash + 1] + "$"
    return None


def _splitting(joined: str) -> Generator[None, None, list[str]]:
    """``joined.split("\\n")``, about ``_STEP_SPLIT`` characters a step."""
    out: list[str] = []
    start = 0
    while True:
        cut = joined.find("\n", start + _STEP_SPLIT)
        if cut < 0:
            out += joined[start:].split("\n")
            return out
        out += joined[start:cut].split("\n")
        start = cut + 1
        yield


def _selecting_groups(groups: list[Group], token: str) -> Generator[None, None, tuple[list[Group], bool]]:
    """:func:`_select` in steps (a file may hold tens of thousands of groups)."""
    own: list[Group] = []
    star: list[Group] = []
    work = 0
    for group in groups:
        agents = group.agents
        if token in agents:
            own.append(group)
        elif "*" in agents:
            star.append(group)
        work += 4 + len(agents)
        if work >= _STEP_NUMBERS:
            work = 0
            yield
    return (own, True) if own else (star, False)


class RobotsTxt:
    """A parsed robots.txt, or the policy that stands in for one (allow all
    when the file is unavailable, deny all when it is unreachable).

    Immutable after construction apart from the per-token compile cache;
    safe to share between all requests of an origin.  Kept compact (see
    :mod:`.parser`): a crawl may hold many thousands of these.
    """

    __slots__ = (
        "_patterns", "_marks", "_groups", "sitemaps", "_diagnostics", "_matchers", "_fixed", "_origin", "_usage",
        "file_usage", "licenses",
    )  # fmt: skip
    _marks: Sequence[int]

    def __init__(self, parsed: Parsed | None = None, fixed: Decision | None = None) -> None:
        if parsed is None:
            self._patterns, self._marks, self._groups = "", (), []
            self.sitemaps: list[str] = []
            self._diagnostics: DiagnosticLog | None = None
            #: the Content-Signal rules written before the first group: for the whole file (None: none)
            self.file_usage: list[Any] | None = None
            #: RSL License URLs (file-wide lines), in file order, duplicates removed
            self.licenses: tuple[str, ...] = ()
        else:
            self._patterns, self._marks, self._groups = parsed.patterns, parsed.marks, parsed.groups
            #: Sitemap URLs in file order, duplicates removed.
            self.sitemaps = parsed.sitemaps
            self._diagnostics = parsed.diagnostics
            self.file_usage = parsed.usage
            self.licenses = parsed.licenses
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
            joined = self._patterns
            small = len(joined) <= _STEP_SPLIT and len(self._groups) <= _SMALL_GROUPS  # (most files: no steps)
            if small:
                groups, specific = _select(self._groups, token)
            else:
                groups, specific = yield from _selecting_groups(self._groups, token)
                yield
            if groups:
                texts = joined.split("\n") if small else (yield from _splitting(joined))
                if not small:
                    yield
                outside, plain = patterns.any_outside(joined), joined.isascii() and "%" not in joined
            else:
                texts, outside, plain = [], False, True
            matcher = _Matcher(groups, specific, texts, self._marks, outside, plain)
            if not small:
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
        cache = self._usage  # (inline: a call less per request)
        return _usage_match.usage_of(self, url, user_agent, self._usage_cache() if cache is None else cache, allowed)

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
        matcher = self._matchers.get(token) if self._matchers is not None else None
        if matcher is not None:  # selected already (in steps: a file may hold tens of thousands)
            return list(matcher.groups)
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
