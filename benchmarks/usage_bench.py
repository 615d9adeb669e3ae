"""What usage preferences cost a request, on a plain file and on hostile ones.

For each shape of robots.txt (a plain 1 KB file, and files of about 500 KB
made only to be costly: identical lines, distinct paths, one path in many
wordings, Content-Signal lines, wildcards, every length of one literal, a
mix), in one process:

* ``parse``: parsing the body, CPU ms;
* ``build``: compiling the token's usage statements (``RobotsTxt.prepare``'s
  last part, run once per origin), ms;
* ``request``: the middleware's per-request usage work (``usage_for`` of an
  allowed URL, ``denies``, ``to_dict`` for the provenance), CPU us, the median
  of ``--rounds`` rounds of 10 passes over 100 distinct URLs; and its ratio to
  the plain file's on the same URLs in the same round (the machine's drift
  cancels out);
* ``carried``: the bytes of the largest provenance ``usage`` (JSON).

``python benchmarks/usage_bench.py --rounds 7``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scrapy_rfc9309 import RobotsTxt  # noqa: E402
from scrapy_rfc9309.robots import steps  # noqa: E402
from scrapy_rfc9309.robots.usage import usage_for  # noqa: E402
from scrapy_rfc9309.robots.usage_match import matcher_of  # noqa: E402

TOKENS = ("examplebot",)
URL = "https://example.com"
LIMIT = 512_000  # the default parse limit: every shape is cut to it


def shapes() -> dict[str, str]:
    head = "User-agent: *\nDisallow: /private/\n"
    plain = (
        "User-agent: *\nDisallow: /private/\nDisallow: /tmp/\nAllow: /private/press\n"
        + "".join(f"Disallow: /d{i}/\n" for i in range(50))
        + "Content-Usage: train-ai=n\nContent-Usage: /open/ train-ai=y\nContent-Signal: search=yes, ai-train=no\n"
    )
    return {
        "plain (1 KB)": plain,
        "identical Content-Usage": head + "Content-Usage: train-ai=n\n" * 19_690,
        "distinct paths": head + "".join(f"Content-Usage: /p{i} train-ai={'ny'[i % 2]}\n" for i in range(30_000)),
        "one path, many wordings": head + "".join(f"Content-Usage: /page/ train-ai=n;v={i}\n" for i in range(30_000)),
        "identical Content-Signal": head + "Content-Signal: search=yes, ai-train=no\n" * 12_800,
        "distinct file-wide Content-Signal": "".join(f"Content-Signal: ai-train=no, k{i}=yes\n" for i in range(20_000))
        + head,
        "distinct wildcards": head + "".join(f"Content-Usage: /*x{i}y train-ai=n\n" for i in range(30_000)),
        "every length of one literal": head
        + "".join(f"Content-Usage: /{'a' * (i + 1)} search=n\n" for i in range(990)),
        "mix": "Content-Signal: ai-train=no\n" * 3_000
        + head
        + "Content-Usage: train-ai=n\n" * 3_000
        + "".join(f"Content-Usage: /q{i}/ search={'yn'[i % 2]}\n" for i in range(5_000))
        + "".join(f"Content-Usage: /*.x{i}$ train-ai=y\n" for i in range(5_000)),
    }


def urls(name: str) -> list[str]:
    if name == "every length of one literal":
        return [f"{URL}/{'a' * 1000}{i}" for i in range(100)]
    return (
        [f"{URL}/p{i}x" for i in range(40)]
        + [f"{URL}/page/{i}" for i in range(30)]
        + [f"{URL}/z{i}.x7" for i in range(30)]
    )


def request_work(robots: RobotsTxt, url: str) -> dict:
    usage = usage_for(robots, url, TOKENS, allowed=True)
    usage.denies(("train-ai",))
    return usage.to_dict()


def prepared(name: str, body: str) -> tuple[RobotsTxt, dict[str, float]]:
    """The parsed file, compiled for the token, and the one-off costs."""
    data = body.encode()[:LIMIT]
    start = time.process_time()
    robots = RobotsTxt.parse(data)
    parsed = time.process_time()
    steps.finish(matcher_of(robots, TOKENS[0], robots._usage_cache()))
    built = time.process_time()
    carried = max(len(json.dumps(request_work(robots, url))) for url in urls(name))  # (first answers made)
    return robots, {
        "kb": len(data) / 1024,
        "parse": (parsed - start) * 1e3,
        "build": (built - parsed) * 1e3,
        "carried": carried,
    }


def one_pass(robots: RobotsTxt, asked: list[str]) -> float:
    """CPU seconds per request over 10 passes of ``asked``."""
    start = time.process_time()
    for _ in range(10):
        for url in asked:
            request_work(robots, url)
    return (time.process_time() - start) / (10 * len(asked))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    files = {name: prepared(name, body) for name, body in shapes().items()}
    plain = files["plain (1 KB)"][0]
    times: dict[str, list[float]] = {name: [] for name in files}
    ratios: dict[str, list[float]] = {name: [] for name in files}
    for _ in range(args.rounds):  # the files take turns; each against the plain file in the same round
        for name, (robots, _) in files.items():
            asked = urls(name)
            base = one_pass(plain, asked)
            cost = one_pass(robots, asked)
            times[name].append(cost)
            ratios[name].append(cost / base)
    print("| robots.txt | KB | parse ms | build ms | request us | / plain file, same URLs | carried bytes |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (_, m) in files.items():
        print(
            f"| {name} | {m['kb']:.0f} | {m['parse']:.0f} | {m['build']:.1f} | "
            f"{statistics.median(times[name]) * 1e6:.2f} | {statistics.median(ratios[name]):.2f} | {m['carried']:,} |"
        )


if __name__ == "__main__":
    main()
