"""The demo on a scrapy-redis cluster: push its start URLs, print its table.

    python -m demo_project.cluster push   [--redis-url redis://127.0.0.1:6379/0]
    python -m demo_project.cluster report [--redis-url redis://127.0.0.1:6379/0]

Run from ``example_project/`` while the demo site is served on its own
(``python -m demo_project.demo_site``); the workers are ``scrapy crawl
demo_cluster`` (:mod:`demo_project.spiders.demo_cluster`).  The recipe, step
by step, is in docs/storage.md.

What lives in Redis (one server for everything, as scrapy-redis users run it):

* scrapy-redis's keys: ``demo_cluster:start_urls`` (the list ``push`` fills),
  ``demo_cluster:requests`` (the shared queue), ``demo_cluster:dupefilter``;
* the plugin's store, under ``demo_cluster:rfc9309:`` (``robots:{<origin>}``,
  ``lock:{<origin>}``, ``pace:{<origin>}``);
* the demo's own record of what became of each page, the hash
  ``demo_cluster:outcomes`` (page URL -> JSON), which every worker writes and
  :func:`cluster_table` reads, so the table of the whole cluster can be
  printed by any worker, or by ``report``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
from collections.abc import Mapping
from typing import Any

from scrapy_rfc9309 import RobotsTxt, parse
from scrapy_rfc9309.robots.access import Access, policy_for
from scrapy_rfc9309.settings import Rfc9309Settings
from scrapy_rfc9309.storage import StorageUnavailable
from scrapy_rfc9309.storage.redis import RedisStorage, key_of

from .demo_site import ONE_HOST, DemoSite, plan
from .report import demo_table
from .table import PageRow

SPIDER = "demo_cluster"
START_URLS_KEY = f"{SPIDER}:start_urls"
OUTCOMES_KEY = f"{SPIDER}:outcomes"
REDIS_URL = "redis://127.0.0.1:6379/0"


def worker_name() -> str:
    """How a worker is named in the table: host and process id."""
    return f"{socket.gethostname()}/{os.getpid()}"


def start_messages() -> list[str]:
    """One scrapy-redis start message (JSON) per page of the demo."""
    messages = []
    for origin in plan():
        if origin.spider not in (None, SPIDER):
            continue  # the one-process demo's own origins
        for path in origin.pages:
            meta: dict[str, Any] = {"demo_origin": origin.name, "demo_path": path}
            if ONE_HOST:
                meta["download_slot"] = origin.origin  # as in the one-process demo
            messages.append(json.dumps({"url": origin.url(path), "meta": meta}))
    return messages


def push(client: Any, prefix: str) -> int:
    """Forget the last run (its outcomes, scrapy-redis's queue and dupefilter,
    the stored robots.txt of the demo origins, under the plugin's key
    ``prefix``), then push the start URLs."""
    stale = [OUTCOMES_KEY, f"{SPIDER}:requests", f"{SPIDER}:dupefilter", START_URLS_KEY]
    stale += [key_of(prefix, kind, origin.origin) for origin in plan() for kind in ("robots", "lock", "pace")]
    client.delete(*stale)
    messages = start_messages()
    client.rpush(START_URLS_KEY, *messages)
    return len(messages)


def record(client: Any, url: str, origin: str, row: PageRow) -> None:
    """What became of one page, for the cluster's table (a worker calls it)."""
    entry = {"origin": origin, "path": row.path, "outcome": row.outcome, "reason": row.reason, "worker": worker_name()}
    client.hset(OUTCOMES_KEY, url, json.dumps(entry))


async def cluster_table(config: Rfc9309Settings) -> str:
    """The demo's table for the whole cluster: the page outcomes every worker
    recorded, the robots.txt results in the plugin's store (read with the
    plugin's own Redis store), and what the demo site's servers saw.
    ``OSError`` when the demo site is not served."""
    import redis.asyncio

    site = DemoSite.fetch()
    store = RedisStorage(config.storage, prefix=config.redis_prefix)
    await store.open()
    try:
        entries = {origin.origin: await store.get(origin.origin) for origin in site.origins}
    finally:
        await store.close()
    client = redis.asyncio.Redis.from_url(config.storage)
    try:
        outcomes = await client.hgetall(OUTCOMES_KEY)
    finally:
        await client.aclose()
    robots: dict[str, tuple[RobotsTxt, str]] = {}
    floors: dict[str, float | None] = {}
    for origin, entry in entries.items():
        if entry is None:
            continue
        policy = config.for_origin(origin)
        parsed = parse(entry.body, entry.content_type, config.max_bytes) if entry.access == "success" else None
        governing = policy_for(Access(entry.access), policy.unreachable, parsed)
        robots[origin] = (governing, policy.user_agent)
        delay = governing.min_delay(policy.user_agent) if config.crawl_delay else None
        floors[origin] = min(delay, config.max_crawl_delay) if delay else None
    rows: dict[str, list[PageRow]] = {}
    by_worker: dict[str, dict[str, int]] = {}
    for raw in outcomes.values():
        seen = json.loads(raw)
        rows.setdefault(seen["origin"], []).append(PageRow(seen["path"], seen["outcome"], seen["reason"]))
        counts = by_worker.setdefault(seen["worker"], {})
        counts[seen["origin"]] = counts.get(seen["origin"], 0) + 1
    return demo_table(site, config, robots, floors, rows, cluster_lines(site, floors, by_worker), spider=SPIDER)


def cluster_lines(
    site: DemoSite, floors: Mapping[str, float | None], by_worker: dict[str, dict[str, int]]
) -> list[str]:
    """Which worker did what: pages per worker, and for each Crawl-delay origin
    how many workers shared it, and the smallest gap its server saw."""
    lines = [
        f"workers: {len(by_worker)}; pages per worker: "
        + ", ".join(f"{worker} {sum(counts.values())}" for worker, counts in sorted(by_worker.items()))
    ]
    for origin in site.origins:
        floor = floors.get(origin.origin)
        if not floor:
            continue
        workers = sum(1 for counts in by_worker.values() if counts.get(origin.name))
        gap = site.min_gap(origin.name)
        shown = f"{gap:.2f} s" if gap is not None else "-"
        lines.append(
            f"Crawl-delay {floor:g} s of {origin.origin.split('://', 1)[1]}: its pages came from {workers} "
            f"worker(s), at least {shown} apart at the server"
        )
    return lines


def _config(redis_url: str | None) -> Rfc9309Settings:
    """The demo_cluster spider's RFC 9309 settings, as its workers read them."""
    from scrapy.utils.project import get_project_settings

    from .spiders.demo_cluster import DemoClusterSpider

    settings = get_project_settings()
    settings.setdict(DemoClusterSpider.custom_settings or {}, priority="spider")
    if redis_url:
        settings.set("REDIS_URL", redis_url, priority="cmdline")
    return Rfc9309Settings.from_settings(settings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo_project.cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["push", "report"])
    parser.add_argument("--redis-url", help=f"the server of scrapy-redis and of the store (default {REDIS_URL})")
    args = parser.parse_args(argv)
    config = _config(args.redis_url)
    if args.action == "push":
        import redis

        count = push(redis.Redis.from_url(config.storage), config.redis_prefix)
        print(f"pushed {count} start URLs to {START_URLS_KEY} on {config.storage}")
        return 0
    try:
        print(asyncio.run(cluster_table(config)), end="")
    except OSError as exc:
        print(f"the demo site does not answer ({exc}): start it with python -m demo_project.demo_site", file=sys.stderr)
        return 1
    except StorageUnavailable as exc:
        print(f"Redis does not answer ({exc})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
