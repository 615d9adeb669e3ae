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

The file is parsed once per origin (:meth:`TdmRep.parse`), bounded in bytes
and rules; :meth:`TdmRep.declaration` then costs a bucket look-up and the
rules of that bucket, like a robots.txt check.  A missing, unreadable or
malformed file states nothing (every rule it could not read is a
diagnostic); nothing here raises on any input.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

from . import patterns
from .diagnostics import Diagnostic
from .html_head import MetaTag
from .usage import UNKNOWN, Source, Usage

#: the file's path on an origin
PATH = "/.well-known/tdmrep.json"
#: bytes of a file parsed at most; a larger file states nothing (a JSON
#: document cut short does not parse)
MAX_FILE_BYTES = 512_000
#: rules read at most, in file order (the first rules win, so the ones kept
#: are those that decide most paths); the rest are reported
MAX_RULES = 1_000
#: rules with a ``*`` read at most: each costs a check a few string
#: searches (the others are tested all at once); reading stops at the first
#: rule past it, so a later rule never answers for an earlier one
MAX_WILDCARD_RULES = 64
#: characters of a policy URL kept
MAX_POLICY_CHARS = 2_048
#: the header fields' names
RESERVATION, POLICY = "tdm-reservation", "tdm-policy"
#: where statements come from, as Source.origin
FILE_ORIGIN, HEADER_ORIGIN, HTML_ORIGIN = "tdmrep.json", "header", "html"

CODES: dict[str, str] = {
    "tdmrep_too_large": f"the file is larger than {MAX_FILE_BYTES:,} bytes; it states nothing",
    "tdmrep_not_utf8": "the file is not valid UTF-8; invalid bytes were replaced",
    "tdmrep_not_json": "the file is not JSON; it states nothing",
    "tdmrep_not_array": "the file is not a JSON array of rules; it states nothing",
    "tdmrep_too_many_rules": f"rules after the first {MAX_RULES:,}, or {MAX_WILDCARD_RULES} with '*', were not read",
    "tdmrep_rule_invalid": "the rule is not a JSON object; it was ignored",
    "tdmrep_location_invalid": "the rule's location is missing, empty or not a path pattern; it was ignored",
    "tdmrep_reservation_invalid": "tdm-reservation is not 0 or 1; it is unset (TDMRep #sec-tdm-reservation)",
    "tdmrep_policy_invalid": "tdm-policy is not a string; it was ignored",
    "tdmrep_unknown_key": "the rule has a key the report does not define; it was ignored",
    "tdmrep_conflict": "several different values for one property; it is unset",
}

# Compiled entry kinds (see patterns.compile_pattern), plus a run of rules
# without "*" tested at once.
_PREFIX, _EXACT = patterns.PREFIX, patterns.EXACT
_PLAIN = -1
_BLANKS = " \t\r\n\f"
#: the buckets kept (the second character of a path: ASCII after normalisation)
_MAX_BUCKETS = 128


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


