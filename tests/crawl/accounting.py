"""The stats of every crawl add up (issue 30): checked on every crawl the tests run.

:func:`stats_problems` is the invariant of docs/middleware.md ("Stats"): every
request the middleware checks ends in exactly one of allowed / denied /
dropped / errors; every request that consulted robots.txt is one cache hit or
miss; every fetch ends in one final class and one access result; Scrapy's own
``robotstxt/*`` keys agree with ours.

:class:`Watch` collects every crawler of this process that closes its spider
while it watches: a receiver of ``spider_closed`` for *any* sender (PyDispatcher's
``Any``, which every :class:`scrapy.signalmanager.SignalManager` sends through),
so a crawl made by ``harness.crawl``, by a test's own ``Runner`` or by an
add-on is seen alike.  ``tests/crawl/conftest.py`` watches the call of every
test and fails it (:class:`AccountingError`) when a crawl's stats do not add
up.  The stats are read once the test is over, when every crawl it made has
flushed its counts (``Counts.flush`` runs in the middleware's own
``spider_closed`` receiver).

A crawl in a process of its own is checked there and reported here:

* ``scrapy crawl`` (the example project, the one-spider projects the tests
  write): :data:`SCRAPY_ARGS` enables :class:`AccountingExtension`, which logs
  :data:`FAILED_MARK` at ERROR and makes the command exit with status 1 when
  the stats do not add up; the helpers that run such a command pass its output
  to :func:`check_output` (with :func:`subprocess_env`, this directory on the
  subprocess's ``PYTHONPATH``);
* the worker scripts (``cluster_worker.py``, ``scrapy_redis_worker.py``) put
  :func:`check_crawler`'s answer in their report, and the tests read reports
  with :func:`read_report`, which fails on a report without it.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pydispatch import dispatcher
from scrapy import signals

logger = logging.getLogger(__name__)

PREFIX = "rfc9309/"
#: this directory: on a subprocess's PYTHONPATH, this module is ``accounting`` there
HERE = Path(__file__).resolve().parent
#: the import path of :class:`AccountingExtension` in a subprocess (see :func:`subprocess_env`)
EXTENSION = "accounting.AccountingExtension"
#: ``scrapy crawl`` arguments that enable it (a later ``-s EXTENSIONS=...`` would replace them)
SCRAPY_ARGS = ("-s", "EXTENSIONS=" + json.dumps({EXTENSION: 0}))
#: the key of a worker script's report that holds :func:`check_crawler`'s answer
REPORT_KEY = "accounting"
#: the start of the ERROR line a subprocess crawl logs when its stats do not add up
FAILED_MARK = "rfc9309 accounting: the stats do not add up"
#: a fetch stat that is not the final class of a fetch
NOT_TERMINAL = ("count", "3xx", "truncated", "bytes_truncated")


class AccountingError(AssertionError):
    """A crawl's stats do not add up."""


def stats_problems(stats: dict[str, Any], builtin_too: bool = False) -> list[str]:
    """What does not add up in a crawl's stats (empty when all does).
    ``builtin_too``: Scrapy's own RobotsTxtMiddleware ran in the crawl as well,
    writing ``robotstxt/*`` keys of its own."""
    rfc = {k[len(PREFIX) :]: v for k, v in stats.items() if k.startswith(PREFIX)}
    if not rfc:
        return []  # the plugin was not in this crawl (Scrapy's own middleware, a switched-off plugin)
    problems = []

    def total(prefix: str) -> int:
        return sum(v for k, v in rfc.items() if k.startswith(prefix))

    def check(name: str, left: int, right: int) -> None:
        if left != right:
            problems.append(f"{name}: {left} != {right}")

    checked = rfc.get("requests/checked", 0)
    allowed, denied = total("requests/allowed/"), total("requests/denied/")
    dropped, errors = total("requests/dropped/"), rfc.get("requests/errors", 0)
    check("requests/checked = allowed + denied + dropped + errors", checked, allowed + denied + dropped + errors)
    consulted = checked - rfc.get("requests/allowed/allowed_not_obeyed", 0)
    consulted -= rfc.get("requests/denied/invalid_user_agent", 0)
    cache = rfc.get("cache/hits", 0) + rfc.get("cache/misses", 0)
    check("cache/hits + cache/misses = requests that consulted robots.txt", cache, consulted)
    fetches = rfc.get("fetch/count", 0)
    final = sum(v for k, v in rfc.items() if k.startswith("fetch/") and k[len("fetch/") :] not in NOT_TERMINAL)
    check("fetch/count = fetches by final class", fetches, final)
    check("fetch/count = access/*", fetches, total("access/"))
    if not builtin_too:
        check("robotstxt/request_count = fetch/count", stats.get("robotstxt/request_count", 0), fetches)
        robots_denied = denied - rfc.get("requests/denied/usage_preferences", 0)
        check("robotstxt/forbidden = requests robots.txt denied", stats.get("robotstxt/forbidden", 0), robots_denied)
    if problems:
        problems.append(f"stats: {dict(sorted(rfc.items()))}")
    return problems


