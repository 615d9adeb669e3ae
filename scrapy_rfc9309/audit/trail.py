"""An audit trail read back, for ``scrapy robots --audit`` (replay, summary)."""

from __future__ import annotations

import hashlib
import logging
import os
from typing import Any

from ..masking import mask_url
from ..robots import RobotsTxt
from .chain import KeyNeeded, Tampered, Verifier
from .writer import bodies_dir

logger = logging.getLogger(__name__)

_HEX = frozenset("0123456789abcdef")


# -- reading a trail back (scrapy robots --audit) ------------------------------------------------
class TrailError(Exception):
    """The audit trail cannot be read, or lacks what a replay needs."""


class TrailTampered(TrailError):
    """The trail does not verify: the first line that does not fit its chain,
    or a record whose robots.txt body is missing or altered."""


class TrailKeyNeeded(TrailError):
    """The trail is sealed with a key (HMAC) and none was given."""


class Trail:
    """An audit trail read back and verified: what governed each origin, and when.

    Every line is checked against the chain as it is read (:mod:`.chain`):
    ``TrailTampered`` names the first that does not fit, ``TrailKeyNeeded``
    says a keyed trail needs its key (``key``: RFC9309_AUDIT's, or the environment variable RFC9309_AUDIT_KEY).  A crawl
    left without its closing record (killed, or the trail cut) is listed in
    :attr:`unfinished`; its records are used.  :meth:`check_bodies` checks
    every robots.txt body the records name.

    ``states[origin]`` lists the records that put a result in force (a fetch
    that took effect, or a result taken from the store), in file order;
    ``decisions[url]`` is the last decision record of ``url``."""

    def __init__(self, path: str, key: bytes | None = None) -> None:
        self.path = path
        self.bodies = bodies_dir(path)
        self.crawls: list[dict[str, Any]] = []
        self.states: dict[str, list[dict[str, Any]]] = {}
        self.decisions: dict[str, dict[str, Any]] = {}
        #: url -> its last "usage" record (a declared purpose disallowed)
        self.usage_decisions: dict[str, dict[str, Any]] = {}
        self.fetches: dict[str, list[dict[str, Any]]] = {}
        self.allowed: dict[str, int] = {}
        self.denied: dict[str, int] = {}
        #: records of single requests, by kind: "allowed", "denied" (robots.txt), and
        #: "usage denied" / "usage dropped" (a declared purpose, before / after the download)
        self.request_records: dict[str, int] = {}
        #: sha256 -> the first line naming that body
        self._named: dict[str, int] = {}
        verifier = Verifier(key)
        try:
            handle = open(path, "rb")  # noqa: SIM115
        except OSError as exc:
            raise TrailError(f"cannot read {path}: {exc.strerror or exc}") from None
        number = 0
        with handle:
            try:
                for number, line in enumerate(handle, 1):
                    record = verifier.feed(number, line[:-1] if line.endswith(b"\n") else line)
                    if record is not None:
                        try:
                            self._add(record, number)
                        except (KeyError, TypeError, ValueError, AttributeError):
                            raise TrailError(
                                f"{path}:{number}: the {record.get('type')!r} record lacks what it needs"
                            ) from None
            except Tampered as exc:
                raise TrailTampered(str(exc)) from None
            except KeyNeeded as exc:
                raise TrailKeyNeeded(str(exc)) from None
            except OSError as exc:
                raise TrailError(f"cannot read {path}: {exc.strerror or exc}") from None
        verifier.finish()
        #: one text per crawl without its closing record (killed, or the trail truncated)
        self.unfinished: list[str] = verifier.unfinished
        if not verifier.crawls:  # (a crawl killed before its first write leaves an empty file)
            self.unfinished.append("the trail holds no record: truncated or unfinished (no closing record)")
        #: what was verified, e.g. ``chain intact: 57 records, 1 crawl (SHA-256, no key)``
        self.chain = verifier.describe()

    def check_bodies(self) -> int:
        """Check every robots.txt body the records name, once each, against
        its hash; ``TrailTampered`` naming the first record whose body is
        missing or altered.  The number of bodies checked."""
        for sha256, number in self._named.items():
            self._body(sha256, number)
        return len(self._named)

    def _body(self, sha256: str, number: int | None) -> bytes:
        where = f"line {number}: " if number is not None else ""
        name = os.path.join(self.bodies, sha256)
        try:
            with open(name, "rb") as handle:
                body = handle.read()
        except OSError as exc:
            raise TrailTampered(
                f"{where}the robots.txt body it names ({sha256}) is not in {self.bodies} "
                f"({exc.strerror or exc}): deleted, or the trail was copied without it"
            ) from None
        if hashlib.sha256(body).hexdigest() != sha256:
            raise TrailTampered(f"{where}the robots.txt body it names does not match its hash: {name} was altered")
        return body

    def _add(self, record: dict[str, Any], number: int) -> None:
        kind = record.get("type")
        origin = record.get("origin")
        for key in ("sha256", "governing_sha256"):
            value = record.get(key)
            if isinstance(value, str) and value not in self._named:
                if len(value) != 64 or not _HEX.issuperset(value):  # (sealed: only a forger gets here)
                    raise TrailTampered(f"line {number}: {key} is not a SHA-256")
                self._named[value] = number
        if kind == "crawl":
            self.crawls.append(record)
        elif kind == "fetch":
            self.fetches.setdefault(origin, []).append(record)  # type: ignore[arg-type]
            if record.get("in_force"):
                self.states.setdefault(origin, []).append(record)  # type: ignore[arg-type]
        elif kind == "stored":
            self.states.setdefault(origin, []).append(record)  # type: ignore[arg-type]
        elif kind in ("allowed", "denied"):
            self.decisions[record["url"]] = record
            self.request_records[kind] = self.request_records.get(kind, 0) + 1
        elif kind == "usage":
            self.usage_decisions[record["url"]] = record
            action = f"usage {record.get('action')}"
            self.request_records[action] = self.request_records.get(action, 0) + 1
        elif kind == "counts":
            for name, (allowed, denied) in record["origins"].items():
                self.allowed[name] = self.allowed.get(name, 0) + allowed
                self.denied[name] = self.denied.get(name, 0) + denied

    @property
    def usage(self) -> tuple[str, ...]:
        """The purposes the (last) crawl declared (RFC9309_USAGE)."""
        return tuple(self.crawls[-1].get("usage") or ()) if self.crawls else ()

    @property
    def max_bytes(self) -> int:
        return int(self.crawls[-1].get("max_bytes", 512_000)) if self.crawls else 512_000

    def state_for(self, origin: str, url: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """``(state, decision)``: the result that governed ``url`` when the crawl
        last decided it (its decision record, if any), else the origin's last
        result in force.  ``TrailError`` when the trail has none."""
        states = self.states.get(origin, [])
        decision = self.decisions.get(mask_url(url))  # recorded masked
        if decision is not None and decision.get("fetched_at") is not None:
            for state in reversed(states):
                if state.get("fetched_at") == decision["fetched_at"] and state.get("governing_sha256") == decision.get(
                    "sha256"
                ):
                    return state, decision
        if not states:
            raise TrailError(f"the audit trail has no robots.txt of {origin}")
        return states[-1], decision

    def robots_of(self, state: dict[str, Any]) -> RobotsTxt:
        """The policy a state record stands for, from the body kept by its hash."""
        from ..robots import parse
        from ..robots.access import Access, policy_for

        access = Access(state["governing_access"])
        if access is not Access.SUCCESS:
            return policy_for(access, state.get("unreachable") or "deny")
        sha256 = state["governing_sha256"]
        body = self._body(sha256, self._named.get(sha256))
        return parse(body, state.get("governing_content_type"), self.max_bytes)

    def summary(self) -> list[dict[str, Any]]:
        """Per origin: fetches, last result, changes, allowed and denied counts."""
        origins = list(dict.fromkeys([*self.fetches, *self.states, *self.allowed, *self.denied]))
        rows = []
        for origin in origins:
            fetches = self.fetches.get(origin, [])
            states = self.states.get(origin, [])
            last = fetches[-1] if fetches else None
            if last is not None:
                result = f"{last['access']} ({last['status'] if last['status'] is not None else last['outcome']})"
            elif states:
                result = f"{states[-1]['governing_access']} (from the store)"
            else:
                result = "-"
            changes = sum(1 for state in states if state.get("changed"))
            rows.append(
                {
                    "origin": origin, "fetches": len(fetches), "result": result, "changes": changes,
                    "allowed": self.allowed.get(origin, 0), "denied": self.denied.get(origin, 0),
                }
            )  # fmt: skip
        return rows
