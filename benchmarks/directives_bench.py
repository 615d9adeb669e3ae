"""What a response's X-Robots-Tag lines and HTML head cost to read, ordinary and hostile.

Every line is read (each distinct line once); the work per line is bounded
(at most 16 KiB of it, its many pieces at C speed, at most 256 pieces
holding a ":").  For each shape of header: CPU us per response
(``page_directives``, median of 7 ``timeit`` repeats) and whether a ``noai``
at its end was seen.  Then the same for HTML heads (``read_head`` with the
names a crawl reads, and the page's URL for its RSL license links): ordinary
pages, and hostile documents of 1 MB (only their first 64 KiB is read).

``python benchmarks/directives_bench.py [--head]``; ``--calls I N`` reads the
head of shape I (0 is the first row) N times after one warm-up read, to
count instructions without the machine's load: ``valgrind --tool=cachegrind
--cache-sim=no python benchmarks/directives_bench.py --calls I N`` for N = 0
and N = 20, the difference over 20.
"""

from __future__ import annotations

import statistics
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scrapy_rfc9309.page_usage import meta_names  # noqa: E402
from scrapy_rfc9309.robots.directives import page_directives  # noqa: E402
from scrapy_rfc9309.robots.html_head import read_head  # noqa: E402

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


_SCRIPT = "<script>var a = 1 < 2 && '<p>' != '</div>'; window.x = {k: \"v\"};</script>\n"
#: an ordinary head: a charset, a title, 14 meta tags, 8 links, 3 inline scripts, a style (28 tags)
HEAD = (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>A page &amp; its title</title>\n'
    + "".join(f'<meta property="og:p{i}" content="value number {i}">\n' for i in range(10))
    + '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    + '<meta name="description" content="What this page is about, in a sentence or two.">\n'
    + '<meta name="robots" content="index, follow">\n<meta name="tdm-reservation" content="0">\n'
    + "".join(f'<link rel="stylesheet" href="/static/s{i}.css?v=123">\n' for i in range(8))
    + _SCRIPT * 3
    + "<style>body { margin: 0 } a > b { color: red }</style>\n</head>\n"
)
BODY = (
    "<body>\n"
    + '<div class="c"><p>Some text of the page, <a href="/x">a link</a>.</p></div>\n' * 500
    + "</body></html>"
)
NOAI = '<meta name="robots" content="noai">'
URL = "https://site.example/articles/a-page.html"


def heads() -> dict[str, tuple[bytes, str | None]]:
    mb = 1_000_000
    return {
        "ordinary page (28 tags in the head, 41 KB)": ((HEAD + BODY).encode(), None),
        "the same, charset in Content-Type": ((HEAD + BODY).encode(), "text/html; charset=utf-8"),
        "the same in UTF-16LE named by Content-Type": (
            (HEAD + BODY).encode("utf-16-le"),
            "text/html; charset=utf-16le",
        ),
        "comment closed by `--!>` before the meta": (f"<head><!-- x --!>{NOAI}</head><body>x".encode(), None),
        "meta after `</head>`": (f"<head><title>t</title></head>\n{NOAI}<body>x".encode(), None),
        "1 MB of tiny tags": (b"<p>" * (mb // 3), None),
        "1 MB of meta tags of 100 attributes": ((b"<meta " + b"name=b " * 100 + b">") * (mb // 707), None),
        "1 MB of `<`": (b"<" * mb, None),
        "1 MB unclosed comment": (b"<!--" + b"a" * mb, None),
        "1 MB of `<!--`": (b"<!--" * (mb // 4), None),
        "1 MB of script escapes `<script><!--<script>`": (b"<script>" + b"<!--<script>-->" * (mb // 15), None),
        "1 MB of templates": (b"<template>" * (mb // 10), None),
        "1 MB of meta tags": (NOAI.encode() * (mb // 35), None),
        "1 MB of distinct RSL license links": (
            b"".join(b'<link rel="license" type="application/rsl+xml" href="/l%d.xml">' % i for i in range(mb // 66)),
            None,
        ),
        "1 MB of license links hidden by character references": (
            b"".join(
                b'<link rel="&#108;icense" type="application/rsl&#43;xml" href="/%d">' % i for i in range(mb // 70)
            ),
            None,
        ),
    }


def head_table() -> None:
    names = meta_names((TOKEN,))
    print("| HTML head | us per response | meta tags read | RSL licenses |")
    print("|---|---:|---:|---:|")
    for name, (body, charset) in heads().items():
        number = 20 if len(body) > 100_000 else 200
        took = timeit.repeat(lambda: read_head(body, charset, names, url=URL), number=number, repeat=7)  # noqa: B023
        head = read_head(body, charset, names, url=URL)
        print(f"| {name} | {statistics.median(took) / number * 1e6:,.1f} | {len(head.metas)} | {len(head.licenses)} |")


def calls(index: int, number: int) -> None:
    body, charset = list(heads().values())[index]
    names = meta_names((TOKEN,))
    read_head(body, charset, names, url=URL)  # the caches warm, as a crawl's pages leave them
    for _ in range(number):
        read_head(body, charset, names, url=URL)


if __name__ == "__main__":
    if "--calls" in sys.argv:
        at = sys.argv.index("--calls")
        calls(int(sys.argv[at + 1]), int(sys.argv[at + 2]))
    elif "--head" not in sys.argv:
        main()
        print()
    if "--calls" not in sys.argv:
        head_table()