def builtin_too(crawler: Any) -> bool:
    """Whether Scrapy's own RobotsTxtMiddleware runs in the crawl (while its engine is there)."""
    engine = getattr(crawler, "engine", None)
    middlewares = engine.downloader.middleware.middlewares if engine is not None else ()
    return any(type(m).__module__ == "scrapy.downloadermiddlewares.robotstxt" for m in middlewares)


def check_crawler(crawler: Any, builtin: bool | None = None) -> list[str]:
    """:func:`stats_problems` of a crawler's stats."""
    return stats_problems(crawler.stats.get_stats(), builtin_too(crawler) if builtin is None else builtin)


class Watch:
    """Every crawler that closes its spider in this process while watched."""

    def __init__(self) -> None:
        #: crawler -> whether Scrapy's own RobotsTxtMiddleware ran in it too
        self.crawlers: dict[Any, bool] = {}

    def _closed(self, sender: Any = None, **kwargs: Any) -> None:
        if getattr(sender, "stats", None) is not None:
            self.crawlers[sender] = builtin_too(sender)

    def __enter__(self) -> Watch:
        dispatcher.connect(self._closed, signal=signals.spider_closed, sender=dispatcher.Any, weak=False)
        return self

    def __exit__(self, *exc: object) -> None:
        dispatcher.disconnect(self._closed, signal=signals.spider_closed, sender=dispatcher.Any, weak=False)

    def assert_added_up(self) -> None:
        """Raise :class:`AccountingError` naming each crawl whose stats do not add up."""
        failed = []
        for crawler, builtin in self.crawlers.items():
            problems = check_crawler(crawler, builtin)
            if problems:
                name = getattr(crawler.spidercls, "name", crawler.spidercls)
                failed.append(f"crawl of spider {name!r}:\n  " + "\n  ".join(problems))
        if failed:
            raise AccountingError(f"{FAILED_MARK}\n" + "\n".join(failed))


class AccountingExtension:
    """For ``scrapy crawl`` in a subprocess: check the stats once the engine has
    stopped (the middleware flushed its counts at ``spider_closed``); when they
    do not add up, log :data:`FAILED_MARK` at ERROR and exit with status 1 (the
    crawler's ``spider`` cleared, as ``compat.fail_exit_status`` does)."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.builtin = False
        crawler.signals.connect(self._closed, signal=signals.spider_closed)
        crawler.signals.connect(self._stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Any) -> AccountingExtension:
        return cls(crawler)

    def _closed(self) -> None:
        self.builtin = builtin_too(self.crawler)

    def _stopped(self) -> None:
        problems = check_crawler(self.crawler, self.builtin)
        if problems:
            logger.error("%s:\n  %s", FAILED_MARK, "\n  ".join(problems))
            self.crawler.spider = None


def subprocess_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with this directory first on PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    return env


def check_output(*texts: str | None) -> None:
    """Raise :class:`AccountingError` when a subprocess crawl said its stats do not add up."""
    for text in texts:
        if text and FAILED_MARK in text:
            start = text.index(FAILED_MARK)
            raise AccountingError(text[start : start + 3000])


def read_report(path: Path | str) -> dict[str, Any]:
    """A worker script's JSON report; :class:`AccountingError` when its crawl's
    stats did not add up, or when it does not say (a worker that skipped the check)."""
    report: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    if REPORT_KEY not in report:
        raise AccountingError(f"{path}: the worker's report has no {REPORT_KEY!r} (it did not check its stats)")
    if report[REPORT_KEY]:
        raise AccountingError(f"{FAILED_MARK} ({path}):\n  " + "\n  ".join(report[REPORT_KEY]))
    return report
