"""Many rules looked up at the cost of a few: the index of a large bucket.

A check walks the rules of a small bucket in priority order (see
:mod:`.robotstxt`); for thousands of rules that walk costs milliseconds per
URL.  An :class:`Index` files the rules so that a check tries only those that
can match the path, whatever their number:

* by their literal start (``/a/b`` for ``/a/b*.php``): the path looks up its
  own starts, one dictionary look-up per length that some rule's start has;
* ``$``-anchored rules without ``*`` by their whole pattern;
* wildcard rules that share their start with more than :data:`LEAD_RULES`
  others (``/*x1*y1$``, ``/*x2*y2$``...) by their rarest literal, which the
  path's own substrings find in a :class:`LiteralIndex`.

Of rules compiled to the same thing only the best is kept: it wins wherever
they match.  What stays slow is a file whose thousands of rules share their
start *and* all their literals in different orders (``/*a*b*c``,
``/*c*a*b``...) against a path holding all of them: each such rule is tried
(docs/benchmarks_parser.md).

Building an index is a generator of bounded steps (see :mod:`.steps`), and
so is everything here that grows with the number of rules.  Items are flat
``(-priority, 1 - allow, order, kind, a, b, n, number, ...)`` tuples: a
compiled rule ``(kind, a, b, n)`` (:func:`.patterns.compile_pattern`) after
its sort key, then the rule's number; a smaller item is a better rule.
(Flat, and of strings and numbers only: the garbage collector stops
tracking such a tuple at its first collection, see
:data:`.patterns.WILDCARD`.)
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Sequence
from itertools import islice
from operator import itemgetter
from typing import Any

from . import patterns

_PREFIX, _EXACT, _SUB, _SUB_END, _WILD, _WILD_END = (
    patterns.PREFIX,
    patterns.EXACT,
    patterns.SUB,
    patterns.SUB_END,
    patterns.WILD,
    patterns.WILD_END,
)
_wild_match = patterns.wild_match
_WILDCARD = patterns.WILDCARD
# Tuning: what each constant trades, and its measurements, are in docs/benchmarks_parser.md.
#: the work of one step, in units of about a tenth of a microsecond: a step's length against
#: the number of steps (the compiling of rules in .robotstxt counts in the same units)
STEP_WORK = 4096
#: items sorted, placed or indexed in one step (about a microsecond each)
STEP_ITEMS = 256
#: the work of filing one literal, besides its characters
LITERAL_WORK = 12
#: wildcard rules with one literal start: more of them than this are filed under their rarest
#: literal instead, so that a check tries at most this many of them per start
LEAD_RULES = 8
#: an index of at most this many keys is searched key by key (``key in path``), not by
#: looking up every substring of the path: cheaper for the few keys real files have
SEARCH_KEYS = 256
#: the longest key of a literal (see LiteralIndex): fewer literals per key against more
#: substrings of the path to look up
KEY_CHARS = 4

Item = tuple[Any, ...]


class Index:
    """Rules filed for look-up (see the module docstring).

    ``leads``: literal start -> ``(the best plain prefix rule with that start
    or None, the wildcard rules with that start, best first)``; ``lengths``:
    the lengths of those starts, ascending; ``exact``: pattern -> the best
    ``$``-anchored rule without ``*``; ``needles``: literal -> the crowded
    wildcard rules filed under it, best first."""

    __slots__ = ("lengths", "leads", "exact", "needles")

    def __init__(
        self,
        lengths: tuple[int, ...],
        leads: dict[str, tuple[Item | None, tuple[Item, ...]]],
        exact: dict[str, Item],
        needles: dict[str, tuple[Item, ...]],
    ) -> None:
        self.lengths = lengths
        self.leads = leads
        self.exact = exact
        self.needles = needles

    def best(self, path: str, found: set[str] | None) -> Item | None:
        """The best item that matches ``path`` (None for none); ``found``: the
        literals of the :class:`LiteralIndex` that ``path`` holds (needed
        when ``needles`` is not empty)."""
        best = None
        leads = self.leads
        size = len(path)
        for length in self.lengths:
            if length > size:
                break
            slot = leads.get(path[:length])
            if slot is not None:
                item, wilds = slot
                if item is not None and (best is None or item < best):
                    best = item
                if wilds:
                    best = _first_match(path, wilds, best)
        item = self.exact.get(path)
        if item is not None and (best is None or item < best):
            best = item
        if found:
            needles = self.needles
            for literal in found:
                crowd = needles.get(literal)
                if crowd is not None:
                    best = _first_match(path, crowd, best)
        return best

    def ties(self, path: str, found: set[str] | None) -> list[Item]:
        """Every item of the highest priority that matches ``path``, in no
        particular order (items that differ only after the priority tie)."""
        matched: list[Item] = []
        leads = self.leads
        size = len(path)
        for length in self.lengths:
            if length > size:
                break
            slot = leads.get(path[:length])
            if slot is not None:
                item, wilds = slot
                if item is not None:
                    matched.append(item)
                _all_matches(path, wilds, matched)
        item = self.exact.get(path)
        if item is not None:
            matched.append(item)
        if found:
            needles = self.needles
            for literal in found:
                crowd = needles.get(literal)
                if crowd is not None:
                    _all_matches(path, crowd, matched)
        if len(matched) > 1:
            top = min(item[0] for item in matched)
            matched = [item for item in matched if item[0] == top]
        return matched


NO_RULES = Index((), {}, {}, {})


def _first_match(path: str, items: tuple[Item, ...], best: Item | None) -> Item | None:
    """The better of ``best`` and the first of ``items`` (best first) that matches ``path``."""
    for item in items:
        if best is not None and item > best:
            return best
        if matches(path, item[3], item[4], item[5], item[6]):
            return item
    return best


def _all_matches(path: str, items: tuple[Item, ...], out: list[Item]) -> None:
    """Add to ``out`` the items of ``items`` (best first) that match ``path``
    with the priority of the first that does."""
    top = None
    for item in items:
        if top is not None and item[0] != top:
            return
        if matches(path, item[3], item[4], item[5], item[6]):
            out.append(item)
            top = item[0]


def matches(path: str, kind: int, a: Any, b: str, n: int) -> bool:
    """Whether a wildcard rule (SUB, SUB_END, WILD, WILD_END) matches ``path``."""
    if kind == _SUB:
        return path.startswith(a) and path.find(b, n) >= 0
    if kind == _SUB_END:
        return path.endswith(b) and len(path) >= n and path.startswith(a)
    return _wild_match(path, a, kind == _WILD_END)


def lead(kind: int, a: str) -> str:
    """The literal a path matching the compiled rule ``(kind, a, ...)`` starts with."""
    return a if kind <= _SUB_END else a[: a.find(_WILDCARD)]


def indexing(items: list[Item], literals: LiteralIndex) -> Generator[None, None, Index]:
    """The :class:`Index` of ``items`` (best first), in steps; the literals
    of crowded wildcard rules are filed in ``literals``."""
    leads: dict[str, tuple[Item | None, tuple[Item, ...]]] = {}
    wild: dict[str, Any] = {}  # start -> its wildcard rules, while building (see add_to)
    exact: dict[str, Item] = {}
    lengths: set[int] = set()
    seen: set[tuple[Any, ...]] = set()
    crowded: list[str] = []  # the starts of more than LEAD_RULES wildcard rules
    several = False  # a wildcard rule of several literals seen
    for start in range(0, len(items), STEP_ITEMS):
        if start:
            yield
        for item in items[start : start + STEP_ITEMS]:
            kind, a = item[3], item[4]
            if kind == _PREFIX:
                if a not in leads:
                    leads[a] = (item, ())
                    lengths.add(len(a))
                elif leads[a][0] is None:
                    leads[a] = (item, ())
            elif kind == _EXACT:
                if a not in exact:
                    exact[a] = item
            else:
                form = item[3:7]
                if form in seen:
                    continue
                seen.add(form)
                start_of = lead(kind, a)
                several = several or kind >= _WILD
                size = add_to(wild, start_of, item)
                if size == 1 and start_of not in leads:
                    leads[start_of] = (None, ())
                    lengths.add(len(start_of))
                elif size == LEAD_RULES + 1:
                    crowded.append(start_of)
    yield from _emptying(seen)
    needles: dict[str, tuple[Item, ...]] = {}
    if crowded:
        yield from _filing_needles(crowded, wild, needles, literals, several)
    # the other wildcard rules beside their start's prefix rule
    count = 0
    for start_of, filed in wild.items():
        prefix = leads[start_of][0]
        if filed:
            leads[start_of] = (prefix, tuple(filed))
        elif prefix is None:
            del leads[start_of]  # all moved to needles (its length stays: a look-up that finds nothing)
        count += 1
        if count == STEP_ITEMS:
            count = 0
            yield
    return Index(tuple(sorted(lengths)), leads, exact, needles)


def _filing_needles(
    crowded: list[str],
    wild: dict[str, Any],
    needles: dict[str, tuple[Item, ...]],
    literals: LiteralIndex,
    several: bool = True,
) -> Generator[None, None, None]:
    """Move the wildcard rules of the ``crowded`` starts of ``wild`` to
    ``needles``, each under its rarest literal (the one fewest of them
    hold), best first; and file those literals in ``literals``; in steps.
    ``several``: some of the rules may have several literals (WILD, WILD_END;
    without, each has one and there is nothing to count)."""
    moved: list[Item] = []
    for start_of in crowded:
        moved += wild[start_of]
        wild[start_of] = ()
    if len(crowded) > 1:  # (one start's rules are in order already)
        moved = yield from sorting(moved)
    counts: dict[str, int] = {}
    work = 0
    for item in moved if several else ():
        these = _pieces(item)
        if these.__class__ is str:
            counts[these] = counts.get(these, 0) + 1
            work += LITERAL_WORK
        else:
            for piece in set(these):
                counts[piece] = counts.get(piece, 0) + 1
            work += LITERAL_WORK + len(these)
        if work >= STEP_WORK:
            work = 0
            yield
    get = counts.__getitem__  # (only WILD rules have several pieces, see _pieces)
    filing: dict[str, Any] = {}
    for item in moved:
        these = _pieces(item)
        add_to(filing, these if these.__class__ is str else min(these, key=get), item)
        work += LITERAL_WORK if these.__class__ is str else LITERAL_WORK + len(these)
        if work >= STEP_WORK:
            work = 0
            yield
    count = 0
    for needle, filed in filing.items():
        needles[needle] = tuple(filed)
        count += 1
        if count == STEP_ITEMS:
            count = 0
            yield
    yield from literals.adding(list(needles))


#: a group of items is kept in a tuple up to this size, then in a list (see add_to)
TUPLE_GROUP = 16


def add_to(groups: dict[Any, Any], key: Any, item: Item) -> int:
    """Add ``item`` to the group ``key`` of ``groups``; its new size.

    A small group is a tuple, grown by copying: the garbage collector stops
    tracking a tuple of untracked objects (strings, numbers, and tuples of
    them: the items), while a list stays tracked however long it lives.
    The groups of a large file (a list each, one per literal start) lived
    across hundreds of steps, moved to the oldest generation, and started a
    full collection of the crawl's whole heap (50-100 ms) in the middle of
    the steps."""
    filed = groups.get(key)
    if filed is None:
        groups[key] = (item,)
        return 1
    if filed.__class__ is tuple:
        groups[key] = (*filed, item) if len(filed) < TUPLE_GROUP else [*filed, item]
        return len(filed) + 1
    filed.append(item)
    return len(filed)


def _emptying(temporary: set[Any]) -> Generator[None, None, None]:
    """Empty a large temporary ``set`` in steps: freeing tens of thousands of
    objects at once, as the end of a function would, takes milliseconds."""
    yield
    while len(temporary) > STEP_ITEMS:
        for _ in range(STEP_ITEMS):
            temporary.pop()
        yield
    temporary.clear()


def _pieces(item: Item) -> Any:
    """The literal after the start of a wildcard rule (SUB, SUB_END), or the
    literals (WILD, WILD_END): a path the rule matches holds each."""
    kind = item[3]
    if kind == _SUB or kind == _SUB_END:
        return item[5]
    return item[4].split(_WILDCARD)[1:]


#: an item's sort key: ``(-priority, 1 - allow, order)``; and its rule ``(kind, a, b, n, number)``
_order = itemgetter(0, 1, 2)
entry_of = itemgetter(3, 4, 5, 6, 7)


def sorting(items: list[Item]) -> Generator[None, None, list[Item]]:
    """``items`` sorted by priority, in steps: slices sorted one by one, then
    merged a slice at a time."""
    if len(items) <= STEP_ITEMS:
        items.sort(key=_order)
        return items
    parts = []
    for start in range(0, len(items), STEP_ITEMS):
        yield
        parts.append(sorted(items[start : start + STEP_ITEMS], key=_order))
    merged = heapq.merge(*parts, key=_order)
    out: list[Item] = []
    while len(out) < len(items):
        yield
        out.extend(islice(merged, STEP_ITEMS // 2))  # merging costs more per item
    return out


class LiteralIndex:
    """Literals, each filed under one short key: its rarest substring of
    :data:`KEY_CHARS` characters (of its own length when shorter) among the
    literals filed in the same step.

    Asking ``literal in path`` of each literal costs (literals x path): tens
    of milliseconds for one check of a 2 KB path against 10,000 literals.  A
    literal can only be in the path if its key is, so the path's own
    substrings of each key length are looked up instead (a few times the
    path's length, once per check), and only the literals filed under them
    are searched for.  The rarest substring keeps a literal's key apart from
    the others' even when they share a part (``a1/page``, ``a2/page``...).

    Up to :data:`SEARCH_KEYS` literals, each is its own key instead: a
    check then searches for each at C speed, cheaper than the substrings'
    look-ups for so few, and filing them costs no substrings (most files
    that have crowded wildcard rules have a few dozen literals).

    One per matcher: the indexes of all its buckets file their literals
    here, and a bucket built later adds only its new ones.  Strings only
    (``str`` to ``str``): nothing for the garbage collector to walk."""

    __slots__ = ("keys", "known", "lengths")

    def __init__(self) -> None:
        #: key -> its literals, joined by "\n" (which no pattern holds)
        self.keys: dict[str, str] = {}
        self.known: set[str] = set()
        #: the lengths of the keys; none while each literal is its own key
        self.lengths: list[int] = []

    def adding(self, literals: Sequence[str]) -> Generator[None, None, None]:
        """File the ``literals`` not filed yet, in steps of about
        :data:`STEP_WORK`: each step counts the substrings of its literals and
        files each under its rarest one among them (or, while they are at
        most :data:`SEARCH_KEYS`, each under itself, at once).  Checks between
        the steps find the literals filed before."""
        known, keys = self.known, self.keys
        if not self.lengths:  # each literal its own key so far
            if len(known) + len(literals) <= SEARCH_KEYS:
                for literal in literals:
                    if literal not in known:
                        known.add(literal)
                        keys[literal] = literal
                return
            if known:  # too many now: all filed under substrings, the index swapped in at the end
                fresh = LiteralIndex()
                yield from fresh._gramming([*keys, *literals])
                self.keys, self.known, self.lengths = fresh.keys, fresh.known, fresh.lengths
                return
        yield from self._gramming(literals)

    def _gramming(self, literals: Sequence[str]) -> Generator[None, None, None]:
        """:meth:`adding`, each literal filed under its rarest substring."""
        known, keys, lengths = self.known, self.keys, self.lengths
        start, end = 0, len(literals)
        while start < end:
            if start:
                yield
            stop, work = start, 0
            while stop < end and work < STEP_WORK:
                work += LITERAL_WORK + 4 * len(literals[stop])  # its substrings, counted one by one
                stop += 1
            batch = [literal for literal in literals[start:stop] if literal not in known]
            start = stop
            if not batch:
                continue
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

    def present(self, path: str) -> set[str]:
        """The literals that ``path`` holds."""
        if not self.lengths:  # each literal is its own key
            return {literal for literal in self.keys if literal in path}
        found: set[str] = set()
        if len(self.keys) <= SEARCH_KEYS:  # few keys: each searched for at C speed
            for key, some in self.keys.items():
                if key in path:
                    for literal in some.split("\n") if "\n" in some else (some,):
                        if literal in path:
                            found.add(literal)
            return found
        look_up = self.keys.get
        size = len(path)
        for length in self.lengths:
            for i in range(size - length + 1):
                filed = look_up(path[i : i + length])
                if filed is None:
                    continue
                for literal in filed.split("\n") if "\n" in filed else (filed,):
                    if literal in path:
                        found.add(literal)
        return found


def _grams(literal: str) -> list[str]:
    """The substrings of ``literal`` that may be its key (see :class:`LiteralIndex`),
    each once, in order (so that ties go the same way in every process)."""
    size = min(KEY_CHARS, len(literal))
    return list(dict.fromkeys(literal[i : i + size] for i in range(len(literal) - size + 1)))
