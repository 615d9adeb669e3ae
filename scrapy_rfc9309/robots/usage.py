"""AI usage preferences: what a site says may be *done* with what it serves.

Two forms are read (see docs/usage_preferences.md for the drafts and the
versions read):

* IETF AI Preferences (``draft-ietf-aipref-attach``, ``draft-ietf-aipref-vocab``):
  a ``Content-Usage`` rule in a robots.txt group, ``Content-Usage: [path]
  train-ai=n``, matched to a URL like Allow/Disallow (longest path, in
  encoded octets, same percent-encoding rules, :mod:`.patterns`); and the
  ``Content-Usage`` HTTP response header, for that one response.  The value
  is an RFC 9651 Dictionary: known labels with the Token ``y`` or ``n``.
* Content Signals (contentsignals.org): a ``Content-Signal: search=yes,
  ai-input=yes, ai-train=no`` line, in a group (for the group) or before the
  first group (for the whole file); ``use=immediate|reference|full`` is kept
  as stated, mapped to no category.

Each category ends up allowed (``True``), disallowed (``False``) or unknown
(``None``); several statements about one resource combine per category, the
most restrictive winning (disallowed over allowed over unknown, vocab 7.1).

What a file says is worked out once per origin and crawler token: identical
lines are folded as they are read, rules with one path are combined when the
token's statements are compiled (:mod:`.usage_match`), and a request only
looks its path up.  A statement lists at most :data:`MAX_SOURCES` sources per
category and counts the rest, so what a request carries is small whatever
the file holds.

Nothing here raises on any input: a value that does not parse is a
diagnostic and states nothing (all unknown).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from itertools import accumulate, repeat
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from . import patterns
from .diagnostics import DiagnosticLog
from .steps import finish

if TYPE_CHECKING:
    from .parser import Group
    from .robotstxt import RobotsTxt

# http_sf (RFC 9651 structured fields) is imported where a header value is read: a crawl whose
# responses state no preference never loads its twenty modules

#: The categories reported, in this order.
CATEGORIES = ("train-ai", "search", "ai-input")
#: Content-Usage labels (draft-ietf-aipref-vocab) -> category
USAGE_LABELS = {"train-ai": "train-ai", "search": "search"}
#: Content-Signal labels (contentsignals.org) -> category
SIGNAL_LABELS = {"ai-train": "train-ai", "search": "search", "ai-input": "ai-input"}
#: every spelling accepted for a declared purpose (RFC9309_USAGE) -> category
PURPOSES = {"train-ai": "train-ai", "ai-train": "train-ai", "search": "search", "ai-input": "ai-input"}
#: Content-Signal ``use=`` levels (Cloudflare's managed robots.txt), most restrictive first
USE_LEVELS = ("immediate", "reference", "full")
_USE_RANK = {level: rank for rank, level in enumerate(USE_LEVELS)}
_USAGE_VALUES = {"y": True, "n": False}
_SIGNAL_VALUES = {"yes": True, "no": False}
#: the most bytes of a Content-Usage value parsed as one Dictionary (a robots.txt
#: line, or a header's distinct members; a header over it is read in part, see from_header)
MAX_HEADER_BYTES = 16_384
#: the sources listed per category of a statement; the rest are counted (``Usage.more``)
MAX_SOURCES = 3
#: a source's text is cut to this many characters
MAX_SOURCE_CHARS = 200

# Rule forms
CONTENT_USAGE, CONTENT_SIGNAL = 0, 1
_FORM_NAMES = ("Content-Usage", "Content-Signal")


#: sources whose line is a line of a document (shown as ``robots.txt line 3``)
_LINED = frozenset({"robots.txt", "html", "license"})


class Source(NamedTuple):
    """Where a statement came from: ``"robots.txt"`` (with its line),
    ``"header"`` (line 0), ``"tdmrep.json"`` (the rule's number), ``"html"``
    (the tag's line) or ``"license"`` (an RSL license, the ``<license>``'s
    line), the statement as written (cut to :data:`MAX_SOURCE_CHARS`), and how many more times it was repeated
    (identical robots.txt lines of one group, repeated header members),
    folded into this one."""

    origin: str
    line: int
    text: str
    repeats: int = 0

    def __str__(self) -> str:
        # robots.txt and an HTML page name the line (``html line 12: <meta ...>``); a
        # tdmrep.json rule names its number in its text, a header has no line
        where = f"{self.origin} line {self.line}" if self.origin in _LINED and self.line else self.origin
        more = f" (repeated {self.repeats:,} more time{'s' if self.repeats > 1 else ''})" if self.repeats else ""
        return f"{where}: {self.text}{more}"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"origin": self.origin, "line": self.line, "text": self.text}
        if self.repeats:
            data["repeats"] = self.repeats
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Source:
        return cls(
            str(data.get("origin", "")),
            _count(data.get("line")),
            str(data.get("text", "")),
            _count(data.get("repeats")),
        )


def _count(value: Any) -> int:
    """A non-negative int from a stored value; 0 for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class Usage(Mapping[str, "bool | None"]):
    """The preferences for one resource: category -> ``True`` (allowed),
    ``False`` (disallowed) or ``None`` (unknown); ``sources``: category ->
    the statements that gave its value (none for unknown), at most
    :data:`MAX_SOURCES`; ``more``: category -> how many further statements
    gave it (only the categories with some); ``use`` (Content Signals'
    ``use=`` level, or None) and ``use_sources``."""

    __slots__ = ("_values", "sources", "more", "use", "use_sources", "_stated")

    def __init__(
        self,
        values: Mapping[str, bool | None] | None = None,
        sources: Mapping[str, Sequence[Source]] | None = None,
        more: Mapping[str, int] | None = None,
        use: str | None = None,
        use_sources: Sequence[Source] = (),
    ) -> None:
        values = values or {}
        self._values: dict[str, bool | None] = {c: values.get(c) for c in CATEGORIES}
        self.sources: dict[str, tuple[Source, ...]] = {}
        self.more: dict[str, int] = {}
        for c in CATEGORIES:
            given: tuple[Source, ...] = ()
            extra = 0
            if self._values[c] is not None:
                given = tuple(sources.get(c, ())) if sources else ()
                extra = _count(more.get(c)) if more else 0
                if len(given) > MAX_SOURCES:
                    extra += len(given) - MAX_SOURCES
                    given = given[:MAX_SOURCES]
            self.sources[c] = given
            if extra:
                self.more[c] = extra
        self.use = use if use in _USE_RANK else None
        self.use_sources: tuple[Source, ...] = tuple(use_sources)[:MAX_SOURCES] if self.use is not None else ()
        # (asked of most requests' preferences, which are the shared nothing-stated one: a field, not a loop)
        self._stated = self.use is not None or any(v is not None for v in self._values.values())

    def __getitem__(self, label: str) -> bool | None:
        return self._values[PURPOSES.get(label, label)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __bool__(self) -> bool:
        """Whether anything is stated (some category not unknown, or a ``use`` level)."""
        return self._stated

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Usage):
            return (
                self._values == other._values
                and self.sources == other.sources
                and self.more == other.more
                and self.use == other.use
                and self.use_sources == other.use_sources
            )
        if isinstance(other, Mapping):
            return self._values == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Usage {self.describe()}>"

    def describe(self) -> str:
        """``train-ai=n, search=y, ai-input=?`` (and ``, use=reference`` when stated)"""
        marks = {True: "y", False: "n", None: "?"}
        text = ", ".join(f"{c}={marks[v]}" for c, v in self._values.items())
        return text if self.use is None else f"{text}, use={self.use}"

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
        """A JSON-safe form: ``{"train-ai": {"value": false, "sources": [...]}, ...}``,
        a category's ``"more"`` when some statements are not listed, and
        ``"use"`` (``{"value": "reference", "sources": [...]}``) when stated."""
        out: dict[str, Any] = {}
        if not self._stated:  # (every allowed request's provenance holds one: most state nothing)
            return {c: {"value": None, "sources": []} for c in self._values}
        for c, v in self._values.items():
            item: dict[str, Any] = {"value": v, "sources": [s.to_dict() for s in self.sources[c]]}
            if c in self.more:
                item["more"] = self.more[c]
            out[c] = item
        if self.use is not None:
            out["use"] = {"value": self.use, "sources": [s.to_dict() for s in self.use_sources]}
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        """The inverse of :meth:`to_dict`; anything malformed is unknown."""
        values: dict[str, bool | None] = {}
        sources: dict[str, list[Source]] = {}
        more: dict[str, int] = {}
        if not isinstance(data, Mapping):
            return UNKNOWN
        for c in CATEGORIES:
            item = data.get(c)
            if not isinstance(item, Mapping) or not isinstance(item.get("value"), bool):
                continue
            values[c] = item["value"]
            sources[c] = _sources_of(item.get("sources"))
            more[c] = _count(item.get("more"))
        use = data.get("use")
        level, use_sources = None, []
        if isinstance(use, Mapping) and isinstance(use.get("value"), str):
            level, use_sources = use["value"], _sources_of(use.get("sources"))
        return cls(values, sources, more, level, use_sources)


def _sources_of(items: Any) -> list[Source]:
    if not isinstance(items, (list, tuple)):
        return []
    return [Source.from_dict(s) for s in items[:MAX_SOURCES] if isinstance(s, Mapping)]


#: no statement at all
UNKNOWN = Usage()


def combine(usages: Iterable[Usage]) -> Usage:
    """Several statements about one resource, per category: disallowed if
    any disallows, else allowed if any allows, else unknown (vocab 7.1).
    The sources kept are those of the winning value (each once, at most
    :data:`MAX_SOURCES`, the others counted); the ``use`` level kept is the
    most restrictive.  Linear in the statements; one object given twice
    counts once."""
    values: dict[str, bool] = {}
    kept: dict[str, list[Source]] = {}
    seen: dict[str, set[Source]] = {}
    more: dict[str, int] = {}
    use: str | None = None
    use_sources: list[Source] = []
    done: set[int] = set()
    for usage in usages:
        if id(usage) in done:
            continue
        done.add(id(usage))
        for c in CATEGORIES:
            v = usage._values[c]
            if v is None:
                continue
            old = values.get(c)
            if old is None or (old and not v):
                values[c] = v
                kept[c] = list(usage.sources[c])
                seen[c] = set(kept[c])
                more[c] = usage.more.get(c, 0)
            elif old == v:
                have, got = kept[c], seen[c]
                for s in usage.sources[c]:
                    if s not in got:
                        got.add(s)
                        if len(have) < MAX_SOURCES:
                            have.append(s)
                        else:
                            more[c] += 1
                more[c] += usage.more.get(c, 0)
        if usage.use is not None:
            if use is None or _USE_RANK[usage.use] < _USE_RANK[use]:
                use, use_sources = usage.use, list(usage.use_sources)
            elif usage.use == use:
                use_sources.extend(s for s in usage.use_sources if s not in use_sources)
    if not values and use is None:
        return UNKNOWN
    return Usage(values, kept, more, use, use_sources)


# -- values -----------------------------------------------------------------


def parse_dictionary(value: bytes | str) -> tuple[dict[str, Any] | None, str | None]:
    """An RFC 9651 Dictionary as ``{key: bare value}`` (parameters dropped),
    or ``(None, why)``.  Never raises."""
    try:
        data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)
        if len(data) > MAX_HEADER_BYTES:
            return None, f"longer than {MAX_HEADER_BYTES:,} bytes"
        import http_sf

        parsed = http_sf.parse(data, tltype="dictionary")
        if not isinstance(parsed, dict):  # pragma: no cover - the library's contract
            return None, "not a dictionary"
        return {str(k): cast("tuple[Any, Any]", member)[0] for k, member in parsed.items()}, None
    except Exception as exc:  # noqa: BLE001 - hostile input: any failure is "does not parse"
        return None, str(exc) or type(exc).__name__


