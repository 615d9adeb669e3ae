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
loses), and every entry is filed in a tree of the path's leading
characters.  A request then walks down the tree ``_CHUNK`` characters at a
time and back up, looking up only the rests of the path that some entry
has; its answer (the entry's statement with the Content-Signal one) is made
on the first request it decides and kept.  A file of 20,000 rules costs a
request a few look-ups, as a file of one does.

Wildcard rules (``*``, or ``$`` after one) are filed by the literal they
start with and tried in priority order; a place with many of them also
files them by the literal every path they match holds
(:class:`~.robotstxt._LiteralIndex`, the access matcher's), and rules of
one priority and one meaning stop at the first that matches, as the others
would only name more lines.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from . import patterns
from .steps import finish
from .usage import CONTENT_SIGNAL, UNKNOWN, Usage, UsageRule, combine, statement

if TYPE_CHECKING:
    from .parser import Group
    from .robotstxt import RobotsTxt, _LiteralIndex

#: characters of a path looked up at once when walking down the tree: a few
#: look-ups per node against one node per ``_CHUNK`` characters of a long path
_CHUNK = 8
#: rules compiled or filed in one step of :func:`building`
_STEP_RULES = 1024
#: wildcard rules from which those of one place are also filed by their literal
_MANY_WILD = 64
#: answers of tied rules kept per matcher (a bound on memory; others are made again)
_MAX_TIES = 256

_SUB, _SUB_END, _EXACT, _PREFIX = patterns.SUB, patterns.SUB_END, patterns.EXACT, patterns.PREFIX


class _Entry:
    """The Content-Usage rules of one compiled pattern (``kind, a, b, n``)
    at its highest priority.  ``meaning``: what they state (rules of one
    priority and meaning change only the lines named); ``usage``: the
    answer, made on the first request it decides."""

    __slots__ = ("priority", "rules", "kind", "a", "b", "n", "meaning", "usage")

    def __init__(self, priority: int, rule: UsageRule, kind: int, a: Any, b: str, n: int) -> None:
        self.priority = priority
        self.rules = [rule]
        self.kind, self.a, self.b, self.n = kind, a, b, n
        self.meaning: frozenset[Any] = frozenset()
        self.usage: Usage | None = None

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


class _Wild:
    """The wildcard entries that start with one literal, highest priority
    first, in runs of one priority and one meaning; with many, also filed by
    the literal each needs (``by_literal``, found with ``index``)."""

    __slots__ = ("runs", "top", "by_literal", "index")

    def __init__(self, entries: list[_Entry], index: _LiteralIndex | None) -> None:
        self.runs = _runs(entries)
        self.top = self.runs[0][0]  # the highest priority
        self.by_literal: dict[str, list[tuple[int, frozenset[Any], list[_Entry]]]] | None = None
        self.index = index
        if index is not None:
            by: dict[str, list[_Entry]] = {}
            for entry in entries:
                by.setdefault(entry.b, []).append(entry)
            self.by_literal = {literal: _runs(some) for literal, some in by.items()}
            # ("a*$" needs no literal: its runs are tried for every path)
            self.runs = self.by_literal.pop("", [])

    def candidates(self, path: str) -> Iterator[list[tuple[int, frozenset[Any], list[_Entry]]]]:
        """Lists of runs that may match ``path``, each highest priority first."""
        yield self.runs
        if self.by_literal is None or self.index is None:
            return
        by_literal = self.by_literal
        for literal in self.index.present(path):
            runs = by_literal.get(literal)
            if runs is not None:
                yield runs


def _runs(entries: list[_Entry]) -> list[tuple[int, frozenset[Any], list[_Entry]]]:
    """``entries`` sorted by priority (highest first, then file order) and cut
    into runs of one priority and one meaning."""
    runs: list[tuple[int, frozenset[Any], list[_Entry]]] = []
    for entry in sorted(entries, key=_by_priority):
        if runs and runs[-1][0] == entry.priority and runs[-1][1] == entry.meaning:
            runs[-1][2].append(entry)
        else:
            runs.append((entry.priority, entry.meaning, [entry]))
    return runs


def _by_priority(entry: _Entry) -> tuple[int, int]:
    return -entry.priority, entry.rules[0].line


class _Node:
    """What starts at a multiple of ``_CHUNK`` characters of a path: ``ends``,
    the rest of a pattern's literal (shorter than ``_CHUNK``) -> ``[plain
    prefix entry or None, wildcard entries (a list, then a _Wild) or None]``;
    ``lengths``, the lengths of those rests, longest first; ``children``, the
    next ``_CHUNK`` characters -> node; ``upto``, the highest priority of an
    entry here or in a node above."""

    __slots__ = ("ends", "lengths", "children", "upto")

    def __init__(self) -> None:
        self.ends: dict[str, list[Any]] = {}
        self.lengths: list[int] = []
        self.children: dict[str, _Node] | None = None
        self.upto = -1

    def place(self, lead: str) -> list[Any]:
        """The end of ``lead`` (made if new)."""
        node, at = self, 0
        while len(lead) - at >= _CHUNK:
            if node.children is None:
                node.children = {}
            chunk = lead[at : at + _CHUNK]
            child = node.children.get(chunk)
            if child is None:
                child = node.children[chunk] = _Node()
            node, at = child, at + _CHUNK
        rest = lead[at:]
        end = node.ends.get(rest)
        if end is None:
            end = node.ends[rest] = [None, None]
            if len(rest) not in node.lengths:
                node.lengths.append(len(rest))
                node.lengths.sort(reverse=True)
        return end


class UsageMatcher:
    """The usage statements that apply to one crawler token (see the module
    docstring); made by :func:`building`."""

    __slots__ = ("_root", "_exact", "signals", "_ties", "paths")

    def __init__(self) -> None:
        self._root = _Node()
        self._exact: dict[str, _Entry] = {}
        #: the Content-Signal statement (None: no line states anything), in every answer
        self.signals: Usage | None = None
        self._ties: dict[frozenset[int], Usage] = {}
        #: the distinct Content-Usage patterns
        self.paths = 0

    def usage(self, path: str) -> Usage:
        """The preferences for a (normalised) path the crawler may fetch."""
        best = -1
        top: list[_Entry] = []
        found: set[frozenset[Any]] = set()  # the meanings in top
        if self._exact:
            entry = self._exact.get(path)
            if entry is not None:
                best, top, found = entry.priority, [entry], {entry.meaning}
        # down: the nodes on the path's way; then up, longest literals first,
        # until nothing left above can reach the best priority found
        node: _Node | None = self._root
        way: list[tuple[_Node, int]] = []
        at, size = 0, len(path)
        while node is not None:
            way.append((node, at))
            children = node.children
            if children is None or at + _CHUNK > size:
                break
            node = children.get(path[at : at + _CHUNK])
            at += _CHUNK
        for node, at in reversed(way):
            if node.upto < best:
                break
            ends = node.ends
            for length in node.lengths:
                if at + length > size:
                    continue
                end = ends.get(path[at : at + length])
                if end is None:
                    continue
                plain, wild = end
                if plain is not None and plain.priority >= best:
                    if plain.priority > best:
                        best, top, found = plain.priority, [plain], {plain.meaning}
                    elif plain.meaning not in found:
                        top.append(plain)
                        found.add(plain.meaning)
                if wild is None:
                    continue
                for runs in cast(_Wild, wild).candidates(path):
                    for priority, meaning, run in runs:
                        if priority < best:
                            break
                        if priority == best and meaning in found:
                            continue  # would only name more lines
                        for entry in run:
                            if entry.matches(path):
                                if priority > best:
                                    best, top, found = priority, [entry], {meaning}
                                else:
                                    top.append(entry)
                                    found.add(meaning)
                                break
        if not top:
            return UNKNOWN if self.signals is None else self.signals
        if len(top) == 1:
            entry = top[0]
            if entry.usage is None:
                entry.usage = self._with_signals(statement(entry.rules))
            return entry.usage
        return self._tied(top)

    def _tied(self, top: list[_Entry]) -> Usage:
        """Rules of equal priority matching one path: combined (vocab 7.1)."""
        key = frozenset(map(id, top))
        usage = self._ties.get(key)
        if usage is None:
            usage = self._with_signals(statement(rule for entry in top for rule in entry.rules))
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
    and the file-wide Content-Signal rules, in steps of about
    ``_STEP_RULES`` rules; None when there is no usage rule at all."""
    signals: list[UsageRule] = list(file_wide or ())
    entries: dict[tuple[Any, ...], _Entry] = {}
    count = 0
    for group in groups:
        for rule in group.usage or ():
            count += 1
            if count % _STEP_RULES == 0:
                yield
            if rule.form == CONTENT_SIGNAL:
                signals.append(rule)
                continue
            kind, a, b, n, priority = rule.compiled()
            key = (kind, a, b, n)
            entry = entries.get(key)
            if entry is None:
                entries[key] = _Entry(priority, rule, kind, a, b, n)
            elif priority > entry.priority:
                entry.priority, entry.rules = priority, [rule]
            elif priority == entry.priority:
                entry.rules.append(rule)
    if not signals and not entries:
        return None
    yield
    matcher = UsageMatcher()
    if signals:
        matcher.signals = statement(signals) or None
    root, exact = matcher._root, matcher._exact
    wilds: list[list[Any]] = []
    for count, entry in enumerate(entries.values(), 1):
        if count % _STEP_RULES == 0:
            yield
        entry.meaning = frozenset((tuple(rule.prefs.items()), rule.use) for rule in entry.rules)
        kind = entry.kind
        if kind == _EXACT:
            exact[entry.a] = entry
        elif kind == _PREFIX:
            root.place(entry.a)[0] = entry
        else:
            end = root.place(entry.a if kind <= _SUB_END else entry.a[0])
            if end[1] is None:
                end[1] = []
                wilds.append(end)
            end[1].append(entry)
    for end in wilds:
        yield
        wild: list[_Entry] = end[1]
        index = None
        if len(wild) >= _MANY_WILD:
            from .robotstxt import _LiteralIndex  # (robotstxt imports this module)

            index = _LiteralIndex()
            yield from index.adding([literal for literal in dict.fromkeys(entry.b for entry in wild) if literal])
        end[1] = _Wild(wild, index)
    _set_upto(root)
    matcher.paths = len(entries)
    return matcher


def _set_upto(root: _Node) -> None:
    """Each node's ``upto``: the highest priority filed in it or above it."""
    stack = [(root, -1)]
    while stack:
        node, above = stack.pop()
        own = above
        for plain, wild in node.ends.values():
            if plain is not None:
                own = max(own, plain.priority)
            if wild is not None:
                own = max(own, wild.top)
        node.upto = own
        if node.children:
            stack.extend((child, own) for child in node.children.values())


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
