"""An audit trail read back, for ``scrapy robots --audit`` (replay, summary).

The trail is streamed: read one line at a time, checked against its chain
(:mod:`.chain`) and let go, so that the memory a replay takes does not grow
with the trail's size (docs/audit.md, "Replay").  What is kept is what the
answer needs:

* for the URLs asked (``urls``), the last decision and ``usage`` record of
  each, and, for their origins, the last result in force and the
  :data:`RECENT_STATES` most recent distinct ones (to pair a decision with
  the file that governed it); without what changed (``added``, ``removed``);
* with ``summary``, a small row per origin (fetches, the last result,
  changes, allowed and denied counts): memory grows with the origins, not
  with the records;
* the digest of each robots.txt body the records name, checked once each
  (about 100 bytes a body), and a crawl's id (to catch a copied crawl).

One line is read at most :data:`MAX_LINE_BYTES` (or sixteen times the
crawl's ``max_bytes``, when larger) at a time; a longer one is no record the
plugin writes.  Standard library only, as the chain.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..masking import mask_url
from ..robots import RobotsTxt
from .chain import KeyNeeded, Tampered, Verifier
from .writer import bodies_dir

logger = logging.getLogger(__name__)

_HEX = frozenset("0123456789abcdef")
#: bytes of one line read at most (a record the plugin writes is far shorter:
#: the longest, a changed robots.txt's rules, a few times RFC9309_MAX_BYTES)
MAX_LINE_BYTES = 64 * 1024 * 1024
#: distinct results in force kept per origin asked, the most recent, to find the
#: one a decision names (a decision is made on the result in force, the latest)
RECENT_STATES = 64
#: fields of a result in force not kept: the rules a change added and removed
_DROPPED = ("added", "removed")
#: bytes of a body hashed at a time
_CHUNK = 1 << 20
#: the record types that put a result in force
_STATES = frozenset({"fetch", "stored"})


# -- reading a trail back (scrapy robots --audit) ------------------------------------------------
class TrailError(Exception):
    """The audit trail cannot be read, or lacks what a replay needs."""


class TrailTampered(TrailError):
    """The trail does not verify: the first line that does not fit its chain,
    or a record whose robots.txt body is missing or altered."""


class TrailKeyNeeded(TrailError):
    """The trail is sealed with a key (HMAC) and none was given."""


class _Origin:
    """What is kept of an origin asked: its last result in force, the recent
    distinct ones by (``fetched_at``, ``governing_sha256``), and its URLs asked."""

    __slots__ = ("last", "recent", "urls")

    def __init__(self) -> None:
        self.last: dict[str, Any] | None = None
        self.recent: dict[tuple[Any, Any], dict[str, Any]] = {}
        self.urls: list[str] = []


class Trail:
    """An audit trail read back and verified: what governed each origin, and when.

    Every line is checked against the chain as it is read (:mod:`.chain`):
    ``TrailTampered`` names the first that does not fit, ``TrailKeyNeeded``
    says a keyed trail needs its key (``key``: RFC9309_AUDIT's, or the environment variable RFC9309_AUDIT_KEY).  A crawl
    left without its closing record (killed, or the trail cut) is listed in
    :attr:`unfinished`; its records are used.  Every robots.txt body the
    records name is checked as it is met; :meth:`check_bodies` raises the
    first that is missing or altered.

    ``urls`` (origin -> URLs) are the URLs to replay: for them, and their
    origins, what :meth:`state_for` needs is kept; ``summary`` keeps a row
    per origin for :meth:`summary`.  Nothing else is kept, whatever the
    trail's size (see the module's text)."""

    def __init__(
        self,
        path: str,
        key: bytes | None = None,
        urls: Mapping[str, Iterable[str]] | None = None,
        summary: bool = False,
    ) -> None:
        self.path = path
        self.bodies = bodies_dir(path)
        #: crawls in the trail, and the last one's first record
        self.crawl_count = 0
        self.last_crawl: dict[str, Any] | None = None
        #: records of single requests, by kind: "allowed", "denied" (robots.txt), and
        #: "usage denied" / "usage dropped" (a declared purpose, before / after the download)
        self.request_records: dict[str, int] = {}
        self._origins: dict[str, _Origin] = {}
        #: masked URL asked -> its origin
        self._asked: dict[str, str] = {}
        for origin, asked in (urls or {}).items():
            kept = self._origins.setdefault(origin, _Origin())
            for url in asked:
                masked = mask_url(url)  # (recorded masked)
                self._asked[masked] = origin
                kept.urls.append(masked)
        #: masked URL asked -> its last decision record; its last "usage" record
        self.decisions: dict[str, dict[str, Any]] = {}
        self.usage_decisions: dict[str, dict[str, Any]] = {}
        #: masked URL asked -> the result in force its last decision names, once met
        self._matched: dict[str, dict[str, Any]] = {}
        self._summary = summary
        #: origin -> [fetches, last fetch's result]; origin -> [changes, last access]
        self._fetch_rows: dict[str, list[Any]] = {}
        self._state_rows: dict[str, list[Any]] = {}
        self.allowed: dict[str, int] = {}
        self.denied: dict[str, int] = {}
        #: body digest -> the first line naming it (each body checked once)
        self._named: dict[bytes, int] = {}
        self._body_problem: str | None = None
        self._limit = MAX_LINE_BYTES
        verifier = Verifier(key)
        try:
            handle = open(path, "rb")  # noqa: SIM115
        except OSError as exc:
            raise TrailError(f"cannot read {path}: {exc.strerror or exc}") from None
        with handle:
            try:
                self._read(handle, verifier)
            except Tampered as exc:
                raise TrailTampered(str(exc)) from None
            except KeyNeeded as exc:
                raise TrailKeyNeeded(str(exc)) from None
            except OSError as exc:
                raise TrailError(f"cannot read {path}: {exc.strerror or exc}") from None
        verifier.finish()
        #: texts of the first crawls without their closing record (killed, or the trail
        #: truncated), at most a few; ``unfinished_count`` counts them all
        self.unfinished: list[str] = verifier.unfinished
        self.unfinished_count = verifier.unfinished_count
        if not verifier.crawls:  # (a crawl killed before its first write leaves an empty file)
            self.unfinished.append("the trail holds no record: truncated or unfinished (no closing record)")
            self.unfinished_count += 1
        #: what was verified, e.g. ``chain intact: 57 records, 1 crawl (SHA-256, no key)``
        self.chain = verifier.describe()

    def _read(self, handle: Any, verifier: Verifier) -> None:
        number = 0
        while True:
            line = handle.readline(self._limit + 1)
            if not line:
                return
            number += 1
            if len(line) > self._limit and not line.endswith(b"\n"):
                raise Tampered(number, f"longer than {self._limit:,} bytes: no record the plugin writes is")
            record = verifier.feed(number, line[:-1] if line.endswith(b"\n") else line)
            if record is not None:
                try:
                    self._add(record, number)
                except (KeyError, TypeError, ValueError, AttributeError):
                    raise TrailError(
                        f"{self.path}:{number}: the {record.get('type')!r} record lacks what it needs"
                    ) from None

    def check_bodies(self) -> int:
        """``TrailTampered`` naming the first record (in file order) whose
        robots.txt body is missing or altered, each body checked once as it
        was met; else the number of bodies checked."""
        if self._body_problem is not None:
            raise TrailTampered(self._body_problem)
        return len(self._named)

    def _body(self, sha256: str, number: int | None) -> bytes:
        """The body kept under ``sha256``, checked against it."""
        where = f"line {number}: " if number is not None else ""
        name = os.path.join(self.bodies, sha256)
        try:
            with open(name, "rb") as handle:
                body = handle.read()
        except OSError as exc:
            raise TrailTampered(self._missing(where, sha256, exc)) from None
        if hashlib.sha256(body).hexdigest() != sha256:
            raise TrailTampered(self._altered(where, name))
        return body

    def _check(self, sha256: str, number: int) -> None:
        """Check the body named ``sha256`` (first met at line ``number``), in
        chunks; the first problem is kept for :meth:`check_bodies`."""
        name = os.path.join(self.bodies, sha256)
        digest = hashlib.sha256()
        try:
            with open(name, "rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
        except OSError as exc:
            self._body_problem = self._missing(f"line {number}: ", sha256, exc)
            return
        if digest.hexdigest() != sha256:
            self._body_problem = self._altered(f"line {number}: ", name)

    def _missing(self, where: str, sha256: str, exc: OSError) -> str:
        return (
            f"{where}the robots.txt body it names ({sha256}) is not in {self.bodies} "
            f"({exc.strerror or exc}): deleted, or the trail was copied without it"
        )

    def _altered(self, where: str, name: str) -> str:
        return f"{where}the robots.txt body it names does not match its hash: {name} was altered"

    def _add(self, record: dict[str, Any], number: int) -> None:
        kind = record.get("type")
        origin = record.get("origin")
        for field in ("sha256", "governing_sha256"):
            value = record.get(field)
            if isinstance(value, str):
                if len(value) != 64 or not _HEX.issuperset(value):  # (sealed: only a forger gets here)
                    raise TrailTampered(f"line {number}: {field} is not a SHA-256")
                digest = bytes.fromhex(value)
                if digest not in self._named:
                    self._named[digest] = number
                    if self._body_problem is None:
                        self._check(value, number)
        if kind == "crawl":
            self.crawl_count += 1
            self.last_crawl = record
            max_bytes = record.get("max_bytes")
            if isinstance(max_bytes, int) and not isinstance(max_bytes, bool):
                self._limit = max(MAX_LINE_BYTES, 16 * max_bytes)
        elif kind in _STATES:
            if kind == "fetch":
                self._fetched(origin, record)
            if kind == "stored" or record.get("in_force"):
                self._in_force(origin, record)
        elif kind in ("allowed", "denied"):
            self.request_records[kind] = self.request_records.get(kind, 0) + 1
            url = record["url"]
            if url in self._asked:
                self._decided(url, record)
        elif kind == "usage":
            action = f"usage {record.get('action')}"
            self.request_records[action] = self.request_records.get(action, 0) + 1
            if record["url"] in self._asked:
                self.usage_decisions[record["url"]] = record
        elif kind == "counts":
            for name, (allowed, denied) in record["origins"].items():
                if self._summary:
                    self.allowed[name] = self.allowed.get(name, 0) + allowed
                    self.denied[name] = self.denied.get(name, 0) + denied

    def _fetched(self, origin: Any, record: dict[str, Any]) -> None:
        if self._summary:
            status = record["status"]
            result = f"{record['access']} ({status if status is not None else record['outcome']})"
            row = self._fetch_rows.setdefault(origin, [0, None])
            row[0] += 1
            row[1] = result

    def _in_force(self, origin: Any, record: dict[str, Any]) -> None:
        if self._summary:
            row = self._state_rows.setdefault(origin, [0, None])
            row[0] += 1 if record.get("changed") else 0
            row[1] = record.get("governing_access")
        kept = self._origins.get(origin)
        if kept is None:
            return
        state = {k: v for k, v in record.items() if k not in _DROPPED}
        key = (state.get("fetched_at"), state.get("governing_sha256"))
        kept.last = state
        kept.recent.pop(key, None)
        kept.recent[key] = state  # (the latest of that key, at the end)
        if len(kept.recent) > RECENT_STATES:
            del kept.recent[next(iter(kept.recent))]
        for url in kept.urls:  # a decision's file taking effect again later: the latest is the one
            decision = self.decisions.get(url)
            if decision is not None and (decision.get("fetched_at"), decision.get("sha256")) == key:
                self._matched[url] = state

    def _decided(self, url: str, record: dict[str, Any]) -> None:
        self.decisions[url] = record
        self._matched.pop(url, None)
        if record.get("fetched_at") is None:
            return
        kept = self._origins.get(self._asked[url])
        state = kept.recent.get((record["fetched_at"], record.get("sha256"))) if kept is not None else None
        if state is not None:
            self._matched[url] = state

    @property
    def usage(self) -> tuple[str, ...]:
        """The purposes the (last) crawl declared (RFC9309_USAGE)."""
        return tuple(self.last_crawl.get("usage") or ()) if self.last_crawl else ()

    @property
    def max_bytes(self) -> int:
        return int(self.last_crawl.get("max_bytes", 512_000)) if self.last_crawl else 512_000

    def usage_decision(self, url: str) -> dict[str, Any] | None:
        """The last ``usage`` record of ``url`` (one asked), if any."""
        return self.usage_decisions.get(mask_url(url))

    def state_for(self, origin: str, url: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """``(state, decision)``: the result that governed ``url`` (one asked)
        when the crawl last decided it (its decision record, if any), else the
        origin's last result in force.  ``TrailError`` when the trail has none."""
        masked = mask_url(url)  # recorded masked
        if self._asked.get(masked) != origin:
            raise ValueError(f"{masked} of {origin} was not asked of this trail (Trail(urls=...))")
        decision = self.decisions.get(masked)
        if decision is not None and decision.get("fetched_at") is not None:
            state = self._matched.get(masked)
            if state is not None:
                return state, decision
        last = self._origins[origin].last
        if last is None:
            raise TrailError(f"the audit trail has no robots.txt of {origin}")
        return last, decision

    def robots_of(self, state: dict[str, Any]) -> RobotsTxt:
        """The policy a state record stands for, from the body kept by its hash."""
        from ..robots import parse
        from ..robots.access import Access, policy_for

        access = Access(state["governing_access"])
        if access is not Access.SUCCESS:
            return policy_for(access, state.get("unreachable") or "deny")
        sha256 = state["governing_sha256"]
        body = self._body(sha256, self._named.get(bytes.fromhex(sha256)))
        return parse(body, state.get("governing_content_type"), self.max_bytes)

    def summary(self) -> list[dict[str, Any]]:
        """Per origin: fetches, last result, changes, allowed and denied counts
        (read with ``summary=True``)."""
        if not self._summary:
            raise ValueError("the trail was read without summary=True")
        origins = dict.fromkeys([*self._fetch_rows, *self._state_rows, *self.allowed, *self.denied])
        rows = []
        for origin in origins:
            fetches, last = self._fetch_rows.get(origin, (0, None))
            changes, access = self._state_rows.get(origin, (0, None))
            if last is not None:
                result = last
            elif access is not None:
                result = f"{access} (from the store)"
            else:
                result = "-"
            rows.append(
                {
                    "origin": origin, "fetches": fetches, "result": result, "changes": changes,
                    "allowed": self.allowed.get(origin, 0), "denied": self.denied.get(origin, 0),
                }
            )  # fmt: skip
        return rows