def _token(value: Any) -> str | None:
    """The text of a Token value, else None (a String "n" is no Token)."""
    import http_sf  # (loaded already: the value came from parse_dictionary)

    if isinstance(value, http_sf.Token):
        return str(value)
    return None


class _Reading(NamedTuple):
    """One expression, read: category -> allowed, the ``use`` level (Content
    Signals), the labels not understood, and why it does not parse (or None).
    Shared between identical expressions: never changed."""

    prefs: dict[str, bool]
    use: str | None
    unknown: tuple[str, ...]
    error: str | None
    #: what it states, as a key: (prefs items, use)
    meaning: tuple[Any, ...] = ((), None)


#: (form, expression) -> its reading; bounded, shared by all files (real files repeat a few)
_READINGS: dict[tuple[int, str], _Reading] = {}
_READINGS_MAX = 4096
_READING_CHARS = 256  # longer expressions are not kept


def _read(expression: str, form: int) -> _Reading:
    key = (form, expression)
    reading = _READINGS.get(key)
    if reading is not None:
        return reading
    members, error = parse_dictionary(expression)
    if members is None:
        reading = _Reading({}, None, (), error)
    else:
        labels, answers = (USAGE_LABELS, _USAGE_VALUES) if form == CONTENT_USAGE else (SIGNAL_LABELS, _SIGNAL_VALUES)
        prefs: dict[str, bool] = {}
        use: str | None = None
        unknown: list[str] = []
        for label, member in members.items():
            category = labels.get(label)
            word = _token(member) or ""
            if category is None:
                if form != CONTENT_SIGNAL or label != "use":
                    unknown.append(label)
                elif word in _USE_RANK:
                    use = word
                else:
                    unknown.append(f"use={_short(member)}")
                continue
            answer = answers.get(word)
            if answer is None:
                unknown.append(f"{label}={_short(member)}")
            else:
                prefs[category] = answer
        reading = _Reading(prefs, use, tuple(unknown), None, (tuple(prefs.items()), use))
    if len(_READINGS) < _READINGS_MAX and len(expression) <= _READING_CHARS:
        _READINGS[key] = reading
    return reading


