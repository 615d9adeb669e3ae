"""The memory storage and the body helpers of the fetch (no crawl)."""

from __future__ import annotations

import gzip
import time
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309.robots.bodies import COUNT_LIMIT, MAX_MEMBERS, ContentDecodingError, cut_body, decode_content
from scrapy_rfc9309.storage import LruDict, MemoryStorage, RobotsEntry


def _run(coro):
    """Drive a coroutine that never really waits (the memory backend's)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the coroutine waited for something")


def test_lru_dict_evicts_the_least_recently_used():
    evicted = []
    lru = LruDict(2, on_evict=evicted.append)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # a is now the most recent
    lru.put("c", 3)
    assert evicted == ["b"]
    assert "b" not in lru and lru.peek("a") == 1 and len(lru) == 2
    lru.peek("c")  # peek does not refresh
    lru.put("d", 4)
    assert evicted == ["b", "a"]


def test_memory_storage_round_trip_and_bound():
    async def scenario():
        storage = MemoryStorage(max_origins=2)
        await storage.open()
        entry = RobotsEntry("success", 200, b"User-agent: *\n", "text/plain", 1.0, 2.0, "http://a/robots.txt")
        await storage.put("http://a:80", entry)
        await storage.put("http://b:80", entry)
        await storage.put("http://c:80", entry)
        got = [await storage.get(o) for o in ("http://a:80", "http://b:80", "http://c:80")]
        await storage.close()
        return got, len(storage)

    got, size = _run(scenario())
    assert got[0] is None and got[1] is not None and got[2] is not None
    assert size == 2


def test_entry_freshness():
    entry = RobotsEntry("unavailable", 404, fetched_at=100.0, expires_at=200.0)
    assert entry.is_fresh(150.0) and not entry.is_fresh(200.0)


def test_decode_gzip_deflate_and_layers():
    text = b"User-agent: *\nDisallow: /x\n"
    assert decode_content(gzip.compress(text), [b"gzip"], 1000) == (text, len(text))
    assert decode_content(gzip.compress(text), [b"x-gzip"], 1000)[0] == text
    assert decode_content(zlib.compress(text), [b"deflate"], 1000)[0] == text
    raw = zlib.compressobj(wbits=-15)
    assert decode_content(raw.compress(text) + raw.flush(), [b"deflate"], 1000)[0] == text
    layered = gzip.compress(zlib.compress(text))
    assert decode_content(layered, [b"deflate, gzip"], 1000)[0] == text
    assert decode_content(layered, [b"deflate", b"gzip"], 1000)[0] == text
    assert decode_content(text, [b"identity"], 1000)[0] == text
    # two gzip members, as `cat a.gz b.gz` makes
    assert decode_content(gzip.compress(b"a\n") + gzip.compress(b"b\n"), [b"gzip"], 1000)[0] == b"a\nb\n"


def test_decode_is_bounded_and_counts_what_it_cut():
    near = gzip.compress(b"#" * (100_000 + COUNT_LIMIT))
    body, total = decode_content(near, [b"gzip"], 100_000)
    assert 100_000 < len(body) <= 100_001
    assert total == 100_000 + COUNT_LIMIT  # all of it: within the count's reach


def test_a_bomb_is_counted_only_a_little_past_the_limit():
    # Counting what a bomb would decode to is decoding it, on the crawl's loop
    # (64 MiB: about 150 ms): the count stops COUNT_LIMIT bytes past the limit,
    # a lower bound ("at least N bytes" in the log line and the stats).
    bomb = gzip.compress(b"#" * 5_000_000)
    started = time.process_time()
    body, total = decode_content(bomb, [b"gzip"], 100_000)
    took = time.process_time() - started
    assert 100_000 < len(body) <= 100_001
    assert total == 100_001 + COUNT_LIMIT < 5_000_000
    assert took < 0.1  # about 1 ms; the bound only catches decoding the whole bomb again


def test_a_body_of_many_members_is_refused_at_once():
    # 28,000 empty gzip members in 560 KB: each member costs a decoder, and the
    # rest of the body was copied once per member (200 ms on the loop)
    many = gzip.compress(b"") * 28_000
    started = time.process_time()
    with pytest.raises(ContentDecodingError, match=f"more than {MAX_MEMBERS} compressed members"):
        decode_content(many, [b"gzip"], 512_000)
    assert time.process_time() - started < 0.05
    # as many as a real server concatenates decode as before
    few = b"".join(gzip.compress(b"Disallow: /%d\n" % i) for i in range(MAX_MEMBERS))
    assert decode_content(few, [b"gzip"], 512_000)[0] == b"".join(b"Disallow: /%d\n" % i for i in range(MAX_MEMBERS))


def test_a_cut_stream_decodes_to_what_arrived():
    packed = gzip.compress(b"".join(b"line %d\n" % i for i in range(50_000)))
    body, _ = decode_content(packed[: len(packed) // 2], [b"gzip"], 10_000_000)
    assert body.startswith(b"line 0\nline 1\n") and len(body) > 1000


@pytest.mark.parametrize(("body", "coding"), [(b"not gzip at all", b"gzip"), (b"abc", b"br"), (b"abc", b"zstd")])
def test_undecodable_bodies_raise(body, coding):
    with pytest.raises(ContentDecodingError):
        decode_content(body, [coding], 1000)


def test_cut_body_keeps_whole_utf8_characters():
    text = ("é" * 10).encode()  # 2 bytes each
    assert cut_body(text, 5) == ("é" * 2).encode()
    assert cut_body(text, 6) == ("é" * 3).encode()
    assert cut_body(b"abc", 5) == b"abc"
    assert cut_body("a€".encode(), 3) == b"a"  # 3-byte character cut after 2


@settings(deadline=None)  # a shared CI machine may pause any one example
@given(st.text(), st.integers(min_value=0, max_value=64))
def test_cut_body_is_a_valid_utf8_prefix(text, limit):
    data = text.encode("utf-8")
    cut = cut_body(data, limit)
    assert data.startswith(cut)
    assert len(cut) <= max(limit, 0) or len(data) <= limit
    cut.decode("utf-8")  # never splits a character
    assert len(cut) >= min(len(data), limit) - 3
