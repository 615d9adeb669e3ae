"""What one tdmrep.json costs: the longest step of its reading, and what it keeps.

For each shape of file (the TDMRep report's example, and files made only to
be costly, each as large as the reader takes: a rule of thousands of unknown
keys, unknown keys in every rule, many rules, a policy each, long or
non-ASCII locations, wildcard rules, deep nesting, no rules at all):

* ``steps``: how many steps ``TdmRep.parsing`` takes;
* ``longest step``: the longest one, CPU ms (``time.process_time``, the
  garbage collector on, as in a crawl), the worst of ``--rounds`` rounds;
* ``whole``: the whole reading, CPU ms, the median of the rounds;
* ``kept``: the bytes the parsed file keeps alive (every object reachable
  from it, ``sys.getsizeof`` each, once).

Then what a response's look-up costs (``TdmRep.usage``, CPU us, median of 9
``timeit`` repeats) for an origin without a file, the report's example, and
the worst file kept (as many ``*`` rules as are read, all in the path's
bucket, then plain rules to the byte budget), against one robots.txt check
of the same URL, on a 100- and a 2,000-character path.

``python benchmarks/tdmrep_bench.py --rounds 7``
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import timeit
import types
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scrapy_rfc9309 import parse  # noqa: E402
from scrapy_rfc9309.robots.tdmrep import EMPTY, MAX_FILE_BYTES, MAX_RULES, MAX_WILDCARD_RULES, TdmRep  # noqa: E402

EURO = "\u20ac"


def filled(make: Callable[[int], object]) -> bytes:
    """A JSON array of ``make(i)``, as many as fit in the size limit."""
    parts: list[str] = []
    size = 2
    while True:
        part = json.dumps(make(len(parts)))
        if size + len(part) + 1 > MAX_FILE_BYTES:
            return ("[" + ",".join(parts) + "]").encode()
        parts.append(part)
        size += len(part) + 1


def shapes() -> dict[str, bytes]:
    keys = 1
    while len(unknown_keys(keys * 2)) <= MAX_FILE_BYTES:
        keys *= 2
    while len(unknown_keys(keys + 100)) <= MAX_FILE_BYTES:
        keys += 100
    return {
        "the report's example (3 rules)": json.dumps(
            [
                {"location": "/directory-a/", "tdm-reservation": 1},
                {"location": "/directory-b/html/", "tdm-reservation": 1, "tdm-policy": "https://p.example/p.json"},
                {"location": "/directory-b/images/*.jpg", "tdm-reservation": 0},
            ]
        ).encode(),
        f"one rule, {keys:,} unknown keys": unknown_keys(keys),
        "unknown keys in every rule": filled(lambda i: {"location": f"/p{i}/", "tdm-reservation": 1, f"x{i}": [1]}),
        "many short rules": filled(lambda i: {"location": f"/{i}", "tdm-reservation": 1}),
        "a policy each": filled(
            lambda i: {"location": f"/p{i}/", "tdm-reservation": 1, "tdm-policy": f"https://p/{i}"}
        ),
        "long non-ASCII locations": filled(lambda i: {"location": f"/{i}" + EURO * 600, "tdm-reservation": 1}),
        "wildcards of many pieces": filled(lambda i: {"location": f"/{i}" + "*a" * 30 + "$", "tdm-reservation": 1}),
        "deep nesting": filled(lambda i: {"location": f"/{i}", "x": json.loads("[" * 400 + "]" * 400)}),
        "numbers, no rule": b"[" + b"1.5e3," * (MAX_FILE_BYTES // 6 - 1) + b"1]",
        "empty objects, no rule": b"[" + b"{}," * (MAX_FILE_BYTES // 3 - 1) + b"{}]",
    }


def unknown_keys(count: int) -> bytes:
    return ('[{"location":"/","tdm-reservation":1,' + ",".join(f'"k{i:05d}":1' for i in range(count)) + "}]").encode()


def kept(root: object) -> int:
    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    seen: set[int] = set()
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, (bool, *skip)):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        names = getattr(type(obj), "__slots__", None) if isinstance(obj, TdmRep) else None
        stack.extend(getattr(obj, n) for n in names) if names else stack.extend(gc.get_referents(obj))
    return total


def one_round(body: bytes) -> tuple[int, float, float, TdmRep]:
    """``(steps, longest step s, whole s, the file)``."""
    reading = TdmRep.parsing(body)
    count, longest = 0, 0.0
    start = time.process_time()
    while True:
        began = time.process_time()
        try:
            next(reading)
        except StopIteration as done:
            rep: TdmRep = done.value
            longest = max(longest, time.process_time() - began)
            return count + 1, longest, time.process_time() - start, rep
        count += 1
        longest = max(longest, time.process_time() - began)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    print(
        f"| file ({MAX_FILE_BYTES:,} bytes at most) | KB | rules | diagnostics | steps | longest step ms | whole ms | kept bytes |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, body in shapes().items():
        longest: list[float] = []
        whole: list[float] = []
        for _ in range(args.rounds):
            count, step, total, rep = one_round(body)
            longest.append(step)
            whole.append(total)
        print(
            f"| {name} | {len(body) / 1000:.0f} | {len(rep)} | {len(rep.diagnostics)} | {count} "
            f"| {max(longest) * 1000:.2f} | {statistics.median(whole) * 1000:.2f} | {kept(rep):,} |"
        )
    look_ups()


def look_ups() -> None:
    robots = parse(b"User-agent: *\nDisallow: /private/\nAllow: /\n")
    example = TdmRep.parse(shapes()["the report's example (3 rules)"])
    rules = [{"location": f"/a*{i:04d}*z", "tdm-reservation": 1} for i in range(MAX_WILDCARD_RULES)]
    rules += [{"location": f"/a{i}/" + ("$" if i % 2 else ""), "tdm-reservation": 1} for i in range(MAX_RULES)]
    worst = TdmRep.parse(json.dumps(rules).encode())

    def us(call: Callable[[], object], number: int) -> float:
        return statistics.median(timeit.repeat(call, number=number, repeat=9)) / number * 1e6

    print(
        f"\n| path | robots.txt check us | no file us | example us | worst file ({len(worst)} rules) us | in checks |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for length in (100, 2_000):
        url = "https://example.com/a" + "b" * (length - 2)
        check = us(lambda: robots.check(url, "ExampleBot"), 2_000)  # noqa: B023 - called at once
        none = us(lambda: EMPTY.usage(url), 2_000)  # noqa: B023
        first = us(lambda: example.usage("https://example.com/directory-b/html/x"), 2_000)
        slow = us(lambda: worst.usage(url), 200)  # noqa: B023
        print(f"| {length:,} | {check:.2f} | {none:.2f} | {first:.2f} | {slow:.1f} | {slow / check:.0f} |")


if __name__ == "__main__":
    main()
