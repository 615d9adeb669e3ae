"""Which usage statements of a robots.txt apply to a path: compiled once per
crawler token, looked up per request.

A token's Content-Usage rules are matched like Allow/Disallow (the longest
pattern, in encoded octets, wins), but rules of equal priority that both
match combine, the most restrictive winning (draft-ietf-aipref-attach 3.1),
and the token's Content-Signal lines (its groups' and the file-wide ones)
are one more statement, combined with every answer.

Everything that does not depend on the path is done when the token's
:class:`UsageMatcher` is built (:func:`building`, in bounded steps): rules
with the same compiled pattern become one :class:`_Entry` (only those of
its highest priority count: a lower one matches the same paths and always
loses), and every entry is filed in a tree of nodes, one per ``_CHUNK``
leading characters, keyed by those characters.  A request finds the
deepest node of its path by bisection, then walks up, looking up only the
rests of the path that some entry has, until nothing above can beat what it
found; its answer (the entry's statement with the Content-Signal one) is
made on the first request it decides and kept.  A file of 20,000 rules costs a request a few look-ups,
as a file of one does.

Wildcard rules (``*``, or ``$`` after one) are filed by the literal they
start with and tried in priority order; a place with many of them files
them by the literal every path they match holds, found with the access
matcher's :class:`~.robotstxt.LiteralIndex`.  Rules of one priority and
one meaning stop at the first that matches: the others would only name more
lines.  (A file can still make a request try many wildcard rules that all
need one literal the path holds and then fail, as it can for Allow/Disallow.)

A hostile file holds tens of thousands of rules, so the structures are kept
to about one object per distinct pattern: the garbage collector walks every
one of them on each full collection.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from . import patterns
from .index import LiteralIndex
from .index import lead as _lead
from .steps import finish
from .usage import CONTENT_SIGNAL, UNKNOWN, Usage, UsageRule, combine, statement, stating

if TYPE_CHECKING:
    from .parser import Group
    from .robotstxt import RobotsTxt

#: characters of a path per node: the rests looked up in a node (up to this many
#: lengths) against the nodes of a long literal
_CHUNK = 8
#: rules (or about as much work) compiled or filed in one step of :func:`building`
_STEP_RULES = 512
#: wildcard rules from which those starting with one literal are filed by the literal they need
_MANY_WILD = 64
#: answers of tied rules kept per matcher (a bound on memory; others are made again)
_MAX_TIES = 256

_SUB, _SUB_END, _EXACT, _PREFIX = patterns.SUB, patterns.SUB_END, patterns.EXACT, patterns.PREFIX


class _Entry:
    """The Content-Usage rules of one compiled pattern (``kind, a, b, n``)
    at its highest priority: ``rule`` and, when there are more, ``others``.
    ``meaning``: what they state (rules of one priority and one meaning
    change only the lines named); ``usage``: the answer, made on the first
    request it decides; ``stated``: the rules' own statement."""

    __slots__ = ("priority", "rule", "others", "kind", "a", "b", "n", "meaning", "stated", "usage")

    def __init__(self, priority: int, rule: UsageRule, kind: int, a: Any, b: str, n: int) -> None:
        self.priority = priority
        self.rule = rule
        self.others: list[UsageRule] | None = None
        self.kind, self.a, self.b, self.n = kind, a, b, n
        #: what its rules state: a set while there are several, a frozenset once built
        self.meaning: Any = None
        self.stated: Usage | None = None
        self.usage: Usage | None = None

    def add(self, rule: UsageRule, priority: int) -> None:
        """Another rule of the same pattern."""
        if priority > self.priority:
            self.priority, self.rule, self.others, self.meaning = priority, rule, None, None
        elif priority == self.priority:
            if self.others is None:
                self.others, self.meaning = [], {self.rule.meaning}
            self.others.append(rule)
            self.meaning.add(rule.meaning)

    def rules(self) -> list[UsageRule]:
        return [self.rule] if self.others is None else [self.rule, *self.others]

    def base(self) -> Usage:
        """What the rules state (without the Content-Signal statement)."""
        if self.stated is None:
            self.stated = statement(self.rules())
        return self.stated

    def matches(self, path: str) -> bool:
        """Whether the (wildcard) pattern matches ``path``."""
        kind = self.kind
        if kind == _SUB:
            return path.startswith(self.a) and path.find(self.b, self.n) >= 0
        if self.b not in path:  # a literal every match holds: one C-speed test first
            return False
        if kind == _SUB_END:
            return path.endswith(self.b) and len(path) >= self.n and path.startswith(self.a)
        return patterns.wild_match(path, self.a, kind == patterns.WILD_END)


