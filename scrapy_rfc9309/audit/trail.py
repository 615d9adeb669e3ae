"""An audit trail read back, for ``scrapy robots --audit`` (replay, summary)."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from ..masking import mask_url
from ..robots import RobotsTxt
from .writer import bodies_dir

logger = logging.getLogger(__name__)


# -- reading a trail back (scrapy robots --audit) ------------------------------------------------
class TrailError(Exception):
    """The audit trail cannot be read, or lacks what a replay needs."""


class Trail:
    """An audit trail read back: what governed each origin, and when.

    ``states[origin]`` lists the records that put a result in force (a fetch
    that took effect, or a result taken from the store), in file order;
    ``decisions[url]`` is the last decision record of ``url``."""

    def __init__(self, path: str) -> None:
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
        self.decision_records = 0
        try:
            handle = open(path, encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise TrailError(f"cannot read {path}: {exc.strerror or exc}") from None
        number = 0
        with handle:
            try:
                for number, line in enumerate(handle, 1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except ValueError:
                        if not line.endswith("\n"):
                            break  # the last line of a crawl that died mid-write
                        raise TrailError(f"{path}:{number}: not a JSON record") from None
                    if not isinstance(record, dict):
                        raise TrailError(f"{path}:{number}: not a JSON record (an object)")
                    try:
                        self._add(record)
                    except (KeyError, TypeError, ValueError, AttributeError):
                        raise TrailError(
                            f"{path}:{number}: the {record.get('type')!r} record lacks what it needs"
                        ) from None
            except UnicodeDecodeError:
                raise TrailError(f"{path}:{number + 1}: not UTF-8 text: is this an audit trail?") from None

    def _add(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        origin = record.get("origin")
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
            self.decision_records += 1
        elif kind == "usage":
            self.usage_decisions[record["url"]] = record
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
        try:
            with open(os.path.join(self.bodies, sha256), "rb") as handle:
                body = handle.read()
        except OSError as exc:
            raise TrailError(f"the body {sha256} is not in {self.bodies}: {exc.strerror or exc}") from None
        import hashlib

        if hashlib.sha256(body).hexdigest() != sha256:
            raise TrailError(f"{os.path.join(self.bodies, sha256)} does not hash to its name: it was altered")
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
