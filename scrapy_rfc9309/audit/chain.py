"""The audit trail's chain: every record sealed with a digest of itself and
of the record before it, so that an edit, a deletion, a reordering or a cut
shows on replay.

A record is written as one JSON line.  The writer adds ``"n"`` (its number
within the crawl, from 1) and then seals it: with ``body`` the exact bytes of
the line as JSON without the seal, and ``prev`` the previous record's digest
(64 zeros for a crawl's first record)::

    h = SHA-256(prev + body)                    (no key)
    h = HMAC-SHA256(key, prev + body)           (RFC9309_AUDIT's key)
    line = body without its closing "}" + ',"h":"<h, hex>"}' + "\\n"

so every record carries a digest that covers its own bytes and, through
``prev``, every record before it.  A crawl's first record (``"type":
"crawl"``) names the chain (``"chain": "sha256"`` or ``"hmac-sha256"``, with
``"key_id"``, an HMAC of a fixed text: which key, never the key) and a random
``crawl_id``; its last (``"type": "closed"``) carries ``"records"``, the
count, and its ``h`` is the crawl's final digest.  Several crawls may append
to one file: each is a chain of its own.

:class:`Sealer` is the writer's side, :class:`Verifier` the replay's: it
reads the lines one by one and raises :class:`Tampered` naming the first line
that does not fit, and notes each crawl left without its closing record.
Standard library only; nothing here imports Scrapy.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

#: ``prev`` of a crawl's first record
GENESIS = b"0" * 64
#: the value of a crawl record's ``chain``, without and with a key
CHAIN_SHA256 = "sha256"
CHAIN_HMAC = "hmac-sha256"
_SEAL_HEAD = b',"h":"'
#: bytes of the seal at the end of a line (without its newline): ,"h":"<64 hex>"}
_SEAL_LEN = len(_SEAL_HEAD) + 64 + 2
_HEX = frozenset(b"0123456789abcdef")
#: how every line the writer writes begins (a line cut mid-write is a prefix of it, or longer)
_RECORD_START = b'{"type":"'
#: what the key id is an HMAC of
_KEY_ID_TEXT = b"scrapy-rfc9309 audit key id"
#: texts of unfinished crawls kept (the rest are counted)
MAX_UNFINISHED = 20


def key_id(key: bytes) -> str:
    """Which key sealed a trail (16 hex digits), without telling the key."""
    return hmac.digest(key, _KEY_ID_TEXT, "sha256").hex()[:16]


def dumps(record: dict[str, Any]) -> bytes:
    """A record as compact JSON in UTF-8.  A lone surrogate (which UTF-8
    cannot carry) becomes its JSON escape ``\\udXXX``: it can only stand
    inside a string, where that escape means the same character."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "backslashreplace")


class Sealer:
    """Numbers and seals the records of one crawl, in the order written."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key
        #: records sealed so far
        self.count = 0
        #: the last record's digest (hex, ASCII): the crawl's final digest once closed
        self.last = GENESIS

    def describe(self) -> dict[str, Any]:
        """What the crawl's first record says about the chain."""
        if self._key is None:
            return {"chain": CHAIN_SHA256}
        return {"chain": CHAIN_HMAC, "key_id": key_id(self._key)}

    def seal(self, record: dict[str, Any]) -> bytes:
        """The record's line (with its newline); ``record`` gets ``n`` (and,
        for the closing record, ``records``)."""
        self.count += 1
        record["n"] = self.count
        if record.get("type") == "closed":
            record["records"] = self.count
        body = dumps(record)
        digest = _digest(self._key, self.last, body)
        self.last = digest
        return body[:-1] + _SEAL_HEAD + digest + b'"}\n'


def _digest(key: bytes | None, prev: bytes, body: bytes) -> bytes:
    if key is None:
        return hashlib.sha256(prev + body).hexdigest().encode("ascii")
    return hmac.digest(key, prev + body, "sha256").hex().encode("ascii")


def _show(value: Any) -> str:
    """A value read from the file, for a message: its ``repr`` (control
    characters escaped), at most 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def unseal(line: bytes) -> tuple[bytes, bytes] | None:
    """``(body, h)`` of a sealed line (without its newline), else None."""
    if len(line) <= _SEAL_LEN or line[-_SEAL_LEN : -_SEAL_LEN + len(_SEAL_HEAD)] != _SEAL_HEAD:
        return None
    if line[-2:] != b'"}':
        return None
    digest = line[-66:-2]
    if not _HEX.issuperset(digest):
        return None
    return line[:-_SEAL_LEN] + b"}", digest


# -- verifying ---------------------------------------------------------------------------------
class Tampered(Exception):
    """The first line of a trail that does not fit its chain."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


class KeyNeeded(Exception):
    """A keyed trail, and no key to check it with."""


