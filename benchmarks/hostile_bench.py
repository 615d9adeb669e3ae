"""Worst-case inputs: each must answer in milliseconds, never hang."""

from __future__ import annotations

import time

from scrapy_rfc9309 import parse


def _worst(fn, rounds: int) -> float:
    worst = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        worst = max(worst, time.perf_counter() - start)
    return worst


def run(rounds: int) -> list[tuple[str, float]]:
    results = []
    wild = "/" + "*a" * 100 + "*b"
    robots = parse(f"User-agent: *\nDisallow: {wild}\n")
    url = "http://example.com/" + "a" * 2048
    robots.check(url, "ExampleBot")  # compile outside the timing
    results.append(
        ("2 KB URL vs a pattern of 100 wildcards (check)", _worst(lambda: robots.check(url, "ExampleBot"), rounds))
    )

    many = parse("User-agent: *\n" + "".join(f"Disallow: /*x{i}*y{i}$\n" for i in range(200)))
    many.check("/", "ExampleBot")
    results.append(("2 KB URL vs 200 wildcard rules (check)", _worst(lambda: many.check(url, "ExampleBot"), rounds)))

    body = ("User-agent: *\n" + "".join(f"Disallow: /section-{i:05d}/*/page$\n" for i in range(20_000))).encode()
    body = body[:512_000]
    results.append((f"{len(body) // 1024} KiB file of 20,000 rules (parse)", _worst(lambda: parse(body), rounds)))
    big = parse(body)
    results.append(
        (
            "same file, first check (compiles the group)",
            _worst(lambda: parse(body).check("/section-19999/x/page", "ExampleBot"), 1),
        )
    )
    big.check("/section-00000/x/page", "ExampleBot")  # compiles the bucket of "/s..." paths
    results.append(("same file, check", _worst(lambda: big.check("/section-09999/x/page", "ExampleBot"), rounds)))

    line = b"Disallow: /" + b"x" * 1_000_000
    results.append(("a line of 1 MB (parse)", _worst(lambda: parse(b"User-agent: *\n" + line), rounds)))
    return results
