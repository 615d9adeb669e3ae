"""Provable compliance: provenance on responses, the audit trail, changes.

Three things, all fed by the crawl's robots service and the middleware:

* **provenance** (:func:`provenance`): what the middleware puts in
  ``response.meta["rfc9309"]`` of every request it lets through: the verdict,
  the deciding rule and its line, the robots.txt URL after redirects, its
  status, when it was fetched and the SHA-256 of its body;
* **changes** (:class:`Recorder`, always on): when a re-fetch brings a body
  different from the one before, one INFO line names the origin and the rules
  added and removed for the crawl's group(s), and ``rfc9309/changes`` counts it;
* **the audit trail** (``RFC9309_AUDIT``, off by default): JSON Lines, one
  record per robots.txt fetch and per denied request (per allowed request too
  with ``RFC9309_AUDIT_ALLOWED``), bodies kept once per SHA-256 in
  ``robots-bodies/`` beside the file.  Records are queued in memory and
  written by a thread of their own, which writes and flushes at least every
  second and drains the queue when the spider closes.

The record formats, the replay (``scrapy robots --audit``) and what the trail
does and does not prove: docs/audit.md.  Nothing here imports Scrapy at module
level except through the functions that need the crawl.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from collections import deque
from datetime import datetime, timezone
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .robots import Decision, RobotsTxt
from .robots.text import shorten

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from .fetch import FetchResult
    from .robots import Rule
    from .service import Known, RobotsService
    from .settings import Rfc9309Settings

logger = logging.getLogger(__name__)

#: the request / response meta key holding the provenance of an allowed request
META_KEY = "rfc9309"
#: the directory, beside the audit file, that keeps each robots.txt body once
BODIES_DIR = "robots-bodies"
#: the writer thread writes and flushes at least this often (a crash loses at most this)
FLUSH_SECONDS = 1.0
#: rules listed per side in the change log line
MAX_CHANGED_RULES = 10
#: version of the record format (the "crawl" record carries it)
FORMAT = 1


# -- time ---------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def iso(seconds: float) -> str:
    """``2026-11-24T22:30:08.123Z`` (UTC) of a ``time.time()`` value."""
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- several tokens -------------------------------------------------------------------------
def decide_all(robots: RobotsTxt, url: str, tokens: tuple[str, ...]) -> tuple[Decision, str]:
    """``(decision, token)``: the first token whose group denies ``url`` and its
    decision; or, when every token allows it, the first token's decision."""
    first = robots.check(url, tokens[0])
    if not first.allowed:
        return first, tokens[0]
    for token in tokens[1:]:
        decision = robots.check(url, token)
        if not decision.allowed:
            return decision, token
    return first, tokens[0]


def denial_reason(decision: Decision, token: str, tokens: tuple[str, ...]) -> str:
    """The decision's reason, naming the token when the crawl has several."""
    if len(tokens) == 1:
        return decision.reason
    return f"{decision.reason} for {token}"


# -- provenance --------------------------------------------------------------------------
def provenance(known: Known | None, decision: Decision, tokens: tuple[str, ...]) -> dict[str, Any]:
    """The ``response.meta["rfc9309"]`` dict of an allowed request (JSON-ready).

    ``known`` is None when robots.txt was not consulted (``dont_obey_robotstxt``
    or ``obey: False``): then only the verdict and tokens are filled in."""
    rule = decision.rule
    if known is None:
        return {
            "verdict": decision.verdict.value,
            "rule": None,
            "line": None,
            "tokens": list(tokens),
            "robots_url": None,
            "status": None,
            "access": None,
            "fetched_at": None,
            "sha256": None,
        }
    entry = known.entry
    return {
        "verdict": decision.verdict.value,
        "rule": str(rule) if rule is not None else None,
        "line": rule.line if rule is not None else None,
        "tokens": list(tokens),
        "robots_url": entry.url or None,
        "status": entry.status,
        "access": entry.access,
        "fetched_at": iso(entry.fetched_at),
        "sha256": known.sha256,
    }


