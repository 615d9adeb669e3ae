"""What a stored origin costs: bytes of store memory (Redis) or file (SQLite) per origin.

Over the shared corpus (``../shared/corpus/robots/``, one real robots.txt per
site), each body cut as the fetcher keeps it (``RFC9309_MAX_BYTES``, 512,000
bytes), every site stored as one origin with a 200 and a 24-hour expiry:

* ``redis``: a ``redis-server`` started for the run (``--redis-url`` to use
  another, which is FLUSHed): ``INFO memory`` ``used_memory`` before and
  after, and the sum of ``MEMORY USAGE`` over the keys;
* ``sqlite``: the file's size after the store closed.

Each twice: in the layout before compact entries (``before``: a Redis hash
per origin with the body in it, a SQLite row per origin with the body; the
layout of scrapy-rfc9309 up to schema 1, written here as it wrote it) and
with this version's stores (``after``).  With ``--commands``, the Redis
commands a new origin and a fresh one cost are counted too (``INFO
commandstats``).

``python benchmarks/store_size.py [--limit N] [--redis-url redis://...]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from scrapy_rfc9309.robots.bodies import cut_body  # noqa: E402
from scrapy_rfc9309.storage import RobotsEntry  # noqa: E402
from scrapy_rfc9309.storage.redis import RedisStorage  # noqa: E402
from scrapy_rfc9309.storage.sqlite import SqliteStorage  # noqa: E402

CORPUS = HERE.parent.parent / "shared" / "corpus" / "robots"
MAX_BYTES = 512_000
DAY = 86_400.0
KEEP_MS = int(30 * DAY * 1000)


def corpus(limit: int | None) -> list[tuple[str, RobotsEntry]]:
    """``(origin, entry)`` per corpus file, as the robots service would store it."""
    if not CORPUS.is_dir():
        sys.exit(f"no corpus at {CORPUS}")
    now = time.time()
    found = []
    for path in sorted(CORPUS.iterdir())[:limit]:
        origin = f"https://{path.name}:443"
        body = cut_body(path.read_bytes(), MAX_BYTES)
        found.append((origin, RobotsEntry("success", 200, body, "text/plain", now, now + DAY, origin + "/robots.txt")))
    return found


# -- the layout before (scrapy-rfc9309 schema 1 / entry version 1) --------------------------------
def redis_before(client, stored: list[tuple[str, RobotsEntry]]) -> None:
    pipe = client.pipeline(transaction=False)
    for origin, e in stored:
        key = f"rfc9309:robots:{origin}"
        fields = {
            "v": b"1",
            "access": e.access,
            "status": str(e.status),
            "body": e.body,
            "fetched_at": repr(e.fetched_at),
            "expires_at": repr(e.expires_at),
            "url": e.url,
            "content_type": e.content_type or "",
        }
        pipe.hset(key, mapping=fields)
        pipe.pexpire(key, KEEP_MS)
    pipe.execute()


def sqlite_before(path: str, stored: list[tuple[str, RobotsEntry]]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE robots (origin TEXT PRIMARY KEY, access TEXT NOT NULL, status INTEGER, body BLOB NOT NULL,"
        " content_type TEXT, fetched_at REAL NOT NULL, expires_at REAL NOT NULL, url TEXT NOT NULL) WITHOUT ROWID"
    )
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO robots VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(o, e.access, e.status, e.body, e.content_type, e.fetched_at, e.expires_at, e.url) for o, e in stored],
    )
    conn.execute("COMMIT")
    conn.close()


# -- this version ----------------------------------------------------------------------------------
async def redis_after(url: str, stored: list[tuple[str, RobotsEntry]]) -> None:
    store = RedisStorage(url)
    await store.open()
    try:
        for i in range(0, len(stored), 200):
            await asyncio.gather(*(store.put(origin, entry) for origin, entry in stored[i : i + 200]))
    finally:
        await store.close()


async def sqlite_after(path: str, stored: list[tuple[str, RobotsEntry]]) -> None:
    store = SqliteStorage(path)
    await store.open()
    try:
        await asyncio.gather(*(store.put(origin, entry) for origin, entry in stored))
    finally:
        await store.close()


async def redis_commands(url: str, client, stored: list[tuple[str, RobotsEntry]]) -> tuple[dict, dict]:
    """Commands the server ran per origin: a new origin (look up, store), then a fresh one (look up)."""
    store = RedisStorage(url, prefix="cost:")
    await store.open()
    try:
        client.config_resetstat()
        for origin, entry in stored:
            _, lease = await store.lookup(origin, time.time())
            await store.store(origin, entry, lease)
        new = commandstats(client)
        client.config_resetstat()
        for origin, _ in stored:
            await store.lookup(origin, time.time())
        fresh = commandstats(client)
    finally:
        await store.close()
    return new, fresh


def commandstats(client) -> dict[str, int]:
    return {k.removeprefix("cmdstat_"): v["calls"] for k, v in client.info("commandstats").items()}


# -- measuring -------------------------------------------------------------------------------------
def measure_redis(client, fill) -> tuple[int, int]:
    """``(used_memory delta, sum of MEMORY USAGE)`` of what ``fill()`` stored."""
    client.flushall()
    time.sleep(0.2)
    before = client.info("memory")["used_memory"]
    fill()
    after = client.info("memory")["used_memory"]
    usage = 0
    for key in client.scan_iter(count=1000):
        usage += client.memory_usage(key, samples=0) or 0
    return after - before, usage


def start_redis(workdir: str) -> tuple[subprocess.Popen, str]:
    if shutil.which("redis-server") is None:
        sys.exit("redis-server not found (apt-get install redis-server), or give --redis-url")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", workdir],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.05)
    return proc, f"redis://127.0.0.1:{port}/0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N corpus files")
    parser.add_argument("--redis-url", default=None, help="a Redis to use (its database is FLUSHed)")
    parser.add_argument("--commands", action="store_true", help="count the Redis commands per origin too")
    args = parser.parse_args()

    import redis

    stored = corpus(args.limit)
    n = len(stored)
    bodies = sum(len(e.body) for _, e in stored)
    distinct = len({e.body for _, e in stored})
    print(f"{n} origins, {distinct} distinct bodies, mean body {bodies / n:,.0f} bytes")
    workdir = tempfile.mkdtemp(prefix="store-size-")
    proc = None
    url = args.redis_url
    if url is None:
        proc, url = start_redis(workdir)
    client = redis.Redis.from_url(url)
    rows = []
    try:
        version = client.info("server")["redis_version"]
        delta, usage = measure_redis(client, lambda: redis_before(client, stored))
        rows.append(("Redis " + version, "before", delta, usage))
        delta, usage = measure_redis(client, lambda: asyncio.run(redis_after(url, stored)))
        rows.append(("Redis " + version, "after", delta, usage))
        keys = client.dbsize()
        if args.commands:
            client.flushall()
            new, fresh = asyncio.run(redis_commands(url, client, stored))
        client.flushall()
    finally:
        client.close()
        if proc is not None:
            proc.terminate()
            proc.wait()
    for label, fill in (("before", sqlite_before), ("after", None)):
        path = os.path.join(workdir, f"{label}.sqlite")
        if fill is not None:
            fill(path, stored)
        else:
            asyncio.run(sqlite_after(path, stored))
        size = sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))
        rows.append((f"SQLite {sqlite3.sqlite_version}", label, size, None))
    shutil.rmtree(workdir, ignore_errors=True)

    print(f"\n| store | layout | bytes per origin | of which MEMORY USAGE of the keys | total for {n} origins |")
    print("|---|---|---:|---:|---:|")
    for store, label, total, usage in rows:
        per_key = f"{usage / n:,.0f}" if usage is not None else "-"
        print(f"| {store} | {label} | {total / n:,.0f} | {per_key} | {total / 1e6:.1f} MB |")
    print(f"\nRedis keys after: {keys} ({n} entries, {keys - n} bodies)")
    if args.commands:
        for what, counts in (("new origin (lookup + store)", new), ("fresh origin (lookup)", fresh)):
            per = {k: round(v / n, 2) for k, v in sorted(counts.items()) if k not in ("config|resetstat", "info")}
            print(f"commands per {what}: {per}")


if __name__ == "__main__":
    main()