class TdmRep:
    """The rules of one origin's ``tdmrep.json``, compiled once.

    ``rules`` are the rules read (in file order), ``diagnostics`` what could
    not be read (``line``: the rule's 1-based position, 0 for the file).
    An empty one (:data:`EMPTY`, a missing or broken file) states nothing.
    """

    __slots__ = ("rules", "diagnostics", "_entries", "_generic", "_buckets", "_usages")

    def __init__(self, rules: Iterable[_Rule] = (), diagnostics: Iterable[Diagnostic] = ()) -> None:
        self.rules: tuple[_Rule, ...] = tuple(rules)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        # (index, lead character or "", compiled entry), in file order
        self._entries: list[tuple[int, str, tuple[int, Any, str, int]]] = []
        for index, rule in enumerate(self.rules):
            kind, a, b, n, _ = patterns.compile_pattern(rule.location)
            lead = _lead(kind, a)
            self._entries.append((index, lead[1] if len(lead) >= 2 and lead[0] == "/" else "", (kind, a, b, n)))
        self._generic = _fold([e for e in self._entries if not e[1]])
        self._buckets: dict[str, list[tuple[Any, ...]]] = {}
        self._usages: dict[int, Usage] = {}  # rule index -> its usage, made on its first match

    @classmethod
    def parse(cls, body: bytes | str | None) -> TdmRep:
        """The file's rules from its body; never raises (what cannot be
        read is a diagnostic, and a file that does not parse states nothing)."""
        try:
            rules, problems = _parse(body)
        except Exception as exc:  # noqa: BLE001 - hostile input: never raise; pragma: no cover (none known)
            return cls((), (Diagnostic(0, "tdmrep_not_json", f"{CODES['tdmrep_not_json']}: {exc!r}"[:200]),))
        return cls(rules, problems)

    def __bool__(self) -> bool:
        """Whether the file has any rule."""
        return bool(self.rules)

    def __repr__(self) -> str:
        return f"<TdmRep {len(self.rules)} rules, {len(self.diagnostics)} diagnostics>"

    def declaration(self, url: str) -> Declaration:
        """The first rule matching ``url`` (an absolute URL or a path),
        as its declaration; :data:`UNSET` when none matches."""
        index = self._first(url)
        return UNSET if index is None else self.rules[index].declaration

    def usage(self, url: str) -> Usage:
        """The file's preferences for ``url`` (see :meth:`Declaration.usage`)."""
        index = self._first(url)
        if index is None:
            return UNKNOWN
        usage = self._usages.get(index)
        if usage is None:
            usage = self._usages[index] = self.rules[index].declaration.usage()
        return usage

    def _first(self, url: str) -> int | None:
        """The index of the first rule matching ``url``, if any."""
        if not self.rules:
            return None
        path = patterns.path_of(url)
        entries = self._bucket(path[1:2])
        index: int | None = None
        for entry in entries:
            if entry[0] == _PLAIN:
                index = _first_plain(path, entry)
                if index is not None:
                    break
            elif _matches(path, entry[0], entry[1], entry[2], entry[3]):
                index = entry[4]
                break
        return index

    def _bucket(self, char: str) -> list[tuple[Any, ...]]:
        """The entries a path whose second character is ``char`` may match:
        the rules whose literal start is ``/`` + ``char`` and those that
        start with less (``/``, ``*``, ``/*.pdf``), in file order; built on
        the first path that needs it."""
        bucket = self._buckets.get(char)
        if bucket is None:
            own = [e for e in self._entries if e[1] == char] if char else []
            if not own:
                bucket = self._generic
            else:
                merged = sorted(own + [e for e in self._entries if not e[1]])
                bucket = _fold(merged)
            if len(self._buckets) < _MAX_BUCKETS:
                self._buckets[char] = bucket
        return bucket


def _lead(kind: int, a: Any) -> str:
    """The literal start of a compiled pattern."""
    if kind in (patterns.WILD, patterns.WILD_END):
        return str(a[0])
    return str(a)


def _fold(entries: list[tuple[int, str, tuple[int, Any, str, int]]]) -> list[tuple[Any, ...]]:
    """Entries in file order as match steps.  Each run of rules without a
    ``*`` (plain prefixes, and exact paths ending in ``$``) becomes one step:
    ``str.startswith`` with a tuple tests all its prefixes at C speed, a
    dict look-up all its exact paths, and only a hit looks further, for the
    first rule of the run in file order.  A wildcard rule is a step of its own."""
    steps: list[tuple[Any, ...]] = []
    prefixes: list[tuple[str, int]] = []
    exact: dict[str, int] = {}

    def flush() -> None:
        if prefixes or exact:
            steps.append((_PLAIN, tuple(p for p, _ in prefixes), tuple(i for _, i in prefixes), dict(exact)))
        prefixes.clear()
        exact.clear()

    for index, _, (kind, a, b, n) in entries:
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
    return steps


def _first_plain(path: str, step: tuple[Any, ...]) -> int | None:
    """The first rule of a plain run that matches ``path`` (file order)."""
    _, prefixes, numbers, exact = step
    found: int | None = exact.get(path)
    if prefixes and path.startswith(prefixes):
        for prefix, index in zip(prefixes, numbers):
            if found is not None and index > found:
                break
            if path.startswith(prefix):
                return int(index)
    return found