class Verifier:
    """Checks a trail's lines in order (:meth:`feed`, then :meth:`finish`).

    ``key``: the key the trail must have been sealed with (``RFC9309_AUDIT``'s ``key``, or the environment variable ``RFC9309_AUDIT_KEY``);
    without one, a keyed trail cannot be checked (:class:`KeyNeeded`); with
    one, an unkeyed trail does not verify (anyone could have rewritten it)."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key
        self._key_id = key_id(key) if key is not None else None
        #: crawls started so far; of them, those closed
        self.crawls = 0
        self.closed = 0
        #: records verified
        self.records = 0
        #: the chains met (``sha256``, ``hmac-sha256``)
        self.kinds: set[str] = set()
        #: one text per crawl left without its closing record, the first
        #: :data:`MAX_UNFINISHED` of them; ``unfinished_count`` counts them all
        self.unfinished: list[str] = []
        self.unfinished_count = 0
        self._open = False
        self._expected = 1
        self._prev = GENESIS
        self._first_line = 0
        self._last_line = 0
        self._keyed = False
        self._cut: int | None = None
        self._crawl_ids: set[str] = set()

    def feed(self, number: int, line: bytes) -> dict[str, Any] | None:
        """The record of line ``number`` (``line`` without its newline), or None
        for a line cut mid-write (the last of a crawl that was killed: only a
        new crawl's first record, or the end of the file, may follow it).
        :class:`Tampered` when the line does not fit."""
        sealed = unseal(line)
        if sealed is None:
            if self._cut is None and _RECORD_START.startswith(line[: len(_RECORD_START)]) and line:
                self._cut = number  # a crawl's last line, cut mid-write, unless a record of that crawl follows
                return None
            raise Tampered(number, "not a sealed record (edited, inserted, or written without a chain)")
        body, digest = sealed
        try:
            record = json.loads(line)
        except ValueError:
            raise Tampered(number, "not a JSON record (edited)") from None
        if not isinstance(record, dict):
            raise Tampered(number, "not a JSON record (edited)")
        n, kind = record.get("n"), record.get("type")
        starts = kind == "crawl" and n == 1
        if self._cut is not None:
            if not starts:
                raise Tampered(self._cut, "not a sealed record (edited, or a line inserted)")
            self._unfinished(cut=self._cut)
        elif starts and self._open:
            self._unfinished()
        if starts:
            self._start(number, record)
        elif not self._open:
            where = "after the closing record of its crawl" if self.closed else "its crawl's first record is missing"
            raise Tampered(number, f"record {_show(n)} outside a crawl ({where}): deleted, moved or inserted records")
        if not isinstance(n, int) or isinstance(n, bool):
            raise Tampered(number, f"edited: its record number {_show(n)} is not a number")
        if n != self._expected:
            crawl = self.crawls
            if n > self._expected:
                raise Tampered(
                    number,
                    f"record {self._expected} of crawl {crawl} is missing (this line holds record {n}): "
                    "deleted, or records reordered",
                )
            raise Tampered(
                number,
                f"holds record {n} of crawl {crawl} where record {self._expected} belongs: records reordered or repeated",
            )
        if not hmac.compare_digest(_digest(self._key if self._keyed else None, self._prev, body), digest):
            how = "its HMAC does not match: edited, or forged without the key" if self._keyed else (
                "its digest does not match its content"
            )  # fmt: skip
            raise Tampered(number, f"record {n} of crawl {self.crawls} was edited: {how}")
        self._prev = digest
        self._expected += 1
        self._last_line = number
        self.records += 1
        if kind == "closed":
            if record.get("records") != n:  # (sealed: only a forger gets here)
                raise Tampered(number, f"the closing record of crawl {self.crawls} miscounts its records")
            self._open = False
            self.closed += 1
        return record

    def _start(self, number: int, record: dict[str, Any]) -> None:
        chain = record.get("chain")
        if chain == CHAIN_HMAC:
            if self._key is None:
                raise KeyNeeded(
                    f"crawl {self.crawls + 1} (line {number}) is sealed with a key (HMAC-SHA256): give it "
                    "(--audit-key-file, RFC9309_AUDIT's key, or the environment variable RFC9309_AUDIT_KEY) to check the trail"
                )
            if record.get("key_id") != self._key_id:
                raise Tampered(
                    number,
                    f"crawl {self.crawls + 1} was sealed with another key (key id {_show(record.get('key_id'))}, "
                    f"the key given is {self._key_id}), or rewritten",
                )
            self._keyed = True
        elif chain == CHAIN_SHA256:
            if self._key is not None:
                raise Tampered(
                    number,
                    f"crawl {self.crawls + 1} is not sealed with a key (SHA-256 chain) although a key was given: "
                    "anyone could have rewritten it",
                )
            self._keyed = False
        else:
            raise Tampered(number, f"crawl {self.crawls + 1} names no known chain ({_show(chain)})")
        crawl_id = record.get("crawl_id")
        if not isinstance(crawl_id, str) or crawl_id in self._crawl_ids:
            raise Tampered(number, f"crawl {self.crawls + 1} repeats an earlier crawl (a copied crawl_id)")
        self._crawl_ids.add(crawl_id)
        self.kinds.add(chain)
        self.crawls += 1
        self._open = True
        self._expected = 1
        self._prev = GENESIS
        self._first_line = number

    def _unfinished(self, cut: int | None = None) -> None:
        if self._open:
            text = f"crawl {self.crawls} (lines {self._first_line}-{self._last_line})"
            text += ": truncated or unfinished (no closing record)"
            if cut is not None:
                text += f"; line {cut}, its last, is cut mid-write"
        else:  # a crawl whose first record was cut: nothing of it was written
            text = f"line {cut}: a crawl truncated or unfinished (no closing record): its first record is cut mid-write"
        if len(self.unfinished) < MAX_UNFINISHED:
            self.unfinished.append(text)
        self.unfinished_count += 1
        self._open = False
        self._cut = None

    def finish(self) -> None:
        """The end of the file: a crawl still open has no closing record."""
        if self._open or self._cut is not None:
            self._unfinished(cut=self._cut)

    def describe(self) -> str:
        """``chain intact: 57 records, 1 crawl (SHA-256, no key)``."""
        kinds = " and ".join(
            "HMAC-SHA256, keyed" if kind == CHAIN_HMAC else "SHA-256, no key" for kind in sorted(self.kinds)
        )
        text = f"chain intact: {self.records} record{'s' if self.records != 1 else ''}, "
        text += f"{self.crawls} crawl{'s' if self.crawls != 1 else ''}"
        return text + (f" ({kinds})" if kinds else "")