#: entries of one priority and one meaning, in file order (one entry alone as itself)
_Run = _Entry | list[_Entry]


class _Wild:
    """The wildcard entries that start with one literal: ``runs``, highest
    priority first, tried for every path; with many, the others in
    ``by_literal``, under the literal each needs (found with ``index``)."""

    __slots__ = ("runs", "top", "by_literal", "index")

    def __init__(self, entries: list[_Entry]) -> None:
        self.runs: list[_Run] = _runs(entries)
        self.top = max(entry.priority for entry in entries)  # the highest priority
        self.by_literal: dict[str, list[_Run] | _Entry] | None = None
        self.index: LiteralIndex | None = None

    @classmethod
    def filing(cls, entries: list[_Entry]) -> Generator[None, None, _Wild]:
        """Many entries, filed by their literal, in steps."""
        wild = cls(entries[:1])
        wild.top = max(entry.priority for entry in entries)
        by: dict[str, list[_Entry]] = {}
        for count, entry in enumerate(entries, 1):
            by.setdefault(entry.b, []).append(entry)
            if count % _STEP_RULES == 0:
                yield
        yield
        filed: dict[str, list[_Run] | _Entry] = {}
        done = 0
        for literal, some in by.items():
            filed[literal] = some[0] if len(some) == 1 else _runs(some)
            done += len(some)
            if done >= _STEP_RULES:
                done = 0
                yield
        always = filed.pop("", [])  # ("/a*$" needs no literal: tried for every path)
        wild.runs = [always] if isinstance(always, _Entry) else always
        wild.index = LiteralIndex()
        yield from wild.index.adding(list(filed))
        wild.by_literal = filed
        return wild

    def candidates(self, path: str) -> Iterator[list[_Run] | _Entry]:
        """Runs (highest priority first) that may match ``path``, or single entries."""
        yield self.runs
        if self.by_literal is not None and self.index is not None:
            by_literal = self.by_literal
            for literal in self.index.present(path):
                found = by_literal.get(literal)
                if found is not None:
                    yield found


def _runs(entries: list[_Entry]) -> list[_Run]:
    """``entries`` sorted by priority (highest first, then file order) and cut
    into runs of one priority and one meaning."""
    runs: list[_Run] = []
    last: _Entry | None = None
    for entry in sorted(entries, key=_by_priority):
        if last is not None and last.priority == entry.priority and last.meaning == entry.meaning:
            run = runs[-1]
            if isinstance(run, _Entry):
                run = runs[-1] = [run]
            run.append(entry)
        else:
            runs.append(entry)
        last = entry
    return runs


def _by_priority(entry: _Entry) -> tuple[int, int]:
    return -entry.priority, entry.rule.line


class _Node:
    """What starts at a multiple of ``_CHUNK`` characters of a path (the
    node's key in :attr:`UsageMatcher._nodes` is the path up to there):
    ``plain``, the rest of a plain prefix (shorter than ``_CHUNK``) -> its
    entry; ``wild``, the rest of a wildcard rule's leading literal -> its
    entries; ``lengths``, the lengths of those rests, longest first;
    ``upto``, the highest priority of an entry here or in a node above."""

    __slots__ = ("plain", "wild", "lengths", "upto")

    def __init__(self) -> None:
        self.plain: dict[str, _Entry] = {}
        self.wild: dict[str, Any] | None = None  # rest -> list of entries, then a _Wild
        self.lengths: list[int] = []
        self.upto = -1

    def own(self) -> int:
        """The highest priority filed here."""
        top = max((entry.priority for entry in self.plain.values()), default=-1)
        if self.wild:
            top = max(top, max(wild.top for wild in self.wild.values()))
        return top