# -- changes ------------------------------------------------------------------------------
def rule_changes(old: RobotsTxt, new: RobotsTxt, tokens: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """``(added, removed)``: the rules of the tokens' groups in ``new`` and not in
    ``old`` and the other way round, compared as written (kind and pattern),
    each as ``line N: Disallow: /x`` with its line in its own file."""

    def rules(robots: RobotsTxt) -> list[Rule]:
        seen: dict[tuple[bool, str], Rule] = {}
        for token in tokens:
            for rule in robots.rules_for(token):
                seen.setdefault((rule.allow, rule.pattern), rule)
        return sorted(seen.values(), key=lambda r: r.line)

    before, after = rules(old), rules(new)
    old_keys = {(r.allow, r.pattern) for r in before}
    new_keys = {(r.allow, r.pattern) for r in after}
    added = [f"line {r.line}: {shorten(r)}" for r in after if (r.allow, r.pattern) not in old_keys]
    removed = [f"line {r.line}: {shorten(r)}" for r in before if (r.allow, r.pattern) not in new_keys]
    return added, removed


def _listed(items: list[str]) -> str:
    if not items:
        return "none"
    shown = "; ".join(items[:MAX_CHANGED_RULES])
    return shown + (f"; and {len(items) - MAX_CHANGED_RULES} more" if len(items) > MAX_CHANGED_RULES else "")


# -- the file ---------------------------------------------------------------------------------
class _Params(dict):
    """Feed-style placeholders: ``%(name)s``, ``%(time)s`` and any spider attribute."""

    def __init__(self, spider: Any, started: float) -> None:
        super().__init__()
        self._spider = spider
        self["name"] = getattr(spider, "name", "spider")
        stamp = datetime.fromtimestamp(started, timezone.utc).replace(microsecond=0, tzinfo=None)
        self["time"] = stamp.isoformat().replace(":", "-")

    def __missing__(self, key: str) -> Any:
        try:
            return getattr(self._spider, key)
        except AttributeError:
            raise KeyError(key) from None


def audit_path(template: str, spider: Any, started: float) -> str:
    """``RFC9309_AUDIT`` with its placeholders filled (``ValueError`` for an unknown one)."""
    try:
        return template % _Params(spider, started)
    except KeyError as exc:
        raise ValueError(f"RFC9309_AUDIT={template!r}: unknown placeholder %({exc.args[0]})s") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"RFC9309_AUDIT={template!r}: {exc}") from None


def bodies_dir(audit_file: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(audit_file)), BODIES_DIR)


