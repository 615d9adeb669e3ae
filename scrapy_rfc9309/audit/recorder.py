"""The crawl's recorder: fetch, decision and change records, fed by the
robots service and the middleware."""

from __future__ import annotations

import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, NoReturn

from ..masking import mask_text, mask_url
from ..robots import Decision
from ..robots.text import shorten
from .decisions import iso, listed, rule_changes

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..fetch import FetchResult
    from ..robots.usage import Source, Usage
    from ..service import FileKind, Known, OriginFile, RobotsService
    from ..settings import Rfc9309Settings
    from ..storage import RobotsEntry
    from .writer import Writer

logger = logging.getLogger(__name__)

#: version of the record format (the "crawl" record carries it): 2 is sealed in a chain (.chain)
FORMAT = 2
#: finish reason of a crawl stopped because its audit trail cannot be written
AUDIT_FAILED = "rfc9309_audit_failed"
#: finish reason of a crawl whose audit trail cannot be opened
AUDIT_UNAVAILABLE = "rfc9309_audit_unavailable"
#: the stat of an allowed request dropped because its record could not be written (RFC9309_AUDIT's sync)
DROPPED_AUDIT = "requests/dropped/audit_failed"


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
        #: each record is written before the request it decides goes on (RFC9309_AUDIT's sync)
        self.sync = settings.audit_sync
        self.path: str | None = None
        self._writer: Writer | None = None
        #: fetches made and not yet published, per origin (one record each)
        self._fetches: dict[str, list[FetchResult]] = {}
        self._kept: set[str] = set()
        #: origin -> [allowed, denied] since the last "counts" record
        self._counts: dict[str, list[int]] = {}
        self._ticker: Any = None
        #: the trail failed and the crawl was told to stop
        self.failed = False
        service.on_ready(self._ready)
        if self.active:
            from scrapy import signals

            service.on_fetch(self._fetched)
            crawler.signals.connect(self._opened, signal=signals.spider_opened)
            crawler.signals.connect(self._closed, signal=signals.spider_closed)

    # -- life ----------------------------------------------------------------------------
    def _opened(self, spider: Any) -> None:
        # the trail's writer (a thread, the chain's hashing) is loaded only by a crawl that keeps one
        from .. import compat
        from .writer import BODIES_DIR, FLUSH_SECONDS, Writer, audit_path, bodies_dir

        assert self.settings.audit is not None
        started = time.time()
        try:
            self.path = audit_path(self.settings.audit, spider, started)
            key = self.settings.audit_key
            self._writer = Writer(self.path, key.reveal() if key is not None else None, sync=self.sync)
        except (OSError, ValueError) as exc:
            self.active = self.allowed_records = False
            logger.error(
                "RFC9309_AUDIT: cannot open the audit trail (%s). The crawl stops before its first request.",
                exc, extra={"spider": spider},
            )  # fmt: skip
            compat.fail_exit_status(self.crawler)
            compat.close_at_open(self.crawler, AUDIT_UNAVAILABLE)
            return
        settings = self.settings
        self._put(
            {
                "type": "crawl", "format": FORMAT, "at": iso(started), "crawl_id": uuid.uuid4().hex,
                **self._writer.describe(), "sync": self.sync, "spider": getattr(spider, "name", None),
                "tokens": list(settings.user_agents), "unreachable": settings.unreachable,
                "max_bytes": settings.max_bytes, "bodies": BODIES_DIR, "allowed_records": settings.audit_allowed,
                "usage": list(settings.usage), "usage_header": settings.usage_header,
                "usage_unknown": "deny" if settings.usage_unknown_denies else "allow",
            }
        )  # fmt: skip
        logger.info(
            "RFC 9309 audit trail: %s (bodies in %s; %s chain%s)", self.path, bodies_dir(self.path),
            "HMAC-SHA256" if settings.audit_key is not None else "SHA-256, unkeyed",
            "; each record written before its request goes on" if self.sync else "",
        )  # fmt: skip
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
        if writer.error is not None:
            self._fail(writer)
            # also when the last write, at close, failed: the crawl is not provable
            self.crawler.stats.set_value("finish_reason", AUDIT_FAILED)
        unwritten = writer.unwritten
        self.service.counts.inc("audit/records", writer.written)
        if unwritten:
            self.service.counts.inc("audit/records_unwritten", unwritten)
        self.service.counts.flush()
        self.crawler.stats.set_value("rfc9309/audit/writer_cpu_seconds", round(writer.cpu, 3))
        if unwritten or writer.error is not None:
            logger.error(
                "RFC 9309 audit trail: %d records written to %s, %d records NOT written (%s)",
                writer.written, writer.path, unwritten, _why(writer.error),
            )  # fmt: skip
        else:
            # the final digest pins the whole trail: kept elsewhere, it shows a rewrite even by the key's holder
            logger.info(
                "RFC 9309 audit trail: %d records written to %s, final digest %s (writer: %.2f s CPU)",
                writer.written, writer.path, writer.last_digest, writer.cpu,
            )  # fmt: skip

    def _fail(self, writer: Writer) -> None:
        """The trail cannot be written: stop the crawl now (once), with a
        finish reason of its own and a failing exit status."""
        if self.failed:
            return
        from .. import compat

        self.failed = True
        logger.error(
            "RFC9309_AUDIT: cannot write the audit trail %s (%s). The crawl stops now (finish reason %s); "
            "%d records not written so far",
            writer.path, _why(writer.error), AUDIT_FAILED, writer.unwritten,
        )  # fmt: skip
        compat.fail_exit_status(self.crawler)
        compat.close_spider(self.crawler, AUDIT_FAILED)

    def _tick(self) -> None:
        """Every second: the per-origin allowed/denied counts so far, as one
        record; and whether the trail still can be written."""
        writer = self._writer
        if writer is not None and writer.error is not None:
            self._fail(writer)
        if self._counts:
            counts, self._counts = self._counts, {}
            self._put({"type": "counts", "at": iso(time.time()), "origins": counts})

    def _put(self, record: Any) -> None:
        writer = self._writer
        if writer is not None:
            writer.put(record)
            if writer.error is not None and not self.failed:
                self._fail(writer)

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
            "chain": [mask_url(url) for url in result.chain],
            "final_url": mask_url(result.url),
            "redirects": result.redirects,
            "status": result.status,
            "outcome": result.outcome,
            "access": result.access.value,
            "error": f"{type(result.error).__name__}: {shorten(mask_text(str(result.error)))}"
            if result.error
            else None,
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
            "governing_url": mask_url(entry.url) if entry.url else None,
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
    def _tally(self, origin: str, denied: bool) -> None:
        """Count one decided request in its origin's ``[allowed, denied]`` (the ``counts`` records)."""
        counts = self._counts.get(origin)
        if counts is None:
            counts = self._counts[origin] = [0, 0]
        counts[1 if denied else 0] += 1

    def decided(
        self, url: str, origin: str, known: Known, decision: Decision, token: str, usage: Usage | None = None
    ) -> None:
        """A request was decided on ``known``: a record when denied (or when
        allowed records are on, with the usage preferences robots.txt states
        when it states any), and the per-origin count either way.  With
        ``RFC9309_AUDIT``'s ``sync`` an allowed request whose record could not be
        written raises ``IgnoreRequest``: it does not go on unrecorded."""
        if decision.allowed and not self.allowed_records:
            self._tally(origin, denied=False)
            return
        rule = decision.rule
        record: dict[str, Any] = {
            "type": "allowed" if decision.allowed else "denied", "at": iso(time.time()), "url": mask_url(url),
            "origin": origin, "verdict": decision.verdict.value, "line": rule.line if rule else None,
            "rule": str(rule) if rule else None, "token": token, "sha256": known.sha256,
            "access": known.entry.access, "fetched_at": iso(known.entry.fetched_at),
        }  # fmt: skip
        if usage:
            record["usage"] = usage.to_dict()
        self._put(record)
        if self.sync and decision.allowed and self.failed:
            self._unrecorded(url)
        self._tally(origin, denied=not decision.allowed)

    def _unrecorded(self, url: str) -> NoReturn:
        """Drop an allowed request whose record is not in the trail (RFC9309_AUDIT's sync)."""
        from scrapy.exceptions import IgnoreRequest

        self.service.counts.inc(DROPPED_AUDIT)
        message = "Dropped: its audit record could not be written (RFC9309_AUDIT's sync)"
        logger.debug("%s: %s", message, mask_url(url), extra={"spider": self.crawler.spider})
        raise IgnoreRequest(message)

    def response_usage(self, url: str, origin: str, usage: dict[str, Any]) -> None:
        """An allowed response came with a ``Content-Usage`` header: its combined
        preferences (robots.txt and header), when allowed records are on."""
        self._put(
            {"type": "response_usage", "at": iso(time.time()), "url": mask_url(url), "origin": origin, "usage": usage}
        )

    def file(
        self, origin: str, kind: FileKind, file: OriginFile, entry: RobotsEntry, result: FetchResult | None
    ) -> None:
        """An origin's tdmrep.json or RSL license took effect: fetched (``result``) or read from the
        store; its body is kept by its SHA-256 beside robots.txt's."""
        if file.sha256 is not None:
            self._keep(file.sha256, entry.body)
        said, final = file.parsed, mask_url(entry.url) if entry.url else None
        own = (
            {"url": final, "rules": len(said)} if kind.key == "tdmrep"
            else {"url": mask_url(file.url), "final_url": final, "contents": len(said), "held": said.held}
        )  # fmt: skip
        self._put(
            {
                "type": kind.key, "at": iso(time.time()), "origin": origin, **own, "access": file.access,
                "status": file.status, "outcome": result.outcome if result is not None else None,
                "stored": result is None, "sha256": file.sha256, "bytes": len(entry.body),
                "diagnostics": [str(d) for d in said.diagnostics[:10]],
                "fetched_at": iso(entry.fetched_at), "expires_at": iso(entry.expires_at),
            }
        )  # fmt: skip

    def usage_decided(
        self,
        url: str,
        origin: str,
        known: Known | None,
        token: str | None,
        action: str,
        stage: str,
        label: str,
        sources: tuple[Source, ...],
    ) -> None:
        """A declared purpose was disallowed: the request ``denied`` (robots.txt),
        or its response ``dropped`` or ``marked`` (its header; or ``unknown``
        with RFC9309_USAGE's "unknown": "deny").  Always recorded; a denied
        request counts as denied in its origin's counts."""
        if action == "denied":
            self._tally(origin, denied=True)
        self._put(
            {
                "type": "usage", "at": iso(time.time()), "url": mask_url(url), "origin": origin, "action": action,
                "stage": stage, "category": label, "sources": [s.to_dict() for s in sources], "token": token,
                "sha256": known.sha256 if known is not None else None,
                "access": known.entry.access if known is not None else None,
                "fetched_at": iso(known.entry.fetched_at) if known is not None else None,
                **({"license": {"url": mask_url(lic.parsed.url), "sha256": lic.sha256}}
                   if known is not None and (lic := known.license) is not None else {}),
            }
        )  # fmt: skip

    def invalid_token(self, url: str, origin: str, message: str) -> None:
        """A request denied because its ``robotstxt_user_agent`` meta names no valid token."""
        self._tally(origin, denied=True)
        self._put(
            {
                "type": "denied", "at": iso(time.time()), "url": mask_url(url), "origin": origin,
                "verdict": "invalid_user_agent", "line": None, "rule": None, "token": None, "sha256": None,
                "access": None, "fetched_at": None, "message": message,
            }
        )  # fmt: skip


def _why(error: BaseException | None) -> str:
    if error is None:
        return "no error"
    return f"{type(error).__name__}: {shorten(str(error))}"


def _rate(rate: tuple[int, float] | None) -> str | None:
    return None if rate is None else f"{rate[0]}/{rate[1]:g}s"