class UsageMatcher:
    """The usage statements that apply to one crawler token (see the module
    docstring); made by :func:`building`."""

    __slots__ = ("_nodes", "_depth", "_exact", "signals", "_ties", "paths")

    def __init__(self) -> None:
        #: a path's first ``_CHUNK`` x k characters -> the node there ("" the root)
        self._nodes: dict[str, _Node] = {"": _Node()}
        self._depth = 0  # the deepest node's k
        self._exact: dict[str, _Entry] = {}
        #: the Content-Signal statement (None: no line states anything), in every answer
        self.signals: Usage | None = None
        self._ties: dict[frozenset[int], Usage] = {}
        #: the distinct Content-Usage patterns
        self.paths = 0

    def _deepest(self, text: str) -> int:
        """The largest k such that a node is keyed by ``text``'s first k
        chunks (the nodes of a path's prefixes are there from the root down
        to some depth: bisected)."""
        nodes = self._nodes
        lo, hi = 0, min(self._depth, len(text) // _CHUNK)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if text[: mid * _CHUNK] in nodes:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _node_of(self, lead: str) -> tuple[_Node, str]:
        """The node where ``lead`` ends (made if new, with those above it), and its rest there."""
        nodes = self._nodes
        depth, last = self._deepest(lead), len(lead) // _CHUNK
        for k in range(depth + 1, last + 1):
            nodes[lead[: k * _CHUNK]] = _Node()
        self._depth = max(self._depth, last)
        node, rest = nodes[lead[: last * _CHUNK]], lead[last * _CHUNK :]
        if len(rest) not in node.lengths:
            node.lengths.append(len(rest))
            node.lengths.sort(reverse=True)
        return node, rest

    def usage(self, path: str) -> Usage:
        """The preferences for a (normalised) path the crawler may fetch."""
        best = -1
        top: list[_Entry] = []
        found: set[Any] = set()  # the meanings in top
        if self._exact:
            entry = self._exact.get(path)
            if entry is not None:
                best, top, found = entry.priority, [entry], {entry.meaning}
        # from the deepest node on the path's way up, longest literals first,
        # until nothing left above can reach the best priority found
        nodes, size = self._nodes, len(path)
        depth = self._deepest(path) if self._depth else 0
        for k in range(depth, -1, -1):
            at = k * _CHUNK
            node = nodes[path[:at]]
            if node.upto < best:
                break
            plains, wilds = node.plain, node.wild
            for length in node.lengths:
                if at + length > size:
                    continue
                rest = path[at : at + length]
                entry = plains.get(rest)
                if entry is not None and entry.priority >= best:
                    if entry.priority > best:
                        best, top, found = entry.priority, [entry], {entry.meaning}
                    elif entry.meaning not in found:
                        top.append(entry)
                        found.add(entry.meaning)
                wild = wilds.get(rest) if wilds else None
                if wild is None:
                    continue
                for runs in cast(_Wild, wild).candidates(path):
                    for run in (runs,) if isinstance(runs, _Entry) else runs:
                        first = run if isinstance(run, _Entry) else run[0]
                        priority = first.priority
                        if priority < best:
                            break
                        if priority == best and first.meaning in found:
                            continue  # would only name more lines
                        for entry in (run,) if isinstance(run, _Entry) else run:
                            if entry.matches(path):
                                if priority > best:
                                    best, top, found = priority, [entry], {entry.meaning}
                                else:
                                    top.append(entry)
                                    found.add(entry.meaning)
                                break
        if not top:
            return UNKNOWN if self.signals is None else self.signals
        if len(top) == 1:
            entry = top[0]
            if entry.usage is None:
                entry.usage = self._with_signals(entry.base())
            return entry.usage
        return self._tied(top)

    def _tied(self, top: list[_Entry]) -> Usage:
        """Rules of equal priority matching one path: combined (vocab 7.1)."""
        key = frozenset(map(id, top))
        usage = self._ties.get(key)
        if usage is None:
            usage = self._with_signals(combine([entry.base() for entry in top]))
            if len(self._ties) < _MAX_TIES:
                self._ties[key] = usage
        return usage

    def _with_signals(self, usage: Usage) -> Usage:
        # Content-Usage (longest match) and the Content-Signal lines are
        # separate statements: combined, the most restrictive winning
        if self.signals is None:
            return usage
        return combine((usage, self.signals)) if usage else self.signals


def building(
    groups: Sequence[Group], file_wide: Sequence[UsageRule] | None
) -> Generator[None, None, UsageMatcher | None]:
    """The :class:`UsageMatcher` of ``groups`` (those selected for a token)
    and the file-wide Content-Signal rules, in steps of about ``_STEP_RULES``
    rules (a long pattern counts for more); None when there is no usage rule."""
    signals: list[UsageRule] = list(file_wide or ())
    entries: dict[tuple[Any, ...], _Entry] = {}
    work = 0
    for group in groups:
        for rule in group.usage or ():
            work += 1 + len(rule.text) // 64
            if work >= _STEP_RULES:
                work = 0
                yield
            if rule.form == CONTENT_SIGNAL:
                signals.append(rule)
                continue
            kind, a, b, n, priority = rule.compiled()
            key = (kind, a, b)  # (n follows from them)
            entry = entries.get(key)
            if entry is None:
                entries[key] = _Entry(priority, rule, kind, a, b, n)
            else:
                entry.add(rule, priority)
    if not signals and not entries:
        return None
    yield
    matcher = UsageMatcher()
    if signals:
        matcher.signals = (yield from stating(signals, _STEP_RULES)) or None
    exact = matcher._exact
    meanings: dict[Any, frozenset[Any]] = {}  # one object per distinct meaning
    places: list[tuple[_Node, str]] = []
    for entry in entries.values():
        work += 1
        if work >= _STEP_RULES:
            work = 0
            yield
        meaning = frozenset((entry.rule.meaning,) if entry.meaning is None else entry.meaning)
        if entry.others is not None:
            if len(entry.others) >= _STEP_RULES // 4:  # its statement now, in steps, not on a request
                entry.stated = yield from stating(entry.rules(), _STEP_RULES)
        entry.meaning = meanings.setdefault(meaning, meaning)
        kind = entry.kind
        if kind == _EXACT:
            exact[entry.a] = entry
            continue
        lead = _lead(kind, entry.a)
        work += len(lead) // _CHUNK
        node, rest = matcher._node_of(lead)
        if kind == _PREFIX:
            node.plain[rest] = entry
            continue
        if node.wild is None:
            node.wild = {}
        some = node.wild.get(rest)
        if some is None:
            some = node.wild[rest] = []
            places.append((node, rest))
        some.append(entry)
    for node, rest in places:
        yield
        assert node.wild is not None
        many: list[_Entry] = node.wild[rest]
        node.wild[rest] = (yield from _Wild.filing(many)) if len(many) >= _MANY_WILD else _Wild(many)
    yield from _setting_upto(matcher._nodes)
    matcher.paths = len(entries)
    return matcher


def _setting_upto(nodes: dict[str, _Node]) -> Generator[None, None, None]:
    """Each node's ``upto``: the highest priority filed in it or above it; in steps."""
    for count, key in enumerate(sorted(nodes, key=len), 1):  # (a node after the one above it)
        node = nodes[key]
        node.upto = max(nodes[key[:-_CHUNK]].upto if key else -1, node.own())
        if count % _STEP_RULES == 0:
            yield


def matcher_of(robots: RobotsTxt, user_agent: str, cache: dict[Any, Any]) -> Generator[None, None, UsageMatcher | None]:
    """The matcher of ``user_agent`` (None: no usage rule applies), made in
    steps the first time and kept in ``cache`` (the file's own), shared by
    the tokens that select the same groups.  ``ValueError`` for an invalid
    token, as ``check``."""
    if user_agent in cache:
        return cast("UsageMatcher | None", cache[user_agent])
    groups = robots.groups_for(user_agent)  # validates the token
    file_wide = robots.file_usage
    key = tuple(map(id, groups))
    if key in cache:
        matcher = cast("UsageMatcher | None", cache[key])
    elif file_wide or any(g.usage for g in groups):
        matcher = cache[key] = yield from building(groups, file_wide)
    else:
        matcher = cache[key] = None
    cache[user_agent] = matcher
    return matcher


def usage_of(robots: RobotsTxt, url: str, user_agent: str, cache: dict[Any, Any], allowed: bool = False) -> Usage:
    """:meth:`.RobotsTxt.usage`: the robots.txt preferences for ``url``.
    ``cache`` is the file's own (token -> matcher, None when no usage rule
    applies: most files, answered at once); ``allowed``: the caller has
    checked that the crawler may fetch ``url`` (else it is checked here: a
    URL it may not fetch has no preferences).  ``ValueError`` for an invalid
    token, as ``check``."""
    matcher = cache.get(user_agent, cache)
    if matcher is None:
        return UNKNOWN
    if matcher is cache:
        matcher = finish(matcher_of(robots, user_agent, cache))
        if matcher is None:
            return UNKNOWN
    if not allowed and not robots.check(url, user_agent).allowed:
        return UNKNOWN  # a disallowed resource has no preferences
    return cast(UsageMatcher, matcher).usage(patterns.path_of(url))
