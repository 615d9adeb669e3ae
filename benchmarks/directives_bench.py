"""What a response's X-Robots-Tag lines cost to read, ordinary and hostile.

Every line is read (each distinct line once); the work per line is bounded
(at most 16 KiB of it, its many pieces at C speed, at most 256 pieces
holding a ":").  For each shape of header: CPU us per response
(``page_directives``, median of 7 ``timeit`` repeats) and whether a ``noai``
at its end was seen.

``python benchmarks/directives_bench.py``
"""

from __future__ import annotations

import statistics
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scrapy_rfc9309.robots.directives import page_directives  # noqa: E402

TOKEN = "ExampleBot"
#: a header line's value as long as Twisted's HTTP/1.1 client takes (16,384 bytes a line)
LONG = 16_384 - len("X-Robots-Tag: ")


def shapes() -> dict[str, list[bytes] | None]:
    return {
        "none": None,
        "two lines (`googlebot: noindex, nofollow`, `otherbot: noai, noimageai`)": [
            b"googlebot: noindex, nofollow",
            b"otherbot: noai, noimageai",
        ],
        "2,000 distinct lines naming other crawlers (62 KB), then `noai`": [
            f"otherbot{i}: noindex, nofollow".encode() for i in range(2_000)
        ]
        + [b"noai"],
        "10,000 identical lines, then `noai`": [b"noindex, nofollow"] * 10_000 + [b"noai"],
        "one 16 KiB line of `a,` ending in `noai`": [b"a," * ((LONG - 4) // 2) + b"noai"],
        "one 16 KiB line of `a:1,` (4,000 pieces with a `:`), then `noai`": [b"a:1," * ((LONG - 4) // 4) + b"noai"],
        "100 distinct 16 KiB lines of `x,`, then `noai` (1.6 MB)": [
            str(i).encode() + b"x," * ((LONG - 8) // 2) for i in range(100)
        ]
        + [b"noai"],
    }


def main() -> None:
    print("| X-Robots-Tag | us per response | `noai` seen |")
    print("|---|---:|---|")
    for name, lines in shapes().items():
        size = sum(map(len, lines)) if lines else 0
        number = 20 if size > 500_000 else 200 if size > 10_000 else 5_000
        took = timeit.repeat(lambda: page_directives(lines, (), TOKEN), number=number, repeat=7)  # noqa: B023
        seen = page_directives(lines, (), TOKEN).usage["train-ai"] is False
        print(f"| {name} | {statistics.median(took) / number * 1e6:,.1f} | {'yes' if seen else 'no'} |")


if __name__ == "__main__":
    main()