def read_preferences(value: bytes | str, form: int = CONTENT_USAGE) -> tuple[dict[str, bool], list[str], str | None]:
    """``(category -> allowed, unknown labels, error)`` for one expression.
    A value that does not parse gives ``({}, [], why)``: all unknown."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("latin-1")
    reading = _read(value, form)
    return dict(reading.prefs), list(reading.unknown), reading.error


def _short(member: Any) -> str:
    text = str(member) if _token(member) is not None else repr(member)
    return text if len(text) <= 20 else text[:20] + "..."


def _clip(text: str) -> str:
    return text if len(text) <= MAX_SOURCE_CHARS else text[:MAX_SOURCE_CHARS] + "..."


# -- the Content-Usage and Content-Signal headers -------------------------------


def from_header(values: Iterable[bytes | str] | bytes | str | None, form: int = CONTENT_USAGE) -> Usage:
    """The preferences of a ``Content-Usage`` response header (or, with
    ``form`` :data:`CONTENT_SIGNAL`, a ``Content-Signal`` one, read as the
    robots.txt line is: ``yes``/``no``, ``ai-train``, ``search``, ``ai-input``,
    ``use=``): all its field lines joined with ", " and read as one Dictionary
    (RFC 9651 4.2).  Never raises; the work is linear in the header's size
    and at most one Dictionary of :data:`MAX_HEADER_BYTES` is parsed.

    Members repeated word for word are read once (the last of each is kept,
    which leaves the Dictionary's values as they are).  When the distinct
    members are still longer than :data:`MAX_HEADER_BYTES`, the header is
    read in part: its first distinct members up to that size (whole field
    lines when it holds quoted strings, whose commas cannot be told apart);
    a category that some member read sets to ``n`` (``no``) is disallowed, any other
    is unknown (what was not read could change a ``y``), and a ``use=``
    level is kept only when it is ``immediate`` (nothing later can be more
    restrictive).  So no size turns a ``n`` the plugin read into unknown.  A
    part that does not parse states nothing, as the whole would not."""
    if values is None:
        return UNKNOWN
    if isinstance(values, (bytes, bytearray, str)):
        values = [values]
    lines = [v.decode("latin-1") if isinstance(v, (bytes, bytearray)) else str(v) for v in values]
    if not lines:
        return UNKNOWN
    text = ", ".join(lines)
    if len(text) <= MAX_HEADER_BYTES:
        return _header_usage(text, 0, None, form)
    if '"' not in text:  # every comma separates members
        members = list(map(str.strip, text.split(","), repeat(" \t")))
        last = list(dict.fromkeys(reversed(members)))  # each member once, at its last place
        last.reverse()
        repeats = len(members) - len(last)
        distinct = ", ".join(last)
        if len(distinct) <= MAX_HEADER_BYTES:
            return _header_usage(distinct, repeats, None, form)
        first = list(dict.fromkeys(members))  # at its first place: what comes first is read
        read = _fitting(first)
        return _header_usage(", ".join(first[:read]), repeats, f"{read:,} of its {len(first):,} distinct members", form)
    read = _fitting(lines)
    return _header_usage(", ".join(lines[:read]), 0, f"{read:,} of its {len(lines):,} field lines", form)


def from_signal_header(values: Iterable[bytes | str] | bytes | str | None) -> Usage:
    """The preferences of a ``Content-Signal`` response header (Cloudflare
    sends one beside its managed robots.txt), read as the robots.txt line is
    (:func:`from_header` with :data:`CONTENT_SIGNAL`)."""
    return from_header(values, CONTENT_SIGNAL)


def _fitting(parts: list[str]) -> int:
    """How many of ``parts``, from the first, joined by ", " fit in :data:`MAX_HEADER_BYTES`."""
    ends = list(accumulate(len(p) + 2 for p in parts))  # (the last ", " is not written)
    lo, hi = 0, len(ends)
    while lo < hi:  # the first end past the limit
        mid = (lo + hi) // 2
        if ends[mid] - 2 <= MAX_HEADER_BYTES:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _header_usage(text: str, repeats: int, partial: str | None, form: int = CONTENT_USAGE) -> Usage:
    """The preferences ``text`` states; ``partial`` (what was read): it is the
    first part of a longer header, so only its ``n`` values (and an
    ``immediate`` level) are kept."""
    reading = _read(text, form)
    prefs = reading.prefs
    use = reading.use
    if partial is not None and reading.error is None:
        labels, no = (USAGE_LABELS, "n") if form == CONTENT_USAGE else (SIGNAL_LABELS, "no")
        members = {m.strip(" \t").partition(";")[0] for m in text.split(",")} if '"' not in text else None
        prefs = {c: False for label, c in labels.items() if _says_no(label, no, prefs.get(c), members)}
        use = use if use == USE_LEVELS[0] else None
    if not prefs and use is None:
        return UNKNOWN
    note = f" (the first {partial} read)" if partial is not None else ""
    source = Source("header", 0, f"{_FORM_NAMES[form]}: {_clip(text)}{note}", repeats)
    return Usage(prefs, {c: (source,) for c in prefs}, use=use, use_sources=(source,))


def _says_no(label: str, no: str, value: bool | None, members: set[str] | None) -> bool:
    """Whether a member read sets ``label`` to ``no`` (``n``, or ``no`` for
    Content-Signal): the Dictionary's own value, or, when members can be told
    apart, any one of them."""
    return value is False or (members is not None and f"{label}={no}" in members)


# -- robots.txt rules -------------------------------------------------------


class UsageRule:
    """One Content-Usage or Content-Signal line of a group, parsed, with the
    identical lines of the same group after it (``repeats``) folded in.
    (One object a distinct line, and nothing else the garbage collector
    walks: a hostile file holds tens of thousands.)"""

    __slots__ = ("form", "line", "path", "reading", "text", "repeats", "diag")

    def __init__(self, form: int, line: int, path: str | None, reading: _Reading, text: str) -> None:
        self.form = form
        self.line = line
        self.path = path  # None: no path (the whole site; read as "/")
        self.reading = reading  # (shared with identical expressions: never changed)
        self.text = text
        self.repeats = 0
        #: its diagnostic (code, detail), reported again for each identical line
        self.diag: tuple[str, str] | None = None

    @property
    def prefs(self) -> dict[str, bool]:
        """category -> allowed, as stated (shared: never change it)"""
        return self.reading.prefs

    @property
    def use(self) -> str | None:
        return self.reading.use

    @property
    def meaning(self) -> tuple[Any, ...]:
        """What it states, as a key (equal for rules that state the same)."""
        return self.reading.meaning

    @property
    def source(self) -> Source:
        return Source("robots.txt", self.line, _clip(f"{_FORM_NAMES[self.form]}: {self.text}"), self.repeats)

    def usage(self) -> Usage:
        source = self.source
        return Usage(self.prefs, {c: (source,) for c in self.prefs}, use=self.use, use_sources=(source,))

    def compiled(self) -> tuple[int, Any, str, int, int]:
        """Its path compiled (:func:`.patterns.compile_pattern`; not kept)."""
        return patterns.compile_pattern(self.path or "/")

    def __repr__(self) -> str:
        return f"<UsageRule line {self.line}: {_FORM_NAMES[self.form]}: {self.text}>"


class UsageRules(list[UsageRule]):
    """The usage rules of a group, in file order, each distinct line once."""

    __slots__ = ("by_text",)

    def __init__(self) -> None:
        super().__init__()
        #: a line's value (after "\n" for Content-Signal) -> its rule
        self.by_text: dict[str, UsageRule] = {}


def read_rule(group: Group, form: int, value: str, number: int, diags: DiagnosticLog) -> None:
    """The parser's hook: read the value of a Content-Usage (``form`` 0) or
    Content-Signal (1) line of ``group`` (already cut at "#" and stripped).
    A line identical to one before it in the group is folded into that one's
    rule (and reported again, when it has a diagnostic)."""
    rules = cast("UsageRules | None", group.usage)
    if rules is None:
        rules = group.usage = UsageRules()
    key = value if form == CONTENT_USAGE else "\n" + value  # ("\n" ends every line)
    seen = rules.by_text.get(key)
    if seen is not None:
        seen.repeats += 1
        if seen.diag is not None:
            diags.add(number, *seen.diag)
        return
    path: str | None = None
    expression = value
    if form == CONTENT_USAGE and value[:1] == "/":
        cut = len(value)
        for blank in (" ", "\t"):
            at = value.find(blank)
            if 0 <= at < cut:
                cut = at
        path, expression = value[:cut], value[cut:].lstrip(" \t")
    reading = _read(expression, form)
    name = _FORM_NAMES[form]
    rule = UsageRule(form, number, path, reading, value)
    if reading.error is not None:
        rule.diag = "usage_unparsable", f"{name}: {value!r}: {reading.error}"
    elif not expression:
        rule.diag = "usage_unparsable", f"{name}: {value!r}: no preference expression"
    elif reading.unknown:
        rule.diag = "usage_unknown_label", f"{name}: {', '.join(reading.unknown)}"
    if rule.diag is not None:
        diags.add(number, *rule.diag)
    rules.append(rule)
    rules.by_text[key] = rule


def statement(rules: Iterable[UsageRule]) -> Usage:
    """What ``rules`` say together (one path's Content-Usage rules, or the
    Content-Signal lines), the most restrictive winning; linear, and the
    statement lists at most :data:`MAX_SOURCES` sources per category."""
    return finish(stating(rules))


def stating(rules: Iterable[UsageRule], step: int = 0) -> Generator[None, None, Usage]:
    """:func:`statement` in steps of ``step`` rules (0: in one go)."""
    meanings: dict[tuple[Any, ...], list[Any]] = {}  # meaning -> [rule, sources, more]
    for count, rule in enumerate(rules, 1):
        if step and count % step == 0:
            yield
        key = rule.meaning
        entry = meanings.get(key)
        if entry is None:
            meanings[key] = [rule, [rule.source], 0]
        elif len(entry[1]) < MAX_SOURCES:
            entry[1].append(rule.source)
        else:
            entry[2] += 1
    parts = []
    for rule, sources, more in meanings.values():  # (at most a few dozen meanings)
        if rule.prefs or rule.use:
            parts.append(
                Usage(
                    rule.prefs, dict.fromkeys(rule.prefs, sources), dict.fromkeys(rule.prefs, more), rule.use, sources
                )
            )
    return combine(parts) if len(parts) != 1 else parts[0]


def usage_for(robots: RobotsTxt, url: str, tokens: Sequence[str], allowed: bool = False) -> Usage:
    """The preferences for ``url`` of every one of ``tokens``, combined;
    ``allowed``: every token may fetch it (checked by the caller)."""
    if len(tokens) == 1:
        return robots.usage(url, tokens[0], allowed)
    return combine([robots.usage(url, token, allowed) for token in tokens])


def rules_of(groups: Iterable[Group]) -> list[UsageRule]:
    """Every usage rule of ``groups``, in file order (identical lines of a
    group as one rule, see :attr:`UsageRule.repeats`)."""
    return sorted((r for g in groups for r in g.usage or ()), key=lambda r: r.line)
