"""AI usage preferences: what a site says may be *done* with what it serves.

Two forms are read (see docs/usage_preferences.md for the drafts and the
versions read):

* IETF AI Preferences (``draft-ietf-aipref-attach``, ``draft-ietf-aipref-vocab``):
  a ``Content-Usage`` rule in a robots.txt group, ``Content-Usage: [path]
  train-ai=n``, matched to a URL like Allow/Disallow (longest path, in
  encoded octets, same percent-encoding rules, :mod:`.patterns`); and the
  ``Content-Usage`` HTTP response header, for that one response.  The value
  is an RFC 9651 Dictionary: known labels with the Token ``y`` or ``n``.
* Content Signals (contentsignals.org): a group-level ``Content-Signal:
  search=yes, ai-input=yes, ai-train=no`` line.

Each category ends up allowed (``True``), disallowed (``False``) or unknown
(``None``); several statements about one resource combine per category, the
most restrictive winning (disallowed over allowed over unknown, vocab 7.1).

Nothing here raises on any input: a value that does not parse is a
diagnostic and states nothing (all unknown).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from . import index as _index
from . import patterns
from .diagnostics import DiagnosticLog
from .steps import finish

if TYPE_CHECKING:
    from .parser import Group
    from .robotstxt import RobotsTxt

import http_sf as _sf  # RFC 9651 structured fields

#: The categories reported, in this order.
CATEGORIES = ("train-ai", "search", "ai-input")
#: Content-Usage labels (draft-ietf-aipref-vocab) -> category
USAGE_LABELS = {"train-ai": "train-ai", "search": "search"}
#: Content-Signal labels (contentsignals.org) -> category
SIGNAL_LABELS = {"ai-train": "train-ai", "search": "search", "ai-input": "ai-input"}
#: every spelling accepted for a declared purpose (RFC9309_USAGE) -> category
PURPOSES = {"train-ai": "train-ai", "ai-train": "train-ai", "search": "search", "ai-input": "ai-input"}
_USAGE_VALUES = {"y": True, "n": False}
_SIGNAL_VALUES = {"yes": True, "no": False}
#: a Content-Usage header longer than this is not parsed (it states nothing)
MAX_HEADER_BYTES = 16_384
#: statements named per category of combined preferences: a file may repeat a line
#: thousands of times, and every request carries its preferences and their sources
MAX_SOURCES = 16
#: usage rules walked in priority order per request; more are looked up through an index
#: (see .index): the cost of a request is bounded by this many rules
INDEX_LEAST = 64

# Rule forms
CONTENT_USAGE, CONTENT_SIGNAL = 0, 1
_FORM_NAMES = ("Content-Usage", "Content-Signal")


class Source(NamedTuple):
    """Where a statement came from: ``"robots.txt"`` (with its line) or
    ``"header"`` (line 0), and the statement as written."""

    origin: str
    line: int
    text: str

    def __str__(self) -> str:
        if self.origin == "robots.txt":
            return f"robots.txt line {self.line}: {self.text}"
        return f"{self.origin}: {self.text}"

    def to_dict(self) -> dict[str, Any]:
        return {"origin": self.origin, "line": self.line, "text": self.text}


class Usage(Mapping[str, "bool | None"]):
    """The preferences for one resource: category -> ``True`` (allowed),
    ``False`` (disallowed) or ``None`` (unknown), and ``sources``: category
    -> the statements that gave its value (none for unknown)."""

    __slots__ = ("_values", "sources")

    def __init__(
        self,
        values: Mapping[str, bool | None] | None = None,
        sources: Mapping[str, Sequence[Source]] | None = None,
    ) -> None:
        values = values or {}
        self._values: dict[str, bool | None] = {c: values.get(c) for c in CATEGORIES}
        self.sources: dict[str, tuple[Source, ...]] = {
            c: tuple(sources.get(c, ())) if sources and self._values[c] is not None else () for c in CATEGORIES
        }

    def __getitem__(self, label: str) -> bool | None:
        return self._values[PURPOSES.get(label, label)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __bool__(self) -> bool:
        """Whether anything is stated (some category not unknown)."""
        return any(v is not None for v in self._values.values())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Usage):
            return self._values == other._values and self.sources == other.sources
        if isinstance(other, Mapping):
            return self._values == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Usage {self.describe()}>"

    def describe(self) -> str:
        """``train-ai=n, search=y, ai-input=?``"""
        marks = {True: "y", False: "n", None: "?"}
        return ", ".join(f"{c}={marks[v]}" for c, v in self._values.items())

    def combine(self, *others: Usage) -> Usage:
        """This and ``others`` as one statement: the most restrictive wins."""
        return combine((self, *others))

    def denies(self, purposes: Iterable[str], unknown_denies: bool = False) -> tuple[str, tuple[Source, ...]] | None:
        """The first of ``purposes`` (categories) these preferences disallow
        (or leave unknown, with ``unknown_denies``), with the statements
        behind it; None when every purpose may go ahead."""
        for purpose in purposes:
            label = PURPOSES.get(purpose, purpose)
            value = self._values.get(label)
            if value is False or (value is None and unknown_denies):
                return label, self.sources.get(label, ())
        return None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form: ``{"train-ai": {"value": false, "sources": [...]}, ...}``."""
        return {c: {"value": v, "sources": [s.to_dict() for s in self.sources[c]]} for c, v in self._values.items()}

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        """The inverse of :meth:`to_dict`; anything malformed is unknown."""
        values: dict[str, bool | None] = {}
        sources: dict[str, list[Source]] = {}
        if isinstance(data, Mapping):
            for c in CATEGORIES:
                item = data.get(c)
                if not isinstance(item, Mapping) or not isinstance(item.get("value"), bool):
                    continue
                values[c] = item["value"]
                for s in item.get("sources") or ():
                    if isinstance(s, Mapping):
                        sources.setdefault(c, []).append(
                            Source(str(s.get("origin", "")), int(s.get("line") or 0), str(s.get("text", "")))
                        )
        return cls(values, sources)


