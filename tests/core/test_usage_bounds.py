"""Usage preferences stay cheap and right on hostile input (issue 30, items 1 and 5).

A robots.txt of thousands of usage lines (identical, distinct paths, distinct
wordings of one path, Content-Signal lines, wildcards, mixes) costs a request
what a plain file does, and what a request carries (its provenance) is
bounded; a Content-Usage header longer than the plugin parses never turns a
clear ``n`` into unknown.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from scrapy_rfc9309 import RobotsTxt
from scrapy_rfc9309.robots.usage import (
    MAX_HEADER_BYTES,
    MAX_SOURCES,
    UNKNOWN,
    Source,
    Usage,
    combine,
    from_header,
    usage_for,
)

URL = "https://example.com"
TOKENS = ("examplebot",)
BIG = 4_000_000  # parse limit for these tests: the shapes at their full size


def shape(name: str, n: int) -> str:
    """A robots.txt of ``n`` usage lines of one hostile shape."""
    head = "User-agent: *\nDisallow: /private/\n"
    if name == "identical":
        return head + "Content-Usage: train-ai=n\n" * n
    if name == "distinct_paths":  # the attacker picks distinct rules
        return head + "".join(f"Content-Usage: /p{i} train-ai={'ny'[i % 2]}\n" for i in range(n))
    if name == "one_path_many_wordings":  # distinct lines, one path, one meaning
        return head + "".join(f"Content-Usage: /page/ train-ai=n;v={i}\n" for i in range(n))
    if name == "signals":
        return head + "Content-Signal: search=yes, ai-train=no\n" * n
    if name == "distinct_signals":
        return "".join(f"Content-Signal: ai-train=no, k{i}=yes\n" for i in range(n)) + head
    if name == "wildcards":
        return head + "".join(f"Content-Usage: /*x{i}y train-ai=n\n" for i in range(n))
    if name == "prefix_chain":  # every length of one literal: a long path matches them all
        return head + "".join(f"Content-Usage: /{'a' * (i % 700 + 1)}{i // 700 or ''} search=n\n" for i in range(n))
    if name == "mix":
        parts = [
            "Content-Signal: ai-train=no\n" * (n // 4),
            head,
            "Content-Usage: train-ai=n\n" * (n // 4),
            "".join(f"Content-Usage: /q{i}/ search={'yn'[i % 2]}\n" for i in range(n // 4)),
            "".join(f"Content-Usage: /*.x{i}$ train-ai=y\n" for i in range(n // 4)),
        ]
        return "".join(parts)
    raise AssertionError(name)


SHAPES = [
    "identical",
    "distinct_paths",
    "one_path_many_wordings",
    "signals",
    "distinct_signals",
    "wildcards",
    "prefix_chain",
    "mix",
]


def paths(name: str) -> list[str]:
    """Paths a crawl of the site asks about: each once, matching or not."""
    if name == "prefix_chain":
        return [f"/{'a' * 1500}{i}" for i in range(50)] + [f"/b{i}" for i in range(50)]
    return [f"/p{i}x" for i in range(0, 100, 3)] + [f"/page/{i}" for i in range(30)] + [f"/z{i}.x7" for i in range(30)]


def request_work(robots: RobotsTxt, path: str) -> dict[str, Any]:
    """What the middleware does per allowed request with usage preferences."""
    usage = usage_for(robots, URL + path, TOKENS, allowed=True)
    usage.denies(("train-ai",))
    return usage.to_dict()


def per_request(robots: RobotsTxt, asked: list[str], budget: float = 1.0) -> float:
    """Process time per request (the best of 5 passes over ``asked``; a pass
    stops early once it has used ``budget`` seconds, so a slow code fails fast)."""
    start = time.process_time()
    for path in asked:  # the first answers are made once: not what a request costs
        request_work(robots, path)
        if time.process_time() - start > budget:
            break
    best = float("inf")
    for _ in range(5):
        start, calls = time.process_time(), 0
        for _ in range(20):
            for path in asked:
                request_work(robots, path)
                calls += 1
                if time.process_time() - start > budget:
                    break
            else:
                continue
            break
        best = min(best, (time.process_time() - start) / calls)
    return best


@pytest.mark.parametrize("name", SHAPES)
def test_request_cost_does_not_grow_with_the_file(name: str) -> None:
    small = RobotsTxt.parse(shape(name, 1_000), max_bytes=BIG)
    large = RobotsTxt.parse(shape(name, 20_000), max_bytes=BIG)
    asked = paths(name)
    small_cost, large_cost = per_request(small, asked), per_request(large, asked)
    # generous: the same work is expected (a few look-ups per request)
    assert large_cost < 2 * small_cost + 5e-6, (name, small_cost, large_cost)


@pytest.mark.parametrize("name", SHAPES)
def test_provenance_is_bounded(name: str) -> None:
    robots = RobotsTxt.parse(shape(name, 20_000), max_bytes=BIG)
    for path in paths(name):
        usage = usage_for(robots, URL + path, TOKENS, allowed=True)
        carried = json.dumps(usage.to_dict())
        assert len(carried) < 4_000, (name, path, len(carried))
        assert all(len(usage.sources[c]) <= MAX_SOURCES for c in usage)


def test_identical_lines_are_one_statement() -> None:
    robots = RobotsTxt.parse(shape("identical", 19_690))
    usage = robots.usage(URL + "/a", "examplebot")
    assert usage["train-ai"] is False
    assert usage.sources["train-ai"] == (Source("robots.txt", 3, "Content-Usage: train-ai=n", 19_689),)
    assert str(usage.sources["train-ai"][0]) == (
        "robots.txt line 3: Content-Usage: train-ai=n (repeated 19,689 more times)"
    )
    assert usage.to_dict()["train-ai"]["sources"] == [
        {"origin": "robots.txt", "line": 3, "text": "Content-Usage: train-ai=n", "repeats": 19_689}
    ]
    # 18,000 Content-Signal lines, the same
    usage = RobotsTxt.parse(shape("signals", 18_000), max_bytes=BIG).usage(URL + "/a", "examplebot")
    assert usage == {"train-ai": False, "search": True, "ai-input": None}
    assert [s.repeats for s in usage.sources["search"]] == [17_999]


def test_many_wordings_are_listed_up_to_a_few_and_counted() -> None:
    robots = RobotsTxt.parse(shape("one_path_many_wordings", 20_000), max_bytes=BIG)
    usage = robots.usage(URL + "/page/x", "examplebot")
    assert usage["train-ai"] is False
    assert [s.line for s in usage.sources["train-ai"]] == [3, 4, 5]
    assert usage.more == {"train-ai": 20_000 - 3}
    assert usage.to_dict()["train-ai"]["more"] == 20_000 - 3
    assert Usage.from_dict(usage.to_dict()) == usage


def test_hostile_shapes_answer_right() -> None:
    robots = RobotsTxt.parse(shape("distinct_paths", 20_000), max_bytes=BIG)
    assert robots.usage(URL + "/p12x", "bot")["train-ai"] is False  # /p12 (the longest: /p1 and /p12 match)
    assert robots.usage(URL + "/p13", "bot")["train-ai"] is True
    assert [s.line for s in robots.usage(URL + "/p19999/a", "bot").sources["train-ai"]] == [20_002]
    assert robots.usage(URL + "/q", "bot") == UNKNOWN
    robots = RobotsTxt.parse(shape("prefix_chain", 2_000), max_bytes=BIG)
    got = robots.usage(URL + "/" + "a" * 900, "bot")
    assert got["search"] is False and [s.line for s in got.sources["search"]] == [702]  # "/a...a" x700
    robots = RobotsTxt.parse(shape("wildcards", 5_000), max_bytes=BIG)
    assert [s.line for s in robots.usage(URL + "/a/x4321y/b", "bot").sources["train-ai"]] == [3 + 4321]
    assert robots.usage(URL + "/a/x43/b", "bot") == UNKNOWN
    robots = RobotsTxt.parse(shape("mix", 20_000), max_bytes=BIG)
    got = robots.usage(URL + "/q10/a", "bot")
    assert got == {"train-ai": False, "search": True, "ai-input": None}
    assert [s.line for s in got.sources["train-ai"]] == [1]  # the file-wide Content-Signal wins


def test_several_tokens_count_a_shared_statement_once() -> None:
    robots = RobotsTxt.parse(shape("one_path_many_wordings", 100))
    one = usage_for(robots, URL + "/page/x", ("a",))
    both = usage_for(robots, URL + "/page/x", ("a", "b"))
    assert both == one and both.more == {"train-ai": 97}


def test_usage_bounds_its_sources() -> None:
    sources = [Source("robots.txt", i, f"Content-Usage: /{i} train-ai=n") for i in range(1, 11)]
    usage = Usage({"train-ai": False}, {"train-ai": sources})
    assert usage.sources["train-ai"] == tuple(sources[:MAX_SOURCES]) and usage.more == {"train-ai": 7}
    # combining many statements: linear, each source once, bounded
    many = [Usage({"train-ai": False}, {"train-ai": [s]}) for s in sources * 2000]
    start = time.process_time()
    got = combine(many)
    assert time.process_time() - start < 1.0  # 20,000 statements (the old quadratic walk took minutes)
    assert got.sources["train-ai"] == tuple(sources[:MAX_SOURCES]) and got.more == {"train-ai": 7}


def test_from_dict_never_raises() -> None:
    for bad in (
        {"train-ai": {"value": False, "sources": [{"line": "x"}]}},
        {"train-ai": {"value": False, "sources": "not a list", "more": "many"}},
        {"train-ai": {"value": False, "sources": [{"line": 3.5, "repeats": -2}]}},
        {"use": {"value": 3}},
    ):
        got = Usage.from_dict(bad)
        assert set(got) == {"train-ai", "search", "ai-input"}


# -- the Content-Usage header (issue 30 item 5) ------------------------------------------


def test_many_header_lines_keep_a_clear_no() -> None:
    # 2,000 field lines join past the 16 KiB the plugin parses
    lines = [b"train-ai=n"] * 2_000
    assert len(b", ".join(lines)) > MAX_HEADER_BYTES
    got = from_header(lines)
    assert got["train-ai"] is False
    assert got.sources["train-ai"] == (Source("header", 0, "Content-Usage: train-ai=n", 1_999),)
    # alternating lines: each member once, the last of each kept: the header's own answer
    assert from_header([b"train-ai=y", b"search=n"] * 2_000) == {"train-ai": True, "search": False, "ai-input": None}
    assert from_header([b"train-ai=n", b"train-ai=y"] * 2_000)["train-ai"] is True  # the last member wins


def test_a_header_read_in_part_keeps_only_its_no() -> None:
    distinct = [f"x{i}=y".encode() for i in range(3_000)]  # distinct members, too many to parse
    got = from_header([b"train-ai=n, search=y", *distinct])
    assert got == {"train-ai": False, "search": None, "ai-input": None}  # search=y could be undone later
    (source,) = got.sources["train-ai"]
    assert source.text.startswith("Content-Usage: train-ai=n, search=y, x0=y")
    assert source.text.endswith("distinct members read)") and len(source.text) < 400
    # an "n" overridden within what was read is still an "n" read
    assert from_header([b"train-ai=n", b"train-ai=y", *distinct])["train-ai"] is False
    # with quoted strings (commas inside them): whole field lines
    quoted = [f'x{i}="a, b"'.encode() for i in range(2_000)]
    got = from_header([b"train-ai=n", *quoted])
    assert got["train-ai"] is False and got.sources["train-ai"][0].text.endswith("field lines read)")
    # what the drafts leave unknown stays unknown, however long
    assert from_header([b"train-ai=n", b"Train=n", *distinct]) == UNKNOWN  # a malformed member
    assert from_header([b"train-ai=no"] * 2_000) == UNKNOWN
    assert from_header([b"train-ai = n"] * 2_000) == UNKNOWN


def test_header_work_is_bounded() -> None:
    # 200,000 distinct members (2 MB): one parse of at most MAX_HEADER_BYTES
    lines = [f"k{i}=y, train-ai=n".encode() for i in range(200_000)]
    start = time.process_time()
    got = from_header(lines)
    spent = time.process_time() - start
    assert got["train-ai"] is False
    assert spent < 2.0, spent  # generous: linear work at C speed, and one 16 KiB parse
    assert len(json.dumps(got.to_dict())) < 1_000
