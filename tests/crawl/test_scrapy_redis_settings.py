"""What a scrapy-redis user sets, and one scrapy-redis crawl inside the test process.

* With scrapy-redis as the scheduler and ``RFC9309_STORAGE`` not set, the
  store is the Redis server scrapy-redis uses (``REDIS_URL``, else
  ``REDIS_HOST``/``REDIS_PORT``/``REDIS_DB``/``REDIS_PARAMS``, as
  ``scrapy_redis.connection`` reads them).  ``RFC9309_STORAGE`` still wins,
  and a crawl on another scheduler is not moved to Redis by a ``REDIS_URL``.
* ``STORAGE_RETRY_SECONDS`` (a constant of the settings module): how soon a
  store lost mid-crawl is tried again.
* A crawl on scrapy-redis's scheduler in this process: scrapy-redis 0.9.1
  warns (``ScrapyDeprecationWarning``) on every request it queues, which
  setup.cfg's ``filterwarnings`` turns into errors for every module but
  scrapy-redis's own; robots.txt lands in the ``REDIS_URL`` server, and a
  request robots.txt denies is queued once and dropped once.
"""

from __future__ import annotations

import pytest_twisted
from scrapy.settings import Settings

from scrapy_rfc9309 import settings as settings_module
from scrapy_rfc9309.settings import Rfc9309Settings
from scrapy_rfc9309.storage import FallbackStorage, MemoryStorage, build_storage
from scrapy_rfc9309.storage.factory import scrapy_redis_url, uses_scrapy_redis
from scrapy_rfc9309.storage.redis import key_of

from .harness import check_accounting, crawl
from .redisd import RedisServer
from .scrapy_redis_cluster import require_scrapy_redis
from .servers import robots

SCHEDULER = "scrapy_redis.scheduler.Scheduler"


def storage_of(**settings) -> str:
    return Rfc9309Settings.from_settings(Settings(settings)).storage


def test_scrapy_redis_crawls_keep_robots_txt_where_their_queue_is():
    assert storage_of(SCHEDULER=SCHEDULER, REDIS_URL="redis://queue.internal:6380/2") == "redis://queue.internal:6380/2"
    # scrapy-redis's own defaults, then its other settings, as scrapy_redis.connection reads them
    assert storage_of(SCHEDULER=SCHEDULER) == "redis://localhost:6379/0"
    assert (
        storage_of(SCHEDULER=SCHEDULER, REDIS_HOST="10.0.0.5", REDIS_PORT=7000, REDIS_DB=3) == "redis://10.0.0.5:7000/3"
    )
    params = {"host": "10.0.0.5", "password": "p@ss word", "db": 1}
    assert storage_of(SCHEDULER=SCHEDULER, REDIS_PARAMS=params) == "redis://:p%40ss%20word@10.0.0.5:6379/1"
    # a REDIS_* setting beats REDIS_PARAMS, as in scrapy-redis
    assert storage_of(SCHEDULER=SCHEDULER, REDIS_PARAMS={"url": "redis://a:1/0"}, REDIS_URL="redis://b:2/0") == (
        "redis://b:2/0"
    )
    assert storage_of(SCHEDULER=SCHEDULER, REDIS_PARAMS={"url": "redis://a:1/4"}) == "redis://a:1/4"


def test_rfc9309_storage_wins_and_other_schedulers_are_left_alone(tmp_path):
    url = "redis://queue.internal:6379/0"
    assert storage_of(SCHEDULER=SCHEDULER, REDIS_URL=url, RFC9309_STORAGE="memory") == "memory"
    assert storage_of(SCHEDULER=SCHEDULER, REDIS_URL=url, RFC9309_STORAGE="redis://other:6379/1") == (
        "redis://other:6379/1"
    )
    # scrapy-redis before JOBDIR: its workers share one queue, so they share one store
    assert storage_of(SCHEDULER=SCHEDULER, REDIS_URL=url, JOBDIR=str(tmp_path)) == url
    # a REDIS_URL for something else (a pipeline) does not move robots.txt to Redis
    assert storage_of(REDIS_URL=url) == "memory"
    assert storage_of(SCHEDULER="scrapy.core.scheduler.Scheduler", REDIS_URL=url) == "memory"
    assert storage_of(SCHEDULER="scrapy.core.scheduler.Scheduler", REDIS_URL=url, JOBDIR=str(tmp_path)).startswith(
        "sqlite://"
    )


def test_a_subclass_of_the_scrapy_redis_scheduler_counts():
    require_scrapy_redis()
    from scrapy_redis.scheduler import Scheduler

    class MyScheduler(Scheduler):
        pass

    assert uses_scrapy_redis(MyScheduler) and uses_scrapy_redis(SCHEDULER)
    assert uses_scrapy_redis("tests.crawl.test_scrapy_redis_settings.OwnScheduler")
    assert scrapy_redis_url(Settings({"SCHEDULER": MyScheduler, "REDIS_URL": "redis://h:1/0"})) == "redis://h:1/0"
    assert not uses_scrapy_redis("scrapy.core.scheduler.Scheduler")
    assert not uses_scrapy_redis("no_such_package.Scheduler")
    assert not uses_scrapy_redis(None)


try:
    from scrapy_redis.scheduler import Scheduler as _Scheduler

    class OwnScheduler(_Scheduler):
        """A project's own scheduler on scrapy-redis's, named by its import path."""

except ImportError:  # pragma: no cover - the test above skips
    pass


def test_the_store_is_tried_again_as_often_as_the_constant_says(monkeypatch):
    default = Rfc9309Settings.from_settings({})
    assert default.storage_retry_seconds == 30.0
    assert FallbackStorage(build_storage(default)).retry_after == 30.0
    assert FallbackStorage(MemoryStorage()).retry_after == 30.0
    monkeypatch.setattr(settings_module, "STORAGE_RETRY_SECONDS", 2.5)
    config = Rfc9309Settings.from_settings({})
    assert config.storage_retry_seconds == 2.5
    assert FallbackStorage(build_storage(config)).retry_after == 2.5


@pytest_twisted.ensureDeferred
async def test_a_scrapy_redis_crawl_in_this_process(servers, tmp_path):
    require_scrapy_redis()
    redis = RedisServer(tmp_path / "redis")
    try:
        site = servers("127.0.0.2")
        site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
        settings = {
            "SCHEDULER": SCHEDULER,
            "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
            "SCHEDULER_PERSIST": True,  # what a denied request would leave queued stays visible
            "REDIS_URL": redis.url,
        }
        urls = [site.url("/a"), site.url("/b"), site.url("/private/c"), site.url("/private/d")]
        result = await crawl(urls, settings)
        client = redis.client()
        stored = client.keys("rfc9309:robots:*")
        queued = client.zcard("probe:requests")
    finally:
        redis.stop()

    assert stored == [key_of("rfc9309:", "robots", site.origin).encode()]  # the store is REDIS_URL's server
    assert site.count("/robots.txt") == 1 and sorted(site.paths()) == ["/a", "/b", "/robots.txt"]
    for url in urls[2:]:
        assert (
            result.outcome(url).message == "Forbidden by robots.txt: disallowed_explicit (line 2: Disallow: /private)"
        )
    # every request went through scrapy-redis's queue once, and none was put back
    assert result.stats["scheduler/enqueued/redis"] == result.stats["scheduler/dequeued/redis"] == len(urls)
    assert queued == 0
    check_accounting(result)