#: no statement at all
UNKNOWN = Usage()


def combine(usages: Iterable[Usage]) -> Usage:
    """Several statements about one resource, per category: disallowed if
    any disallows, else allowed if any allows, else unknown (vocab 7.1).
    The sources kept are those of the winning value, the first
    :data:`MAX_SOURCES` of them."""
    values: dict[str, bool | None] = {}
    sources: dict[str, dict[Source, None]] = {}
    for usage in usages:
        for c in CATEGORIES:
            v = usage._values[c]
            if v is None:
                continue
            old = values.get(c)
            if old is None or (old and not v):
                values[c] = v
                sources[c] = dict.fromkeys(usage.sources[c][:MAX_SOURCES])
            elif old == v:
                kept = sources[c]
                for source in usage.sources[c]:
                    if len(kept) >= MAX_SOURCES:
                        break
                    kept[source] = None
    return Usage(values, {c: list(kept) for c, kept in sources.items()})


# -- values -----------------------------------------------------------------


def parse_dictionary(value: bytes | str) -> tuple[dict[str, Any] | None, str | None]:
    """An RFC 9651 Dictionary as ``{key: bare value}`` (parameters dropped),
    or ``(None, why)``.  Never raises."""
    try:
        data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)
        if len(data) > MAX_HEADER_BYTES:
            return None, f"longer than {MAX_HEADER_BYTES:,} bytes"
        parsed = _sf.parse(data, tltype="dictionary")
        if not isinstance(parsed, dict):  # pragma: no cover - the library's contract
            return None, "not a dictionary"
        return {str(k): cast("tuple[Any, Any]", member)[0] for k, member in parsed.items()}, None
    except Exception as exc:  # noqa: BLE001 - hostile input: any failure is "does not parse"
        return None, str(exc) or type(exc).__name__


def _token(value: Any) -> str | None:
    """The text of a Token value, else None (a String "n" is no Token)."""
    if isinstance(value, _sf.Token):
        return str(value)
    return None


def read_preferences(value: bytes | str, form: int = CONTENT_USAGE) -> tuple[dict[str, bool], list[str], str | None]:
    """``(category -> allowed, unknown labels, error)`` for one expression.
    A value that does not parse gives ``({}, [], why)``: all unknown."""
    members, error = parse_dictionary(value)
    if members is None:
        return {}, [], error
    labels, answers = (USAGE_LABELS, _USAGE_VALUES) if form == CONTENT_USAGE else (SIGNAL_LABELS, _SIGNAL_VALUES)
    prefs: dict[str, bool] = {}
    unknown: list[str] = []
    for key, member in members.items():
        category = labels.get(key)
        if category is None:
            unknown.append(key)
            continue
        answer = answers.get(_token(member) or "")
        if answer is None:
            unknown.append(f"{key}={_short(member)}")
        else:
            prefs[category] = answer
    return prefs, unknown, None


def _short(member: Any) -> str:
    text = str(member) if _token(member) is not None else repr(member)
    return text if len(text) <= 20 else text[:20] + "..."


def from_header(values: Iterable[bytes | str] | bytes | str | None) -> Usage:
    """The preferences of a ``Content-Usage`` response header (all its field
    lines, joined with ", " as RFC 9651 4.2 says).  Never raises."""
    if values is None:
        return UNKNOWN
    if isinstance(values, (bytes, str)):
        values = [values]
    parts = [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in values]
    if not parts:
        return UNKNOWN
    text = ", ".join(parts)
    prefs, _, _ = read_preferences(text, CONTENT_USAGE)
    if not prefs:
        return UNKNOWN
    source = Source("header", 0, f"Content-Usage: {_clip(text)}")
    return Usage(prefs, {c: (source,) for c in prefs})