def _matches(path: str, kind: int, a: Any, b: str, n: int) -> bool:
    if kind == _PREFIX:
        return path.startswith(str(a))
    if kind == _EXACT:
        return path == str(a)
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


def _parse(body: bytes | str | None) -> tuple[list[_Rule], list[Diagnostic]]:
    problems: list[Diagnostic] = []
    if body is None:
        return [], problems
    if isinstance(body, str):
        text = body
        if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
            return [], [Diagnostic(0, "tdmrep_too_large", CODES["tdmrep_too_large"])]
    else:
        if len(body) > MAX_FILE_BYTES:
            return [], [Diagnostic(0, "tdmrep_too_large", CODES["tdmrep_too_large"])]
        data = bytes(body)
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", "replace")
            problems.append(Diagnostic(0, "tdmrep_not_utf8", CODES["tdmrep_not_utf8"]))
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, int digits limit; deep nesting
        problems.append(Diagnostic(0, "tdmrep_not_json", _detail("tdmrep_not_json", str(exc))))
        return [], problems
    if not isinstance(document, list):
        problems.append(Diagnostic(0, "tdmrep_not_array", _detail("tdmrep_not_array", type(document).__name__)))
        return [], problems
    rules: list[_Rule] = []
    wildcards = 0
    for number, item in enumerate(document, 1):
        if number > MAX_RULES:
            problems.append(
                Diagnostic(0, "tdmrep_too_many_rules", _detail("tdmrep_too_many_rules", f"{len(document):,}"))
            )
            break
        rule = _rule(number, item, problems)
        if rule is None:
            continue
        if "*" in rule.location:
            wildcards += 1
            if wildcards > MAX_WILDCARD_RULES:
                detail = _detail("tdmrep_too_many_rules", f"more than {MAX_WILDCARD_RULES} with '*'")
                problems.append(Diagnostic(number, "tdmrep_too_many_rules", detail))
                break
        rules.append(rule)
    return rules, problems


def _rule(number: int, item: Any, problems: list[Diagnostic]) -> _Rule | None:
    if not isinstance(item, dict):
        problems.append(Diagnostic(number, "tdmrep_rule_invalid", _detail("tdmrep_rule_invalid", _short(item))))
        return None
    for key in item:
        if key not in ("location", RESERVATION, POLICY):
            problems.append(Diagnostic(number, "tdmrep_unknown_key", _detail("tdmrep_unknown_key", _short(key))))
    location = item.get("location")
    if not isinstance(location, str) or location[:1] not in ("/", "*"):
        problems.append(
            Diagnostic(number, "tdmrep_location_invalid", _detail("tdmrep_location_invalid", _short(location)))
        )
        return None
    value = item.get(RESERVATION)
    reservation: bool | None = None
    # JSON numbers 0 and 1 (1.0 is the number 1); true/false and "1" are other values
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value in (0, 1):
        reservation = value == 1
    else:
        problems.append(
            Diagnostic(number, "tdmrep_reservation_invalid", _detail("tdmrep_reservation_invalid", _short(value)))
        )
    raw_policy = item.get(POLICY)
    policy: str | None = None
    if isinstance(raw_policy, str):
        policy = _clean(raw_policy, MAX_POLICY_CHARS) or None
    elif raw_policy is not None:
        problems.append(
            Diagnostic(number, "tdmrep_policy_invalid", _detail("tdmrep_policy_invalid", _short(raw_policy)))
        )
    text = f"rule {number}: location {_clean(location, 200)}"
    if reservation is not None:
        text += f", tdm-reservation {int(reservation)}"
    if policy is not None:
        text += f", tdm-policy {_clean(policy, 200)}"
    source = Source(FILE_ORIGIN, number, text)
    declaration = Declaration(
        reservation, policy, source if reservation is not None else None, source if policy is not None else None
    )
    return _Rule(number, location, declaration)


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
    try:
        text = json.dumps(value, ensure_ascii=True)
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
