"""TDMRep: the W3C TDM Reservation Protocol (Community Group final report,
10 May 2024, https://www.w3.org/community/reports/tdmrep/CG-FINAL-tdmrep-20240510/).

A rightsholder reserves text and data mining (TDM) rights, the "opt-out" of
Article 4 of the EU CDSM Directive, with two properties (report, "Declaring the
reservation of TDM Rights"; sections are cited by their anchors in the
report, ``#sec-...``):

* ``tdm-reservation``: ``1`` reserved, ``0`` not reserved; any other value is
  a protocol error and the property is *unset* (#sec-tdm-reservation);
* ``tdm-policy``: the URL of a policy saying how to get a licence; not to be
  processed when the reservation is ``0`` (#sec-tdm-policy).

They are stated in three places read here (#sec-protocol):

* ``/.well-known/tdmrep.json`` (#sec-tdm-file): a JSON array of rules ``{"location":
  <pattern>, "tdm-reservation": 0|1, "tdm-policy": <url>}``.  ``location``
  uses robots.txt's path syntax (#sec-tdm-file-regexp names draft-koster-rep 2.2.3 and, for
  interoperability, Google's matching: ``*``, ``$``, percent-encoding
  compared as RFC 9309 does), so it is compiled by :mod:`.patterns`, the code
  that compiles Allow/Disallow.  Unlike robots.txt, the *first* matching rule
  in file order wins ("The most specific match is the first in sequence");
  no match: unset;
* the ``tdm-reservation`` / ``tdm-policy`` response header fields (#sec-tdm-header);
* ``<meta name="tdm-reservation">`` / ``<meta name="tdm-policy">`` in an HTML
  head (#sec-tdm-html-meta; read by :mod:`.html_head`).

Priority (#sec-processing-priority): the header's values supersede
the file's, the HTML meta values supersede both, and "the absence of
``tdm-reservation`` and ``tdm-policy`` MUST not reset current values": each
property is taken from the last place that states it (:func:`resolve`).  An
unset value (absent, or a protocol error) states nothing and supersedes
nothing.  EPUB and PDF metadata (#sec-epub2, #sec-epub3, #sec-pdf) are not read.

Mapping onto the plugin's categories: TDM covers training AI models, so a
reservation (``1``) disallows ``train-ai`` and ``0`` allows it; ``search``
and ``ai-input`` are left unknown (the report defines TDM by analysis "to
generate information", and says nothing of indexing or of answer-time use).
The statement keeps the policy URL: its sources name the rule, header or tag
and, when the reservation holds, where the policy was stated.

The file is read once per origin (:meth:`TdmRep.parse`, or
:meth:`TdmRep.parsing` in bounded steps for a caller with an event loop), and
what it keeps is small whatever the file says: at most
:data:`MAX_FILE_BYTES` are parsed, at most :data:`MAX_RULES` rules (and
:data:`MAX_RULE_CHARS` characters of their locations and policies) kept,
and at most :data:`MAX_DIAGNOSTICS` diagnostics, the rest counted.
:meth:`TdmRep.declaration` then costs a bucket look-up and the rules of
that bucket, like a robots.txt check.  A missing, unreadable or malformed
file states nothing (what it could not read is a diagnostic); nothing here
raises on any input.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Generator, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from . import patterns
from .diagnostics import Diagnostic
from .steps import finish
from .usage import UNKNOWN, Source, Usage

if TYPE_CHECKING:
    from .html_head import MetaTag

#: the file's path on an origin
PATH = "/.well-known/tdmrep.json"
#: bytes of a file parsed at most; a larger file states nothing (a JSON
#: document cut short does not parse).  ``json.loads`` reads it in one call
#: that cannot be cut into steps: 32 KiB keep that call to a few milliseconds
#: whatever the JSON holds (a real file is a few hundred bytes; the rules
#: kept, below, fit in a few kilobytes of JSON)
MAX_FILE_BYTES = 32_768
#: rules read at most, in file order (the first rules win, so the ones kept
#: are those that decide most paths); reading stops at the next one, reported
MAX_RULES = 64
#: rules with a ``*`` read at most: each costs a check a few string
#: searches (the others are tested all at once); reading stops at the first
#: rule past it, so a later rule never answers for an earlier one
MAX_WILDCARD_RULES = 32
#: bytes the rules read may keep, all together: their locations, compiled
#: patterns and (distinct) policy URLs as Python holds them, and a fixed
#: share of the tables per rule; reading stops at the first rule past it
MAX_RULE_BYTES = 10_240
#: the share of the tables a rule is counted for (the slots that hold it)
_RULE_OVERHEAD = 96
#: characters of a policy URL kept
MAX_POLICY_CHARS = 2_048
#: diagnostics kept per file; the rest are counted in one last diagnostic
#: (``tdmrep_more_problems``) and in :attr:`TdmRep.omitted`
MAX_DIAGNOSTICS = 20
#: rules read per step of :meth:`TdmRep.parsing` (each costs a bounded
#: amount of work, whatever its keys and values: see ``_rule``)
STEP_RULES = 16
#: the header fields' names
RESERVATION, POLICY = "tdm-reservation", "tdm-policy"
#: where statements come from, as Source.origin
FILE_ORIGIN, HEADER_ORIGIN, HTML_ORIGIN = "tdmrep.json", "header", "html"

CODES: dict[str, str] = {
    "tdmrep_too_large": f"the file is larger than {MAX_FILE_BYTES:,} bytes; it states nothing",
    "tdmrep_not_utf8": "the file is not valid UTF-8; invalid bytes were replaced",
    "tdmrep_not_json": "the file is not JSON; it states nothing",
    "tdmrep_not_array": "the file is not a JSON array of rules; it states nothing",
    "tdmrep_too_many_rules": (
        f"rules after the first {MAX_RULES:,}, the {MAX_WILDCARD_RULES + 1}th with '*', or past "
        f"{MAX_RULE_BYTES:,} bytes of locations and policies kept were not read"
    ),
    "tdmrep_rule_invalid": "the rule is not a JSON object; it was ignored",
    "tdmrep_location_invalid": "the rule's location is missing, empty or not a path pattern; it was ignored",
    "tdmrep_reservation_invalid": "tdm-reservation is not 0 or 1; it is unset (TDMRep #sec-tdm-reservation)",
    "tdmrep_policy_invalid": "tdm-policy is not a string; it was ignored",
    "tdmrep_unknown_key": "the rule has a key the report does not define; it was ignored",
    "tdmrep_conflict": "several different values for one property; it is unset",
    "tdmrep_more_problems": f"problems past the first {MAX_DIAGNOSTICS} were counted, not kept",
}

# Compiled entry kinds (see patterns.compile_pattern), plus a run of rules
# without "*" tested at once.
_PREFIX, _EXACT = patterns.PREFIX, patterns.EXACT
_PLAIN = -1
_BLANKS = " \t\r\n\f"


class Declaration(NamedTuple):
    """What one place (or the places together) declares for a resource:
    ``reservation`` (True: reserved, ``1``; False: not reserved, ``0``;
    None: unset), ``policy`` (a URL or None), and the statements behind each."""

    reservation: bool | None
    policy: str | None
    reservation_source: Source | None
    policy_source: Source | None

    def then(self, later: Declaration) -> Declaration:
        """This, superseded by ``later`` (#sec-processing-priority): each property that
        ``later`` states replaces this one's; an unset one changes nothing."""
        reservation, reservation_source = self.reservation, self.reservation_source
        policy, policy_source = self.policy, self.policy_source
        if later.reservation is not None:
            reservation, reservation_source = later.reservation, later.reservation_source
        if later.policy is not None:
            policy, policy_source = later.policy, later.policy_source
        return Declaration(reservation, policy, reservation_source, policy_source)

    @property
    def policy_in_effect(self) -> str | None:
        """The policy, when TDM rights are reserved (#sec-tdm-policy: not processed
        when they are not)."""
        return self.policy if self.reservation else None

    def usage(self) -> Usage:
        """The declaration as usage preferences: ``train-ai`` disallowed
        when reserved (with the policy's statement too), allowed when not,
        unknown when unset."""
        if self.reservation is None or self.reservation_source is None:
            return UNKNOWN
        sources: tuple[Source, ...] = (self.reservation_source,)
        if self.reservation and self.policy_source is not None and self.policy_source != self.reservation_source:
            sources += (self.policy_source,)
        return Usage({"train-ai": not self.reservation}, {"train-ai": sources})


#: nothing declared
UNSET = Declaration(None, None, None, None)


def resolve(*declarations: Declaration) -> Declaration:
    """The declarations of the file, the header and the HTML meta tags (in
    that order, #sec-processing-priority), each superseding the ones before it."""
    result = UNSET
    for declaration in declarations:
        result = result.then(declaration)
    return result


class _Rule(NamedTuple):
    number: int  # 1-based position in the array
    location: str
    declaration: Declaration


#: a location compiled (:func:`.patterns.compile_pattern`, without its priority)
_Compiled = tuple[int, Any, str, int]
#: a rule as read: number, location, reservation code, policy, compiled location
_Kept = tuple[int, str, int, "str | None", _Compiled]


#: a rule's tdm-reservation as kept: 0, 1, or unset (any other value)
_UNSET_CODE = 2


class TdmRep:
    """The rules of one origin's ``tdmrep.json``, compiled once.

    ``rules`` are the rules read (in file order, made on demand: the object
    keeps them compactly), ``diagnostics`` what could not be read (``line``:
    the rule's 1-based position, 0 for the file), at most
    :data:`MAX_DIAGNOSTICS` and then one ``tdmrep_more_problems`` that counts
    the rest (``omitted``).  An empty one (:data:`EMPTY`, a missing or broken
    file) states nothing.  What one keeps is bounded whatever the file says
    (docs/usage_preferences.md: a few kilobytes).
    """

    __slots__ = (
        "_numbers",
        "_locations",
        "_reservations",
        "_policies",
        "diagnostics",
        "omitted",
        "_generic",
        "_buckets",
    )

    def __init__(self, rules: Iterable[_Rule] = (), diagnostics: Iterable[Diagnostic] = ()) -> None:
        kept = [
            (r.number, r.location, _code(r.declaration.reservation), r.declaration.policy, _compiled(r.location))
            for r in rules
        ]
        self._build(kept, tuple(diagnostics), 0)

    @classmethod
    def _made(cls, rules: list[_Kept], diagnostics: tuple[Diagnostic, ...], omitted: int) -> TdmRep:
        """A file built from what :meth:`parsing` kept (not through ``__init__``)."""
        self = cls.__new__(cls)
        self._build(rules, diagnostics, omitted)
        return self

    def _build(self, rules: list[_Kept], diagnostics: tuple[Diagnostic, ...], omitted: int) -> None:
        self._numbers: tuple[int, ...] = tuple(r[0] for r in rules)
        self._locations: tuple[str, ...] = tuple(r[1] for r in rules)
        self._reservations = bytes(r[2] for r in rules)
        self._policies: tuple[str | None, ...] = tuple(r[3] for r in rules)
        self.diagnostics: tuple[Diagnostic, ...] = diagnostics
        #: diagnostics not kept (counted in the last one)
        self.omitted = omitted
        # each rule's compiled entry goes to the bucket of the second character of its
        # literal start ("/a..." -> "a"), or, when it has none ("/", "*", "/*.pdf"), to the
        # generic entries every path tries; both in file order
        own: dict[str, list[tuple[int, _Compiled]]] = {}
        generic: list[tuple[int, _Compiled]] = []
        for index, rule in enumerate(rules):
            compiled = rule[4]
            lead = _lead(compiled[0], compiled[1])
            if len(lead) >= 2 and lead[0] == "/":
                own.setdefault(lead[1], []).append((index, compiled))
            else:
                generic.append((index, compiled))
        self._generic: tuple[tuple[Any, ...], ...] = _fold(generic)
        self._buckets: dict[str, tuple[tuple[Any, ...], ...]] = {c: _fold(e) for c, e in own.items()}

    @classmethod
    def parse(cls, body: bytes | str | None) -> TdmRep:
        """The file's rules from its body; never raises (what cannot be
        read is a diagnostic, and a file that does not parse states nothing)."""
        return finish(cls.parsing(body))

    @classmethod
    def parsing(cls, body: bytes | str | None) -> Generator[None, None, TdmRep]:
        """:meth:`parse` in steps (:mod:`.steps`): the body decoded and
        parsed as JSON (one call, bounded by :data:`MAX_FILE_BYTES`), then
        :data:`STEP_RULES` rules a step, each at a bounded cost whatever its
        keys and values, then the rules compiled (at most :data:`MAX_RULES`).
        Never raises."""
        problems = _Problems()
        rules: list[_Kept] = []
        try:
            yield from _reading(body, rules, problems)
        except Exception as exc:  # noqa: BLE001 - hostile input: never raise; pragma: no cover (none known)
            rules = []
            problems.add(0, "tdmrep_not_json", repr(exc)[:100])
        return cls._made(rules, problems.kept(), problems.omitted)

    @property
    def rules(self) -> tuple[_Rule, ...]:
        """The rules read, in file order (made on each call)."""
        return tuple(_Rule(self._numbers[i], self._locations[i], self._declaration(i)) for i in range(len(self)))

    def __len__(self) -> int:
        """The number of rules read."""
        return len(self._numbers)

    def __bool__(self) -> bool:
        """Whether the file has any rule."""
        return bool(self._numbers)

    def __repr__(self) -> str:
        return f"<TdmRep {len(self)} rules, {len(self.diagnostics)} diagnostics>"

    def declaration(self, url: str) -> Declaration:
        """The first rule matching ``url`` (an absolute URL or a path),
        as its declaration; :data:`UNSET` when none matches."""
        index = self._first(url)
        return UNSET if index is None else self._declaration(index)

    def usage(self, url: str) -> Usage:
        """The file's preferences for ``url`` (see :meth:`Declaration.usage`)."""
        index = self._first(url)
        if index is None:
            return UNKNOWN
        key = self._key(index)
        usage = _USAGES.get(key)
        if usage is None:
            usage = self._declaration(index).usage()
            if len(_USAGES) < _CACHED_MAX:
                _USAGES[key] = usage
        return usage

    def _key(self, index: int) -> tuple[int, str, int, str | None]:
        return self._numbers[index], self._locations[index], self._reservations[index], self._policies[index]

    def _declaration(self, index: int) -> Declaration:
        """Rule ``index``'s declaration, with the statement naming it (made
        on demand, shared through a bounded cache: the rule's contents are the key)."""
        key = self._key(index)
        made = _DECLARATIONS.get(key)
        if made is None:
            made = _declaration(*key)
            if len(_DECLARATIONS) < _CACHED_MAX:
                _DECLARATIONS[key] = made
        return made

    def _first(self, url: str) -> int | None:
        """The index of the first rule matching ``url``, if any: the first
        of its bucket's rules and the first of the generic ones, whichever
        comes first in the file."""
        if not self._numbers:
            return None
        path = patterns.path_of(url)
        own = self._buckets.get(path[1:2]) if len(path) > 1 else None
        found = _first_of(path, own) if own else None
        generic = _first_of(path, self._generic, found)
        return found if generic is None or (found is not None and found < generic) else generic


#: a rule's contents -> its declaration, and its usage: pages of a site meet the
#: same few rules, and files repeat one another's; bounded, shared by every file
_DECLARATIONS: dict[tuple[int, str, int, str | None], Declaration] = {}
_USAGES: dict[tuple[int, str, int, str | None], Usage] = {}
_CACHED_MAX = 1024


def _code(reservation: bool | None) -> int:
    return _UNSET_CODE if reservation is None else int(reservation)


def _declaration(number: int, location: str, code: int, policy: str | None) -> Declaration:
    reservation = None if code == _UNSET_CODE else code == 1
    text = f"rule {number}: location {_clean(location, 200)}"
    if reservation is not None:
        text += f", tdm-reservation {int(reservation)}"
    if policy is not None:
        text += f", tdm-policy {_clean(policy, 200)}"
    source = Source(FILE_ORIGIN, number, text)
    return Declaration(
        reservation, policy, source if reservation is not None else None, source if policy is not None else None
    )


def _compiled(location: str) -> _Compiled:
    """``location`` compiled; the location itself stands for an equal compiled string."""
    kind, a, b, n, _ = patterns.compile_pattern(location)
    return kind, location if a == location else a, b, n


def _size(location: str, compiled: _Compiled) -> int:
    """Bytes of the strings ``compiled`` keeps beside ``location``."""
    _, a, b, _ = compiled
    return (sys.getsizeof(a) if a is not location else 0) + (sys.getsizeof(b) if b else 0)


def _lead(kind: int, a: Any) -> str:
    """The literal start of a compiled pattern."""
    if kind in (patterns.WILD, patterns.WILD_END):
        return str(a).split(patterns.WILDCARD, 1)[0]
    return str(a)


def _fold(entries: list[tuple[int, _Compiled]]) -> tuple[tuple[Any, ...], ...]:
    """Entries in file order as match steps.  Each run of rules without a
    ``*`` (plain prefixes, and exact paths ending in ``$``) becomes one step:
    ``str.startswith`` with a tuple tests all its prefixes at C speed, a
    dict look-up all its exact paths, and only a hit looks further, for the
    first rule of the run in file order.  A wildcard rule is a step of its own.
    A step's last item is the smallest rule index in it."""
    steps: list[tuple[Any, ...]] = []
    prefixes: list[tuple[str, int]] = []
    exact: dict[str, int] = {}

    def flush() -> None:
        if prefixes or exact:
            first = min([i for _, i in prefixes[:1]] + list(exact.values()))
            steps.append(
                (_PLAIN, tuple(p for p, _ in prefixes), tuple(i for _, i in prefixes), dict(exact) or None, first)
            )
        prefixes.clear()
        exact.clear()

    for index, (kind, a, b, n) in entries:
        if kind == _PREFIX:
            prefixes.append((str(a), index))
            if a in ("/", ""):  # matches every path ("/", "*"): the rules after it are never reached
                break
        elif kind == _EXACT:
            exact.setdefault(str(a), index)  # the first of two identical paths
        else:
            flush()
            steps.append((kind, a, b, n, index))
    flush()
    return tuple(steps)


def _first_of(path: str, steps: tuple[tuple[Any, ...], ...], before: int | None = None) -> int | None:
    """The index of the first rule of ``steps`` that matches ``path``, if it comes before ``before``."""
    for step in steps:
        if before is not None and step[-1] >= before:
            return None  # (steps in file order: none after can come first)
        if step[0] == _PLAIN:
            index = _first_plain(path, step)
            if index is not None:
                return index
        elif _matches(path, step[0], step[1], step[2], step[3]):
            return int(step[4])
    return None


def _first_plain(path: str, step: tuple[Any, ...]) -> int | None:
    """The first rule of a plain run that matches ``path`` (file order)."""
    _, prefixes, numbers, exact, _ = step
    found: int | None = exact.get(path) if exact is not None else None
    if prefixes and path.startswith(prefixes):
        for prefix, index in zip(prefixes, numbers):
            if found is not None and index > found:
                break
            if path.startswith(prefix):
                return int(index)
    return found


def _matches(path: str, kind: int, a: Any, b: str, n: int) -> bool:
    if kind == patterns.SUB:
        return path.startswith(a) and path.find(b, n) >= 0
    if kind == patterns.SUB_END:
        return path.endswith(b) and len(path) >= n and path.startswith(a)
    if kind == patterns.WILD_END and not path.endswith(a[-1]):
        return False
    return b in path and patterns.wild_match(path, a, kind == patterns.WILD_END)


#: no file, or one that states nothing
EMPTY = TdmRep()


# -- the file -----------------------------------------------------------------


class _Problems:
    """Diagnostics as they are found: the first :data:`MAX_DIAGNOSTICS` kept
    (their text made only then), the rest counted."""

    __slots__ = ("items", "omitted")

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []
        self.omitted = 0

    def room(self) -> int:
        """How many more are kept."""
        return MAX_DIAGNOSTICS - len(self.items)

    def add(self, line: int, code: str, detail: str | Callable[[], str] | None = None) -> None:
        """One problem; ``detail`` (made only when kept, if a callable) follows the code's text."""
        if len(self.items) < MAX_DIAGNOSTICS:
            if detail is not None and not isinstance(detail, str):
                detail = detail()
            self.items.append(Diagnostic(line, code, _detail(code, detail) if detail is not None else CODES[code]))
        else:
            self.omitted += 1

    def count(self, more: int) -> None:
        """``more`` problems found and not kept."""
        self.omitted += more

    def kept(self) -> tuple[Diagnostic, ...]:
        if not self.omitted:
            return tuple(self.items)
        more = Diagnostic(0, "tdmrep_more_problems", _detail("tdmrep_more_problems", f"{self.omitted:,} more"))
        return (*self.items, more)


def _reading(body: bytes | str | None, rules: list[_Kept], problems: _Problems) -> Generator[None, None, None]:
    """Read ``body`` into ``rules``, in steps."""
    text = _text(body, problems)
    if text is None:
        return
    yield  # (decoded: one C call over at most MAX_FILE_BYTES)
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, int digits limit; deep nesting
        problems.add(0, "tdmrep_not_json", str(exc))
        return
    yield  # (parsed: one C call over at most MAX_FILE_BYTES)
    if not isinstance(document, list):
        problems.add(0, "tdmrep_not_array", lambda: type(document).__name__)
        return
    wildcards = 0
    kept = 0
    policies: dict[str, str] = {}  # each distinct policy once
    for number, item in enumerate(document, 1):
        if number % STEP_RULES == 0:
            yield
        if number > MAX_RULES:
            problems.add(0, "tdmrep_too_many_rules", lambda: f"{len(document):,}")
            break
        rule = _rule(number, item, problems)
        if rule is None:
            continue
        location, code, policy = rule
        wild = "*" in location
        if wild and wildcards >= MAX_WILDCARD_RULES:
            problems.add(number, "tdmrep_too_many_rules", lambda: f"more than {MAX_WILDCARD_RULES} with '*'")
            break
        cost = _RULE_OVERHEAD + sys.getsizeof(location)
        if policy is not None and policy not in policies:
            cost += sys.getsizeof(policy)
        compiled = _compiled(location) if kept + cost <= MAX_RULE_BYTES else None
        if compiled is not None:
            cost += _size(location, compiled)
        if compiled is None or kept + cost > MAX_RULE_BYTES:
            problems.add(number, "tdmrep_too_many_rules", lambda: f"more than {MAX_RULE_BYTES:,} bytes")
            break
        wildcards += wild
        kept += cost
        if policy is not None:
            policy = policies.setdefault(policy, policy)
        rules.append((number, location, code, policy, compiled))
    yield  # (the document is let go here: its size is bounded like its parse)


def _text(body: bytes | str | None, problems: _Problems) -> str | None:
    """The body as text, or None when there is none or it is too large."""
    if body is None:
        return None
    if isinstance(body, str):
        text = body
        if len(text) > MAX_FILE_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
            problems.add(0, "tdmrep_too_large")
            return None
    else:
        if len(body) > MAX_FILE_BYTES:
            problems.add(0, "tdmrep_too_large")
            return None
        data = bytes(body)
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", "replace")
            problems.add(0, "tdmrep_not_utf8")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


_KNOWN_KEYS = ("location", RESERVATION, POLICY)


def _rule(number: int, item: Any, problems: _Problems) -> tuple[str, int, str | None] | None:
    """``(location, reservation code, policy)`` of one rule, or None.  Its cost is
    bounded whatever it holds: the keys are counted, and looked at only as
    far as diagnostics are kept; a value is shown (``_short``) only in a kept one."""
    if not isinstance(item, dict):
        problems.add(number, "tdmrep_rule_invalid", lambda: _short(item))
        return None
    unknown = len(item) - sum(1 for key in _KNOWN_KEYS if key in item)
    if unknown:
        shown = 0
        if problems.room() > 0:
            for key in item:  # (stops after at most room() + 3 keys)
                if key not in _KNOWN_KEYS:
                    problems.add(number, "tdmrep_unknown_key", lambda: _short(key))  # noqa: B023 - called at once
                    shown += 1
                    if shown == unknown or problems.room() <= 0:
                        break
        problems.count(unknown - shown)
    location = item.get("location")
    if not isinstance(location, str) or location[:1] not in ("/", "*"):
        problems.add(number, "tdmrep_location_invalid", lambda: _short(location))
        return None
    value = item.get(RESERVATION)
    code = _UNSET_CODE
    # JSON numbers 0 and 1 (1.0 is the number 1); true/false and "1" are other values
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value in (0, 1):
        code = int(value)
    else:
        problems.add(number, "tdmrep_reservation_invalid", lambda: _short(value))
    raw_policy = item.get(POLICY)
    policy: str | None = None
    if isinstance(raw_policy, str):
        policy = _clean(raw_policy, MAX_POLICY_CHARS) or None
    elif raw_policy is not None:
        problems.add(number, "tdmrep_policy_invalid", lambda: _short(raw_policy))
    return location, code, policy


# -- headers and meta tags ----------------------------------------------------


def from_headers(
    reservation: Iterable[bytes | str] | bytes | str | None,
    policy: Iterable[bytes | str] | bytes | str | None = None,
) -> tuple[Declaration, tuple[Diagnostic, ...]]:
    """The declaration of a response's ``tdm-reservation`` and
    ``tdm-policy`` field lines (#sec-tdm-header).  A value other than ``0`` or ``1``,
    or lines that disagree, leave the reservation unset."""
    problems: list[Diagnostic] = []
    lines = _lines(reservation)
    value, text = _one(lines, problems, 0)
    reserved = _reservation(value, problems, 0)
    policies = _lines(policy)
    stated, policy_text = _one(policies, problems, 0)
    url = _clean(stated, MAX_POLICY_CHARS) if stated else None
    declaration = Declaration(
        reserved,
        url,
        Source(HEADER_ORIGIN, 0, f"{RESERVATION}: {_clean(text, 200)}") if reserved is not None else None,
        Source(HEADER_ORIGIN, 0, f"{POLICY}: {_clean(policy_text, 200)}") if url else None,
    )
    return declaration, tuple(problems)


def from_metas(metas: Iterable[MetaTag]) -> tuple[Declaration, tuple[Diagnostic, ...]]:
    """The declaration of an HTML head's ``tdm-reservation`` and
    ``tdm-policy`` meta tags (#sec-tdm-html-meta); tags that disagree leave it unset."""
    problems: list[Diagnostic] = []
    reservations: list[MetaTag] = []
    policies: list[MetaTag] = []
    for tag in metas:
        if tag.name == RESERVATION:
            reservations.append(tag)
        elif tag.name == POLICY:
            policies.append(tag)
    reserved: bool | None = None
    reservation_source: Source | None = None
    if reservations:
        line = reservations[0].line
        value, _ = _one([t.content for t in reservations], problems, line)
        reserved = _reservation(value, problems, line)
        if reserved is not None:
            tag = reservations[0]
            reservation_source = Source(HTML_ORIGIN, tag.line, tag.text)
    url: str | None = None
    policy_source: Source | None = None
    if policies:
        value, _ = _one([t.content for t in policies], problems, policies[0].line)
        url = _clean(value, MAX_POLICY_CHARS) if value else None
        if url:
            tag = next((t for t in policies if t.content.strip(_BLANKS)), policies[0])
            policy_source = Source(HTML_ORIGIN, tag.line, tag.text)
    return Declaration(reserved, url, reservation_source, policy_source), tuple(problems)


def _lines(values: Iterable[bytes | str] | bytes | str | None) -> list[str]:
    if values is None:
        return []
    if isinstance(values, (bytes, str)):
        values = [values]
    out: list[str] = []
    for v in values:
        out.append(v.decode("latin-1") if isinstance(v, (bytes, bytearray)) else str(v))
        if len(out) >= 64:  # a response has a handful; more is noise
            break
    return out


def _one(values: list[str], problems: list[Diagnostic], line: int) -> tuple[str, str]:
    """The one value stated (stripped) and its text as written: lines that
    all say the same thing count once; lines that disagree state nothing."""
    stated = [v.strip(_BLANKS) for v in values]
    stated = [v for v in stated if v]
    if not stated:
        return "", ""
    first = stated[0]
    if any(v != first for v in stated):
        problems.append(Diagnostic(line, "tdmrep_conflict", _detail("tdmrep_conflict", " / ".join(stated[:4]))))
        return "", ""
    return first, first


def _reservation(value: str, problems: list[Diagnostic], line: int) -> bool | None:
    if value == "1":
        return True
    if value == "0":
        return False
    if value:
        problems.append(Diagnostic(line, "tdmrep_reservation_invalid", _detail("tdmrep_reservation_invalid", value)))
    return None


def _clean(text: str, limit: int) -> str:
    """``text`` stripped, control characters as spaces, clipped (it goes
    into reasons and log lines)."""
    text = text.strip()
    if len(text) > limit:
        text = text[:limit] + "..."
    return "".join(" " if c < " " or c == "\x7f" else c for c in text) if not text.isprintable() else text


def _short(value: Any) -> str:
    """A value read from the file, for a diagnostic: its JSON, at most 60 characters."""
    try:
        text = json.dumps(value[:61] if isinstance(value, str) else value, ensure_ascii=True)
    except Exception:  # noqa: BLE001 - never raise
        text = type(value).__name__
    return text if len(text) <= 60 else text[:60] + "..."


def _detail(code: str, detail: str) -> str:
    return f"{CODES[code]}: {detail}"


def declare(
    tdmrep: TdmRep | None,
    url: str,
    reservation: Iterable[bytes | str] | bytes | str | None = None,
    policy: Iterable[bytes | str] | bytes | str | None = None,
    metas: Iterable[MetaTag] = (),
) -> tuple[Declaration, tuple[Diagnostic, ...]]:
    """Everything TDMRep says about one response, in the report's priority
    (#sec-processing-priority): the origin's file (``tdmrep``, None or :data:`EMPTY` when it has
    none), then the response's header field lines, then its HTML meta tags
    (pass them only for an HTML response).  ``.usage()`` of the result is
    the statement to combine with the other sources."""
    file = tdmrep.declaration(url) if tdmrep is not None else UNSET
    header, header_problems = from_headers(reservation, policy) if reservation or policy else (UNSET, ())
    meta, meta_problems = from_metas(metas) if metas else (UNSET, ())
    if header is UNSET and meta is UNSET:
        return file, header_problems + meta_problems
    return resolve(file, header, meta), header_problems + meta_problems
