"""The crawl's recorder: fetch, decision and change records, fed by the
robots service and the middleware."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ..robots import Decision
from ..robots.text import shorten
from .decisions import iso, listed, rule_changes
from .writer import BODIES_DIR, FLUSH_SECONDS, Writer, audit_path, bodies_dir

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..fetch import FetchResult
    from ..service import Known, RobotsService
    from ..settings import Rfc9309Settings

logger = logging.getLogger(__name__)

#: version of the record format (the "crawl" record carries it)
FORMAT = 1


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
        self._writer: Writer | None = None
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
        from .. import compat

        assert self.settings.audit is not None
        started = time.time()
        try:
            self.path = audit_path(self.settings.audit, spider, started)
            self._writer = Writer(self.path)
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
        from .. import compat

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
        await compat.run_in_thread(writer.close)
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
                listed(added), listed(removed),
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