def _clip(text: str) -> str:
    return text if len(text) <= 200 else text[:200] + "..."


# -- robots.txt rules -------------------------------------------------------


#: One Content-Usage or Content-Signal line of a group, parsed: a plain tuple
#: ``(form, line, path, prefs, text)``, ``path`` None for no path (the whole site, read as
#: "/"), ``prefs`` the categories' values packed in an int (see _packed).  Strings and
#: numbers only: the garbage collector stops tracking it at once (a file may hold 20,000
#: of them, see patterns.WILDCARD).
UsageRule = tuple[int, int, "str | None", int, str]


def _packed(prefs: Mapping[str, bool]) -> int:
    """Two bits a category (in CATEGORIES order): 1 allowed, 2 disallowed, 0 unknown."""
    return sum((1 if prefs[c] else 2) << (2 * k) for k, c in enumerate(CATEGORIES) if c in prefs)


def _unpacked(packed: int) -> dict[str, bool]:
    return {c: packed >> (2 * k) & 3 == 1 for k, c in enumerate(CATEGORIES) if packed >> (2 * k) & 3}


def rule_source(rule: UsageRule) -> Source:
    form, line, _, _, text = rule
    return Source("robots.txt", line, f"{_FORM_NAMES[form]}: {_clip(text)}")


def rule_usage(rule: UsageRule) -> Usage:
    """What one rule states."""
    source = rule_source(rule)
    prefs = _unpacked(rule[3])
    return Usage(prefs, {c: (source,) for c in prefs})


def _compiled(rule: UsageRule) -> tuple[int, Any, str, int, int]:
    return patterns.compile_pattern(rule[2] or "/")


def read_rule(group: Group, form: int, value: str, number: int, diags: DiagnosticLog) -> None:
    """The parser's hook: read the value of a Content-Usage (``form`` 0) or
    Content-Signal (1) line of ``group`` (already cut at "#" and stripped)."""
    path: str | None = None
    expression = value
    if form == CONTENT_USAGE and value[:1] == "/":
        cut = len(value)
        for blank in (" ", "\t"):
            at = value.find(blank)
            if 0 <= at < cut:
                cut = at
        path, expression = value[:cut], value[cut:].lstrip(" \t")
    prefs, unknown, error = read_preferences(expression, form)
    name = _FORM_NAMES[form]
    if error is not None:
        diags.add(number, "usage_unparsable", f"{name}: {value!r}: {error}")
    elif not expression:
        diags.add(number, "usage_unparsable", f"{name}: {value!r}: no preference expression")
    elif unknown:
        diags.add(number, "usage_unknown_label", f"{name}: {', '.join(unknown)}")
    rule = (form, number, path, _packed(prefs), value)
    if group.usage is None:
        group.usage = [rule]
    else:
        group.usage.append(rule)


class UsageMatcher:
    """The usage rules of the groups selected for one crawler token.

    A few rules are walked in priority order; more are looked up through an
    :class:`.index.Index`, the rules of one pattern and priority combined
    beforehand (a file may repeat a line thousands of times).  Made in
    steps by :func:`building`."""

    __slots__ = ("rules", "signals", "index", "literals")

    def __init__(
        self,
        rules: list[tuple[int, tuple[int, Any, str, int, int], UsageRule]],
        signals: Usage | None,
        index: _index.Index | None = None,
        literals: _index.LiteralIndex | None = None,
    ) -> None:
        #: (priority, compiled pattern, rule), longest first, then file order (when not indexed)
        self.rules = rules
        #: the group-level Content-Signal statements, combined once
        self.signals = signals
        self.index = index
        self.literals = literals

    def usage(self, path: str) -> Usage:
        """The preferences for a (normalised) path the crawler may fetch."""
        found: list[Usage] = []
        if self.index is not None:
            literals = self.literals
            present = literals.present(path) if literals is not None and self.index.needles else None
            matched = self.index.ties(path, present)
            if len(matched) > 1:
                matched.sort(key=_ORDER)
            # a rule of its own, or those of one pattern combined beforehand
            found = [item[8] if item[8].__class__ is Usage else rule_usage(item[8]) for item in matched]
        else:
            best: int | None = None
            for priority, compiled, rule in self.rules:
                if best is not None and priority < best:
                    break
                if _matches(path, compiled):
                    best = priority
                    found.append(rule_usage(rule))
        # Content-Usage (longest match; identical paths combined) and the
        # group's Content-Signal lines are separate statements: combined.
        if self.signals is not None:
            found.append(self.signals)
        if not found:
            return UNKNOWN
        return found[0] if len(found) == 1 else combine(found)