class _Writer:
    """A thread that writes queued records (and bodies) to the file.

    The reactor only appends to a deque (thread-safe, no lock); the thread
    wakes every :data:`FLUSH_SECONDS` (or when told to close), writes every
    record queued so far as JSON Lines and flushes the file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.bodies = bodies_dir(path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        os.makedirs(self.bodies, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by the thread
        self._queue: deque[Any] = deque()
        self._wake = threading.Event()
        self._stop = False
        self.written = 0
        #: CPU seconds the writer thread used (known once it ended)
        self.cpu = 0.0
        self.failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="rfc9309-audit", daemon=True)
        self._thread.start()

    def put(self, item: Any) -> None:
        self._queue.append(item)

    def close(self, timeout: float = 30.0) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while not self._stop:
                self._wake.wait(FLUSH_SECONDS)
                self._drain()
            self._drain()
        except BaseException as exc:  # disk full, permissions ...: said once, at ERROR
            self.failed = exc
            logger.error("RFC9309_AUDIT: cannot write the audit trail %s: %s", self.path, exc)
        finally:
            self._file.close()
            self.cpu = time.thread_time()

    def _drain(self) -> None:
        queue = self._queue
        lines: list[str] = []
        dumps = json.dumps
        while queue:
            item = queue.popleft()
            if isinstance(item, tuple):  # (sha256, body)
                self._keep_body(*item)
            else:
                lines.append(dumps(item, ensure_ascii=False, separators=(",", ":")))
        if lines:
            self._file.write("\n".join(lines) + "\n")
            self._file.flush()
            self.written += len(lines)

    def _keep_body(self, sha256: str, body: bytes) -> None:
        target = os.path.join(self.bodies, sha256)
        if os.path.exists(target):
            return
        fd, temporary = tempfile.mkstemp(dir=self.bodies, prefix=".tmp-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
        os.replace(temporary, target)


# -- the recorder -------------------------------------------------------------------------------
class Recorder:
    """Listens to the robots service: notices changes (always) and, when
    ``RFC9309_AUDIT`` is set, writes the audit trail.  One per crawl, made by
    the middleware."""

    def __init__(self, crawler: Crawler, service: RobotsService, settings: Rfc9309Settings) -> None:
        self.crawler = crawler
        self.service = service
        self.settings = settings
        #: True when the audit trail is on: the middleware calls denied() / allowed()
        self.active = settings.audit is not None
        self.allowed_records = self.active and settings.audit_allowed
        self.path: str | None = None
        self._writer: _Writer | None = None
        #: fetches made and not yet published, per origin (one record each)
        self._fetches: dict[str, list[FetchResult]] = {}
        self._kept: set[str] = set()
        #: origin -> [allowed, denied] since the last "counts" record
        self._counts: dict[str, list[int]] = {}
        self._ticker: Any = None
        service.on_ready(self._ready)
        if self.active:
            from scrapy import signals

            service.on_fetch(self._fetched)
            crawler.signals.connect(self._opened, signal=signals.spider_opened)
            crawler.signals.connect(self._closed, signal=signals.spider_closed)

    # -- life ----------------------------------------------------------------------------
    def _opened(self, spider: Any) -> None:
        from . import compat

        assert self.settings.audit is not None
        started = time.time()
        try:
            self.path = audit_path(self.settings.audit, spider, started)
            self._writer = _Writer(self.path)
        except (OSError, ValueError) as exc:
            self.active = self.allowed_records = False
            logger.error(
                "RFC9309_AUDIT: cannot open the audit trail (%s). The crawl stops before its first request.",
                exc, extra={"spider": spider},
            )  # fmt: skip
            compat.close_at_open(self.crawler, "rfc9309_audit_unavailable")
            return
        settings = self.settings
        self._put(
            {
                "type": "crawl", "format": FORMAT, "at": iso(started), "spider": getattr(spider, "name", None),
                "tokens": list(settings.user_agents), "unreachable": settings.unreachable,
                "max_bytes": settings.max_bytes, "bodies": BODIES_DIR, "allowed_records": settings.audit_allowed,
            }
        )  # fmt: skip
        logger.info("RFC 9309 audit trail: %s (bodies in %s)", self.path, bodies_dir(self.path))
        self._ticker = compat.every(FLUSH_SECONDS, self._tick)

    async def _closed(self, spider: Any, reason: str) -> None:
        from twisted.internet.threads import deferToThread

        from . import compat

        if self._writer is None:
            return
        if self._ticker is not None and self._ticker.running:
            self._ticker.stop()
        for origin, results in list(self._fetches.items()):
            for result in results:  # fetched, never took effect (the spider closed meanwhile)
                self._put(self._fetch_record(origin, result, None, None))
        self._fetches.clear()
        self._tick()
        self._put({"type": "closed", "at": iso(time.time()), "reason": reason})
        writer, self._writer = self._writer, None
        self.active = self.allowed_records = False
        await compat.wait_for(deferToThread(writer.close))
        self.service.counts.inc("audit/records", writer.written)
        self.service.counts.flush()
        self.crawler.stats.set_value("rfc9309/audit/writer_cpu_seconds", round(writer.cpu, 3))
        logger.info(
            "RFC 9309 audit trail: %d records written to %s (writer thread: %.2f s CPU)",
            writer.written, writer.path, writer.cpu,
        )  # fmt: skip

    def _tick(self) -> None:
        """Every second: the per-origin allowed/denied counts so far, as one record."""
        if self._counts:
            counts, self._counts = self._counts, {}
            self._put({"type": "counts", "at": iso(time.time()), "origins": counts})

    def _put(self, record: Any) -> None:
        if self._writer is not None:
            self._writer.put(record)

    # -- what the service tells ----------------------------------------------------------------
    def _fetched(self, origin: str, result: FetchResult) -> None:
        self._fetches.setdefault(origin, []).append(result)

    def _ready(self, origin: str, known: Known, previous: Known | None, trigger: Any) -> None:
        changed = (
            previous is not None
            and known.sha256 is not None
            and previous.sha256 is not None
            and known.sha256 != previous.sha256
        )
        added: list[str] = []
        removed: list[str] = []
        if changed:
            assert previous is not None
            added, removed = rule_changes(previous.robots, known.robots, known.tokens)
            self.service.counts.inc("changes")
            logger.info(
                "robots.txt of %s changed (sha256 %s -> %s); rules for %s added: %s; removed: %s",
                origin, previous.sha256[:12], known.sha256[:12], ", ".join(known.tokens),  # type: ignore[index]
                _listed(added), _listed(removed),
            )  # fmt: skip
        if self._writer is None:
            return
        fetches = self._fetches.pop(origin, [])
        for result in fetches[:-1]:  # "wait" mode's earlier tries: fetched, superseded
            self._put(self._fetch_record(origin, result, None, None))
        if fetches:
            record = self._fetch_record(origin, fetches[-1], known, previous)
        else:  # from the store: fetched earlier, by another worker or run
            record = {
                "type": "stored",
                "at": iso(time.time()),
                "origin": origin,
                **self._in_force(origin, known, previous),
            }
        if changed:
            record.update(changed=True, added=added, removed=removed)
        self._put(record)

    def _fetch_record(
        self, origin: str, result: FetchResult, known: Known | None, previous: Known | None
    ) -> dict[str, Any]:
        import hashlib

        sha256 = None
        if result.access.value == "success":
            if known is not None and known.entry.body is result.body and known.sha256 is not None:
                sha256 = known.sha256  # hashed once already, by the service
            else:
                sha256 = hashlib.sha256(result.body).hexdigest()
            self._keep(sha256, result.body)
        record: dict[str, Any] = {
            "type": "fetch",
            "at": iso(result.started_at or time.time()),
            "origin": origin,
            "chain": list(result.chain),
            "final_url": result.url,
            "redirects": result.redirects,
            "status": result.status,
            "outcome": result.outcome,
            "access": result.access.value,
            "error": f"{type(result.error).__name__}: {shorten(str(result.error))}" if result.error else None,
            "note": result.note or None,
            "bytes": len(result.body),
            "truncated_bytes": result.truncated_bytes,
            "content_type": result.content_type,
            "sha256": sha256,
            "in_force": known is not None,
        }
        if known is not None:
            record.update(self._in_force(origin, known, previous))
        return record

    def _in_force(self, origin: str, known: Known, previous: Known | None) -> dict[str, Any]:
        """What governs the origin from now on (for a stale copy standing in for an
        unreachable file, the copy's), its Crawl-delay per token and diagnostics."""
        entry = known.entry
        if known.sha256 is not None:
            self._keep(known.sha256, entry.body)
        robots = known.robots
        fixed = robots.fixed_verdict is not None
        return {
            "governing_sha256": known.sha256,
            "governing_access": entry.access,
            "governing_status": entry.status,
            "governing_url": entry.url or None,
            "governing_content_type": entry.content_type,
            "fetched_at": iso(entry.fetched_at),
            "expires_at": iso(entry.expires_at),
            "tokens": list(known.tokens),
            "crawl_delay": {t: None if fixed else robots.crawl_delay(t) for t in known.tokens},
            "request_rate": {t: None if fixed else _rate(robots.request_rate(t)) for t in known.tokens},
            "floor": known.floor,
            "diagnostics": len(robots.diagnostics),
            "unreachable": self.settings.for_origin(origin).unreachable,
            "previous_sha256": previous.sha256 if previous is not None else None,
        }

    def _keep(self, sha256: str, body: bytes) -> None:
        if sha256 not in self._kept:
            self._kept.add(sha256)
            self._put((sha256, body))

    # -- what the middleware tells ---------------------------------------------------------------
    def decided(self, url: str, origin: str, known: Known, decision: Decision, token: str) -> None:
        """A request was decided on ``known``: a record when denied (or when
        allowed records are on), and the per-origin count either way."""
        counts = self._counts.get(origin)
        if counts is None:
            counts = self._counts[origin] = [0, 0]
        counts[0 if decision.allowed else 1] += 1
        if decision.allowed and not self.allowed_records:
            return
        rule = decision.rule
        self._put(
            {
                "type": "allowed" if decision.allowed else "denied", "at": iso(time.time()), "url": url,
                "origin": origin, "verdict": decision.verdict.value, "line": rule.line if rule else None,
                "rule": str(rule) if rule else None, "token": token, "sha256": known.sha256,
                "access": known.entry.access, "fetched_at": iso(known.entry.fetched_at),
            }
        )  # fmt: skip

    def invalid_token(self, url: str, origin: str, message: str) -> None:
        """A request denied because its ``robotstxt_user_agent`` meta names no valid token."""
        counts = self._counts.get(origin)
        if counts is None:
            counts = self._counts[origin] = [0, 0]
        counts[1] += 1
        self._put(
            {
                "type": "denied", "at": iso(time.time()), "url": url, "origin": origin,
                "verdict": "invalid_user_agent", "line": None, "rule": None, "token": None, "sha256": None,
                "access": None, "fetched_at": None, "message": message,
            }
        )  # fmt: skip


def _rate(rate: tuple[int, float] | None) -> str | None:
    return None if rate is None else f"{rate[0]}/{rate[1]:g}s"


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
        self.fetches: dict[str, list[dict[str, Any]]] = {}
        self.allowed: dict[str, int] = {}
        self.denied: dict[str, int] = {}
        self.decision_records = 0
        try:
            handle = open(path, encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise TrailError(f"cannot read {path}: {exc.strerror or exc}") from None
        with handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    if not line.endswith("\n"):
                        break  # the last line of a crawl that died mid-write
                    raise TrailError(f"{path}:{number}: not a JSON record") from None
                self._add(record)

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
        elif kind == "counts":
            for name, (allowed, denied) in record["origins"].items():
                self.allowed[name] = self.allowed.get(name, 0) + allowed
                self.denied[name] = self.denied.get(name, 0) + denied

    @property
    def max_bytes(self) -> int:
        return int(self.crawls[-1].get("max_bytes", 512_000)) if self.crawls else 512_000

    def state_for(self, origin: str, url: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """``(state, decision)``: the result that governed ``url`` when the crawl
        last decided it (its decision record, if any), else the origin's last
        result in force.  ``TrailError`` when the trail has none."""
        states = self.states.get(origin, [])
        decision = self.decisions.get(url)
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
        from .robots import parse
        from .robots.access import Access, policy_for

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
