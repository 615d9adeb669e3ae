"""The matcher's work per origin and per later check, this checkout against another (``--baseline``).

* first: a parse of the broad benchmark's robots.txt (stackoverflow.com's first 30 lines, 29 rules),
  its three pages checked twice and their usage read once, as the gate and the middleware do for an
  origin of ``broad_bench.py``: microseconds and bytecodes per origin;
* later: every URL of ``corpus/bench/links`` (100 per site) against its own site's file, the files
  parsed and each site's first check made outside the timing: nanoseconds per check over all sites
  and over those whose file has at most 32 rules (most real files); bytecodes per check of those.

Bytecodes (``sys.settrace`` opcode events) are what the machine's load does not move. Each checkout
runs in a process of its own (``PYTHONHASHSEED=0``), the two taking turns ``--rounds`` times: the
machines are shared, so the median of each round's ratio is what compares two checkouts' CPU time
(``time.process_time``).  ``python benchmarks/first_checks.py --baseline ../other-checkout``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOKEN = "ExampleBot"
#: a file of at most this many Allow/Disallow lines counts as small (the matcher files its rules one by one)
SMALL_RULES = 32
LINKS_PER_SITE = 100


def _rules(body: bytes) -> int:
    lines = body.decode("utf-8", "replace").lower().splitlines()
    return sum(1 for line in lines if line.strip().startswith(("allow", "disallow")))


def measure(corpus: Path, repeat: int = 2000, passes: int = 3, timings: int = 7) -> dict[str, Any]:
    """This process's ``scrapy_rfc9309`` (the first on ``sys.path``): the medians of ``timings`` timings each."""
    from broad_bench import shortened
    from crawl_bench import page_paths, robots_body

    import scrapy_rfc9309
    from scrapy_rfc9309.robots import RobotsTxt

    body, _ = shortened(robots_body(corpus)[0], 30)
    paths = [path for path, _ in page_paths(3)]

    def origins(count: int) -> None:
        for i in range(count):
            robots, origin = RobotsTxt.parse(body, "text/plain"), f"http://h{i}.example:8000"
            for path in paths:
                robots.check(origin + path, TOKEN), robots.check(origin + path, TOKEN)
                robots.usage(origin + path, TOKEN, True)

    def first() -> float:
        start = time.process_time()
        origins(repeat)
        return (time.process_time() - start) / repeat * 1e6

    sites: dict[str, list[tuple[Any, list[str]]]] = {"all": [], "small": []}
    for links in sorted((corpus / "bench" / "links").iterdir()):
        robots_file = corpus / "bench" / "robotfiles" / links.name
        urls = links.read_text(encoding="utf-8", errors="replace").split()[:LINKS_PER_SITE]
        if not robots_file.exists() or not urls:
            continue
        raw = robots_file.read_bytes()
        robots = RobotsTxt.parse(raw)
        for url in urls:  # every bucket the URLs need compiled: the timing is of later checks
            robots.check(url, TOKEN)
        sites["all"].append((robots, urls))
        if _rules(raw) <= SMALL_RULES:
            sites["small"].append((robots, urls))

    def later(chosen: list[tuple[Any, list[str]]], passes: int = passes) -> float:
        calls = sum(len(urls) for _, urls in chosen) * passes
        start = time.process_time()
        for _ in range(passes):
            for robots, urls in chosen:
                for url in urls:
                    robots.check(url, TOKEN)
        return (time.process_time() - start) / calls * 1e9

    return {
        "first_bytecodes": bytecodes(lambda: origins(100)) / 100,
        "later_small_bytecodes": bytecodes(lambda: later(sites["small"], 1)) / sum(len(u) for _, u in sites["small"]),
        "first_us": statistics.median(first() for _ in range(timings)),
        "later_all_ns": statistics.median(later(sites["all"]) for _ in range(timings)),
        "later_small_ns": statistics.median(later(sites["small"]) for _ in range(timings)),
        "sites": len(sites["all"]),
        "small_sites": len(sites["small"]),
        "plugin": str(Path(scrapy_rfc9309.__file__).resolve().parents[1]),
    }


def bytecodes(call: Callable[[], object]) -> int:
    """The bytecodes ``call`` runs (``sys.settrace`` opcode events): what the machine's load does not move."""
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += event == "opcode"
        return local

    def new_frame(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes, frame.f_trace_lines = True, False
        return local

    sys.settrace(new_frame)
    try:
        call()
    finally:
        sys.settrace(None)
    return count


def run(root: Path, corpus: Path) -> dict[str, Any]:
    """One measurement of ``root``'s plugin, in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(HERE)]), PYTHONHASHSEED="0")
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", str(corpus)],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["plugin"] != str(root.resolve()):  # (an editable install elsewhere would shadow PYTHONPATH)
        raise RuntimeError(f"first_checks: {root} measured the plugin of {result['plugin']}")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, help="another checkout, measured in turn with this one")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--corpus", type=Path, default=Path(os.environ.get("RFC9309_CORPUS") or ROOT.parent / "shared/corpus")
    )
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        print(json.dumps(measure(args.worker)))
        return
    if not (args.corpus / "bench" / "links").is_dir():
        sys.exit(f"first_checks: no corpus at {args.corpus} (set RFC9309_CORPUS or --corpus)")
    roots = {"this checkout": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    got: dict[str, list[dict[str, Any]]] = {name: [] for name in roots}
    for number in range(args.rounds):
        for name, root in roots.items():
            print(f"first_checks: {name}, round {number + 1} ...", file=sys.stderr)
            got[name].append(run(root, args.corpus))
    sample = got["this checkout"][0]
    print(f"Sites: {sample['sites']}, of them {sample['small_sites']} with at most {SMALL_RULES} rules. "
          f"Medians of {args.rounds} rounds, the checkouts taking turns (each value: the median of 7 timings).\n")  # fmt: skip
    print(
        "| checkout | first (us per origin) | later, all sites (ns per check) | later, small files (ns per check) "
        "| first (bytecodes per origin) | later, small files (bytecodes per check) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    keys = ("first_us", "later_all_ns", "later_small_ns", "first_bytecodes", "later_small_bytecodes")
    for name, runs in got.items():
        cells = [statistics.median(r[key] for r in runs) for key in keys]
        print(f"| {name} | {cells[0]:.1f} | {cells[1]:.0f} | {cells[2]:.0f} | {cells[3]:,.0f} | {cells[4]:.1f} |")
    if "baseline" in got:  # the median of each round's ratio: two runs of one round saw the same machine
        ratios = [statistics.median(a[k] / b[k] for a, b in zip(got["this checkout"], got["baseline"])) for k in keys]
        print("| this checkout / baseline, per round | " + " | ".join(f"{r:.3f}" for r in ratios) + " |")


if __name__ == "__main__":
    main()