_ORDER = itemgetter(2)


def building(groups: Iterable[Group]) -> Generator[None, None, UsageMatcher | None]:
    """The :class:`UsageMatcher` of ``groups`` (None when they hold no usage
    rule), in steps of about :data:`.index.STEP_WORK`."""
    rules: list[tuple[tuple[int, Any, str, int, int], UsageRule]] = []  # (compiled, rule)
    signals: Usage | None = None
    pending: list[Usage] = []
    work = 0
    for group in groups:
        for rule in group.usage or ():
            if rule[0] == CONTENT_SIGNAL:
                pending.append(rule_usage(rule))
                if len(pending) == 64:
                    signals = combine([signals, *pending] if signals is not None else pending)
                    pending = []
                work += 160
            else:
                rules.append((_compiled(rule), rule))
                work += 48 + len(rule[2] or "")
            if work >= _index.STEP_WORK:
                work = 0
                yield
        work += 1
    if pending:
        signals = combine([signals, *pending] if signals is not None else pending)
    if not rules and signals is None:
        return None
    if len(rules) <= INDEX_LEAST:
        walked = [(compiled[4], compiled, rule) for compiled, rule in rules]
        walked.sort(key=lambda item: (-item[0], item[2][1]))  # longest first, then file order
        return UsageMatcher(walked, signals)
    # more: the rules of one pattern (as compiled) and priority combined, in file order
    merged: dict[tuple[Any, ...], Any] = {}  # (see index.add_to: few of them tracked by the collector)
    for number, (compiled, rule) in enumerate(rules):
        _index.add_to(merged, compiled, rule)
        if number % 1024 == 1023:
            yield
    del rules
    items: list[tuple[Any, ...]] = []
    for order in range(len(merged) - 1, -1, -1):  # (from the end: each group freed as it is used)
        (kind, a, b, n, priority), same = merged.popitem()
        payload: Any = same[0]  # one rule: its Usage made on each look-up, a few microseconds
        if len(same) > 1:
            payload = rule_usage(same[0])
            for start in range(1, len(same), 64):
                payload = combine([payload, *(rule_usage(rule) for rule in same[start : start + 64])])
                work += 32 * 64
                if work >= _index.STEP_WORK:
                    work = 0
                    yield
        items.append((-priority, 0, order, kind, a, b, n, order, payload))  # (an index item, see .index)
        work += 32
        if work >= _index.STEP_WORK:
            work = 0
            yield
    items = yield from _index.sorting(items)
    literals = _index.LiteralIndex()
    index = yield from _index.indexing(items, literals)
    return UsageMatcher([], signals, index, literals)


def _matches(path: str, compiled: tuple[int, Any, str, int, int]) -> bool:
    """Whether a pattern compiled by :func:`.patterns.compile_pattern` matches ``path``."""
    kind, a, b, n, _ = compiled
    if kind == patterns.PREFIX:
        return path.startswith(a)
    if kind == patterns.EXACT:
        return path == str(a)
    if kind == patterns.SUB:
        return path.startswith(a) and path.find(b, n) >= 0
    if kind == patterns.SUB_END:
        return path.endswith(b) and len(path) >= n and path.startswith(a)
    return patterns.wild_match(path, a, kind == patterns.WILD_END)


def usage_of(robots: RobotsTxt, url: str, user_agent: str, cache: dict[str, Any]) -> Usage:
    """:meth:`.RobotsTxt.usage`: the robots.txt preferences for ``url``.
    ``cache`` is the file's own (token -> matcher, None when its groups hold
    no usage rule: most files, answered at once); ``ValueError`` for an
    invalid token, as ``check``."""
    matcher = cache.get(user_agent, cache)
    if matcher is None:
        return UNKNOWN
    if matcher is cache:
        groups = robots.groups_for(user_agent)  # validates the token
        matcher = cache[user_agent] = finish(building(groups)) if any(g.usage for g in groups) else None
        if matcher is None:
            return UNKNOWN
    if not robots.check(url, user_agent).allowed:
        return UNKNOWN  # a disallowed resource has no preferences
    return cast(UsageMatcher, matcher).usage(patterns.path_of(url))


def usage_for(robots: RobotsTxt, url: str, tokens: Sequence[str]) -> Usage:
    """The preferences for ``url`` of every one of ``tokens``, combined."""
    if len(tokens) == 1:
        return robots.usage(url, tokens[0])
    return combine([robots.usage(url, token) for token in tokens])


def rules_of(groups: Iterable[Group]) -> list[UsageRule]:
    """Every usage rule of ``groups``, in file order."""
    return sorted((r for g in groups for r in g.usage or ()), key=lambda r: r[1])
